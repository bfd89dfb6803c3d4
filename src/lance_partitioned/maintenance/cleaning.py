"""The steps of a cleanup (:mod:`~lance_partitioned.maintenance.cleanup`) on one dataset
and over every leaf: step 1 on the ``__manifest`` (:func:`clean_manifest`), steps 2 and 3 on
the leaves and the directories no retained version lists (:func:`clean_every_leaf`), each
leaf's staged files and versions on a thread pool, its versions removed only once step 1
is done; what they remove is added up in :class:`Totals`.

>>> relative_to("s3://b/ns", "s3://b/ns/leaf$dataset"), relative_to("/a", "/b/leaf")
('leaf$dataset', None)
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from lance_partitioned import errors
from lance_partitioned.maintenance.directories import clean_directories, listed
from lance_partitioned.maintenance.files import Store, StoredFile
from lance_partitioned.maintenance.removal import (
    Planned,
    plan_known,
    plan_tracked,
    remove_explained,
    remove_known,
    remove_planned,
    run_plan,
)
from lance_partitioned.maintenance.rollback import find_unpublished, roll_back
from lance_partitioned.maintenance.steps import delete, step
from lance_partitioned.maintenance.versions import (
    DatasetHistory,
    Removed,
    history,
    listed_versions,
    predict_removal,
    remove_versions,
    staged_files,
)
from lance_partitioned.manifest import MANIFEST_DIR, Manifest

__all__ = ["CleanupProgress", "Totals", "clean_every_leaf", "clean_manifest", "relative_to"]


@dataclass(frozen=True)
class CleanupProgress:
    """Where a cleanup is: the leaf just done (its location) and how many of how many."""

    location: str
    leaves_done: int
    leaves_total: int


@dataclass
class Totals:
    manifest_versions: Removed = field(default_factory=Removed)
    leaf_versions: Removed = field(default_factory=Removed)
    leaf_directories: Removed = field(default_factory=Removed)
    staged_files: Removed = field(default_factory=Removed)
    kept_leaf_versions: int = 0
    rolled_back: list[str] = field(default_factory=list)

    def absorb(self, other: Totals) -> None:
        """Add ``other`` (one leaf's totals) to these."""
        self.manifest_versions += other.manifest_versions
        self.leaf_versions += other.leaf_versions
        self.leaf_directories += other.leaf_directories
        self.staged_files += other.staged_files
        self.kept_leaf_versions += other.kept_leaf_versions
        self.rolled_back += other.rolled_back


def relative_to(root: str, uri: str) -> str | None:
    """``uri`` relative to ``root``, or None when it lies elsewhere."""
    prefix = root.rstrip("/") + "/"
    return uri[len(prefix) :] if uri.startswith(prefix) else None


def _roll_back(
    manifest: Manifest,
    hist: DatasetHistory,
    leaf: tuple[str, int],
    pinned: set[int | None],
    cutoff: dt.datetime,
    *,
    read: int,
    dry_run: bool,
) -> bool:
    """Roll the leaf of ``hist`` back to its ``read_version`` when it is ahead of it over
    versions that no retained version pins, all older than ``cutoff`` (see
    :mod:`~lance_partitioned.maintenance.rollback`); whether it was (with ``dry_run``:
    whether it would be). ``leaf`` is its object id and ``read_version`` in ``read``, the
    latest ``__manifest`` version when the cleanup started; a ``read_version`` published since
    then is added to ``pinned``. A leaf that moved meanwhile (a writer at work) is left."""
    object_id, read_version = leaf
    found = find_unpublished(object_id, hist.uri, hist.dataset, read_version, hist.times)
    if found is None or found.newest >= cutoff or any(v in pinned for v in found.versions):
        return False
    if dry_run:
        return True
    if not roll_back(found, manifest.storage_options):
        return False
    if manifest.latest_version() != read:  # a writer published meanwhile: keep what it names
        for entry in manifest.read_raw().entries:
            if entry.is_table and entry.location and manifest.table_uri(entry.location) == hist.uri:
                pinned.add(entry.read_version)
    return True


def _clean_dataset(
    store: Store,
    prefix: str,
    hist: DatasetHistory | None,
    remove: set[int],
    cutoff: dt.datetime,
    dry_run: bool,
    totals: Totals,
    *,
    is_manifest: bool = False,
    kept_extra: int = 0,
    listing: Sequence[StoredFile] | None = None,
) -> Callable[[], None] | Planned | None:
    """Staged files first, then versions (Lance would otherwise count the old staged files
    among the removed versions' files). The staged files go now; the versions' removal is
    returned, for the caller to run when it may (None: nothing to remove, or a dry run, whose
    prediction is counted already): a leaf's on a store that deletes many files a request
    (S3 with ``obstore``) whose files are all known as a :class:`~.removal.Planned`, for the
    caller to run with the other leaves' in few requests; else a function.
    ``kept_extra``: leaf versions a dry run counts as kept beside those of ``hist`` (the
    rollback it would commit); ``listing``: the files under ``prefix``, when listed
    already."""
    if listing is None:
        listing = store.files(prefix)
    cut = len(prefix) + 1 if prefix else 0  # "": the store is rooted at the dataset
    local = [StoredFile(f.path[cut:], f.size, f.mtime) for f in listing]
    staged = staged_files(hist, local, cutoff)
    if staged:
        step("leaf_staged", store.root + "/" + prefix)
        full = [
            StoredFile(f"{prefix}/{f.path}" if prefix else f.path, f.size, f.mtime) for f in staged
        ]
        totals.staged_files += delete(store, full, dry_run)
    if hist is None:
        return None
    if not is_manifest:
        totals.kept_leaf_versions += len(hist.times) - len(remove) + kept_extra
    if not remove:
        return None
    if dry_run:
        predicted = predict_removal(hist, remove, local)
        if is_manifest:
            totals.manifest_versions += predicted
        else:
            totals.leaf_versions += predicted
        return None
    versions = hist
    gone = {f.path for f in staged}
    left = [f for f in local if f.path not in gone]  # what the listing holds still

    def finish() -> None:
        step("manifest_versions" if is_manifest else "leaf_versions", versions.uri)
        known = None
        if not (is_manifest or store.bulk):  # a bulk store's known leaves are planned
            known = remove_known(versions, remove, left, store, prefix)
        if known is None and is_manifest and store.bulk:
            known = run_plan(plan_tracked(versions, remove, left, store, prefix))
        if known is None and store.bulk:
            known = remove_explained(versions, remove, store, prefix)
        removed = remove_versions(versions, remove) if known is None else known
        if is_manifest:
            totals.manifest_versions += removed
        else:
            totals.leaf_versions += removed

    if not is_manifest and store.bulk:
        planned = plan_known(versions, remove, left, store, prefix)
        if planned is not None:
            return planned
    return finish


def clean_manifest(
    store: Store,
    hist: DatasetHistory,
    expired: set[int],
    cutoff: dt.datetime,
    dry_run: bool,
    totals: Totals,
    listings: Mapping[str, list[StoredFile]] | None = None,
) -> None:
    """Step 1: the ``__manifest``'s staged files and expired versions. On a store that
    deletes many files a request, what each version references is read (one Lance call that
    reads every manifest) while the ``__manifest`` is listed: its removal needs both."""
    with ThreadPoolExecutor(1) as reader:
        every = reader.submit(hist.read_every_version) if store.bulk and expired else None
        listing = listed(store, MANIFEST_DIR, listings)
        if every is not None:
            every.result()
    finish = _clean_dataset(
        store,
        MANIFEST_DIR,
        hist,
        expired,
        cutoff,
        dry_run,
        totals,
        is_manifest=True,
        listing=listing,
    )
    if callable(finish):
        finish()


@dataclass
class _LeafCleanup:
    """One leaf's step 2: what it removed so far, and the removal of its versions still to
    run once the expired ``__manifest`` versions are gone (None: nothing left to do), as a
    function or, ``planned``, to run with the other leaves' (:func:`~.removal.remove_planned`)."""

    totals: Totals
    finish: Callable[[], None] | None
    planned: Planned | None = None


def _clean_leaf(
    manifest: Manifest,
    store: Store,
    uri: str,
    pinned: set[int | None],
    *,
    published: dict[str, tuple[str, int]],
    cutoff: dt.datetime,
    read: int,
    dry_run: bool,
    listings: Mapping[str, list[StoredFile]] | None = None,
) -> _LeafCleanup:
    """Step 2 for one leaf that a retained version lists (``pinned``: the ``read_version``s
    they pin): roll it back over an interrupted write, remove its staged files, and return
    the removal of the versions that nothing pins. ``listings``: the files under the root
    listed at once (:func:`~.directories.list_root`), else the leaf is listed on its own."""
    totals = Totals()
    options = dict(manifest.storage_options)
    leaf_store, prefix = _leaf_store(store, uri, options)
    if listings is not None and leaf_store is store and prefix:
        top = prefix.split("/", 1)[0]
        listing: Sequence[StoredFile] = [
            f for f in listings.get(top, ()) if f.path.startswith(prefix + "/")
        ]
    else:
        listing = leaf_store.files(prefix)
    cut = len(prefix) + 1 if prefix else 0
    listed = listed_versions(StoredFile(f.path[cut:], f.size, f.mtime) for f in listing)
    if _all_younger(listing, cutoff):
        # nothing in it is old enough to go (no staged file, no version, no rollback): the
        # listing says so without opening the leaf, which costs requests on an object store
        totals.kept_leaf_versions += len(listed)
        return _LeafCleanup(totals, None)
    tags = any(f.path[len(prefix) :].lstrip("/").startswith("_refs/") for f in listing)
    key = tuple(sorted(options.items()))
    hist = history(uri, options, tags=tags, listed=listed, cache_key=key)
    remove: set[int] = set()
    rolled = False  # rolled back, or would be in a dry run: the latest version may go
    if hist is not None:
        leaf = published.get(uri)
        if leaf is not None and _roll_back(
            manifest, hist, leaf, pinned, cutoff, read=read, dry_run=dry_run
        ):
            totals.rolled_back.append(leaf[0])
            rolled = True
            if not dry_run:
                hist = history(uri, options, tags=tags)
    if hist is not None:
        keep = None if rolled and dry_run else hist.latest
        remove = {
            version
            for version, committed in hist.times.items()
            if version not in pinned
            and version != keep
            and version not in hist.tagged
            and committed < cutoff
        }
    extra = 1 if rolled and dry_run else 0  # the rollback's version
    finish = _clean_dataset(
        leaf_store, prefix, hist, remove, cutoff, dry_run, totals, kept_extra=extra, listing=listing
    )
    if isinstance(finish, Planned):
        return _LeafCleanup(totals, None, finish)
    return _LeafCleanup(totals, finish)


def _all_younger(listing: Sequence[StoredFile], cutoff: dt.datetime) -> bool:
    """Whether every file listed is known to be no older than ``cutoff`` (a version's commit
    time precedes its manifest file's modification time: nothing in such a leaf can go)."""
    return all(f.mtime is not None and f.mtime >= cutoff for f in listing)


def _clean_leaves(
    pool: ThreadPoolExecutor,
    step_one: Future[None],
    clean: Callable[[str, set[int | None]], _LeafCleanup],
    leaves: Sequence[tuple[str, set[int | None]]],
    progress: Callable[[CleanupProgress], None] | None,
) -> list[Totals]:
    """Run ``clean`` on every leaf on ``pool`` while step 1 runs (``step_one``), then each
    leaf's removal of versions once step 1 is done (a leaf that gets there first waits for
    it without holding a thread of the pool), the planned ones together at the end
    (:func:`_remove_planned`); per leaf, in order, what it removed."""
    slots: list[Totals | None] = [None] * len(leaves)
    index: dict[Future[Any], int] = {}  # a leaf's clean or finish -> the leaf
    finishing: set[Future[Any]] = set()
    waiting: list[tuple[int, Callable[[], None]]] = []  # removals waiting for step 1
    planned: list[tuple[int, Planned]] = []  # removals to run together after step 1
    done = 0

    def finish(i: int, removal: Callable[[], None]) -> Future[Any]:
        future = pool.submit(removal)
        index[future] = i
        finishing.add(future)
        return future

    for i, (uri, pinned) in enumerate(leaves):
        index[pool.submit(clean, uri, pinned)] = i
    todo: set[Future[Any]] = {*index, step_one}
    while todo:
        finished, todo = wait(todo, return_when=FIRST_COMPLETED)
        for future in finished:
            if future is step_one:
                future.result()  # raises when step 1 failed: no leaf version goes then
                todo.update(finish(i, removal) for i, removal in waiting)
                waiting.clear()
                continue
            i = index[future]
            outcome = future.result()
            if future not in finishing:
                slots[i] = outcome.totals
                if outcome.planned is not None:
                    planned.append((i, outcome.planned))
                    continue
                if outcome.finish is not None:
                    if step_one.done():
                        todo.add(finish(i, outcome.finish))
                    else:
                        waiting.append((i, outcome.finish))
                    continue
            done += 1
            if progress is not None:
                progress(CleanupProgress(leaves[i][0], done, len(leaves)))
    if planned:
        _remove_planned(planned, slots)
        for i, _ in planned:
            done += 1
            if progress is not None:
                progress(CleanupProgress(leaves[i][0], done, len(leaves)))
    results = [totals for totals in slots if totals is not None]
    if len(results) != len(leaves):
        raise errors.InternalError("a leaf of the cleanup was not cleaned")
    return results


def _remove_planned(planned: Sequence[tuple[int, Planned]], slots: list[Totals | None]) -> None:
    """Run the leaves' planned removals of versions together (step 1 is done): the
    ``"leaf_versions"`` step of each, then every removed version's manifest, then the files
    only they read (:func:`~.removal.remove_planned`); each leaf's removal is added to its
    totals in ``slots``."""
    for _, plan in planned:
        step("leaf_versions", plan.uri)
    remove_planned([plan for _, plan in planned])
    for i, plan in planned:
        totals = slots[i]
        if totals is None:
            raise errors.InternalError("a planned leaf of the cleanup has no totals")
        totals.leaf_versions += plan.removed


def clean_every_leaf(
    manifest: Manifest,
    store: Store,
    step_one: Future[None],
    refs: dict[str, set[int | None]],
    published: dict[str, tuple[str, int]],
    listings: Mapping[str, list[StoredFile]] | None,
    totals: Totals,
    progress: Callable[[CleanupProgress], None] | None,
    *,
    cutoff: dt.datetime,
    read: int,
    dry_run: bool,
    threads: int | None,
) -> None:
    """Steps 2 and 3, added to ``totals``. 2. each listed leaf (``refs``): staged files, then
    the versions no retained version pins. The leaves are cleaned on a thread pool (Lance
    releases the GIL) while the __manifest is (``step_one``): a leaf's history, rollback and
    staged files do not depend on it; its versions are removed only once step 1 is done.
    3. the leaf directories no retained version lists."""
    referenced_dirs = {
        prefix.split("/", 1)[0]
        for uri in refs
        if (prefix := relative_to(store.root, uri)) is not None
    }
    leaves = sorted(refs.items())
    width = max(1, min(threads or manifest.max_workers, len(leaves) or 1))
    with ThreadPoolExecutor(width) as pool:
        clean = functools.partial(
            _clean_leaf,
            manifest,
            store,
            published=published,
            cutoff=cutoff,
            read=read,
            dry_run=dry_run,
            listings=listings,
        )
        try:
            per_leaf = _clean_leaves(pool, step_one, clean, leaves, progress)
            for leaf_totals in per_leaf:
                totals.absorb(leaf_totals)
            totals.leaf_directories += clean_directories(
                store,
                referenced_dirs,
                cutoff,
                dry_run,
                listings=listings,
                pool=None if listings is None else pool,
            )
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise


def _leaf_store(store: Store, uri: str, options: dict[str, str]) -> tuple[Store, str]:
    relative = relative_to(store.root, uri)
    if relative is not None:
        return store, relative
    return Store(uri, options), ""
