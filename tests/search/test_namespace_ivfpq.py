"""Leaves whose IVF_PQ indexes share the namespace's model are searched as one IVF_PQ search
(search/ivfpq.py): the same rows and distances as Lance's own search of each leaf merged, the
fallback to it where that cannot be reproduced (deleted rows, unindexed fragments, a residual
filter, no nprobes, another metric)."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.search.definitions import INDICES_KEY
from tests.search.training_helpers import integer_rows, shared_model_copy

try:
    from lance_partitioned.search import ivfpq
except ImportError:  # before the module: every test here fails on its own
    ivfpq = None  # type: ignore[assignment]

DIM = 16  # a multiple of 16: Lance's order of additions in the refine
SUBS = 4
SCHEMA = pa.schema(
    [("id", pa.int64()), ("tenant", pa.string()), ("v", pa.list_(pa.float32(), DIM))]
)
SIZES = {"a": 700, "b": 600, "c": 500, "small": 30}
MODE = b"lance-partitioned.ivf_pq"
SMALL = b"lance-partitioned.ivf_pq.small"


def _rows(sizes: dict[str, int], first_id: int = 0, seed: int = 0) -> pa.Table:
    return integer_rows(sizes, DIM, first_id, seed)


def _namespace(root: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="tenant")
    ns.write(_rows(SIZES))
    built = ns.create_index("v", "IVF_PQ", min_rows=400, num_sub_vectors=SUBS)
    assert (built.leaves_indexed, built.leaves_flat) == (3, 1)
    return ns


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> lp.PartitionedNamespace:
    return _namespace(tmp_path_factory.mktemp("ivfpq") / "ns")


def _queries(count: int) -> np.ndarray:
    return np.random.default_rng(3).integers(-8, 9, size=(count, DIM)).astype(np.float32)


def _per_leaf(
    ns: lp.PartitionedNamespace,
    query: np.ndarray,
    k: int,
    where: str | None,
    small_coded: bool = False,
    **nearest: int,
) -> tuple[np.ndarray, list[int]]:
    """Lance's own search of every kept leaf (its index, or flat), merged by distance;
    ``small_coded``: a leaf without an index searched as Lance searches a copy of it
    indexed with the namespace's shared model (search/encode.py)."""
    found = []
    for task in ns.plan_scan(where):
        ds = lance.dataset(task.uri, version=task.read_version)
        if small_coded and not ds.describe_indices():
            ds = shared_model_copy(ns, ds)
        residual = None if where is None or "id" not in where else where
        table = ds.to_table(
            columns=["id", "_distance"],
            nearest={"column": "v", "q": query, "k": k, **nearest},
            filter=residual,
            prefilter=True,
        )
        pairs = zip(
            table.column("_distance").to_pylist(), table.column("id").to_pylist(), strict=True
        )
        found += list(pairs)
    found.sort()
    return np.array([d for d, _ in found[:k]], np.float32), [i for _, i in found[:k]]


def _assert_same(got: pa.Table, distances: np.ndarray, ids: list[int]) -> None:
    """Equal distances (float tolerance: the order of Lance's additions) and the same rows,
    up to rows tied with the last one kept."""
    ours = got.column("_distance").to_numpy()
    np.testing.assert_allclose(ours, distances, rtol=1e-5, atol=1e-5)
    if len(ours):
        below = ours[-1] - 1e-4
        assert {
            i for i, d in zip(got.column("id").to_pylist(), ours, strict=True) if d < below
        } == {i for i, d in zip(ids, distances, strict=True) if d < below}


def test_codes_read_from_the_index_give_lances_distances(shared: lp.PartitionedNamespace) -> None:
    coded = 0
    for task in shared.plan_scan():
        ds = lance.dataset(task.uri, version=task.read_version)
        codes = ivfpq.leaf_codes(ds, "v", {}, True)
        if ds.count_rows() < 400:  # the small leaf has no index: searched flat
            assert codes is None
            continue
        assert codes is not None
        coded += 1
        assert codes.codes.shape == (ds.count_rows(), SUBS)
        assert sorted(codes.row_ids.tolist()) == sorted(
            ds.to_table(columns=[], with_row_id=True).column("_rowid").to_pylist()
        )
        for query in _queries(5):
            [(_, distances, row_ids)] = ivfpq.namespace_nearest([codes], [0], query, 20, 2)
            lance_top = ds.to_table(
                columns=["_distance"],
                nearest={"column": "v", "q": query, "k": 20, "nprobes": 2},
                with_row_id=True,
            )
            expected = lance_top.column("_distance").to_numpy()
            np.testing.assert_allclose(distances, expected, rtol=1e-5, atol=1e-5)
            below = expected[-1] - 1e-4  # the same rows, up to ties with the last one
            theirs = lance_top.column("_rowid").to_numpy()
            assert set(row_ids[distances < below]) == set(theirs[expected < below])
    assert coded == 3


