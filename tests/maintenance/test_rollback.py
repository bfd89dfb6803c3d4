"""Leaves an interrupted write left ahead of their ``read_version``: what ``verify`` says, and
how ``verify(repair=True)`` and ``cleanup`` roll them back, as the next write would."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import lance
import pytest

import lance_partitioned as lp
from lance_partitioned import transaction
from lance_partitioned.maintenance.cleanup import cleanup
from lance_partitioned.verify import Report, verify
from tests.cli.helpers import run_here
from tests.maintenance.helpers import files, now, table

ZERO = dt.timedelta(0)
MERGED = [(1, "a"), (2, "b"), (3, "a"), (4, "c"), (10, "a")]


class Crash(Exception):
    """A writer dying after its leaf commits, before its ``__manifest`` commit."""


def _crash() -> None:
    raise Crash("killed after the leaf commits")


def _rows(ns: lp.PartitionedNamespace) -> list[tuple[int, str]]:
    data = ns.refresh().to_table()
    return sorted(zip(data.column("id").to_pylist(), data.column("k").to_pylist(), strict=True))


def _merge(ns: lp.PartitionedNamespace) -> None:
    source = table([1, 10], ["a", "a"])
    ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()


def _crashed_merge(root: Path) -> tuple[lp.PartitionedNamespace, list[tuple[int, str]]]:
    """A namespace whose merge into partition ``a`` was killed between its leaf commits and
    its ``__manifest`` commit; and its rows."""
    ns = lp.PartitionedNamespace.create(str(root), schema=table([], []).schema, partition_by="k")
    ns.write(table([1, 2, 3], ["a", "b", "a"]))
    ns.write(table([4], ["c"]))
    before, version = _rows(ns), ns.version
    with transaction.pause_at("leaves_committed", _crash), pytest.raises(Crash):
        _merge(ns)
    assert ns.refresh().version == version  # nothing was published
    assert _rows(ns) == before
    return ns, before


def _leaf(ns: lp.PartitionedNamespace, key: str) -> str:
    return str(ns.partitions(f"k = '{key}'", sizes=False).column("object_id")[0].as_py())


def _kinds(report: Report) -> list[tuple[str, str | None]]:
    return [(p.kind, p.object_id) for p in report.problems]


def test_verify_reports_an_interrupted_write_and_cleanup_rolls_it_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ns, before = _crashed_merge(tmp_path / "ns")
    leaf = _leaf(ns, "a")
    report = verify(ns.uri)
    assert _kinds(report) == [("interrupted_write", leaf)]
    message = report.problems[0].message
    assert "above its read_version" in message
    assert "named by no __manifest version" in message
    assert "an interrupted write" in message
    assert "outside the namespace" in message
    assert "verify --repair" in message
    assert run_here(capsys, "verify", ns.uri).code == 1

    done = ns.cleanup(older_than=ZERO)
    assert done.rolled_back == (leaf,)
    assert done.leaf_versions.count > 0  # the unpublished versions went too
    assert verify(ns.uri).healthy
    checked = run_here(capsys, "verify", ns.uri)
    assert checked.code == 0, checked.out
    assert _rows(ns) == before
    assert ns.cleanup(older_than=ZERO).rolled_back == ()

    _merge(ns)  # the next write works on the rolled-back leaf
    assert _rows(ns) == MERGED
    assert verify(ns.uri).healthy


def test_verify_repair_rolls_it_back_and_removes_nothing(tmp_path: Path) -> None:
    ns, before = _crashed_merge(tmp_path / "ns")
    leaf = _leaf(ns, "a")
    on_disk = files(ns.uri)
    report = verify(ns.uri, repair=True)
    assert report.healthy, report.problems
    assert [(p.kind, p.object_id) for p in report.repaired] == [("interrupted_write", leaf)]
    assert set(on_disk) <= set(files(ns.uri))  # a Lance Restore only adds a version
    again = verify(ns.uri, repair=True)
    assert again.healthy
    assert again.repaired == []
    assert _rows(ns) == before
    _merge(ns)
    assert _rows(ns) == MERGED
    assert verify(ns.uri).healthy


def test_a_cleanup_leaves_unpublished_versions_younger_than_its_retention(
    tmp_path: Path,
) -> None:
    ns, _ = _crashed_merge(tmp_path / "ns")
    week = dt.timedelta(days=7)
    assert ns.cleanup(older_than=week).rolled_back == ()  # a writer may still publish them
    assert _kinds(verify(ns.uri)) == [("interrupted_write", _leaf(ns, "a"))]
    later = cleanup(ns._manifest, week, now=now() + dt.timedelta(days=8))
    assert later.rolled_back == (_leaf(ns, "a"),)
    assert verify(ns.uri).healthy


def test_a_dry_run_predicts_the_rollback_and_changes_nothing(tmp_path: Path) -> None:
    ns, _ = _crashed_merge(tmp_path / "ns")
    on_disk = files(ns.uri)
    preview = ns.cleanup(older_than=ZERO, dry_run=True)
    assert files(ns.uri) == on_disk
    assert preview.rolled_back == (_leaf(ns, "a"),)
    assert _kinds(verify(ns.uri)) == [("interrupted_write", _leaf(ns, "a"))]
    done = ns.cleanup(older_than=ZERO)
    assert done.rolled_back == preview.rolled_back
    assert (done.files, done.bytes, done.leaf_versions) == (
        preview.files,
        preview.bytes,
        preview.leaf_versions,
    )
    assert done.kept_leaf_versions == preview.kept_leaf_versions


def test_a_repair_under_a_live_writer_loses_nothing(tmp_path: Path) -> None:
    """A repair between a writer's leaf commit and its ``__manifest`` commit rolls the
    writer's leaf version back, but that version stays: the writer publishes it."""
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=table([], []).schema, partition_by="k"
    )
    ns.write(table([1, 2], ["a", "b"]))
    repairs: list[Report] = []
    with transaction.pause_at(
        "leaves_committed", lambda: repairs.append(verify(ns.uri, repair=True))
    ):
        ns.write(table([3], ["a"]))
    assert [p.kind for p in repairs[0].repaired] == ["interrupted_write"]
    assert _rows(ns) == [(1, "a"), (2, "b"), (3, "a")]
    # the leaf's latest version is the rollback, above the version the writer published
    assert _kinds(verify(ns.uri)) == [("interrupted_write", _leaf(ns, "a"))]
    assert verify(ns.uri, repair=True).healthy  # rolled back to the published version
    assert ns.cleanup(older_than=ZERO).rolled_back == ()
    assert verify(ns.uri).healthy
    assert _rows(ns) == [(1, "a"), (2, "b"), (3, "a")]
    ns.write(table([4], ["a"]))
    assert _rows(ns) == [(1, "a"), (2, "b"), (3, "a"), (4, "a")]


