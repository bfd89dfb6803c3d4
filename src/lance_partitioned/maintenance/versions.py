"""The versions of one Lance dataset (a leaf or the ``__manifest``) as a cleanup sees them:
which can go, which files only they reference, and which staged files no version references.

Removing versions goes through Lance's own ``cleanup_old_versions(versions=[...])``: Lance
deletes each listed version's manifest and transaction files and every data, deletion and
index file that no remaining version references (its current version and tagged versions are
never removed). Lance also deletes, on any cleanup, the files that no version references and
that are more than 7 days old (a writer that never committed); the cleanup removes younger
ones itself (:func:`staged_files`) when its retention is shorter. A leaf whose files and
versions the cleanup knows already has the same files deleted without Lance's cleanup
(:mod:`~lance_partitioned.maintenance.removal`).
"""

from __future__ import annotations

import datetime as dt
import itertools
import logging
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import lance.debug
from lance import LanceDataset

from lance_partitioned import errors
from lance_partitioned.maintenance.files import StoredFile
from lance_partitioned.manifest import open_leaf
from lance_partitioned.runtime.leaf_cache import cached_leaf, exclusive, known_leaf

__all__ = [
    "DatasetHistory",
    "Removed",
    "expired_versions",
    "history",
    "listed_versions",
    "predict_removal",
    "remove_versions",
    "removed_of",
    "staged_files",
    "transaction_file",
    "utc",
]

log = logging.getLogger(__name__)

_U64_MAX = (1 << 64) - 1  # Lance's V2 manifest paths name version v as u64::MAX - v
_STAGED_DIRS = ("data/", "_deletions/")
_INDEX_DIR = "_indices/"
_CHECKOUTS = 4  # versions whose files are read one by one before reading every version's
_TRACKED_KINDS = ("data file", "deletion file")  # in Lance's tracked_files
#: How ``lance.debug.format_manifest`` prints a manifest's transaction file.
_TRANSACTION_FILE = re.compile(r'\btransaction_file: Some\(\s*"([0-9]+-[0-9A-Za-z-]+\.txn)"')


@dataclass(frozen=True)
class Removed:
    """What one kind of cleanup removed (or, in a dry run, would remove).

    Attributes
    ----------
    count : int
        Versions, directories or files, depending on the kind.
    files : int
        Files deleted.
    bytes : int
        Bytes those files held.

    >>> Removed(1, 3, 100) + Removed(2, 1, 5)
    Removed(count=3, files=4, bytes=105)
    """

    count: int = 0
    files: int = 0
    bytes: int = 0

    def __add__(self, other: Removed) -> Removed:
        return Removed(self.count + other.count, self.files + other.files, self.bytes + other.bytes)


def utc(moment: dt.datetime) -> dt.datetime:
    """``moment`` as an aware UTC datetime; a naive one is local time (what pylance returns
    for version timestamps).

    >>> utc(dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)).isoformat()
    '2025-01-01T00:00:00+00:00'
    """
    return moment.astimezone(dt.timezone.utc)


def expired_versions(
    times: Mapping[int, dt.datetime], tagged: Collection[int], cutoff: dt.datetime
) -> set[int]:
    """The versions that stopped being the latest before ``cutoff``: every version but the
    latest and the tagged ones whose successor was committed before ``cutoff``.

    A version is judged by when it was superseded, not when it was written, so that the
    version that was current at any instant since the cutoff stays (time travel by time
    within the retention works, and a writer that read it less than the retention ago can
    still commit or restore on it).

    >>> def day(n): return dt.datetime(2025, 1, n, tzinfo=dt.timezone.utc)
    >>> t = {v: day(v) for v in (1, 2, 3, 5)}
    >>> sorted(expired_versions(t, tagged={1}, cutoff=day(4)))
    [2]
    >>> sorted(expired_versions(t, tagged=(), cutoff=day(31)))
    [1, 2, 3]
    """
    ordered = sorted(times)
    return {
        version
        for version, successor in itertools.pairwise(ordered)
        if version not in tagged and utc(times[successor]) < cutoff
    }