@pytest.mark.parametrize("where", [None, "tenant IN ('a', 'b')", "tenant = 'c'", "id < 900"])
@pytest.mark.parametrize("nprobes", [1, 3, 100])
@pytest.mark.parametrize("refine_factor", [None, 3])
def test_one_search_equals_the_leaves_merged(
    shared: lp.PartitionedNamespace, where: str | None, nprobes: int, refine_factor: int | None
) -> None:
    nearest = {"nprobes": nprobes}
    if refine_factor is not None:
        nearest["refine_factor"] = refine_factor
    small = where is None  # the small leaf kept, with an indexed leaf, no residual
    for query in _queries(4):
        got = shared.search(query, k=10, filter=where, columns=["id"], **nearest)
        _assert_same(got, *_per_leaf(shared, query, 10, where, small, **nearest))
        residual = where is not None and "id" in where
        expected = b"per-leaf" if residual else b"namespace"
        assert got.schema.metadata[MODE] == expected
        assert got.schema.metadata[SMALL] == (b"1" if small else b"0")


def test_exact_when_every_row_is_refined(shared: lp.PartitionedNamespace) -> None:
    """Every partition probed and every row refined: both searches are exact, equal bit for
    bit (the vectors are small integers) to numpy's brute force."""
    table = shared.to_table(columns=["id", "v"])
    vectors = np.stack(table.column("v").to_numpy(zero_copy_only=False))
    for query in _queries(3):
        got = shared.search(query, k=15, nprobes=100, refine_factor=200, columns=["id"])
        assert got.schema.metadata[MODE] == b"namespace"
        exact = ((vectors - query) ** 2).sum(axis=1)
        assert got.column("_distance").to_pylist() == np.sort(exact)[:15].tolist()
        distances, _ = _per_leaf(shared, query, 15, None, True, nprobes=100, refine_factor=200)
        assert got.column("_distance").to_pylist() == distances.tolist()


def test_deleted_rows_and_new_fragments_fall_back(tmp_path: Path) -> None:
    ns = _namespace(tmp_path / "ns")
    query = _queries(1)[0]
    before = ns.search(query, k=50, nprobes=100, columns=["id"])
    gone = before.column("id").to_pylist()[:5]
    ns.delete(f"id IN ({', '.join(map(str, gone))})")
    # a leaf's new fragment (outside its index): searched by Lance, flat, and merged
    added = _rows({"b": 5}, first_id=10_000, seed=1)
    added = added.set_column(2, "v", pa.array([query.tolist()] * 5, pa.list_(pa.float32(), DIM)))
    ns.write(added)
    for nprobes in (2, 100):
        got = ns.search(query, k=10, nprobes=nprobes, columns=["id"])
        assert not set(got.column("id").to_pylist()) & set(gone)
        assert got.column("id").to_pylist()[:5] == list(range(10_000, 10_005))
        small = got.schema.metadata[SMALL] == b"1"
        _assert_same(got, *_per_leaf(ns, query, 10, None, small, nprobes=nprobes))
    leaves = {task.partition_values[0][1]: task for task in ns.plan_scan()}
    deleted = {
        tenant
        for tenant, task in leaves.items()
        if any(
            f.metadata.deletion_file is not None
            for f in lance.dataset(task.uri, version=task.read_version).get_fragments()
        )
    }
    for tenant, task in leaves.items():
        ds = lance.dataset(task.uri, version=task.read_version)
        codes = ivfpq.leaf_codes(ds, "v", {}, True)
        assert (codes is None) == (tenant in deleted or tenant in ("b", "small"))


@pytest.mark.parametrize("options", [{}, {"nprobes": 3, "metric": "cosine"}])
def test_lances_own_probing_or_metric_is_left_to_lance(
    shared: lp.PartitionedNamespace, options: dict[str, object]
) -> None:
    query = _queries(1)[0]
    got = shared.search(query, k=10, columns=["id"], **options)  # type: ignore[arg-type]
    assert got.schema.metadata[MODE] == b"per-leaf"
    assert got.num_rows == 10


def test_small_leaves_searched_together(tmp_path: Path) -> None:
    """Small unindexed leaves searched again together are searched in one numpy pass: the
    rows and distances (exact: small integers) of Lance's flat search of each, merged."""
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=SCHEMA, partition_by="tenant")
    ns.write(_rows({f"t{i}": 40 + 7 * i for i in range(6)}))
    for query in _queries(4):
        for where in (None, "tenant IN ('t1', 't3', 't4')", None):
            got = ns.search(query, k=12, filter=where, columns=["id"])
            distances, ids = _per_leaf(ns, query, 12, where)
            assert got.column("_distance").to_pylist() == distances.tolist()
            _assert_same(got, distances, ids)
            assert got.schema.metadata[MODE] == b"per-leaf"  # no index: Lance's flat search


