"""Steps 3 and 4 of a cleanup, at the namespace's root: the leaf directories no retained
version lists and the Spark write journals, each removed once its newest file is older than
the cutoff; and, on an object store, the one listing of the root that every step reads
(:func:`list_root`).

>>> import tempfile
>>> from lance_partitioned.maintenance.files import Store
>>> list_root(Store(tempfile.mkdtemp(), {})) is None  # a local disk lists each leaf itself
True
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from lance_partitioned.maintenance.files import Store, StoredFile
from lance_partitioned.maintenance.steps import delete, step
from lance_partitioned.maintenance.versions import Removed
from lance_partitioned.manifest import MANIFEST_DIR
from lance_partitioned.search.training import MODELS_DIR

__all__ = ["SPARK_STAGING", "clean_directories", "clean_journals", "list_root", "listed"]

#: Directories under the root that are never leaves.
SPARK_STAGING = "_spark_staging"
_NOT_LEAVES = (MANIFEST_DIR, SPARK_STAGING, MODELS_DIR)
_LANCE_DIRS = ("_versions/", "data/", "_transactions/", "_deletions/", "_indices/", "_refs/")


def list_root(store: Store) -> dict[str, list[StoredFile]] | None:
    """On an object store, every file under the root in one listing, by the first component
    of its path (a leaf directory): pages of 1,000 keys instead of one listing request per
    leaf (``benchmarks/objectstore.py``: 731 of the 4,093 requests of a cleanup of 731
    leaves). None on a local file system, where each leaf is listed on its own, in
    parallel."""
    if store.local:
        return None
    found: dict[str, list[StoredFile]] = {}
    for stored in store.files():
        found.setdefault(stored.path.split("/", 1)[0], []).append(stored)
    return found


def _is_leaf_directory(name: str, files: Sequence[StoredFile], prefix: str) -> bool:
    """Whether a directory under the root looks like a leaf table: a Lance dataset or its
    staged data (anything else, put there by hand, is never touched)."""
    inner = [f.path[len(prefix) + 1 :] for f in files]
    return bool(inner) and all(path.startswith(_LANCE_DIRS) for path in inner)


def _newest(files: Sequence[StoredFile]) -> dt.datetime | None:
    """The newest modification time, or None when one is unknown (then keep everything)."""
    times = [f.mtime for f in files]
    if any(t is None for t in times):
        return None
    return max(t for t in times if t is not None)


def listed(
    store: Store, prefix: str, listings: Mapping[str, list[StoredFile]] | None
) -> list[StoredFile]:
    """The files under ``prefix``: from the listing of the root made at the start
    (:func:`list_root`, object stores), else listed now."""
    if listings is None:
        return store.files(prefix)
    return [f for f in listings.get(prefix.split("/", 1)[0], ()) if f.path.startswith(prefix + "/")]


def _subdirectories(
    store: Store, prefix: str, listings: Mapping[str, list[StoredFile]] | None
) -> list[str]:
    """The names of the directories directly under ``prefix`` (the root when empty)."""
    if listings is None:
        return store.directories(prefix)
    if not prefix:
        return sorted(name for name, files in listings.items() if any("/" in f.path for f in files))
    cut = len(prefix) + 1
    return sorted(
        {
            f.path[cut:].split("/", 1)[0]
            for f in listed(store, prefix, listings)
            if "/" in f.path[cut:]
        }
    )


def _remove_directory(
    store: Store, name: str, files: Sequence[StoredFile], dry_run: bool
) -> Removed:
    step("leaf_directory", name)
    removed = delete(store, files, dry_run)
    if not dry_run:
        store.prune_empty(name)
    return Removed(1, removed.files, removed.bytes)


def clean_directories(
    store: Store,
    referenced: set[str],
    cutoff: dt.datetime,
    dry_run: bool,
    *,
    listings: Mapping[str, list[StoredFile]] | None = None,
    pool: ThreadPoolExecutor | None = None,
) -> Removed:
    """Step 3: the leaf directories under the root that no retained version lists
    (``referenced``) whose newest file is older than ``cutoff``; what went. With
    ``listings`` (an object store), from the listing of the root made at the start (a
    directory created since is not in it, so not touched), the directories removed in
    parallel on ``pool``."""
    doomed: list[tuple[str, list[StoredFile]]] = []
    for name in _subdirectories(store, "", listings):
        if name in _NOT_LEAVES or name in referenced:
            continue
        files = listed(store, name, listings)
        if not _is_leaf_directory(name, files, name):
            continue
        newest = _newest(files)
        if newest is None or newest >= cutoff:
            continue
        if any(f.path.startswith(f"{name}/_refs/") for f in files):
            continue  # a Lance tag someone set on it by hand
        doomed.append((name, files))
    run = map if pool is None else pool.map
    total = Removed()
    for removed in run(lambda d: _remove_directory(store, d[0], d[1], dry_run), doomed):
        total += removed
    return total


def clean_journals(
    store: Store,
    cutoff: dt.datetime,
    dry_run: bool,
    listings: Mapping[str, list[StoredFile]] | None = None,
) -> Removed:
    """Step 4: the Spark write journals (``_spark_staging/<job>``) whose newest file is older
    than ``cutoff``; what went."""
    total = Removed()
    for job in _subdirectories(store, SPARK_STAGING, listings):
        prefix = f"{SPARK_STAGING}/{job}"
        files = listed(store, prefix, listings)
        newest = _newest(files)
        if not files or newest is None or newest >= cutoff:
            continue
        step("journal", prefix)
        total += delete(store, files, dry_run)
        if not dry_run:
            store.prune_empty(prefix)
    if not dry_run and store.local and not store.files(SPARK_STAGING):
        store.prune_empty(SPARK_STAGING)
    return total
