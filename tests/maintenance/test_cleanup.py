"""``cleanup`` on real namespaces: what goes, what stays, dry runs, ages, crashes, writers
running meanwhile."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import time
from pathlib import Path
from typing import Any

import lance
import lance.fragment
import pytest

import lance_partitioned as lp
from lance_partitioned import errors, transaction
from lance_partitioned.maintenance import cleanup as cleanup_module
from lance_partitioned.maintenance.cleanup import STEPS, CleanupResult, cleanup, on_step
from lance_partitioned.manifest import Manifest
from tests.integration.helpers import Boom, crash_after_leaf_commits
from tests.maintenance.helpers import (
    UTC,
    age,
    check_retained,
    clock_barrier,
    files,
    leaf_versions,
    manifest_versions,
    now,
    pinned,
    remember,
    table,
    tag,
)

SCHEMA = table([], []).schema
ZERO = dt.timedelta(0)


def _history(root: str) -> lp.PartitionedNamespace:
    """Appends, a partition overwrite (data no later version reads) and a whole overwrite
    (leaves no later version lists)."""
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k")
    ns.write(table([1, 2], ["a", "b"]))
    ns.write(table([3], ["a"]))
    ns.write(table([4], ["a"]), mode="overwrite_partitions")
    ns.write(table([5, 6], ["c", "d"]), mode="overwrite")
    ns.write(table([7], ["c"]))
    return ns


def _leftovers(root: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What crashed writers leave: staged files in a listed leaf, a leaf directory of a new
    partition that was never published, an orphan leaf version, a Spark journal."""
    ns = lp.PartitionedNamespace.open(root)
    location = ns.partitions("k = 'c'").column("location")[0].as_py()
    lance.fragment.write_fragments(table([90], ["c"]), f"{root}/{location}")
    lance.fragment.write_fragments(table([91], ["z"]), f"{root}/0badf00d_v1$zzz$dataset")
    committed: list[str] = []
    monkeypatch.setattr(transaction, "commit_leaf", crash_after_leaf_commits(1, committed))
    with pytest.raises(Boom):
        ns.write(table([92, 93], ["c", "e"]), options=lp.WriteOptions(threads=1))
    monkeypatch.undo()
    journal = Path(root) / "_spark_staging" / "job-1" / "0-0.json"
    journal.parent.mkdir(parents=True)
    journal.write_text('{"staged": {}}', encoding="utf-8")


def _run(root: str, **kwargs: Any) -> CleanupResult:
    return cleanup(Manifest(root), **kwargs)


def test_cleanup_keeps_the_latest_and_tagged_versions_and_what_they_read(
    tmp_path: Path,
) -> None:
    root = str(tmp_path)
    ns = _history(root)
    seen: dict[int, list[tuple[Any, ...]]] = {}
    remember(root, seen)
    tag(root, "before-overwrite", 5)
    before = files(root)
    result = _run(root, older_than=ZERO)
    latest = ns.version
    assert manifest_versions(root) == [5, latest]
    assert result.kept_manifest_versions == (5, latest)
    assert result.removed_manifest_versions == (1, 2, 3, 4, 6)
    assert check_retained(root, seen) == [5, latest]
    pins = pinned(root)
    for location, versions in pins.items():  # each leaf: what is pinned, and its latest
        existing = leaf_versions(root, location)
        assert set(existing) == versions | {max(existing)}, location
    assert sorted(os.listdir(root)) == sorted({*pins, "__manifest"})
    after = files(root)
    gone = set(before) - set(after)
    assert result.files == len(gone)
    assert result.bytes == sum(before[path] for path in gone)
    assert result.leaf_versions.count > 0
    assert result.manifest_versions.files > 0
    again = _run(root, older_than=ZERO)
    assert (again.files, again.bytes) == (0, 0)


def test_a_dry_run_removes_nothing_and_reports_what_the_cleanup_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(tmp_path)
    _history(root)
    _leftovers(root, monkeypatch)
    before = files(root)
    moment = now()
    preview = _run(root, older_than=ZERO, dry_run=True, now=moment)
    assert files(root) == before
    done = _run(root, older_than=ZERO, now=moment)
    assert preview.dry_run
    assert not done.dry_run
    for kind in ("manifest_versions", "leaf_versions", "leaf_directories", "staged_files"):
        assert getattr(preview, kind) == getattr(done, kind), kind
    # a and b (overwritten away), 'z' and the crashed write's new partition 'e'
    assert done.leaf_directories.count == 4
    assert done.staged_files.count == 2  # the staged fragment in 'c' and the journal
    gone = set(before) - set(files(root))
    assert done.files == len(gone)
    assert done.bytes == sum(before[p] for p in gone)
    assert not (tmp_path / "_spark_staging").exists()
    ns = lp.PartitionedNamespace.open(root)
    assert sorted(ns.to_table().column("id").to_pylist()) == [5, 6, 7]
    ns.write(table([8], ["c"]))  # the orphan leaf version on top of 'c' is still restorable
    assert sorted(ns.to_table().column("id").to_pylist()) == [5, 6, 7, 8]


