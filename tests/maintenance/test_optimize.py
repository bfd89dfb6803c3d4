"""optimize on real Lance tables: compaction, selection, time travel, the __manifest itself,
and an exception at each step (during compaction, before a leaf commit, between the leaf
commits and the __manifest commit, during the __manifest compaction)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import lance_partitioned as lp
from lance_partitioned import errors, transaction
from lance_partitioned.maintenance import optimize as optimize_module
from lance_partitioned.maintenance.optimize import OptimizeProgress
from lance_partitioned.manifest.table import Manifest
from tests.maintenance.optimize_helpers import (
    appended,
    events,
    ids_at,
    latest_leaf_versions,
    leaf_fragments,
    manifest_fragments,
    properties,
    read_versions,
)


class Boom(RuntimeError):
    """The injected crash."""


def _boom() -> None:
    raise Boom("injected")


@pytest.fixture(scope="module")
def thirty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 appends of 12 rows into 3 partitions (read-only template: copy it to change it)."""
    root = tmp_path_factory.mktemp("thirty") / "ns"
    appended(root, 30)
    return root


def _copy(template: Path, tmp_path: Path) -> lp.PartitionedNamespace:
    import shutil

    root = tmp_path / "ns"
    shutil.copytree(template, root)
    return lp.PartitionedNamespace.open(str(root))


def _every_version(root: str, latest: int) -> dict[int, list[int]]:
    return {v: ids_at(root, v) for v in range(2, latest + 1)}


def test_thirty_appends_become_one_fragment_per_leaf(thirty: Path, tmp_path: Path) -> None:
    ns = _copy(thirty, tmp_path)
    assert set(leaf_fragments(ns).values()) == {30}
    before_version = ns.version
    history = _every_version(ns.uri, before_version)
    seen: list[OptimizeProgress] = []

    result = ns.optimize(compact_manifest=False, progress=seen.append)

    assert set(leaf_fragments(ns).values()) == {1}
    ids = ids_at(ns.uri)
    assert ids == list(range(360))  # the same rows, none twice
    assert (result.leaves_compacted, result.leaves_skipped) == (3, 0)
    assert (result.fragments_before, result.fragments_after) == (90, 3)
    assert result.rows == 360
    assert result.bytes_before > result.bytes_after > 0
    assert result.version == ns.version == before_version + 1
    assert result.attempts == 1
    assert sorted(e.object_id for e in seen) == sorted(read_versions(ns))
    assert {(e.compacted, e.fragments_before, e.fragments_after, e.leaves_total) for e in seen} == {
        (True, 30, 1, 3)
    }
    assert sorted(e.leaves_done for e in seen) == [1, 2, 3]
    recorded = properties(ns.uri, result.version)
    assert recorded["lance_partitioned.operation"] == "optimize"
    assert recorded["lance_partitioned.leaves_compacted"] == "3"
    assert recorded["lance_partitioned.partitions_touched"] == "3"
    assert recorded["lance_partitioned.rows_removed"] == "0"  # a compaction keeps every row
    assert recorded["lance_partitioned.fragments_before"] == "90"
    assert recorded["lance_partitioned.fragments_after"] == "3"
    # time travel: every older __manifest version reads what it read before
    assert _every_version(ns.uri, before_version) == history


def test_the_manifest_is_compacted_too(tmp_path: Path) -> None:
    ns = appended(tmp_path / "ns", 3)
    for n in range(15):  # each commit leaves the rows it does not touch in older fragments
        ns.write(events(1000 + 10 * n, 2, countries=[f"C{n}"]))
    before_version = ns.version
    before_fragments = manifest_fragments(ns.uri)
    assert before_fragments > 10
    expected = sorted([*range(36), *(1000 + 10 * n + i for n in range(15) for i in range(2))])
    history = _every_version(ns.uri, before_version)

    result = ns.optimize()

    assert result.version == ns.version == before_version + 2  # leaves, then __manifest
    assert manifest_fragments(ns.uri) == 1
    assert result.manifest_fragments_before > 10
    assert result.manifest_fragments_after == 1
    recorded = properties(ns.uri, result.version)
    assert recorded["lance_partitioned.operation"] == "optimize_manifest"
    assert [
        recorded[f"lance_partitioned.{count}"]
        for count in ("rows_added", "rows_removed", "rows_updated", "partitions_touched")
    ] == ["0"] * 4  # the __manifest's own fragments: no row, no leaf
    # the __manifest rows are those of the leaf commit, unchanged by its compaction
    published = lp.PartitionedNamespace.open(ns.uri, version=before_version + 1)
    assert ns.snapshot.rows.sort_by("object_id").equals(
        published.snapshot.rows.sort_by("object_id")
    )
    assert ns.snapshot.table_metadata == published.snapshot.table_metadata
    assert _every_version(ns.uri, before_version) == history
    assert ids_at(ns.uri) == expected
    # writes go on as before
    ns.write(events(5000, 6))
    assert ids_at(ns.uri) == sorted([*expected, *range(5000, 5006)])


