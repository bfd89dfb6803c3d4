"""The fast paths of search and reads give what the general ones give: small unindexed leaves
searched in numpy (Lance's distances bit for bit, its order, only the winners' columns read),
plans kept per snapshot."""

from __future__ import annotations

from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.search import flat

from .helpers import tenant_namespace

DIM = 32  # a multiple of 16: Lance's order of additions
SCHEMA = pa.schema(
    [("id", pa.int64()), ("tenant", pa.string()), ("v", pa.list_(pa.float32(), DIM))]
)


def _namespace(root: Path, sizes: dict[str, int]) -> tuple[lp.PartitionedNamespace, np.ndarray]:
    rng = np.random.default_rng(7)
    n = sum(sizes.values())
    vectors = (rng.standard_normal((n, DIM)) * 3).astype(np.float32)
    vectors[5] = vectors[3]  # an exact tie inside a leaf
    return tenant_namespace(root, SCHEMA, sizes, vectors), vectors


def _lance_top_k(
    ns: lp.PartitionedNamespace, query: np.ndarray, k: int, where: str | None
) -> list[tuple[float, str, int]]:
    """Lance's own flat search of every kept leaf, merged by (distance, leaf, row id)."""
    found = []
    for task in ns.plan_scan(where):
        ds = lance.dataset(task.uri, version=task.read_version)
        table = ds.to_table(
            columns=["id", "_distance"],
            nearest={"column": "v", "q": query, "k": k},
            with_row_id=True,
        )
        for row in table.to_pylist():
            found.append((row["_distance"], task.object_id, row["_rowid"], row["id"]))
    return [(d, oid, i) for d, oid, _, i in sorted(found)[:k]]


@pytest.mark.parametrize("where", [None, "tenant = 'b'"])
@pytest.mark.parametrize("columns", [None, ["id"], []])
def test_small_leaves_searched_in_numpy_as_lance_searches_them(
    tmp_path: Path, where: str | None, columns: list[str] | None
) -> None:
    ns, vectors = _namespace(tmp_path / "ns", {"a": 40, "b": 300, "c": 7})
    for task in ns.plan_scan(where):  # the numpy path is taken
        assert flat.flat_vectors(task.open(), "v", DIM) is not None
    for query in (vectors[3], vectors[100] + 0.25, vectors[0] * 0):
        got = ns.search(query, k=12, filter=where, columns=columns)
        expected = _lance_top_k(ns, query, 12, where)
        assert got.column("_distance").to_pylist() == [d for d, _, _ in expected]
        names = ["id", "tenant", "v"] if columns is None else columns
        assert got.column_names == [*names, "_distance", "_partition"]
        by_leaf = {t.object_id: t.partition_values for t in ns.plan_scan(where)}
        partitions = [f"tenant={by_leaf[oid][0][1]}" for _, oid, _ in expected]
        assert got.column("_partition").to_pylist() == partitions
        if columns != []:
            assert got.column("id").to_pylist() == [i for _, _, i in expected]
        if columns is None:
            rows = got.column("id").to_numpy()
            matrix = np.asarray(got.column("v").combine_chunks().values).reshape(-1, DIM)
            assert np.array_equal(matrix, vectors[rows])
    # fast_search leaves out rows no index covers, as Lance does
    assert ns.search(vectors[3], k=5, filter=where, fast_search=True).num_rows == 0


def test_deleted_rows_and_null_vectors_are_not_found(tmp_path: Path) -> None:
    ns, vectors = _namespace(tmp_path / "ns", {"a": 40, "b": 30})
    assert ns.search(vectors[3], k=1, columns=["id"]).column("id").to_pylist() == [3]
    ns.delete("id IN (3, 5)")  # 5 has the same vector as 3
    ns.write(pa.table({"id": [99], "tenant": ["a"], "v": pa.nulls(1, SCHEMA.field("v").type)}))
    found = ns.search(vectors[3], k=70, columns=["id"]).column("id").to_pylist()
    assert len(found) == 68
    assert not {3, 5, 99} & set(found)


def test_nearest_keeps_every_row_of_the_exact_top_k() -> None:
    rng = np.random.default_rng(3)
    for trial in range(40):
        n = int(rng.integers(1, 400))
        scale = float(10.0 ** rng.integers(-3, 4))
        matrix = (rng.standard_normal((n, DIM)) * scale).astype(np.float32)
        matrix[rng.integers(0, n, n // 3)] = matrix[0]  # many ties
        query = matrix[int(rng.integers(0, n))] + np.float32(scale * 1e-4 * (trial % 3))
        row_ids = rng.permutation(n).astype(np.uint64) * 3
        vectors = flat.FlatVectors.of(matrix, row_ids)
        k = int(rng.integers(1, 30))
        distances, found = flat.nearest(vectors, query, k)
        exact = flat.squared_l2(vectors.matrix, query)
        order = np.lexsort((vectors.row_ids, exact))[:k]
        assert found.tolist() == vectors.row_ids[order].tolist()
        assert distances.tolist() == exact[order].tolist()


def test_plans_are_kept_per_snapshot(tmp_path: Path) -> None:
    ns, _ = _namespace(tmp_path / "ns", {"a": 4, "b": 3})
    first = ns.plan_scan("tenant = 'b'", ["id"])
    again = ns.plan_scan("tenant = 'b'", ["id"])
    assert [t is u for t, u in zip(first, again, strict=True)] == [True]
    assert ns.plan_scan("tenant = 'b'", None)[0] is not first[0]  # other columns
    other = lp.PartitionedNamespace.open(str(tmp_path / "ns"))
    ns.write(
        pa.table({"id": [50], "tenant": ["b"], "v": [[1.0] * DIM]}, schema=SCHEMA),
        mode="overwrite",
    )
    assert ns.count_rows("tenant = 'b'") == 1
    assert (
        ns.search(np.ones(DIM, np.float32), k=3, columns=["id"]).column("id").to_pylist()[0] == 50
    )
    assert other.count_rows("tenant = 'b'") == 3  # its own snapshot, its own plans
    with pytest.raises(errors.InvalidInputError):
        ns.plan_scan("no_such_column = 1")
    with pytest.raises(errors.InvalidInputError):  # an error is not kept as a plan
        ns.plan_scan("no_such_column = 1")
