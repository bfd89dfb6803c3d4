"""Property: a flat search (no index, or an IVF_FLAT index probed in full) equals numpy's exact
top-k over ``ns.to_table(filter)``, for random filters, identity and bucket specs, two spec
versions, and k larger than some leaves."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp
from lance_partitioned.search.query import _Leaf
from tests.property.strategies import examples

from .helpers import DIM, distances_by_id, exact_top_k, namespace, rows

FILTERS = [
    None,
    "tenant = 'a'",
    "tenant = 'b'",
    "tenant IN ('a', 'c') AND grp < 4",
    "grp > 2",
    "id % 3 = 1",
    "id < 20 OR tenant = 'c'",
    "tenant = 'zz'",
]
_CACHE: dict[str, lp.PartitionedNamespace] = {}


def _namespace(layout: str) -> lp.PartitionedNamespace:
    """One namespace per layout, made once: identity, bucket, and two spec versions."""
    if layout not in _CACHE:
        root = Path(tempfile.mkdtemp()) / layout
        if layout == "identity":
            ns = namespace(root)
        elif layout == "bucket":
            ns = namespace(root, "bucket(3, id)")
        else:
            ns = namespace(root)
            ns.update_partition_spec("bucket(2, id)")
            ns.write(rows({"a": 7, "d": 12}, first_id=100, seed=1))
        _CACHE[layout] = ns
    return _CACHE[layout]


def _check(
    ns: lp.PartitionedNamespace, query: np.ndarray, k: int, where: str | None, **kw: object
) -> None:
    got = ns.search(query, k=k, filter=where, columns=["id"], **kw)
    table = ns.to_table(where)
    expected = exact_top_k(table, query, k)
    distances = got.column("_distance").to_numpy()
    np.testing.assert_array_equal(distances, expected)
    truth = distances_by_id(table, query)
    ids = got.column("id").to_pylist()
    assert len(set(ids)) == len(ids)
    assert [truth[i] for i in ids] == distances.tolist()
    assert got.column_names == ["id", "_distance", "_partition"]


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    layout=st.sampled_from(["identity", "bucket", "two_specs"]),
    where=st.sampled_from(FILTERS),
    k=st.integers(1, 70),
    query=st.lists(st.integers(-6, 6), min_size=DIM, max_size=DIM),
)
def test_flat_search_is_exact_top_k(
    layout: str, where: str | None, k: int, query: list[int]
) -> None:
    ns = _namespace(layout)
    _check(ns, np.asarray(query, np.float32) / 2, k, where)


def test_ivf_flat_probed_in_full_is_exact(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns", sizes={"a": 600, "b": 300, "c": 9})
    result = ns.create_index("v", "IVF_FLAT", min_rows=256, num_partitions=2)
    assert (result.leaves_indexed, result.leaves_flat) == (2, 1)
    query = np.asarray([0.5, -1, 1.5, 0], np.float32)
    for where in (None, "tenant = 'a'", "grp > 3"):
        _check(ns, query, 25, where, nprobes=2)


def test_residual_lance_cannot_evaluate_is_searched_exactly(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("n", pa.int32()), ("v", pa.list_(pa.float32(), DIM))])
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=schema, partition_by="bucket(2, id)"
    )
    data = rows({"a": 30})
    ns.write(
        pa.table({"id": data["id"], "n": pa.array(np.arange(30) % 5, pa.int32()), "v": data["v"]})
    )
    ns.alter_column_type("n", pa.int64())  # leaves keep int32: the residual runs in memory
    leaf = _Leaf(ns.plan_scan("n >= 3")[0], ns.namespace_schema, list(ns.schema))
    assert not leaf.exact_filter
    _check(ns, np.asarray([1, 1, 0, -1], np.float32), 7, "n >= 3")


def test_k_must_be_positive(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    with pytest.raises(lp.errors.InvalidInputError):
        ns.search(np.zeros(DIM), k=0)
    with pytest.raises(lp.errors.InvalidInputError):
        ns.search(np.zeros(DIM + 1))