def test_a_filter_selects_leaves_as_a_scan_prunes(thirty: Path, tmp_path: Path) -> None:
    ns = _copy(thirty, tmp_path)
    versions = read_versions(ns)
    (us,) = [task.object_id for task in ns.plan_scan("country = 'US'")]

    result = ns.optimize("country = 'US' AND amount > 10", compact_manifest=False)

    assert (result.leaves_compacted, result.leaves_skipped) == (1, 0)
    assert [leaf.object_id for leaf in result.leaves] == [us]
    fragments = leaf_fragments(ns)
    assert fragments[us] == 1  # compacted whole, not only the rows the filter matches
    assert {oid: n for oid, n in fragments.items() if oid != us} == {
        oid: 30 for oid in versions if oid != us
    }
    after = read_versions(ns)
    assert after[us] != versions[us]
    assert {oid: v for oid, v in after.items() if oid != us} == {
        oid: v for oid, v in versions.items() if oid != us
    }
    assert ids_at(ns.uri) == list(range(360))


def test_a_filter_on_time_compacts_the_days_it_touches(tmp_path: Path) -> None:
    by_day = "year(ts), month(ts), day(ts)"
    ns = appended(tmp_path / "ns", 4, per_append=8, partition_by=by_day)
    since = "ts >= TIMESTAMP '2025-01-05 12:00:00+00:00'"  # covers half of Jan 5
    days = {task.object_id for task in ns.plan_scan(since)}
    assert 0 < len(days) < len(ns.plan_scan())
    fragments = leaf_fragments(ns)
    assert any(fragments[oid] > 1 for oid in days)
    result = ns.optimize(since)
    assert {leaf.object_id for leaf in result.leaves} == days
    after = leaf_fragments(ns)
    assert {oid: n for oid, n in after.items() if oid not in days} == {
        oid: n for oid, n in fragments.items() if oid not in days
    }
    assert all(after[oid] == 1 for oid in days)
    assert ids_at(ns.uri) == list(range(32))


def test_leaves_with_nothing_to_compact_keep_their_read_version(tmp_path: Path) -> None:
    ns = appended(tmp_path / "ns", 3)
    ns.write(events(100, 5, countries=["JP"]))  # one leaf of one fragment
    first = ns.optimize()
    (jp,) = [leaf for leaf in first.leaves if not leaf.compacted]
    assert (first.leaves_compacted, first.leaves_skipped) == (3, 1)
    assert read_versions(ns)[jp.object_id] == jp.read_version
    assert manifest_fragments(ns.uri) == 1
    versions, latest = read_versions(ns), ns.version

    again = ns.optimize()

    assert (again.leaves_compacted, again.leaves_skipped) == (0, 4)
    assert again.version == latest  # nothing committed at all
    assert ns.refresh().version == latest
    assert read_versions(ns) == versions
    assert again.manifest_fragments_before == again.manifest_fragments_after == 1


def test_fragments_below_the_target_are_merged_up_to_it(tmp_path: Path) -> None:
    ns = appended(tmp_path / "ns", 6, per_append=30)  # 60 rows per leaf, 10 per fragment
    result = ns.optimize(target_rows_per_fragment=25)
    assert all(1 <= n <= 6 for n in leaf_fragments(ns).values())
    assert result.fragments_after < result.fragments_before == 18
    assert ids_at(ns.uri) == list(range(180))


def test_a_namespace_opened_at_a_version_is_read_only(tmp_path: Path) -> None:
    ns = appended(tmp_path / "ns", 2)
    old = lp.PartitionedNamespace.open(ns.uri, version=ns.version - 1)
    with pytest.raises(errors.UnsupportedOperationError, match="read-only"):
        old.optimize()
    with pytest.raises(errors.InvalidInputError, match="target_rows_per_fragment"):
        ns.optimize(target_rows_per_fragment=0)


# ----------------------------------------------------------------------- injected crashes


def _state(ns: lp.PartitionedNamespace) -> tuple[int, dict[int, list[int]]]:
    latest = lp.PartitionedNamespace.open(ns.uri).version
    return latest, _every_version(ns.uri, latest)


def _recovers(ns: lp.PartitionedNamespace, expected: list[int]) -> None:
    """The next optimize and write work, and read the rows expected."""
    result = ns.refresh().optimize()
    assert set(leaf_fragments(ns).values()) == {1}
    assert result.leaves_compacted == 3
    ns.write(events(5000, 3))
    assert ids_at(ns.uri) == [*expected, *range(5000, 5003)]


