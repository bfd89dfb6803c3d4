"""Row-level changes that lose their ``__manifest`` commit to a concurrent append are rebased
over it (WriteSerializable, ``transaction/rebase.py``), not redone: an append to another
partition costs a new ``__manifest`` commit only, an append to the changed partition the same
prepared change committed again on top, and the rows appended meanwhile are not changed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import transaction

SCHEMA = pa.schema([("id", pa.int64()), ("c", pa.string()), ("n", pa.int64())])


def rows(ids: list[int], c: str, n: int = 0) -> pa.Table:
    return pa.table({"id": ids, "c": [c] * len(ids), "n": [n] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def ns(tmp_path: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="c")
    ns.write(pa.concat_tables([rows(list(range(10)), "US"), rows(list(range(10, 20)), "FR")]))
    return ns


def latest(ns: lp.PartitionedNamespace, c: str) -> int:
    """The latest Lance version of the leaf of partition ``c``."""
    (task,) = ns.refresh().plan_scan(f"c = '{c}'")
    return int(lance.dataset(task.uri).latest_version)


def table(ns: lp.PartitionedNamespace) -> dict[int, tuple[str, int]]:
    return {r["id"]: (r["c"], r["n"]) for r in ns.refresh().to_table().to_pylist()}


OPERATIONS: dict[str, Callable[[lp.PartitionedNamespace, str], Any]] = {
    "update": lambda ns, c: ns.update(f"c = '{c}' AND id % 2 = 0", {"n": "n + 1"}),
    "delete": lambda ns, c: ns.delete(f"c = '{c}' AND id % 2 = 0"),
    "merge": lambda ns, c: (
        ns.merge(rows([12, 14] if c == "FR" else [2, 4], c, 1), on="id")
        .when_matched_update_all()
        .execute()
    ),
}


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_an_append_to_another_partition_costs_a_manifest_commit_only(
    ns: lp.PartitionedNamespace, operation: str
) -> None:
    """The append to US wins the __manifest between our leaf commits and our __manifest
    commit on FR: the retry commits rows only, so FR gets the version of one commit. (Before:
    the retry restored FR and committed the change again: 3 more Lance versions, and a
    long change lost every retry to a fast appender.)"""
    other = lp.PartitionedNamespace.open(ns.uri)
    before = latest(ns, "FR")
    with transaction.pause_at("leaves_committed", lambda: other.write(rows([100], "US"))):
        result = OPERATIONS[operation](ns, "FR")
    assert result.attempts == 2
    added = latest(ns, "FR") - before
    assert added == 1  # a delete (and its append, fused into one Lance Update)
    assert ns.snapshot.read_version(ns.plan_scan("c = 'FR'")[0].object_id) == latest(ns, "FR")
    got = table(ns)
    assert got[100] == ("US", 0)
    if operation == "delete":
        assert sorted(i for i in got if 10 <= i < 20) == [11, 13, 15, 17, 19]
    elif operation == "update":
        assert [got[i][1] for i in range(10, 20)] == [1, 0] * 5
    else:
        assert [got[i][1] for i in (12, 14, 16)] == [1, 1, 0]


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_an_append_to_the_changed_partition_is_rebased_over(
    ns: lp.PartitionedNamespace, operation: str
) -> None:
    """The append lands in the partition we change: our prepared change and staged rows are
    committed again on top of it, and its rows are not changed although they match (rows
    appended meanwhile are serialized after the change). (Before: the change was planned
    again and changed the appended rows too.)"""
    other = lp.PartitionedNamespace.open(ns.uri)
    with transaction.pause_at("leaves_committed", lambda: other.write(rows([30, 32], "FR"))):
        result = OPERATIONS[operation](ns, "FR")
    assert result.attempts == 2
    got = table(ns)
    assert got[30] == ("FR", 0)
    assert got[32] == ("FR", 0)
    assert len(got) == (15 if operation == "delete" else 20) + 2
    if operation == "update":
        assert result.rows_updated == 5
        assert [got[i][1] for i in range(10, 20)] == [1, 0] * 5


def test_a_concurrent_delete_in_the_changed_partition_makes_it_plan_again(
    ns: lp.PartitionedNamespace,
) -> None:
    """A commit that changed rows of our leaf in place (not an append) is not rebased over:
    the update is planned again on the new leaf version, and both changes hold."""
    other = lp.PartitionedNamespace.open(ns.uri)
    with transaction.pause_at("leaves_committed", lambda: other.delete("id = 12")):
        result = ns.update("c = 'FR' AND id % 2 = 0", {"n": "n + 1"})
    assert result.attempts == 2
    got = table(ns)
    assert 12 not in got
    assert [got[i][1] for i in (10, 14, 16, 18)] == [1, 1, 1, 1]
    assert [got[i][1] for i in (11, 13, 15, 17, 19)] == [0] * 5


def test_a_partition_spec_change_meanwhile_makes_the_update_plan_again(
    ns: lp.PartitionedNamespace,
) -> None:
    """A spec change between the leaf commits and the __manifest commit: the update is planned
    again and its moved rows are staged under the new spec. (Before: the update merged writes
    staged under two specs and raised InternalError.)"""
    other = lp.PartitionedNamespace.open(ns.uri)
    with transaction.pause_at(
        "leaves_committed", lambda: other.update_partition_spec("c, bucket(2, id)")
    ):
        result = ns.update("id IN (1, 12)", {"c": "'DE'"})
    assert result.rows_updated == 2
    got = table(ns)
    assert got[1] == ("DE", 0)
    assert got[12] == ("DE", 0)
    specs = {t.spec_version for t in ns.plan_scan("c = 'DE'")}
    assert specs == {2}
