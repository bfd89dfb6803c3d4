"""A search repeated on the same snapshot redoes no per-leaf work (issue 29): the kept leaves
are classified once per scan plan (search/prepared.py) and the winners' columns read from
memory once kept (search/rows.py); a write gives a new snapshot, whose search sees the new
rows and never the deleted ones, and equals a search with every cache empty."""

from __future__ import annotations

import contextlib
import importlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.runtime import leaf_cache
from lance_partitioned.search import encode, flat, ivfpq
from tests.search.training_helpers import integer_rows

DIM = 16
SCHEMA = pa.schema(
    [("id", pa.int64()), ("tenant", pa.string()), ("v", pa.list_(pa.float32(), DIM))]
)
# three leaves indexed under the shared model, two small ones (under min_rows) encoded
SIZES = {"a": 700, "b": 600, "c": 500, "d": 30, "e": 20}
MODE = b"lance-partitioned.ivf_pq"


def _rows(sizes: dict[str, int], first_id: int = 0, seed: int = 0) -> pa.Table:
    return integer_rows(sizes, DIM, first_id, seed)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("repeated") / "ns"
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="tenant")
    ns.write(_rows(SIZES))
    made = ns.create_index("v", "IVF_PQ", min_rows=400, num_sub_vectors=4)
    assert (made.leaves_indexed, made.leaves_flat) == (3, 2)
    return root


@pytest.fixture
def ns(built: Path, tmp_path: Path) -> lp.PartitionedNamespace:
    shutil.copytree(built, tmp_path / "ns")
    return lp.PartitionedNamespace.open(str(tmp_path / "ns"))


def _clear() -> None:
    """Every search cache emptied (as in a new process)."""
    for module in (ivfpq, encode, flat, leaf_cache):
        module.clear()
    for name in ("prepared", "rows"):  # (absent before issue 29's change)
        with contextlib.suppress(ModuleNotFoundError):
            importlib.import_module(f"lance_partitioned.search.{name}").clear()


class _Count:
    """Calls of a method, counted (the method itself still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> None:
        self.calls = 0
        original: Callable[..., Any] = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> _Count:
    return _Count(monkeypatch, lp.ScanTask, "open")


@pytest.fixture
def takes(monkeypatch: pytest.MonkeyPatch) -> _Count:
    return _Count(monkeypatch, lance.LanceDataset, "_take_rows")


def _search(ns: lp.PartitionedNamespace, query: np.ndarray) -> pa.Table:
    return ns.search(query, k=10, columns=["id", "tenant"], nprobes=4)


def _fresh(root: str, query: np.ndarray) -> pa.Table:
    _clear()
    return _search(lp.PartitionedNamespace.open(root), query)


def _queries(count: int) -> np.ndarray:
    return np.random.default_rng(7).integers(-8, 9, (count, DIM)).astype(np.float32)


def test_a_repeated_search_opens_no_leaf_and_takes_no_row(
    ns: lp.PartitionedNamespace, opens: _Count, takes: _Count
) -> None:
    queries = _queries(6)
    expected = [_fresh(ns.uri, q) for q in queries]
    for q in queries:  # every leaf's columns read twice: kept
        _search(ns, q)
        _search(ns, q)
    opens.calls = takes.calls = 0
    for q, want in zip(queries, expected, strict=True):
        got = _search(ns, q)
        assert got.equals(want, check_metadata=True)
        assert got.schema.metadata[MODE] == b"namespace"
    assert (opens.calls, takes.calls) == (0, 0)


def test_filtered_searches_are_kept_apart(ns: lp.PartitionedNamespace, opens: _Count) -> None:
    query = _queries(1)[0]
    for where in (None, "tenant IN ('a', 'd')", None, "tenant IN ('a', 'd')"):
        got = ns.search(query, k=10, columns=["id", "tenant"], nprobes=4, filter=where)
        assert set(got.column("tenant").to_pylist()) <= ({"a", "d"} if where else set(SIZES))
    assert opens.calls == len(SIZES) + 2  # the first of each only


@pytest.mark.parametrize("write", ["append", "delete", "overwrite"])
def test_a_write_is_seen_by_the_next_search(
    ns: lp.PartitionedNamespace, opens: _Count, write: str
) -> None:
    query = _queries(1)[0]
    for _ in range(3):
        before = _search(ns, query)
    ids = before.column("id").to_pylist()
    if write == "append":  # rows at distance 0, in an indexed leaf and a small one
        added = _rows({"a": 2, "e": 2}, first_id=10_000)
        vectors = np.tile(query, (4, 1))
        added = added.set_column(
            2, "v", pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM)
        )
        ns.write(added)
    elif write == "delete":
        ns.delete(f"id IN ({', '.join(map(str, ids))})")
    else:
        ns.write(_rows({"a": 50, "f": 30}, first_id=20_000, seed=3), mode="overwrite")
    opens.calls = 0
    after = _search(ns, query)
    assert _search(ns, query).equals(after, check_metadata=True)
    assert opens.calls == len(ns.plan_scan())  # the new snapshot's leaves, classified once
    got = after.column("id").to_pylist()
    if write == "append":
        assert set(got[:4]) == set(range(10_000, 10_004))
        # leaf a's new fragment searched by Lance (exact), leaf e's rows by their PQ codes
        assert after.column("_distance").to_pylist()[:2] == [0.0, 0.0]
    elif write == "delete":
        assert not set(got) & set(ids)
    else:
        assert all(i >= 20_000 for i in got)
    assert after.equals(_fresh(ns.uri, query), check_metadata=True)


@pytest.mark.parametrize("width", [4, 8, 12, 16, 64])
def test_adc_row_sums_are_numpys_bit_for_bit(width: int) -> None:
    """The IVF_PQ pass adds each row's looked-up distances column by column, in the order
    numpy's ``sum(axis=1)`` adds them: the same float32 distances."""
    values = np.random.default_rng(width).standard_exponential((3000, width)) ** 3
    values = values.astype(np.float32)
    want = values.sum(axis=1, dtype=np.float32)
    assert np.array_equal(ivfpq._row_sums(values), want)