def _adc(ns: lp.PartitionedNamespace, vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The asymmetric distance of each vector's IVF_PQ code under the namespace's shared
    model (nearest centroid, residual's nearest codeword per sub-vector), in numpy."""
    [definition] = json.loads(ns.snapshot.table_metadata[INDICES_KEY]).values()
    with np.load(Path(ns.uri) / definition["model"]) as model:
        centroids = model["ivf_centroids"].astype(np.float64)
        # sub-vector major: (sub-vectors, 256 codewords, sub-vector dimension)
        book = model["pq_codebook"].astype(np.float64).reshape(SUBS, 256, DIM // SUBS)
    wide = vectors.astype(np.float64)
    part = ((wide[:, None, :] - centroids[None]) ** 2).sum(axis=2).argmin(axis=1)
    residual = (wide - centroids[part]).reshape(len(wide), SUBS, 1, DIM // SUBS)
    codes = ((residual - book[None]) ** 2).sum(axis=3).argmin(axis=2)
    decoded = book[np.arange(SUBS)[None, :], codes].reshape(len(wide), DIM)
    return ((query - centroids[part] - decoded) ** 2).sum(axis=1)


def _by_id(table: pa.Table) -> dict[int, float]:
    ids, distances = table.column("id").to_pylist(), table.column("_distance").to_pylist()
    return dict(zip(ids, distances, strict=True))


def test_small_leaves_searched_through_codes_of_the_shared_model(
    shared: lp.PartitionedNamespace,
) -> None:
    """An approximate global search scores the small unindexed leaf's rows by their PQ codes
    under the shared model (the ADC distance, as Lance's search of a copy of the leaf indexed
    with that model gives); an exact one, or one keeping no indexed leaf, searches it flat."""
    small = shared.to_table(columns=["id", "v"], filter="tenant = 'small'")
    ids = small.column("id").to_numpy()
    vectors = np.stack(small.column("v").to_numpy(zero_copy_only=False))
    [task] = shared.plan_scan("tenant = 'small'")
    copy = shared_model_copy(shared, lance.dataset(task.uri, version=task.read_version))
    for query in _queries(3):
        got = shared.search(
            query, k=2000, nprobes=100, filter="tenant IN ('a', 'small')", columns=["id"]
        )
        assert got.schema.metadata[MODE] == b"namespace"
        assert got.schema.metadata[SMALL] == b"1"
        ours = np.array([_by_id(got)[i] for i in ids.tolist()])
        np.testing.assert_allclose(ours, _adc(shared, vectors, query), rtol=1e-4, atol=1e-3)
        lance_top = copy.to_table(
            columns=["id", "_distance"],
            nearest={"column": "v", "q": query, "k": 30, "nprobes": 100},
        )
        theirs = _by_id(lance_top)
        np.testing.assert_allclose(ours, [theirs[i] for i in ids.tolist()], rtol=1e-5, atol=1e-5)
        exact = ((vectors - query) ** 2).sum(axis=1)
        for options in ({}, {"nprobes": 100}):
            for where in ("tenant IN ('a', 'small')", "tenant = 'small'"):
                if options and "a" in where:
                    continue  # the approximate search above
                flat = shared.search(query, k=2000, filter=where, columns=["id"], **options)
                assert flat.schema.metadata[SMALL] == b"0"
                assert [_by_id(flat)[i] for i in ids.tolist()] == exact.tolist()


def test_deleted_rows_of_small_leaves_are_never_returned(tmp_path: Path) -> None:
    ns = _namespace(tmp_path / "ns")
    small = ns.to_table(columns=["id", "v"], filter="tenant = 'small'")
    gone = small.column("id").to_pylist()[:5]
    ns.delete(f"id IN ({', '.join(map(str, gone))})")
    for query in np.stack(small.column("v").to_numpy(zero_copy_only=False))[:5]:
        for nprobes, refine in ((1, None), (100, None), (2, 5)):
            options = {"nprobes": nprobes} | ({"refine_factor": refine} if refine else {})
            got = ns.search(query, k=40, columns=["id"], **options)
            assert got.schema.metadata[SMALL] == b"1"
            assert not set(got.column("id").to_pylist()) & set(gone)
            _assert_same(got, *_per_leaf(ns, query, 40, None, True, **options))


def test_small_leaf_codes_are_lances_and_numpys(shared: lp.PartitionedNamespace) -> None:
    """A small leaf's codes come from Lance's own transform (an index build's assign and
    encode step) under the shared model; the numpy encoding (its fallback) gives the same."""
    from lance_partitioned.search import encode
    from lance_partitioned.search.flat import flat_vectors

    [task] = shared.plan_scan("tenant = 'small'")
    [indexed, *_] = shared.plan_scan("tenant = 'a'")
    model = ivfpq.leaf_codes(task_ds(indexed), "v", {}, True)
    assert model is not None
    ds = task_ds(task)
    flat = flat_vectors(ds, "v", DIM)
    assert flat is not None
    by_lance = encode._lance_encode(ds, "v", flat, model, "x")
    assert by_lance is not None
    by_numpy = encode.encode(flat, model, "x")
    assert by_lance.starts.tolist() == by_numpy.starts.tolist()
    assert by_lance.row_ids.tolist() == by_numpy.row_ids.tolist()
    assert (by_lance.codes == by_numpy.codes).all()


def task_ds(task: lp.ScanTask) -> lance.LanceDataset:
    return lance.dataset(task.uri, version=task.read_version)