@dataclass
class DatasetHistory:
    """The versions of one Lance dataset: number -> commit time (UTC), the latest, the tagged
    ones, and the dataset opened at its latest version."""

    uri: str
    dataset: LanceDataset
    times: dict[int, dt.datetime]
    latest: int
    tagged: set[int]
    _files: dict[int, set[str]] = field(default_factory=dict, repr=False)
    _checkouts: int = field(default=0, repr=False)  # versions read one by one
    _opened: dict[int, LanceDataset] = field(default_factory=dict, repr=False)  # no I/O
    _tracked: Any = field(default=None, repr=False)  # Lance's tracked_files, read once

    def tracked(self) -> Any:
        """Every file that each version of the dataset references (Lance's ``tracked_files``:
        a listing of the versions and a read of each manifest), read once for the history
        (:meth:`files`, :meth:`index_dirs` and the ``__manifest``'s removal read it); None
        when Lance cannot list them."""
        if self._tracked is None:
            try:
                self._tracked = self.dataset.tracked_files().read_all()
            except (OSError, ValueError) as exc:
                log.info("cannot list the files of %s at once (%s)", self.uri, exc)
                return None
        return self._tracked

    def read_every_version(self) -> None:
        """Know the data and deletion files of every version now, in one Lance call, rather
        than read a few versions one by one first (a dataset whose versions will all be
        read: the ``__manifest``, whose expired versions the cleanup removes)."""
        self._read_every_version()
        self._checkouts = _CHECKOUTS + 1

    def files(self, version: int) -> set[str]:
        """The data and deletion files (relative to the dataset) that ``version`` reads.

        The latest version's come from the open dataset; a few more versions are read one by
        one, then every version's at once (one Lance call that reads every manifest, rather
        than a checkout and Python objects per fragment of each version: a ``__manifest``
        holds hundreds of versions, a leaf a few). A version this process has opened (the
        leaf cache) is read from that object."""
        opened = version == self.dataset.version or version in self._opened
        if version not in self._files and not opened:
            if self._checkouts == _CHECKOUTS:
                self._read_every_version()
            self._checkouts += 1
        if version not in self._files:
            self._files[version] = self._read_files(version)
        return self._files[version]

    def every_version_opened(self) -> bool:
        """Whether every version's files are known without reading (the leaf cache holds
        each version: :func:`history` with ``cache_key``)."""
        return bool(self._opened) and set(self.times) <= set(self._opened)

    def opened(self, version: int) -> LanceDataset:
        """The dataset at ``version`` when this process holds it opened, else the latest."""
        return self._opened.get(version, self.dataset)

    def _read_every_version(self) -> None:
        """Read the files of every version with Lance's ``tracked_files`` (those it does not
        list are read one by one, as before)."""
        tracked = self.tracked()
        if tracked is None:
            return
        read: dict[int, set[str]] = {}
        for version, path, kind in zip(
            tracked.column("version").to_pylist(),
            tracked.column("path").to_pylist(),
            tracked.column("type").to_pylist(),
            strict=True,
        ):
            files = read.setdefault(int(version), set())  # a version without data has none
            if kind in _TRACKED_KINDS:
                files.add(path)
        for version, files in read.items():
            if version in self.times:
                self._files.setdefault(version, files)

    def index_dirs(self) -> set[str] | None:
        """The ``_indices/<uuid>`` directory names that any version of the dataset reads
        (Lance's ``tracked_files``); None when Lance cannot list them."""
        tracked = self.tracked()
        if tracked is None:
            return None
        return {
            path.split("/")[1]
            for path, kind in zip(
                tracked.column("path").to_pylist(),
                tracked.column("type").to_pylist(),
                strict=True,
            )
            if kind == "index file" and path.startswith(_INDEX_DIR) and path.count("/") >= 2
        }

    def _read_files(self, version: int) -> set[str]:
        # the latest version is open already: a checkout would read its manifest again
        ds = self.dataset
        if version in self._opened:
            at = self._opened[version]
        else:
            at = ds if version == ds.version else ds.checkout_version(version)
        out: set[str] = set()
        for fragment in at.get_fragments():
            meta = fragment.metadata
            out |= {f"data/{_path(data_file)}" for data_file in meta.files}
            if meta.deletion_file is not None:
                out.add(meta.deletion_file.path(meta.id))
        return out


