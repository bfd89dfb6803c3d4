"""A vector search whose every kept leaf is searched in numpy (small leaves' vectors, the
namespace's IVF_PQ codes) merges its top-k in numpy (search/winners.py): no Arrow sort of the
candidates, the rows and columns the general merge gives, in its order (issue 29: a
tenant-filtered search of one leaf costs little more than the leaf's own search)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.search import query

from .helpers import tenant_namespace

DIM = 32  # a multiple of 16: Lance adds as numpy does (search/flat.py)
SCHEMA = pa.schema(
    [("id", pa.int64()), ("tenant", pa.string()), ("v", pa.list_(pa.float32(), DIM))]
)


def _namespace(root: Path) -> tuple[lp.PartitionedNamespace, np.ndarray]:
    sizes = {"a": 40, "b": 300, "c": 7}
    rng = np.random.default_rng(11)
    vectors = (rng.standard_normal((sum(sizes.values()), DIM)) * 3).astype(np.float32)
    vectors[45] = vectors[3]  # an exact tie across two leaves: broken by leaf, then row id
    return tenant_namespace(root, SCHEMA, sizes, vectors), vectors


def _no_arrow_merge(*args: Any, **kwargs: Any) -> pa.Table:
    raise AssertionError("the candidates were merged by an Arrow sort")


@pytest.mark.parametrize("columns", [None, ["id"], [], ["tenant"]])
@pytest.mark.parametrize("where", [None, "tenant = 'b'", "tenant IN ('a', 'c')"])
def test_numpy_searched_leaves_merge_without_arrow_and_as_lance_leaves_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: list[str] | None, where: str | None
) -> None:
    ns, vectors = _namespace(tmp_path / "ns")
    # "id >= 0" keeps every row but is a residual: each leaf searched by Lance, merged in Arrow
    general = f"({where}) AND id >= 0" if where else "id >= 0"
    queries = [vectors[3], vectors[100] + 0.25, vectors[0] * 0, vectors[44] - 0.5]
    expected = [ns.search(q, k=12, filter=general, columns=columns) for q in queries]
    monkeypatch.setattr(query, "_merge", _no_arrow_merge)
    for _ in range(3):  # read by Lance, then kept in memory (search/rows.py)
        for q, wanted in zip(queries, expected, strict=True):
            got = ns.search(q, k=12, filter=where, columns=columns)
            assert got.equals(wanted, check_metadata=True)
            assert got.schema.metadata == wanted.schema.metadata


def test_the_order_of_ties_across_leaves_is_the_general_merges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns, vectors = _namespace(tmp_path / "ns")
    expected = ns.search(vectors[3], k=2, filter="id >= 0", columns=["id"])
    assert sorted(expected.column("id").to_pylist()) == [3, 45]
    monkeypatch.setattr(query, "_merge", _no_arrow_merge)
    got = ns.search(vectors[3], k=2, columns=["id"])
    assert got.column("id").to_pylist() == expected.column("id").to_pylist()
    assert got.column("_partition").to_pylist() == expected.column("_partition").to_pylist()
