"""Removing versions from what every version references (``removal.plan_tracked``, the
``__manifest``'s removal on a store that deletes many files a request) deletes exactly what
Lance's ``cleanup_old_versions(versions=[...])`` deletes, on two copies of the same dataset:
manifests, transactions, data and deletion files, and the index directories only the removed
versions read."""

from __future__ import annotations

import shutil
from pathlib import Path

import lance
import pyarrow as pa

from lance_partitioned.maintenance.files import Store
from lance_partitioned.maintenance.removal import plan_tracked, remove_planned
from lance_partitioned.maintenance.versions import history


def _dataset(path: Path) -> str:
    """A dataset with six versions: appends, a deletion, a BTREE index built then replaced,
    and a compaction (files several versions share, one only old versions read)."""
    uri = str(path)
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), uri)
    lance.write_dataset(pa.table({"a": [4, 5]}), uri, mode="append")
    ds = lance.dataset(uri)
    ds.create_scalar_index("a", "BTREE")
    lance.dataset(uri).delete("a = 2")
    lance.dataset(uri).create_scalar_index("a", "BTREE", replace=True)
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=100)
    return uri


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_the_tracked_removal_deletes_what_lances_cleanup_deletes(tmp_path: Path) -> None:
    ours = _dataset(tmp_path / "ours")
    theirs = tmp_path / "theirs"
    shutil.copytree(ours, theirs)
    latest = lance.dataset(ours).version
    for asked in ({1, 2}, {3}, set(range(1, latest))):
        hist = history(ours, None)
        assert hist is not None
        remove = asked & set(hist.times)  # those the previous rounds left
        store = Store(ours)
        plan = plan_tracked(hist, remove, store.files(), store, "")
        assert plan is not None
        remove_planned([plan])
        stats = lance.dataset(str(theirs)).cleanup_old_versions(
            versions=sorted(remove),
            delete_unverified=False,
        )
        assert _files(Path(ours)) == _files(theirs), remove
        assert plan.removed.files == stats.old_versions + stats.data_files_removed + (
            stats.deletion_files_removed
            + stats.index_files_removed
            + stats.transaction_files_removed
        )
    assert any(p.startswith("_indices/") for p in _files(Path(ours)))
    assert lance.dataset(ours).to_table().column("a").to_pylist() == [1, 3, 4, 5]


def test_a_version_lance_does_not_list_is_left_to_lance(tmp_path: Path) -> None:
    uri = _dataset(tmp_path / "ds")
    hist = history(uri, None)
    assert hist is not None
    store = Store(uri)
    assert plan_tracked(hist, {99}, store.files(), store, "") is None
    assert plan_tracked(hist, {hist.latest}, store.files(), store, "") is None


def test_a_dataset_with_a_branch_is_left_to_lance(tmp_path: Path) -> None:
    """A branch's versions may read the main branch's files, which ``tracked_files`` of the
    main branch does not list."""
    uri = _dataset(tmp_path / "ds")
    lance.dataset(uri).create_branch("exp", 2)
    hist = history(uri, None)
    assert hist is not None
    store = Store(uri)
    assert any(f.path.startswith("_refs/branches/") for f in store.files())
    assert plan_tracked(hist, {1, 2}, store.files(), store, "") is None
