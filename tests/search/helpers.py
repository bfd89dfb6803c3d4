"""Small namespaces with a vector column for the search tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

import lance_partitioned as lp

DIM = 4
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("tenant", pa.string()),
        ("grp", pa.int64()),
        ("v", pa.list_(pa.float32(), DIM)),
        ("txt", pa.string()),
    ]
)
WORDS = ["apple", "banana", "cherry", "grape", "lemon", "mango"]


def rows(sizes: dict[str, int], first_id: int = 0, seed: int = 0) -> pa.Table:
    """``sizes[tenant]`` rows per tenant; vectors of small integers (float32 arithmetic on
    them is exact, so distances can be compared exactly, ties included)."""
    rng = np.random.default_rng(seed)
    tenants = [t for t, n in sizes.items() for _ in range(n)]
    n = len(tenants)
    vectors = rng.integers(-3, 4, size=(n, DIM)).astype(np.float32)
    ids = np.arange(first_id, first_id + n)
    text = [f"{WORDS[i % 6]} {WORDS[(i * 7) % 5]} doc" for i in ids]
    return pa.table(
        {
            "id": ids,
            "tenant": tenants,
            "grp": ids % 7,
            "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
            "txt": text,
        },
        schema=SCHEMA,
    )


def namespace(
    root: Path, spec: str = "tenant", sizes: dict[str, int] | None = None
) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by=spec)
    ns.write(rows(sizes or {"a": 40, "b": 5, "c": 15}))
    return ns


def exact_top_k(table: pa.Table, query: np.ndarray, k: int) -> np.ndarray:
    """The k smallest squared L2 distances over ``table`` (numpy, sorted)."""
    if table.num_rows == 0:
        return np.zeros(0, np.float32)
    vectors = np.asarray(table.column("v").combine_chunks().values, np.float32).reshape(-1, DIM)
    distances = ((vectors - query) ** 2).sum(axis=1)
    return np.sort(distances)[:k]


def distances_by_id(table: pa.Table, query: np.ndarray) -> dict[int, float]:
    vectors = np.asarray(table.column("v").combine_chunks().values, np.float32).reshape(-1, DIM)
    distances = ((vectors - query) ** 2).sum(axis=1)
    return dict(zip(table.column("id").to_pylist(), distances.tolist(), strict=True))


def tenant_namespace(
    root: Path, schema: pa.Schema, sizes: dict[str, int], vectors: np.ndarray
) -> lp.PartitionedNamespace:
    """A namespace of ``schema`` (``id``, ``tenant``, ``v``) partitioned by ``tenant``: row
    ``i`` has id ``i`` and vector ``vectors[i]``, the tenants of ``sizes`` in turn."""
    table = pa.table(
        {
            "id": np.arange(len(vectors)),
            "tenant": [t for t, size in sizes.items() for _ in range(size)],
            "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1]),
        },
        schema=schema,
    )
    ns = lp.PartitionedNamespace.create(str(root), schema=schema, partition_by="tenant")
    ns.write(table)
    return ns