def _path(data_file: Any) -> str:
    """A data file's path. pylance 14's ``DataFile.path`` builds a class on every call (a
    backwards-compatible callable str): half of a dry run's time on 100-version leaves, so
    its stored value is read when it is there."""
    stored = vars(data_file).get("_path")
    return stored if isinstance(stored, str) else str(data_file.path)


def _not_found(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "not found" in text or "does not exist" in text or "no such file" in text


def _moment(value: object) -> dt.datetime:
    if not isinstance(value, dt.datetime):
        raise errors.InternalError(f"a Lance version timestamp is {value!r}, not a datetime")
    return value


def history(
    uri: str,
    options: Mapping[str, str] | None,
    *,
    tags: bool = True,
    listed: Collection[int] | None = None,
    cache_key: tuple[tuple[str, str], ...] | None = None,
) -> DatasetHistory | None:
    """The versions of the Lance dataset at ``uri``; None when there is none (a directory
    that holds only staged files). ``tags=False``: the caller knows that it has no tags (no
    ``_refs/`` file: Lance's cleanup keeps tagged versions anyway), which saves a read.
    ``listed``: the versions whose manifests a listing of the dataset found; when that is
    only the version the dataset opens at (a leaf's usual state after a cleanup), its commit
    time comes from the manifest just read instead of a second listing and read of every
    manifest (two requests per leaf on an object store). ``cache_key`` (the storage options
    as the leaf cache keys them): the newest listed version is opened through the leaf cache
    (:mod:`lance_partitioned.runtime.leaf_cache`), so a leaf version this process committed
    or read is not opened again, and when this process has every other listed version
    opened too (a leaf it wrote, deleted from and optimized), their commit times and files
    come from those objects: no request at all."""
    if cache_key is not None and listed and not tags:
        found = _listed_history(uri, set(listed), options, cache_key)
        if found is not None:
            return found
    try:
        ds = open_leaf(uri, storage_options=options, action="read the versions of a table")
        if listed is not None and set(listed) == {int(ds.version)}:
            times = {int(ds.version): utc(_moment(ds.get_version()["timestamp"]))}
        else:
            times = {int(v["version"]): utc(_moment(v["timestamp"])) for v in ds.versions()}
        tagged = {int(tag["version"]) for tag in ds.tags.list().values()} if tags else set()
    except (OSError, ValueError, errors.TableNotFoundError) as exc:
        if _not_found(exc.__cause__ or exc):
            return None
        typed = errors.storage_error(exc, uri, "read the versions of a table")
        raise typed or errors.StorageError(
            f"cannot read the versions of the Lance table at {uri!r}: {exc}"
        ) from exc
    latest = int(ds.version)
    times.setdefault(latest, utc(_moment(ds.get_version()["timestamp"])))
    return DatasetHistory(uri, ds, times, latest, tagged)


def _listed_history(
    uri: str,
    listed: set[int],
    options: Mapping[str, str] | None,
    cache_key: tuple[tuple[str, str], ...],
) -> DatasetHistory | None:
    """The history of a dataset whose listing found the versions ``listed``, without listing
    or reading every manifest again: the newest listed version through the leaf cache (read
    when this process has not opened it), and the commit times of the others from the
    versions this process has opened (a leaf it wrote, deleted from or optimized); None when
    one of those is not in the cache (the caller reads every version then)."""
    latest = max(listed)
    opened: dict[int, LanceDataset] = {}
    for version in sorted(listed - {latest}):
        known = known_leaf(uri, version, cache_key)
        if known is None:
            return None
        opened[version] = known
    ds = _cached_version(uri, latest, options, cache_key)
    if ds is None or int(ds.version) != latest:
        return None
    opened[latest] = ds
    times = {v: utc(_moment(at.get_version()["timestamp"])) for v, at in opened.items()}
    return DatasetHistory(uri, ds, times, latest, set(), _opened=opened)


def _cached_version(
    uri: str,
    version: int,
    options: Mapping[str, str] | None,
    cache_key: tuple[tuple[str, str], ...],
) -> LanceDataset | None:
    """The dataset at ``version`` from the leaf cache (or opened and kept); None when it
    cannot be opened there (the caller looks at the latest version instead)."""

    def opened() -> LanceDataset:
        return open_leaf(uri, version, options, action="read the versions of a table")

    try:
        return cached_leaf(uri, version, cache_key, opened)
    except (OSError, ValueError, errors.StorageError, errors.TableNotFoundError):
        return None


def staged_files(
    hist: DatasetHistory | None, listing: Iterable[StoredFile], cutoff: dt.datetime
) -> list[StoredFile]:
    """Data and deletion files older than ``cutoff`` that no version of the dataset reads:
    written by a writer that never committed them (a crash, a lost commit race). A file of
    unknown age is kept. Index directories too (:func:`staged_index_files`)."""
    candidates = {
        f.path: f
        for f in listing
        if f.path.startswith(_STAGED_DIRS) and f.mtime is not None and f.mtime < cutoff
    }
    if hist is not None:
        for version in sorted(hist.times, reverse=True):  # the latest reads the most
            if not candidates:
                break
            for path in hist.files(version):
                candidates.pop(path, None)
    found = [*candidates.values(), *staged_index_files(hist, listing, cutoff)]
    return sorted(found, key=lambda f: f.path)


def staged_index_files(
    hist: DatasetHistory | None, listing: Iterable[StoredFile], cutoff: dt.datetime
) -> list[StoredFile]:
    """The files of the ``_indices/<uuid>`` directories that no version of the dataset reads
    and whose newest file is older than ``cutoff``: an index built and never committed (a
    crash or a lost race during a build; ``create_index_uncommitted``). Lance's version
    cleanup removes the index files of the versions it removes (an index replaced, then
    expired), not these. Nothing when Lance cannot list what the versions read."""
    by_dir: dict[str, list[StoredFile]] = {}
    for f in listing:
        if f.path.startswith(_INDEX_DIR) and f.path.count("/") >= 2:
            by_dir.setdefault(f.path.split("/")[1], []).append(f)
    old = {
        name: files
        for name, files in by_dir.items()
        if all(f.mtime is not None and f.mtime < cutoff for f in files)
    }
    if not old:
        return []
    if hist is not None:
        referenced = hist.index_dirs()
        if referenced is None:
            return []
        old = {name: files for name, files in old.items() if name not in referenced}
    return [f for files in old.values() for f in files]


def _manifest_path(name: str) -> int | None:
    """The version a ``_versions/`` file holds (either Lance naming scheme), or None."""
    if not name.endswith(".manifest"):
        return None
    stem = name[: -len(".manifest")]
    if not stem.isdigit():
        return None
    number = int(stem)
    return _U64_MAX - number if len(stem) == 20 and number > _U64_MAX // 2 else number


def listed_versions(listing: Iterable[StoredFile]) -> dict[int, StoredFile]:
    """The versions whose manifests a listing of one dataset (paths relative to it) holds.

    >>> listed_versions([StoredFile("_versions/18446744073709551614.manifest", 1, None),
    ...                  StoredFile("data/a.lance", 1, None)]).keys()
    dict_keys([1])
    """
    out: dict[int, StoredFile] = {}
    for f in listing:
        if f.path.startswith("_versions/"):
            version = _manifest_path(f.path[len("_versions/") :])
            if version is not None:
                out[version] = f
    return out


def predict_removal(
    hist: DatasetHistory, remove: Collection[int], listing: Iterable[StoredFile]
) -> Removed:
    """What ``cleanup_old_versions(versions=remove)`` deletes, without deleting anything:
    the versions' manifest and transaction files and the data and deletion files that only
    they read (index files are not predicted)."""
    if not remove:
        return Removed()
    sizes = {f.path: f.size for f in listing}
    doomed: set[str] = set()
    for version in remove:
        doomed |= hist.files(version)
    for version in set(hist.times) - set(remove):
        doomed -= hist.files(version)
    for path in sizes:
        if path.startswith("_versions/") and _manifest_path(path[len("_versions/") :]) in remove:
            doomed.add(path)
    for version in remove:
        transaction = _transaction(hist.dataset, version)
        if transaction is not None:
            doomed.add(f"_transactions/{transaction.read_version}-{transaction.uuid}.txn")
    present = [path for path in doomed if path in sizes]
    return Removed(len(remove), len(present), sum(sizes[p] for p in present))


def transaction_file(hist: DatasetHistory, version: int) -> str | None:
    """The transaction file (relative to the dataset) that committed ``version``: named by
    the manifest of the version's own opened object when there is one (no request; reading
    the transaction reads the manifest again, one request per removed version on an object
    store), else read; None when unreadable."""
    at = hist.opened(version)
    if int(at.version) == version:
        named = _named_transaction(at)
        if named is not None:
            return named
    transaction = _transaction(at, version)
    if transaction is None:
        return None
    return f"_transactions/{transaction.read_version}-{transaction.uuid}.txn"


def _named_transaction(ds: LanceDataset) -> str | None:
    """The ``transaction_file`` that the manifest ``ds`` holds in memory names (through
    ``lance.debug.format_manifest``, which prints it without reading anything), as a path
    relative to the dataset; None when it names none or cannot be printed."""
    try:
        printed = lance.debug.format_manifest(exclusive(ds))
    except (OSError, ValueError, RuntimeError, AttributeError):
        return None
    found = _TRANSACTION_FILE.search(str(printed))
    return f"_transactions/{found.group(1)}" if found else None


def _transaction(ds: LanceDataset, version: int) -> Any:
    try:
        return exclusive(ds).read_transaction(version)  # ds may be the leaf cache's
    except (OSError, ValueError):
        return None


def remove_versions(hist: DatasetHistory, remove: Collection[int]) -> Removed:
    """Remove ``remove`` (never the latest, never a tagged version) with Lance's cleanup."""
    versions = sorted(v for v in remove if v != hist.latest and v not in hist.tagged)
    if not versions:
        return Removed()
    try:
        stats = exclusive(hist.dataset).cleanup_old_versions(  # it may be the leaf cache's
            versions=versions, error_if_tagged_old_versions=False, delete_unverified=False
        )
    except (OSError, ValueError) as exc:
        typed = errors.storage_error(exc, hist.uri, "remove old versions")
        raise typed or errors.StorageError(
            f"cannot remove versions {versions} of the Lance table at {hist.uri!r}: {exc}; "
            "nothing a retained version reads was removed: run the cleanup again"
        ) from exc
    if stats.failed_deletes:
        log.warning("%d files of %s could not be deleted", stats.failed_deletes, hist.uri)
    return removed_of(stats)


def removed_of(stats: Any) -> Removed:
    """What Lance's cleanup statistics (of ``cleanup_old_versions`` or of its explanation)
    count: the versions, every kind of file, and the bytes."""
    files = (
        stats.old_versions
        + stats.data_files_removed
        + stats.deletion_files_removed
        + stats.index_files_removed
        + stats.transaction_files_removed
    )
    return Removed(int(stats.old_versions), int(files), int(stats.bytes_removed))
