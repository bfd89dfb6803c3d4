"""Removing versions of a leaf whose every file the cleanup knows, without Lance's cleanup.

Lance's ``cleanup_old_versions`` lists and reads the dataset again before it deletes anything:
on an object store 12-14 requests per leaf (two listings of ``_refs/``, two of ``_versions/``,
a read of each version's manifest, six listings of the dataset's directories;
``benchmarks/objectstore.py``: 1,219 of the 1,556 requests of a cleanup of 731 leaves). When
the cleanup already holds all of that, the listing of the leaf made at its start and every
listed version opened by this process (:func:`~.versions.history` through the leaf cache),
it deletes what Lance would itself (what :func:`~.versions.predict_removal` predicts): the
removed versions' manifests and transaction files, and the data and deletion files that only
they read, and, as Lance does, the data, deletion and transaction files that no version reads
once 7 days old. The manifests go first, so that a crash leaves no version that still exists
pointing at a deleted file.

Only a leaf of the plainest shape goes this way: its files all under ``_versions/``,
``data/``, ``_deletions/`` and ``_transactions/`` (no index, no tag or branch, no blob, nothing
newer Lance may write), its listed manifests the versions of its history, and each removed
version's transaction readable; any other goes through Lance's cleanup as before.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from lance_partitioned.maintenance.files import Store, StoredFile
from lance_partitioned.maintenance.versions import (
    DatasetHistory,
    Removed,
    listed_versions,
    removed_of,
    transaction_file,
)
from lance_partitioned.runtime.leaf_cache import exclusive

__all__ = [
    "Planned",
    "plan_known",
    "plan_tracked",
    "remove_explained",
    "remove_known",
    "remove_planned",
    "run_plan",
]

_KNOWN_DIRS = ("_versions/", "data/", "_deletions/", "_transactions/")
_STAGED_DIRS = ("data/", "_deletions/")
#: Lance's cleanup also deletes the files no version reads once they are this old.
UNVERIFIED_AGE = dt.timedelta(days=7)
#: Files of those directories that are not a version's, and that Lance's cleanup keeps.
_KEPT_FILES = frozenset({"_versions/latest_version_hint.json"})


def doomed_files(
    hist: DatasetHistory, remove: Collection[int], listing: Sequence[StoredFile]
) -> list[StoredFile] | None:
    """The files (paths relative to the dataset) that removing ``remove`` deletes, manifests
    first; None when the leaf is not of the plainest shape or a version is not known without
    reading it (Lance's cleanup then)."""
    if not remove or not hist.every_version_opened():
        return None
    if any(not f.path.startswith(_KNOWN_DIRS) for f in listing):
        return None
    manifests = listed_versions(listing)
    in_versions = [
        f for f in listing if f.path.startswith("_versions/") and f.path not in _KEPT_FILES
    ]
    if len(in_versions) != len(manifests) or set(manifests) != set(hist.times):
        return None  # a file Lance may know and we do not, or versions moved since the listing
    if hist.latest in remove or not set(remove) <= set(hist.times):
        return None
    by_path = {f.path: f for f in listing}
    read_only_by_removed: set[str] = set()
    for version in remove:
        read_only_by_removed |= hist.files(version)
    for version in set(hist.times) - set(remove):
        read_only_by_removed -= hist.files(version)
    transactions: list[str] = []
    for version in sorted(remove):
        name = transaction_file(hist, version)
        if name is None:
            return None
        transactions.append(name)
    unverified = _unverified(hist, remove, listing, set(transactions))
    if unverified is None:
        return None
    ordered = [manifests[version] for version in sorted(remove)]
    ordered += [by_path[p] for p in transactions if p in by_path]
    ordered += [by_path[p] for p in sorted(read_only_by_removed | unverified) if p in by_path]
    return ordered


def _unverified(
    hist: DatasetHistory,
    remove: Collection[int],
    listing: Sequence[StoredFile],
    removed_transactions: set[str],
) -> set[str] | None:
    """The data, deletion and transaction files that no version reads and that are older
    than :data:`UNVERIFIED_AGE`, which Lance's cleanup deletes too (a writer that never
    committed); None when a remaining version's transaction file cannot be read."""
    oldest = dt.datetime.now(dt.timezone.utc) - UNVERIFIED_AGE
    old = {f.path for f in listing if f.mtime is not None and f.mtime < oldest}
    read: set[str] = set()
    for version in hist.times:
        read |= hist.files(version)
    out = {p for p in old if p.startswith(_STAGED_DIRS) and p not in read}
    transactions = {p for p in old if p.startswith("_transactions/")} - removed_transactions
    if transactions:
        for version in set(hist.times) - set(remove):
            name = transaction_file(hist, version)
            if name is None:
                return None
            transactions.discard(name)
        out |= transactions
    return out


@dataclass(frozen=True)
class Planned:
    """The removal of versions of one leaf whose files are known (:func:`plan_known`): the
    leaf's URI, the store and its paths there (relative to the store's root), the removed
    versions' manifests apart, and what it removes."""

    uri: str
    store: Store
    manifests: tuple[str, ...]
    files: tuple[str, ...]
    removed: Removed


def plan_known(
    hist: DatasetHistory,
    remove: Collection[int],
    listing: Sequence[StoredFile],
    store: Store,
    prefix: str,
) -> Planned | None:
    """What removing ``remove`` from the leaf of ``hist`` (its files ``listing``, relative to
    it, at ``prefix`` in ``store``) deletes (:func:`doomed_files`), nothing deleted yet; None
    when that is not known (the caller uses Lance's cleanup then)."""
    doomed = doomed_files(hist, remove, listing)
    if doomed is None:
        return None
    count = len(listed_versions(doomed))  # the manifests lead doomed_files' order
    return _planned(hist, store, prefix, doomed[:count], doomed[count:], len(remove))


def _planned(
    hist: DatasetHistory,
    store: Store,
    prefix: str,
    manifests: Sequence[StoredFile],
    files: Sequence[StoredFile],
    versions: int,
) -> Planned:
    """The :class:`Planned` removal of ``versions`` versions of the dataset of ``hist``: the
    removed ``manifests`` and other ``files`` (relative to the dataset, at ``prefix`` in
    ``store``)."""

    def path(f: StoredFile) -> str:
        return f"{prefix}/{f.path}" if prefix else f.path

    gone = [*manifests, *files]
    return Planned(
        hist.uri,
        store,
        tuple(map(path, manifests)),
        tuple(map(path, files)),
        Removed(versions, len(gone), sum(f.size for f in gone)),
    )


def run_plan(plan: Planned | None) -> Removed | None:
    """Run the removal ``plan`` on its own (:func:`remove_planned`) and return what it
    removed; None, with nothing deleted, when there is no plan."""
    if plan is None:
        return None
    remove_planned([plan])
    return plan.removed


def remove_planned(plans: Sequence[Planned]) -> None:
    """Run the removals ``plans``: the removed versions' manifests of every leaf first, then
    the files that only those versions read, so that a crash leaves no version that still
    exists pointing at a deleted file. Each round is one :meth:`Store.delete` per store (on
    S3 with ``obstore``, DeleteObjects requests of up to 1,000 keys whatever the leaves)."""
    stores: dict[int, tuple[Store, list[Planned]]] = {}
    for plan in plans:
        stores.setdefault(id(plan.store), (plan.store, []))[1].append(plan)
    for store, planned in stores.values():
        manifests = [path for plan in planned for path in plan.manifests]
        if manifests:
            store.delete(manifests)
        files = [path for plan in planned for path in plan.files]
        if files:
            store.delete(files)


def remove_known(
    hist: DatasetHistory,
    remove: Collection[int],
    listing: Sequence[StoredFile],
    store: Store,
    prefix: str,
) -> Removed | None:
    """Remove ``remove`` from the leaf of ``hist`` (its files ``listing``, relative to it, at
    ``prefix`` in ``store``) by deleting :func:`doomed_files`; None, with nothing deleted,
    when they are not known (the caller uses Lance's cleanup then)."""
    return run_plan(plan_known(hist, remove, listing, store, prefix))


#: At most this many files are asked of Lance's explanation (more: Lance's cleanup then).
_MAX_EXPLAINED = 100_000


def _object_key(uri: str) -> str | None:
    """The key of an S3 dataset ``uri`` in its bucket (how Lance names its files)."""
    if not uri.startswith(("s3://", "s3a://")):
        return None
    parts = uri.split("://", 1)[1].split("/", 1)
    return parts[1].strip("/") if len(parts) == 2 else None


def remove_explained(
    hist: DatasetHistory, remove: Collection[int], store: Store, prefix: str
) -> Removed | None:
    """Remove ``remove`` from the dataset of ``hist`` (at ``prefix`` in ``store``, a store
    that deletes many files a request) by deleting the files Lance's cleanup would (its
    ``explain_cleanup_old_versions``, which lists and reads as the cleanup does but deletes
    nothing): the removed versions' manifests in one request, then the other files, rather
    than Lance's one request per file. None, with nothing deleted, when Lance cannot explain
    it or names a file outside the dataset (the caller uses Lance's cleanup then)."""
    versions = sorted(v for v in remove if v != hist.latest and v not in hist.tagged)
    if not versions:
        return Removed()
    key = _object_key(hist.uri)
    if key is None:
        return None
    try:
        explained = exclusive(hist.dataset).explain_cleanup_old_versions(
            versions=versions,
            error_if_tagged_old_versions=False,
            delete_unverified=False,
            include_files=True,
            max_files=_MAX_EXPLAINED,
        )
    except (OSError, ValueError, RuntimeError):
        return None
    if explained.candidate_files_truncated:
        return None
    manifests: list[str] = []
    others: list[str] = []
    for candidate in explained.candidate_files:
        path = str(candidate.path).lstrip("/")
        if not path.startswith(key + "/"):
            return None
        relative = path[len(key) + 1 :]
        full = f"{prefix}/{relative}" if prefix else relative
        (manifests if candidate.kind == "manifest" else others).append(full)
    store.delete(manifests)
    store.delete(others)
    return removed_of(explained.stats)


_INDEX_DIR = "_indices/"
_BRANCHES = "_refs/branches/"


def _index_dir(path: str) -> str | None:
    """The ``_indices/<uuid>`` directory of an index file's path, or None."""
    parts = path.split("/")
    return "/".join(parts[:2]) if path.startswith(_INDEX_DIR) and len(parts) >= 3 else None


def plan_tracked(
    hist: DatasetHistory,
    remove: Collection[int],
    listing: Sequence[StoredFile],
    store: Store,
    prefix: str,
) -> Planned | None:
    """What removing ``remove`` from the dataset of ``hist`` deletes, from what every version
    references (Lance's ``tracked_files``, read once for the history: a listing of the
    versions and a read of each manifest) rather than Lance's explanation of its cleanup
    (which lists each of the dataset's directories and reads every manifest again): the
    files that a removed version references and no other version does (a version committed
    since the history was read is among the others), the index directories only removed
    versions read whole, as Lance's cleanup removes them; of those, the ones ``listing``
    (relative to the dataset, at ``prefix`` in ``store``) holds, the manifests apart. None
    when Lance cannot list them or names a file of another location, or a version to remove
    is not among those it lists, or the dataset has branches (the caller asks Lance then)."""
    versions = {v for v in remove if v != hist.latest and v not in hist.tagged}
    if not versions or any(f.path.startswith(_BRANCHES) for f in listing):
        return None  # a branch's versions may read files of the main one: Lance's cleanup
    tracked = hist.tracked()
    if tracked is None:
        return None
    bases = {str(base).rstrip("/") for base in tracked.column("base_uri").to_pylist()}
    if bases != {hist.uri.rstrip("/")}:
        return None  # files at another base (a shallow clone, a branch): Lance's cleanup
    doomed: set[str] = set()
    kept: set[str] = set()
    seen: set[int] = set()
    for version, path in zip(
        tracked.column("version").to_pylist(), tracked.column("path").to_pylist(), strict=True
    ):
        seen.add(int(version))
        (doomed if int(version) in versions else kept).add(path)
    if not versions <= seen:
        return None
    read_dirs = {d for p in kept if (d := _index_dir(p)) is not None}
    doomed = {p for p in doomed - kept if _index_dir(p) not in read_dirs}
    directories = {d for p in doomed if (d := _index_dir(p)) is not None}
    manifests: list[StoredFile] = []
    files: list[StoredFile] = []
    for f in sorted(listing, key=lambda f: f.path):
        if f.path in doomed or _index_dir(f.path) in directories:
            (manifests if f.path.startswith("_versions/") else files).append(f)
    return _planned(hist, store, prefix, manifests, files, len(versions))
