"""A tenant's search answered from memory does little per query (issue 29): the index
definitions, output fields, plan and leaf ranks are kept per snapshot (search/setup.py), the
winners are one take of the leaf's kept columns conformed once (no conversion per query),
the probed partitions are the ones a full stable sort picks, and client threads take turns
through the numpy passes (search/turns.py) but never hold that turn in a Lance call."""

from __future__ import annotations

import importlib
import shutil
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.search import definitions, ivfpq, query
from tests.search.training_helpers import integer_rows

DIM = 16
SCHEMA = pa.schema(
    [("id", pa.int64()), ("tenant", pa.string()), ("v", pa.list_(pa.float32(), DIM))]
)
SIZES = {"a": 700, "b": 600, "c": 30}  # two leaves indexed under the shared model, one small


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cpu") / "ns"
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="tenant")
    ns.write(integer_rows(SIZES, DIM, 0, 0))
    made = ns.create_index("v", "IVF_PQ", min_rows=400, num_sub_vectors=4)
    assert made.leaves_indexed == 2
    return root


@pytest.fixture
def ns(built: Path, tmp_path: Path) -> lp.PartitionedNamespace:
    shutil.copytree(built, tmp_path / "ns")
    return lp.PartitionedNamespace.open(str(tmp_path / "ns"))


def _queries(count: int) -> np.ndarray:
    return np.random.default_rng(5).integers(-8, 9, (count, DIM)).astype(np.float32)


def _counted(
    monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, check: Callable[[], None] | None = None
) -> list[int]:
    """Calls of ``owner.name`` counted (``check`` run at each); the original still runs."""
    calls = [0]
    original: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if check is not None:
            check()
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.mark.parametrize("where", [None, "tenant = 'a'"])
def test_a_repeated_search_parses_no_index_definition(
    ns: lp.PartitionedNamespace, monkeypatch: pytest.MonkeyPatch, where: str | None
) -> None:
    parsed = _counted(monkeypatch, definitions.IndexDefinition, "from_json")
    first = [ns.search(q, k=5, filter=where, columns=["id"], nprobes=4) for q in _queries(4)]
    once = parsed[0]
    assert once >= 1
    again = [ns.search(q, k=5, filter=where, columns=["id"], nprobes=4) for q in _queries(4)]
    assert parsed[0] == once  # (before: parsed again by every search)
    assert all(a.equals(b, check_metadata=True) for a, b in zip(first, again, strict=True))


@pytest.mark.parametrize("columns", [["id"], None, ["tenant", "id"]])
def test_a_tenants_winners_are_taken_from_columns_conformed_once(
    ns: lp.PartitionedNamespace, monkeypatch: pytest.MonkeyPatch, columns: list[str] | None
) -> None:
    queries = _queries(5)
    where = "tenant = 'a'"
    # a residual keeping every row: the leaf searched by Lance, merged in Arrow
    expected = [
        ns.search(q, k=7, filter=f"{where} AND id >= 0", columns=columns, nprobes=4)
        .drop_columns(["_distance"])
        .equals(
            ns.search(q, k=7, filter=where, columns=columns, nprobes=4).drop_columns(["_distance"])
        )
        for q in queries
    ]
    assert all(expected)  # (the same rows, the same columns and partitions)
    for q in queries:  # the leaf's columns read twice: kept
        ns.search(q, k=7, filter=where, columns=columns, nprobes=4)
    want = [ns.search(q, k=7, filter=where, columns=columns, nprobes=4) for q in queries]
    # the conversion of the leaf's columns, where the leaf is read (search/leaves.py, after)
    owner = getattr(importlib.import_module("lance_partitioned.search"), "leaves", query)
    conformed = _counted(monkeypatch, owner, "conform_for_read")
    takes = _counted(monkeypatch, lance.LanceDataset, "_take_rows")
    got = [ns.search(q, k=7, filter=where, columns=columns, nprobes=4) for q in queries]
    assert (conformed[0], takes[0]) == (0, 0)  # (before: each column conformed per search)
    for a, b in zip(got, want, strict=True):
        assert a.equals(b, check_metadata=True)
        assert a.column_names == [*(columns or SCHEMA.names), "_distance", "_partition"]
        assert set(a.column("_partition").to_pylist()) == {"tenant=a"}


def test_the_probed_partitions_are_a_stable_sorts_first() -> None:
    rng = np.random.default_rng(3)
    for trial in range(3000):
        size = int(rng.integers(1, 80))
        count = int(rng.integers(1, 90))
        if trial % 2:  # many ties
            distances = rng.integers(0, 4, size).astype(np.float32)
        else:
            distances = rng.standard_normal(size).astype(np.float32)
        if trial % 5 == 0:
            distances[rng.integers(0, size, 3)] = np.nan
        want = np.argsort(distances, kind="stable")[:count]
        assert np.array_equal(ivfpq._nearest_partitions(distances, count), want)


def test_threads_take_turns_in_the_numpy_passes_and_never_in_lance(
    ns: lp.PartitionedNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    turns = importlib.import_module("lance_partitioned.search.turns")  # (absent before)
    lock = turns.turn(ns._manifest.root)
    held = threading.local()

    passes = [0]

    def inside() -> None:
        assert lock.locked()
        passes[0] += 1

    def outside() -> None:
        # a Lance call of this thread is never made while this thread holds the turn
        assert not getattr(held, "inside", False)

    original = ivfpq.namespace_nearest

    def nearest(*args: Any, **kwargs: Any) -> Any:
        inside()
        held.inside = True
        try:
            return original(*args, **kwargs)
        finally:
            held.inside = False

    monkeypatch.setattr(ivfpq, "namespace_nearest", nearest)
    lance_calls = _counted(monkeypatch, lance.LanceDataset, "to_table", outside)
    _counted(monkeypatch, lance.LanceDataset, "_take_rows", outside)
    queries = _queries(16)
    for where in (None, "tenant = 'a'", "tenant IN ('b', 'c') AND id >= 0"):
        sequential = [ns.search(q, k=6, filter=where, nprobes=4) for q in queries]

        def search(q: np.ndarray, where: str | None = where) -> pa.Table:
            return ns.search(q, k=6, filter=where, nprobes=4)

        with ThreadPoolExecutor(2) as pool:
            together = list(pool.map(search, queries))
        for a, b in zip(sequential, together, strict=True):
            assert a.equals(b, check_metadata=True)
    assert passes[0] == 2 * 2 * len(queries)  # the IVF_PQ passes: every one in the turn
    assert lance_calls[0] > 0  # the leaves read and the residual's leaves searched by Lance
