"""Removing a leaf's versions without Lance's cleanup (``maintenance/removal.py``) deletes
exactly what Lance's ``cleanup_old_versions(versions=[...])`` deletes, on two copies of the
same dataset, and leaves a leaf of any other shape to Lance."""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path

import lance
import pytest

from lance_partitioned.maintenance.files import Store, StoredFile
from lance_partitioned.maintenance.removal import (
    Planned,
    doomed_files,
    plan_known,
    remove_known,
    remove_planned,
)
from lance_partitioned.maintenance.versions import (
    DatasetHistory,
    history,
    listed_versions,
    remove_versions,
    transaction_file,
)
from lance_partitioned.runtime import leaf_cache
from tests.maintenance.helpers import age, files, six_versions, values_at


def _opened_history(uri: str) -> DatasetHistory:
    """The history of ``uri`` with every version opened through the leaf cache, as a cleanup
    sees a leaf whose versions this process committed."""
    listed = listed_versions(Store(uri).files())
    for version in listed:
        leaf_cache.cached_leaf(uri, version, (), lambda v=version: lance.dataset(uri, version=v))
    hist = history(uri, None, tags=False, listed=listed, cache_key=())
    assert hist is not None
    assert hist.every_version_opened()
    return hist


def _leftovers(uri: str) -> None:
    """A data file and a transaction file no version names, 8 days old (Lance's cleanup
    deletes them), and a data file no version names, 1 day old (it keeps that one)."""
    for name, days in (
        ("data/old.lance", 8),
        ("_transactions/9-old.txn", 8),
        ("data/new.lance", 1),
    ):
        path = Path(uri) / name
        path.write_bytes(b"x" * 10)
        age(path, days)


@pytest.mark.parametrize(
    ("remove", "leftovers"),
    [({1, 2, 3, 4, 5}, False), ({1, 3, 5}, False), ({4}, False), ({1, 3, 5}, True)],
)
def test_it_deletes_what_lances_cleanup_deletes(
    tmp_path: Path, remove: set[int], leftovers: bool
) -> None:
    ours, lances = str(tmp_path / "ours"), str(tmp_path / "lance")
    six_versions(ours)
    if leftovers:
        _leftovers(ours)
    shutil.copytree(ours, lances)
    expected = {v: values_at(ours, v) for v in range(1, 7)}
    before = files(ours)
    leaf_cache.clear()
    try:
        removed = remove_known(_opened_history(ours), remove, Store(ours).files(), Store(ours), "")
    finally:
        leaf_cache.clear()
    hist = history(lances, None)
    assert hist is not None
    by_lance = remove_versions(hist, remove)

    assert set(files(ours)) == set(files(lances))
    if leftovers:
        assert {"data/old.lance", "_transactions/9-old.txn"} <= set(before) - set(files(ours))
        assert "data/new.lance" in files(ours)
    assert removed == by_lance
    gone = set(before) - set(files(ours))
    assert removed is not None
    assert removed.files == len(gone)
    assert removed.bytes == sum(before[p] for p in gone)
    for version in set(range(1, 7)) - remove:
        assert values_at(ours, version) == expected[version]


def test_a_leaf_with_an_index_or_a_tag_goes_to_lance(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    six_versions(uri)
    leaf_cache.clear()
    try:
        lance.dataset(uri).create_scalar_index("a", "BTREE")
        with_index = _opened_history(uri)
        assert doomed_files(with_index, {1}, Store(uri).files()) is None
    finally:
        leaf_cache.clear()
    assert values_at(uri, 1) == [1, 2]  # nothing deleted


def test_an_opened_version_names_its_transaction_file_as_lance_reads_it(tmp_path: Path) -> None:
    """The name comes from the opened manifest (``lance.debug.format_manifest``), without
    reading the version again: it must be the file Lance's transaction names."""
    uri = str(tmp_path / "t")
    six_versions(uri)
    leaf_cache.clear()
    try:
        hist = _opened_history(uri)
        for version in range(1, 7):
            read = lance.dataset(uri).read_transaction(version)
            expected = f"_transactions/{read.read_version}-{read.uuid}.txn"
            assert transaction_file(hist, version) == expected
            assert expected in files(uri)
    finally:
        leaf_cache.clear()


class _CrashingStore(Store):
    """A real store whose second deletion fails (a crash between two requests), recording
    what each deletion was asked to delete."""

    def __init__(self, root: str) -> None:
        super().__init__(root)
        self.calls: list[list[str]] = []

    def delete(self, paths: Iterable[str]) -> None:
        self.calls.append(list(paths))
        if len(self.calls) == 2:
            raise OSError("crash")
        super().delete(self.calls[-1])


def _plans(root: str, store: Store, leaves: list[str], remove: set[int]) -> list[Planned]:
    plans = []
    for leaf in leaves:
        listing = [StoredFile(f.path[len(leaf) + 1 :], f.size, f.mtime) for f in store.files(leaf)]
        plan = plan_known(_opened_history(f"{root}/{leaf}"), remove, listing, store, leaf)
        assert plan is not None
        plans.append(plan)
    return plans


def test_planned_removals_of_several_leaves_delete_every_manifest_before_any_file(
    tmp_path: Path,
) -> None:
    root, leaves, remove = str(tmp_path), ["x", "y"], {1, 2, 3, 4}
    for leaf in leaves:
        six_versions(f"{root}/{leaf}")
    kept = {(leaf, v): values_at(f"{root}/{leaf}", v) for leaf in leaves for v in (5, 6)}
    before = files(root)
    crashing = _CrashingStore(root)
    leaf_cache.clear()
    try:
        plans = _plans(root, crashing, leaves, remove)
        with pytest.raises(OSError, match="crash"):
            remove_planned(plans)
    finally:
        leaf_cache.clear()

    # one deletion for the removed manifests of both leaves, the next for every other file
    manifests = [p for plan in plans for p in plan.manifests]
    assert crashing.calls == [manifests, [p for plan in plans for p in plan.files]]
    assert len(manifests) == len(leaves) * len(remove)
    assert all("/_versions/" in p for p in manifests)
    after = files(root)
    assert set(before) - set(after) == set(manifests)  # nothing else went before the crash
    for (leaf, version), values in kept.items():  # the versions left read as before
        assert values_at(f"{root}/{leaf}", version) == values
    for leaf in leaves:
        assert sorted(listed_versions(Store(f"{root}/{leaf}").files())) == [5, 6]

    remove_planned([Planned(p.uri, Store(root), p.manifests, p.files, p.removed) for p in plans])
    gone = set(before) - set(files(root))
    assert gone == {p for plan in plans for p in (*plan.manifests, *plan.files)}
    assert sum(plan.removed.files for plan in plans) == len(gone)
    for (leaf, version), values in kept.items():
        assert values_at(f"{root}/{leaf}", version) == values