def test_an_exception_during_compaction_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = appended(tmp_path / "ns", 4)
    before = _state(ns)
    leaves = latest_leaf_versions(ns)
    real = optimize_module._compact
    calls: list[int] = []

    def compact(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise Boom("injected during the second leaf's compaction")
        return real(*args)

    monkeypatch.setattr(optimize_module, "_compact", compact)
    with pytest.raises(Boom):
        ns.optimize(progress=lambda _: None)
    assert _state(ns) == before
    assert latest_leaf_versions(ns) == leaves  # no leaf commit either
    monkeypatch.setattr(optimize_module, "_compact", real)
    _recovers(ns, list(range(48)))


@pytest.mark.parametrize("point", ["leaf_commit", "leaves_committed"])
def test_an_exception_at_a_commit_step_leaves_the_latest_unchanged(
    tmp_path: Path, point: str
) -> None:
    ns = appended(tmp_path / "ns", 4)
    before = _state(ns)
    with transaction.pause_at(point, _boom), pytest.raises(Boom):
        ns.optimize()
    assert _state(ns) == before  # every version reads as before, the latest included
    if point == "leaves_committed":  # the leaves moved on disk: orphans nobody reads
        assert latest_leaf_versions(ns) != read_versions(ns.refresh())
    _recovers(ns, list(range(48)))


def test_an_exception_during_the_manifest_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = appended(tmp_path / "ns", 4)
    before_version, history = _state(ns)
    real = Manifest.compact

    def compact(self: Manifest, **kwargs: Any) -> Any:
        return real(self, **kwargs, before_commit=_boom)

    monkeypatch.setattr(Manifest, "compact", compact)
    with pytest.raises(Boom):
        ns.optimize()
    # the leaf compaction was published; the __manifest compaction was not
    latest, now = _state(ns)
    assert latest == before_version + 1
    assert {v: ids for v, ids in now.items() if v <= before_version} == history
    assert now[latest] == list(range(48))
    assert set(leaf_fragments(ns.refresh()).values()) == {1}
    monkeypatch.setattr(Manifest, "compact", real)
    result = ns.optimize()
    assert (result.leaves_compacted, result.version, manifest_fragments(ns.uri)) == (
        0,
        latest + 1,
        1,
    )


def test_a_leaf_without_read_version_is_compacted_at_its_latest(tmp_path: Path) -> None:
    """Another client's row with a NULL read_version reads the leaf's latest version."""
    import lance

    ns = appended(tmp_path / "ns", 4)
    (fr,) = [task.object_id for task in ns.plan_scan("country = 'FR'")]
    lance.dataset(f"{ns.uri}/__manifest").update(
        {"read_version": "NULL"}, where=f"object_id = '{fr}'"
    )
    assert read_versions(ns.refresh())[fr] is None
    result = ns.optimize()
    assert result.leaves_compacted == 3
    assert set(leaf_fragments(ns).values()) == {1}
    assert read_versions(ns)[fr] is not None  # pinned by the commit
    assert ids_at(ns.uri) == list(range(48))


def test_the_prepared_rewrite_is_what_lances_own_compaction_commits(tmp_path: Path) -> None:
    """On two identical plain Lance tables (not leaves): committing the prepared Rewrite
    gives the fragments and rows that ``Compaction.execute`` (plan, execute, commit) gives."""
    import lance
    import pyarrow as pa
    from lance import LanceDataset
    from lance.optimize import Compaction, CompactionOptions

    uris = [str(tmp_path / "ours"), str(tmp_path / "lance")]
    for uri in uris:
        for n in range(6):
            table = pa.table({"id": list(range(10 * n, 10 * n + 10))})
            lance.write_dataset(table, uri, mode="append" if n else "create")
        lance.dataset(uri).delete("id % 7 = 0")  # deletions materialised as well
    options = CompactionOptions(target_rows_per_fragment=25)
    operation, old, new = optimize_module._compact(lance.dataset(uris[0]), options)
    assert len(old) == 6
    assert len(new) >= 1
    ours = LanceDataset.commit(uris[0], operation, read_version=7, max_retries=0)
    Compaction.execute(lance.dataset(uris[1]), options)
    theirs = lance.dataset(uris[1])

    def shape(ds: LanceDataset) -> list[tuple[int | None, int | None]]:
        return [(f.metadata.physical_rows, f.metadata.deletion_file) for f in ds.get_fragments()]

    assert sorted(shape(ours)) == sorted(shape(theirs))  # tasks may finish in any order
    assert ours.to_table().sort_by("id").equals(theirs.to_table().sort_by("id"))
    assert sorted(ours.to_table()["id"].to_pylist()) == [i for i in range(60) if i % 7]