def test_a_manifest_rolled_back_by_hand_is_leaf_ahead_and_not_repaired(tmp_path: Path) -> None:
    """Leaf versions that an older ``__manifest`` version names are not an interrupted
    write: the ``__manifest`` itself was rolled back (here with a Lance restore)."""
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=table([], []).schema, partition_by="k"
    )
    ns.write(table([1], ["a"]))
    ns.write(table([2], ["a"]))
    named = ns.version
    manifest = lance.dataset(f"{ns.uri}/__manifest", version=named - 1)
    manifest.restore()
    report = verify(ns.uri, repair=True)
    assert report.repaired == []
    assert _kinds(report) == [("leaf_ahead", _leaf(ns, "a"))]
    assert f"older __manifest versions [{named}]" in report.problems[0].message
    assert _rows(ns) == [(1, "a")]


def test_a_commit_outside_the_namespace_is_reported_the_same(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=table([], []).schema, partition_by="k"
    )
    ns.write(table([1], ["a"]))
    location = ns.partitions(sizes=False).column("location")[0].as_py()
    lance.write_dataset(table([9], ["a"]), f"{ns.uri}/{location}", mode="append")
    report = verify(ns.uri)
    assert _kinds(report) == [("interrupted_write", _leaf(ns, "a"))]
    assert "(+1 rows)" in report.problems[0].message
    assert verify(ns.uri, repair=True).healthy
    assert _rows(ns) == [(1, "a")]