def test_versions_that_were_current_after_the_cutoff_stay(tmp_path: Path) -> None:
    root = str(tmp_path)
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k")
    ns.write(table([1], ["a"]))
    ns.write(table([2], ["a"]))
    current_at_cutoff = ns.version
    cutoff = now()
    ns.write(table([3], ["a"]), mode="overwrite_partitions")
    ns.write(table([4], ["b"]))
    seen: dict[int, list[tuple[Any, ...]]] = {}
    remember(root, seen)
    result = _run(root, older_than=dt.timedelta(hours=1), now=cutoff + dt.timedelta(hours=1))
    assert result.cutoff == cutoff
    assert manifest_versions(root) == list(range(current_at_cutoff, ns.version + 1))
    assert result.removed_manifest_versions == tuple(range(1, current_at_cutoff))
    check_retained(root, seen)
    assert result.leaf_versions.count == 1  # leaf a's first version, pinned by none of them


def test_young_leftovers_stay_until_they_are_older_than_the_retention(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(tmp_path)
    _history(root)
    _leftovers(root, monkeypatch)
    lance.write_dataset(table([99], ["y"]), f"{root}/12345678_v1$another$dataset")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README").write_text("not a leaf", encoding="utf-8")
    day = dt.timedelta(days=1)
    young = _run(root, older_than=day)
    assert (young.files, young.leaf_directories.count, young.staged_files.count) == (0, 0, 0)
    assert young.kept_manifest_versions == tuple(manifest_versions(root))
    later = _run(root, older_than=day, now=now() + 2 * day)
    assert later.leaf_directories.count == 5  # a, b, 'z', 'e', the foreign table
    assert later.staged_files.count == 2
    assert (tmp_path / "notes" / "README").exists()  # not a leaf: never touched


def test_a_leftover_is_judged_by_its_newest_file(tmp_path: Path) -> None:
    root = str(tmp_path)
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k")
    ns.write(table([1], ["a"]))
    crashed = tmp_path / "0badf00d_v1$zzz$dataset"
    lance.fragment.write_fragments(table([91], ["z"]), str(crashed))
    age(crashed, days=10)
    lance.fragment.write_fragments(table([92], ["z"]), str(crashed))  # a writer staging now
    staged = files(crashed)
    result = _run(root, older_than=dt.timedelta(days=7))
    assert result.leaf_directories.count == 0
    assert files(crashed) == staged
    age(crashed, days=10)
    assert _run(root, older_than=dt.timedelta(days=7)).leaf_directories.count == 1
    assert not crashed.exists()


def test_leaves_cleaned_in_parallel_go_as_with_one_thread_and_only_after_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Leaves are cleaned on a thread pool while the ``__manifest`` is: the same removals as
    one at a time, and no leaf version goes while the expired ``__manifest`` versions stay."""
    root = tmp_path / "ns"
    ns = _history(str(root))
    for i in range(3):
        ns.write(table([100 + i, 200 + i], ["c", f"n{i}"]))
    _leftovers(str(root), monkeypatch)  # with an interrupted write to roll back
    copies = {n: tmp_path / f"copy{n}" for n in ("one", "many", "crash")}
    for copy in copies.values():
        shutil.copytree(root, copy)
    moment = now()
    one = _run(str(copies["one"]), older_than=ZERO, now=moment, threads=1)
    seen: list[cleanup_module.CleanupProgress] = []
    many = _run(str(copies["many"]), older_than=ZERO, now=moment, threads=4, progress=seen.append)
    kinds = ("manifest_versions", "leaf_versions", "leaf_directories", "staged_files")
    for kind in (*kinds, "kept_leaf_versions", "rolled_back", "removed_manifest_versions"):
        assert getattr(one, kind) == getattr(many, kind), kind
    assert many.leaf_versions.count > 0
    assert many.rolled_back
    assert sorted(p.leaves_done for p in seen) == list(range(1, many.leaves + 1))
    assert sorted(p.location for p in seen) == sorted({p.location for p in seen})
    left = [files(copies[n]) for n in ("one", "many")]  # (a rollback's .txn has a uuid)
    assert [len(f) for f in left] == [len(left[0])] * 2
    assert {p for p in left[0] if "_transactions" not in p} == {
        p for p in left[1] if "_transactions" not in p
    }

    crashed = str(copies["crash"])
    locations = lp.PartitionedNamespace.open(crashed).partitions().column("location")
    before = {loc: leaf_versions(crashed, loc) for loc in locations.to_pylist()}

    def crash(detail: str) -> None:  # slow: the leaves get ready to remove meanwhile
        time.sleep(0.5)
        raise Boom(f"crash before removing the __manifest versions of {detail}")

    with on_step("manifest_versions", crash), pytest.raises(Boom):
        _run(crashed, older_than=ZERO, now=moment, threads=4)
    for location, versions in before.items():  # a rollback adds a version, none went
        assert set(versions) <= set(leaf_versions(crashed, location)), location
    again = _run(crashed, older_than=ZERO, now=moment, threads=4)
    assert again.leaf_versions == many.leaf_versions


def test_progress_is_reported_per_leaf(tmp_path: Path) -> None:
    root = str(tmp_path)
    _history(root)
    seen: list[cleanup_module.CleanupProgress] = []
    result = _run(root, older_than=ZERO, progress=seen.append)
    assert [(p.leaves_done, p.leaves_total) for p in seen] == [(1, 2), (2, 2)]
    assert result.leaves == 2


def test_the_namespace_method_and_its_guards(tmp_path: Path) -> None:
    root = str(tmp_path)
    ns = _history(root)
    assert ns.cleanup().files == 0  # everything is younger than a week
    assert ns.cleanup(ZERO, dry_run=True).manifest_versions.count == ns.version - 1
    assert ns.cleanup(dt.timedelta.max, dry_run=True).files == 0  # keeps everything
    with pytest.raises(errors.InvalidInputError, match="negative"):
        ns.cleanup(dt.timedelta(seconds=-1))
    old = lp.PartitionedNamespace.open(root, version=3)
    with pytest.raises(errors.UnsupportedOperationError, match="read-only"):
        old.cleanup(ZERO)
    with pytest.raises(errors.NamespaceNotFoundError):
        _run(str(tmp_path / "nothing"))


# ------------------------------------------------------------------ writers meanwhile


def _old_history(root: Path) -> tuple[lp.PartitionedNamespace, dt.datetime]:
    ns = lp.PartitionedNamespace.create(str(root / "ns"), schema=SCHEMA, partition_by="k")
    ns.write(table([1], ["a"]))
    ns.write(table([2], ["a"]))
    ns.write(table([3], ["a"]), mode="overwrite_partitions")
    return ns, clock_barrier(root)


@pytest.mark.parametrize("point", ["staged", "leaf_commit", "leaves_committed"])
def test_a_writer_committing_meanwhile_loses_nothing(tmp_path: Path, point: str) -> None:
    """The writer staged, or committed leaves not yet published, after the cutoff: its files,
    its new leaf directory and its leaf versions stay; older history goes."""
    ns, cutoff = _old_history(tmp_path)
    root = ns.uri
    results: list[CleanupResult] = []

    def cleanup_now() -> None:
        results.append(_run(root, older_than=ZERO, now=cutoff))

    with transaction.pause_at(point, cleanup_now):
        ns.write(table([4, 5], ["a", "new"]))
    assert results[0].leaf_versions.count > 0  # leaf a's old versions went
    assert results[0].removed_manifest_versions
    assert sorted(ns.refresh().to_table().column("id").to_pylist()) == [3, 4, 5]
    assert _run(root, older_than=ZERO, now=cutoff).files == 0


def test_a_leaf_restored_under_an_orphan_keeps_the_version_it_restores_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns, _ = _old_history(tmp_path)
    root = ns.uri
    committed: list[str] = []
    monkeypatch.setattr(transaction, "commit_leaf", crash_after_leaf_commits(1, committed))
    with pytest.raises(Boom):
        # leaves an orphan version on top of leaf a
        ns.write(table([9, 10], ["a", "b"]), options=lp.WriteOptions(threads=1))
    monkeypatch.undo()
    cutoff = clock_barrier(tmp_path)
    results: list[CleanupResult] = []

    def cleanup_now() -> None:
        results.append(_run(root, older_than=ZERO, now=cutoff))

    with transaction.pause_at("staged", cleanup_now):
        ns.write(table([4], ["a"]))  # restores leaf a to its pinned version, then appends
    assert results[0].leaf_versions.count > 0
    assert sorted(ns.refresh().to_table().column("id").to_pylist()) == [3, 4]


# ------------------------------------------------------------------ crashes


# a namespace with history per crash point
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("point", STEPS)
def test_a_crash_at_any_step_leaves_every_version_readable_and_a_rerun_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    root = str(tmp_path)
    _history(root)
    _leftovers(root, monkeypatch)
    seen: dict[int, list[tuple[Any, ...]]] = {}
    remember(root, seen)
    tag(root, "kept", 4)
    calls: list[str] = []
    crash_on = 2 if point == "file" else 1

    def crash(detail: str) -> None:
        calls.append(detail)
        if len(calls) == crash_on:
            raise Boom(f"crash at {point} {detail}")

    moment = now()
    with on_step(point, crash), pytest.raises(Boom):
        _run(root, older_than=ZERO, now=moment)
    check_retained(root, seen)
    second = _run(root, older_than=ZERO, now=moment)
    check_retained(root, seen)
    assert manifest_versions(root) == [4, max(seen)]
    assert second.files > 0
    assert _run(root, older_than=ZERO, now=moment, dry_run=True).files == 0


def test_unknown_steps_are_refused() -> None:
    with pytest.raises(errors.InternalError), on_step("nowhere", print):
        pass


def test_a_storage_failure_is_a_typed_error(tmp_path: Path) -> None:
    root = str(tmp_path)
    _history(root)

    def block(path: str) -> None:  # a non-empty directory where the file to delete was
        target = tmp_path / path
        target.unlink()
        target.mkdir()
        (target / "inside").write_text("x", encoding="utf-8")

    with on_step("file", block), pytest.raises(errors.StorageError, match="cannot delete"):
        _run(root, older_than=ZERO)


def test_a_raw_storage_failure_of_namespace_cleanup_is_typed(tmp_path: Path) -> None:
    """``ns.cleanup`` types what Lance raises raw, as ``write`` and ``delete`` do."""
    ns = _history(str(tmp_path))

    def read_only(detail: str) -> None:  # Lance's error once the file system is read-only
        raise OSError("LanceError(IO): Read-only file system (os error 30)")

    with (
        on_step("manifest_versions", read_only),
        pytest.raises(errors.PermissionDeniedError, match="cleanup") as raised,
    ):
        ns.cleanup(dt.timedelta(0))
    assert ns.uri in str(raised.value)
    assert isinstance(raised.value.__cause__, OSError)


def test_cutoffs_are_utc(tmp_path: Path) -> None:
    root = str(tmp_path)
    _history(root)
    local = dt.datetime.now()  # naive: local time
    assert _run(root, now=local, dry_run=True).cutoff.tzinfo == UTC


def test_rows_staged_for_a_lost_manifest_commit_go_once_old(tmp_path: Path) -> None:
    """A writer that lost the ``__manifest`` compare-and-swap left the data files of its
    uncommitted ``merge_insert`` in ``__manifest/data``: no version reads them."""
    root = str(tmp_path)
    ns = _history(root)
    manifest = lance.dataset(f"{root}/__manifest")
    rows = manifest.to_table().slice(0, 1)
    manifest.merge_insert("object_id").when_matched_update_all().execute_uncommitted(rows)
    read: set[str] = set()
    for version in manifest_versions(root):
        for fragment in manifest.checkout_version(version).get_fragments():
            meta = fragment.metadata
            read |= {f"data/{f.path}" for f in meta.files}
            if meta.deletion_file is not None:
                read.add(meta.deletion_file.path(meta.id))
    on_disk = {p for p in files(tmp_path / "__manifest") if p.startswith(("data/", "_del"))}
    staged = on_disk - read
    assert any(p.startswith("data/") for p in staged)  # the rows; and a deletion file
    assert _run(root, older_than=dt.timedelta(days=1)).staged_files.count == 0
    result = _run(root, older_than=ZERO)
    assert result.staged_files.count == len(staged)
    assert not staged & set(files(tmp_path / "__manifest"))
    assert sorted(ns.refresh().to_table().column("id").to_pylist()) == [5, 6, 7]


def test_staged_files_of_a_leaf_outside_the_root_go_once_old(tmp_path: Path) -> None:
    """A leaf whose ``location`` is an absolute URI outside the root (another client may
    write one): its staged files are found and removed like those of any leaf."""
    root = str(tmp_path / "ns")
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k")
    ns.write(table([1, 2], ["a", "a"]))
    location = ns.partitions("k = 'a'").column("location")[0].as_py()
    elsewhere = tmp_path / "elsewhere" / "leaf_a"
    elsewhere.parent.mkdir()
    shutil.move(f"{root}/{location}", elsewhere)
    lance.dataset(f"{root}/__manifest").update(
        {"location": f"'{elsewhere}'"}, where=f"location = '{location}'"
    )
    lance.fragment.write_fragments(table([90], ["a"]), str(elsewhere))  # never committed
    staged = {p for p in files(elsewhere) if p.startswith("data/")} - {
        f"data/{f.path}"
        for fragment in lance.dataset(str(elsewhere)).get_fragments()
        for f in fragment.metadata.files
    }
    assert len(staged) == 1
    age(elsewhere, days=2)
    result = _run(root, older_than=dt.timedelta(days=1))
    assert result.staged_files.count == 1
    assert not staged & set(files(elsewhere))
    assert sorted(lp.PartitionedNamespace.open(root).to_table().column("id").to_pylist()) == [1, 2]
