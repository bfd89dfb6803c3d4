"""What a row-level change does per leaf beyond the Lance operations themselves (issue 31:
at most 1.3x pylance alone): no lookup of a leaf's latest version before its commit, and
an in-place update's rows staged back into their leaves without partitioning them again."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import lance.fragment
import pyarrow as pa
import pytest

from lance_partitioned import ingest, scan
from lance_partitioned.transaction import leaves

from .helpers import contents, create, expected, oracle, rows

update_module = importlib.import_module("lance_partitioned.dml.update")  # (not the function)


def _counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (still called) while the test runs."""
    calls = [0]
    original: Callable[..., Any] = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.fixture
def data() -> pa.Table:
    return rows(60, seed=3)


def test_leaf_changes_commit_without_looking_up_each_leafs_latest_version(
    tmp_path: Path, data: pa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each leaf is at the version the __manifest pins (no other writer): its change commits
    on that version at once, as pylance's own update does, with no open of its latest."""
    ns = create(tmp_path / "ns", "bucket(4, user_id)", data)
    looked = _counting(monkeypatch, leaves, "_latest_version")
    ns.update("id % 3 = 0", set={"amount": "amount + 1"})
    ns.delete("id % 5 = 0")
    assert looked == [0]
    want = oracle(
        data,
        "SELECT * REPLACE (CASE WHEN id % 3 = 0 THEN amount + 1 ELSE amount END AS amount) "
        "FROM t WHERE id % 5 <> 0",
    )
    assert contents(ns) == expected(want)


def test_an_in_place_update_stages_each_leafs_rows_back_without_partitioning_them(
    tmp_path: Path, data: pa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No assignment changes a partition source: every row is staged back into the leaf it
    was read from, without computing its partition values or looking its leaf up again; an
    update that does assign one still moves rows to the partitions they now belong to."""
    ns = create(tmp_path / "ns", "year(ts), country", data)
    partitioned = _counting(monkeypatch, ingest._Stager, "partition")
    ns.update("user_id IS NOT NULL", set={"amount": "id * 3 + 1", "name": "name || '!'"})
    assert partitioned == [0]
    want = oracle(
        data,
        "SELECT * REPLACE (CASE WHEN user_id IS NOT NULL THEN id * 3 + 1 ELSE amount END "
        "AS amount, CASE WHEN user_id IS NOT NULL THEN name || '!' ELSE name END AS name) "
        "FROM t",
    )
    assert contents(ns) == expected(want)
    for country in ("US", "FR", "DE"):  # each row still in its own partition
        found = ns.to_table(f"country = '{country}'").column("country").to_pylist()
        assert set(found) == {country}
    ns.update("country = 'US'", set={"country": "'FR'"})
    assert partitioned[0] > 0
    assert ns.to_table("country = 'US'").num_rows == 0
    moved = sorted(r["id"] for r in want.to_pylist() if r["country"] in ("US", "FR"))
    assert sorted(ns.to_table("country = 'FR'").column("id").to_pylist()) == moved


def test_an_update_stages_each_leafs_rows_without_opening_the_leaf_again(
    tmp_path: Path, data: pa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planner opened each leaf at its read_version: its new rows are written as a data
    file of that leaf's format at once (``runtime.staging``), not by ``write_fragments``,
    which lists the leaf's versions and reads its manifest again, per leaf."""
    ns = create(tmp_path / "ns", "bucket(4, user_id)", data)
    written: list[str] = []
    original = lance.fragment.write_fragments

    def looked(data: Any, uri: Any, *args: Any, **kwargs: Any) -> Any:
        if not str(uri).startswith("memory://"):  # (a schema's template, once)
            written.append(str(uri))
        return original(data, uri, *args, **kwargs)

    monkeypatch.setattr(lance.fragment, "write_fragments", looked)
    result = ns.update("id % 3 = 0", set={"amount": "amount + 1"})
    assert result.leaves_read >= 2
    assert written == []
    want = oracle(
        data,
        "SELECT * REPLACE (CASE WHEN id % 3 = 0 THEN amount + 1 ELSE amount END AS amount) FROM t",
    )
    assert contents(ns) == expected(want)


def test_an_update_converts_each_leafs_lance_schema_once(
    tmp_path: Path, data: pa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pylance converts a dataset's schema at each ``.schema`` (about 0.1 ms, paid per leaf
    of the ~500 of issue 31): the read of a leaf's matched rows converts it once, for its
    columns, the residual's Lance filter and whether Lance accepts that filter (a residual
    of SQL the predicate tree does not model, as ``id % 3 = 0``)."""
    ns = create(tmp_path / "ns", "bucket(4, user_id)", data)
    converted = [0]
    original = lance.LanceDataset.schema

    def schema(self: lance.LanceDataset) -> pa.Schema:
        if "__manifest" not in self.uri:  # (the __manifest table's: once per commit)
            converted[0] += 1
        return original.__get__(self)

    monkeypatch.setattr(lance.LanceDataset, "schema", property(schema))
    result = ns.update("id % 3 = 0", set={"amount": "amount + 1"})
    assert result.leaves_read >= 4
    assert converted[0] <= result.leaves_read
    want = oracle(
        data,
        "SELECT * REPLACE (CASE WHEN id % 3 = 0 THEN amount + 1 ELSE amount END AS amount) FROM t",
    )
    assert contents(ns) == expected(want)


def _filters(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ``filter`` of every scan that reads a leaf's rows (not the ``__manifest``) while the
    test runs. The plan-only scan that asks Lance whether it takes a filter (``columns=[]``,
    ``scan.filters._lance_accepts``) is not counted: it reads no row, and whether it runs, and
    how often, depends on the process's cache and on which worker thread asks first."""
    seen: list[Any] = []
    original = lance.LanceDataset.scanner

    def scanner(self: lance.LanceDataset, *args: Any, **kwargs: Any) -> Any:
        if "__manifest" not in self.uri and kwargs.get("columns") != []:
            seen.append(kwargs.get("filter"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(lance.LanceDataset, "scanner", scanner)
    return seen


MIXED = "(country = 'US' AND id % 2 = 0) OR id % 5 = 0"  # two residuals: US leaves', others'
MIXED_SET = {"amount": "amount * 2", "name": "upper(name)"}
MIXED_SQL = (
    f"SELECT * REPLACE (CASE WHEN {MIXED} THEN amount * 2 ELSE amount END AS amount, "
    f"CASE WHEN {MIXED} THEN upper(name) ELSE name END AS name) FROM t"
)


def test_an_in_place_update_filters_small_leaves_in_one_query_per_residual(
    tmp_path: Path, data: pa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31: a Lance scan with a filter plans it again per leaf. The small leaves of an
    in-place update are read whole, with no filter, and their rows filtered together, one
    query per distinct residual (US leaves and the others here); a leaf none of whose rows
    match is not changed."""
    ns = create(tmp_path / "ns", "year(ts), country", data)
    before = _versions(ns)
    filters = _filters(monkeypatch)
    queries = _counting(monkeypatch, scan, "post_filter")
    result = ns.update(MIXED, set=MIXED_SET)
    assert filters
    assert all(f is None for f in filters)
    assert queries == [2]
    want = oracle(data, MIXED_SQL)
    assert contents(ns) == expected(want)
    matched = oracle(data, f"SELECT * FROM t WHERE {MIXED}")
    assert result.rows_updated == matched.num_rows
    assert result.rows_moved == 0
    after = _versions(ns)
    changed = {leaf for leaf in before if after[leaf] != before[leaf]}
    assert result.leaves_read == len(changed) < len(before)  # (a leaf without a match)


def test_small_leaves_past_the_batch_budget_are_read_with_their_filter(
    tmp_path: Path, data: pa.Table, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows held for the batch stay within ``BATCH_BYTES``: a leaf whose whole rows do
    not fit is read again with its filter by Lance and staged alone; the update is the
    same."""
    ns = create(tmp_path / "ns", "year(ts), country", data)
    leaves = len(_versions(ns))
    monkeypatch.setattr(update_module, "BATCH_BYTES", 3 * data.nbytes // leaves)  # ~3 leaves
    filters = _filters(monkeypatch)
    ns.update(MIXED, set=MIXED_SET)
    unfiltered = [f for f in filters if f is None]
    assert len(unfiltered) == leaves  # every leaf read whole first
    assert 0 < len(filters) - leaves < leaves  # some leaves fit, the others were read again
    assert contents(ns) == expected(oracle(data, MIXED_SQL))


def _versions(ns: Any) -> dict[str, int]:
    """Each leaf's ``read_version`` in the latest ``__manifest`` snapshot."""
    return {task.object_id: task.read_version for task in ns.refresh().plan_scan("true")}
