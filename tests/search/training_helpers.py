"""A namespace of 8-d vectors, one cluster per tenant, and readers of the IVF centroids its
leaves' indexes hold and of the shared model its index definition names."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa

import lance_partitioned as lp
from lance_partitioned.search.definitions import INDICES_KEY

DIM = 8
SCHEMA = pa.schema(
    [("id", pa.int64()), ("tenant", pa.string()), ("v", pa.list_(pa.float32(), DIM))]
)


def rows(tenants: dict[str, int], first_id: int = 0, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    names = [t for t, n in tenants.items() for _ in range(n)]
    # a different cluster centre per tenant: per-leaf training would give different centroids
    centres = {t: rng.normal(0, 4, DIM) for t in tenants}
    vectors = np.stack([centres[t] + rng.standard_normal(DIM) for t in names]).astype(np.float32)
    return pa.table(
        {
            "id": np.arange(first_id, first_id + len(names)),
            "tenant": names,
            "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
        },
        schema=SCHEMA,
    )


def namespace(root: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="tenant")
    ns.write(rows({"a": 700, "b": 600, "c": 500, "small": 30}))
    return ns


def leaf_centroids(ns: lp.PartitionedNamespace, name: str = "v_idx") -> dict[str, np.ndarray]:
    """Each indexed leaf's IVF centroids, by tenant, read back from its Lance index."""
    out = {}
    for task in ns.plan_scan():
        ds = task.open()
        if not any(d.name == name for d in ds.describe_indices()):
            continue
        [segment] = ds.stats.index_stats(name)["indices"]
        tenant = ds.to_table(columns=["tenant"], limit=1).column(0)[0].as_py()
        out[tenant] = np.asarray(segment["centroids"], np.float32)
    return out


def model_file(
    ns: lp.PartitionedNamespace, root: Path, name: str = "v_idx"
) -> np.lib.npyio.NpzFile:
    raw = json.loads(ns.snapshot.table_metadata[INDICES_KEY])
    path = raw[name]["model"]
    assert path.startswith("_index_models/")
    return np.load(root / path)


_COPIES: dict[tuple[str, int], lance.LanceDataset] = {}


def shared_model_copy(ns: lp.PartitionedNamespace, ds: lance.LanceDataset) -> lance.LanceDataset:
    """A copy of the unindexed leaf ``ds`` (its live rows) with an ``IVF_PQ`` index on ``v``
    built by Lance with the namespace's shared model (its centroids and codebook, no
    training): what searching the leaf through its encoded codes must equal."""
    key = (ds.uri, int(ds.version))
    if key not in _COPIES:
        [definition] = json.loads(ns.snapshot.table_metadata[INDICES_KEY]).values()
        with np.load(Path(ns.uri) / definition["model"]) as model:
            centroids, codebook = model["ivf_centroids"], model["pq_codebook"]
        dim = centroids.shape[1]
        copy = lance.write_dataset(
            ds.to_table(columns=["id", "v"]), tempfile.mkdtemp(prefix="lp-small-copy-")
        )
        copy.create_index(
            "v",
            "IVF_PQ",
            num_partitions=len(centroids),
            num_sub_vectors=int(definition["params"]["num_sub_vectors"]),
            ivf_centroids=pa.FixedSizeListArray.from_arrays(pa.array(centroids.ravel()), dim),
            pq_codebook=pa.FixedSizeListArray.from_arrays(pa.array(codebook.ravel()), dim),
        )
        _COPIES[key] = lance.dataset(copy.uri)
    return _COPIES[key]


def integer_rows(sizes: dict[str, int], dim: int, first_id: int = 0, seed: int = 0) -> pa.Table:
    """``sizes[t]`` rows of each tenant ``t`` (in that order), ids from ``first_id``, ``dim``-d
    vectors of small integers (exact float32 distances in a refine), in the schema
    ``id int64, tenant string, v fixed_size_list<float32>[dim]``."""
    rng = np.random.default_rng(seed)
    n = sum(sizes.values())
    vectors = rng.integers(-8, 9, size=(n, dim)).astype(np.float32)
    schema = pa.schema(
        [("id", pa.int64()), ("tenant", pa.string()), ("v", pa.list_(pa.float32(), dim))]
    )
    return pa.table(
        {
            "id": np.arange(first_id, first_id + n),
            "tenant": [t for t, size in sizes.items() for _ in range(size)],
            "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
        },
        schema=schema,
    )
