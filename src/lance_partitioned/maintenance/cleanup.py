"""``cleanup``: remove what no retained version of a namespace needs, after a retention period.

A version of the ``__manifest`` is *retained* when it is the latest, when a tag names it, or
when it stopped being the latest less than ``older_than`` ago (the version current at any
instant since the cutoff stays). Everything a retained version reads stays: the leaf versions
its rows pin through ``read_version`` and every file those read. The cleanup removes, in this
order (so that a crash at any point leaves every version that still exists readable, and a
second run finishes the job):

1. the expired ``__manifest`` versions (Lance's cleanup, which keeps tagged versions too);
2. in each leaf that a retained version lists: a leaf that an interrupted write left ahead of
   the latest version's ``read_version`` (leaf versions above it that no retained version
   names, all older than the cutoff) is first rolled back to that ``read_version`` with a
   Lance ``Restore``, as the next write to it would
   (:mod:`~lance_partitioned.maintenance.rollback` says why that is safe while writers run);
   then the data files staged by writers that never committed (no leaf version reads them)
   older than the cutoff go, and the index directories no leaf version reads (an index built
   and never committed) whose files are all older than the cutoff, then the leaf versions
   that no retained version pins, older than the cutoff (Lance's cleanup with an explicit
   list of versions, which keeps every file a remaining version reads, and removes the index
   files only the removed versions read; or, for a leaf whose every file and version the
   cleanup knows already, the same deletions without Lance's listings:
   :mod:`~lance_partitioned.maintenance.removal`; the latest leaf version always stays).
   On S3 with ``obstore`` (:mod:`~lance_partitioned.maintenance.bulk`) files go in
   DeleteObjects requests of up to 1,000 keys, manifests always in a request before the
   files they read: the known leaves' removals together, once step 1 is done (every removed
   manifest of every leaf, then every file only they read), the expired ``__manifest``
   versions' files as what every version references names them (Lance's ``tracked_files``,
   read once: :func:`~lance_partitioned.maintenance.removal.plan_tracked`), and what else
   goes through Lance as its cleanup names it (``explain_cleanup_old_versions``), manifests
   first;
3. leaf directories that no retained version lists (leaves dropped by ``overwrite``, leaves a
   crashed writer created, another client's unpublished table) whose newest file is older
   than the cutoff: the files listed are deleted, not the directory as such, so a writer
   staging into it meanwhile keeps its new files;
4. Spark write journals (``_spark_staging/<job>``) whose newest file is older than the cutoff,
   and shared vector index models (``_index_models/``) that no index definition of a
   retained version names, older than the cutoff (counted with the staged files).

Ages protect concurrent writers: a writer's staged files, new leaf directory and leaf commits
not yet published are younger than the cutoff; the ``__manifest`` version it read, and the
leaf versions it may restore a leaf to, are retained while it is younger than the retention.
So a cleanup is safe to run while writers, ``optimize`` and readers run, as long as none of
them takes longer than ``older_than``; ``older_than=timedelta(0)`` is only safe when nothing
else writes or reads older versions meanwhile.

>>> import tempfile, datetime as dt, pyarrow as pa, lance_partitioned as lp
>>> root = tempfile.mkdtemp()
>>> ns = lp.PartitionedNamespace.create(root, schema=pa.schema([("k", pa.string())]),
...                                     partition_by="k")
>>> for key in ("a", "a", "b"):
...     _ = ns.write(pa.table({"k": [key]}))
>>> _ = ns.write(pa.table({"k": ["c"]}), mode="overwrite")
>>> preview = ns.cleanup(dt.timedelta(0), dry_run=True)
>>> preview.removed_manifest_versions, preview.leaf_directories.count
((1, 2, 3, 4, 5), 2)
>>> done = ns.cleanup(dt.timedelta(0))
>>> done.removed_manifest_versions, done.leaf_directories.count, done.kept_manifest_versions
((1, 2, 3, 4, 5), 2, (6,))
>>> (done.files, done.bytes) == (preview.files, preview.bytes)
True
>>> ns.refresh().to_table().column("k").to_pylist()
['c']
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from lance_partitioned import errors
from lance_partitioned.maintenance.cleaning import (
    CleanupProgress,
    Totals,
    clean_every_leaf,
    clean_manifest,
)
from lance_partitioned.maintenance.directories import (
    clean_journals,
    list_root,
)
from lance_partitioned.maintenance.files import Store
from lance_partitioned.maintenance.steps import STEPS, delete, on_step
from lance_partitioned.maintenance.versions import (
    Removed,
    expired_versions,
    history,
    utc,
)
from lance_partitioned.manifest import TABLE, Manifest
from lance_partitioned.search.training import MODELS_DIR, unreferenced_models

__all__ = ["STEPS", "CleanupProgress", "CleanupResult", "Removed", "cleanup", "on_step"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CleanupResult:
    """What :func:`cleanup` removed (or, with ``dry_run``, would remove).

    Attributes
    ----------
    cutoff : datetime
        ``now - older_than`` (UTC): what is older than this and not needed goes.
    dry_run : bool
        True when nothing was removed.
    manifest_versions, leaf_versions : Removed
        Versions of the ``__manifest`` and of the leaves removed, with their files and bytes.
    leaf_directories : Removed
        Leaf directories no retained version lists (count: directories).
    staged_files : Removed
        Files staged by writers that never committed, in the ``__manifest``, in leaves and
        in Spark journals (count: files).
    kept_manifest_versions, removed_manifest_versions : tuple of int
        The ``__manifest`` versions that stay and those removed.
    kept_leaf_versions : int
        Leaf versions that stay, over every leaf a retained version lists.
    leaves : int
        Leaves examined.
    seconds : float
        Wall time.
    rolled_back : tuple of str
        Object ids of the leaves rolled back to their ``read_version`` over the versions an
        interrupted write left (with ``dry_run``: that would be).
    """

    cutoff: dt.datetime
    dry_run: bool
    manifest_versions: Removed
    leaf_versions: Removed
    leaf_directories: Removed
    staged_files: Removed
    kept_manifest_versions: tuple[int, ...]
    removed_manifest_versions: tuple[int, ...]
    kept_leaf_versions: int
    leaves: int
    seconds: float
    rolled_back: tuple[str, ...] = ()

    @property
    def files(self) -> int:
        """Files removed, every kind together."""
        return sum(r.files for r in self._kinds())

    @property
    def bytes(self) -> int:
        """Bytes removed, every kind together."""
        return sum(r.bytes for r in self._kinds())

    def _kinds(self) -> tuple[Removed, ...]:
        return (
            self.manifest_versions,
            self.leaf_versions,
            self.leaf_directories,
            self.staged_files,
        )


def _references(
    manifest: Manifest, versions: Sequence[int]
) -> tuple[dict[str, set[int | None]], dict[str, tuple[str, int]]]:
    """Leaf URI -> the ``read_version``s that the given ``__manifest`` versions pin (None:
    a NULL ``read_version``, read the latest); and leaf URI -> its object id and
    ``read_version`` in the last of them (the latest ``__manifest`` version), when not NULL."""
    refs: dict[str, set[int | None]] = {}
    published: dict[str, tuple[str, int]] = {}
    for version in versions:
        try:
            raw = manifest.read_raw(version)
        except errors.TableVersionNotFoundError:
            continue  # another cleanup removed it meanwhile
        except (OSError, ValueError) as exc:
            typed = errors.storage_error(exc, manifest.root, "read the __manifest")
            raise typed or errors.StorageError(
                f"cannot read __manifest version {version} at {manifest.root!r}: {exc}"
            ) from exc
        published = {}
        for entry in raw.entries:
            if entry.object_type == TABLE and entry.location:
                uri = manifest.table_uri(entry.location)
                refs.setdefault(uri, set()).add(entry.read_version)
                if entry.read_version is not None:
                    published[uri] = (entry.object_id, entry.read_version)
    return refs, published


def cleanup(
    manifest: Manifest,
    older_than: dt.timedelta = dt.timedelta(days=7),
    *,
    dry_run: bool = False,
    progress: Callable[[CleanupProgress], None] | None = None,
    now: dt.datetime | None = None,
    threads: int | None = None,
) -> CleanupResult:
    """Remove what no retained version needs, once older than ``older_than`` (see the module
    docstring for what goes, in which order, and what is safe to run meanwhile).

    Parameters
    ----------
    manifest : Manifest
        The namespace's ``__manifest``.
    older_than : timedelta
        The retention: nothing younger goes, and every ``__manifest`` version that was the
        latest at some instant within it stays.
    dry_run : bool
        Report what would go and remove nothing.
    progress : callable, optional
        Called with a :class:`CleanupProgress` after each leaf.
    now : datetime, optional
        The present (tests set it; a naive datetime is local time).
    threads : int, optional
        Leaves cleaned in parallel.

    Raises
    ------
    InvalidInputError
        ``older_than`` is negative.
    StorageError
        The storage refused a listing or a deletion; what was removed until then was not
        needed by any retained version, and running the cleanup again finishes the job.
    """
    if older_than < dt.timedelta(0):
        raise errors.InvalidInputError(f"older_than must not be negative, got {older_than}")
    started = time.perf_counter()
    present = utc(now or dt.datetime.now(dt.timezone.utc))
    try:
        cutoff = present - older_than
    except OverflowError:  # a retention longer than the calendar: keep everything
        cutoff = dt.datetime.min.replace(tzinfo=dt.timezone.utc)
    options = dict(manifest.storage_options)
    store = Store(manifest.root, options)
    totals = Totals()

    # the root is listed (on an object store) while the __manifest's versions are read and
    # step 1 runs, not after: each is a round of requests on the way to the leaves
    with ThreadPoolExecutor(1) as lister, ThreadPoolExecutor(1) as first:
        listed = lister.submit(list_root, store)
        manifest_history = history(manifest.uri, options)
        if manifest_history is None:
            raise errors.NamespaceNotFoundError(
                f"no partitioned namespace at {manifest.root!r}: {manifest.uri!r} holds no table"
            )
        expired = expired_versions(manifest_history.times, manifest_history.tagged, cutoff)
        kept = sorted(set(manifest_history.times) - expired)
        # 1. expired __manifest versions first: leaf versions only they pin go next, so every
        # __manifest version that still exists stays readable whatever step a crash stops at.
        # It lists the __manifest itself (one request) rather than wait for the root's listing.
        step_one = first.submit(
            clean_manifest, store, manifest_history, expired, cutoff, dry_run, totals
        )
        refs, published = _references(manifest, kept)
        listings = listed.result()
        clean_every_leaf(
            manifest,
            store,
            step_one,
            refs,
            published,
            listings,
            totals,
            progress,
            cutoff=cutoff,
            read=kept[-1],
            dry_run=dry_run,
            threads=threads,
        )
    totals.staged_files += clean_journals(store, cutoff, dry_run, listings)
    models = unreferenced_models(
        manifest, store, kept, cutoff, None if listings is None else listings.get(MODELS_DIR, [])
    )
    if models:
        totals.staged_files += delete(store, models, dry_run)
        if not dry_run:
            store.prune_empty(MODELS_DIR)

    result = CleanupResult(
        cutoff=cutoff,
        dry_run=dry_run,
        manifest_versions=totals.manifest_versions,
        leaf_versions=totals.leaf_versions,
        leaf_directories=totals.leaf_directories,
        staged_files=totals.staged_files,
        kept_manifest_versions=tuple(kept),
        removed_manifest_versions=tuple(sorted(expired)),
        kept_leaf_versions=totals.kept_leaf_versions,
        leaves=len(refs),
        seconds=time.perf_counter() - started,
        rolled_back=tuple(totals.rolled_back),
    )
    log.info(
        "cleanup%s of %s: %d files, %d bytes",
        " (dry run)" if dry_run else "",
        manifest.root,
        result.files,
        result.bytes,
    )
    return result
