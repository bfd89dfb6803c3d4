"""Leaf commits of the commit protocol: one leaf's staged data or change, committed with Lance
on top of the version the ``__manifest`` names (see :mod:`lance_partitioned.transaction`).

Nothing here is visible until the ``__manifest`` commit that names the new leaf versions;
:func:`pause_at` lets a test run another writer or an evolution at a precise step.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from lance import LanceDataset, LanceOperation
from lance.commit import CommitConflictError

from lance_partitioned import errors
from lance_partitioned.manifest import Manifest, open_leaf
from lance_partitioned.runtime.hooks import Hooks
from lance_partitioned.runtime.leaf_cache import cached_leaf, known_leaf, remember_leaf
from lance_partitioned.transaction.leafplan import (
    field_id_map,
    leaf_fingerprint,
    plan_leaf,
    remap,
    staged_fingerprint,
)

log = logging.getLogger(__name__)


_ABSENT = -1  # expected state of a leaf whose manifest row does not exist
_NULL = -2  # expected state of a leaf whose manifest row has a NULL read_version
_LEAF_ATTEMPTS = 8


# ----------------------------------------------------------------------- pause points
_PAUSES = Hooks("pause point", ("staged", "leaf_commit", "leaves_committed", "converted_rows"))


@contextlib.contextmanager
def pause_at(point: str, action: Callable[[], None]) -> Iterator[None]:
    """Run ``action`` once, the first time a commit reaches ``point``, while the block runs.

    For deterministic tests of concurrent writers: ``action`` is another writer or an
    evolution acting at a precise step of this commit. The points are ``"staged"`` (the
    data is staged, nothing is committed yet), ``"leaf_commit"`` (just before a leaf commit)
    and ``"leaves_committed"`` (every leaf is committed, the ``__manifest`` is not); and
    ``"converted_rows"``, in :func:`~lance_partitioned.convert.convert` between its ``rows``
    and ``publish`` commits.

    >>> with pause_at("staged", lambda: print("another writer runs here")):
    ...     _pause("staged"); _pause("staged")
    another writer runs here
    """
    fired = threading.Event()

    def once() -> None:
        if not fired.is_set():
            fired.set()
            action()

    with _PAUSES.hooked(point, once):
        yield


def _pause(point: str) -> None:
    _PAUSES.fire(point)


@dataclass
class LeafWrite:
    """Staged, uncommitted data for one leaf table.

    Attributes
    ----------
    object_id : str
        The leaf's object id (``v1$<name>…$dataset``).
    location : str
        Where the fragments were staged, relative to the root.
    fragments : list
        ``lance.fragment.FragmentMetadata`` of the staged files.
    rows : int
        Rows in the staged fragments.
    values : dict
        Partition column name to Python value, for this leaf (inherited by its row).
    aliases : dict, optional
        Field id (as text) to a previous name of the field, for leaves of other clients
        that match columns by name (set by ``rename_column``).
    """

    object_id: str
    location: str
    fragments: list[Any]
    rows: int
    values: dict[str, Any]
    aliases: dict[str, str] | None = None


@dataclass(frozen=True)
class LeafCommit:
    """A committed leaf: its new Lance version, its row count and its schema fingerprint
    (:func:`~lance_partitioned.transaction.leafplan.leaf_fingerprint`) at that version."""

    version: int
    num_rows: int
    fingerprint: str | None = None
    appended: bool = False  # the commit also appended the leaf's staged fragments


@dataclass
class Backoff:
    """Retry policy of every ``__manifest`` compare-and-swap: ``attempts`` tries, sleeping an
    exponential delay (``base`` doubling up to ``cap`` seconds) with jitter between them.

    The default waits at most about 21 s in all: four writers appending to the same partitions
    of a namespace on S3 at once used up to 8 attempts (``tests/objectstore``).

    ``free_seconds``: for how long after its first loss to another writer's publication (a
    lost ``__manifest`` compare-and-swap, or a leaf commit that conflicted after the
    ``__manifest`` moved on: progress was made) a commit retries such a loss without counting
    it against ``attempts`` (20 s, about the exponential waits' total): a writer that commits
    to the same leaf many times a second otherwise wins 16 times in a row within a second.
    """

    attempts: int = 16
    base: float = 0.05
    cap: float = 2.0
    free_seconds: float = 20.0
    _rng: random.Random = field(default_factory=random.Random)

    def sleep(self, attempt: int) -> None:
        delay = min(self.cap, self.base * 2**attempt)
        time.sleep(delay / 2 + self._rng.uniform(0, delay / 2))

    def sleep_briefly(self) -> None:
        """A jittered pause of at most ``base / 5`` seconds: after a lost ``__manifest``
        compare-and-swap, whose retry mostly commits rows again (nothing to back off from: a
        longer wait only lets more commits of others in)."""
        time.sleep(self._rng.uniform(0, self.base / 5))


class _StaleSnapshot(Exception):
    """A leaf commit conflicted and the ``__manifest`` moved on since it was read: the leaf's
    expected ``read_version`` may be out of date, so re-read before trying again (two writers
    restoring a leaf to different expected versions would otherwise keep undoing each other)."""


def _latest_version(uri: str, options: dict[str, str] | None) -> int | None:
    try:
        return int(open_leaf(uri, storage_options=options).latest_version)
    except errors.TableNotFoundError:
        return None


def restore_leaf(uri: str, version: int, *, latest: int, options: dict[str, str] | None) -> int:
    """Commit a Lance ``Restore`` of the leaf at ``uri`` to ``version`` over ``latest`` (its
    latest version, checked by Lance: no retry) and return the new version. The one place a
    leaf is restored: before a write to a leaf whose latest version is not the one the
    ``__manifest`` names, and by ``verify --repair``/``cleanup`` rolling back an interrupted
    write (:mod:`lance_partitioned.maintenance.rollback`).

    Raises
    ------
    lance.commit.CommitConflictError
        Another commit landed on the leaf after ``latest``.
    """
    log.info("restoring leaf %s from version %d to %d", uri, latest, version)
    restored = LanceDataset.commit(
        uri,
        LanceOperation.Restore(version),
        read_version=latest,
        storage_options=options,
        max_retries=0,
    )
    return int(restored.version)


def _open_leaf(uri: str, version: int, options: dict[str, str] | None) -> LanceDataset:
    """The leaf at ``version``, opened to compare its schema with the staged one."""
    return open_leaf(uri, version, options)


def _ensure(uri: str, version: int, options: dict[str, str] | None) -> LanceDataset:
    """The leaf at ``version``, which a commit just made: raises :class:`_Rebased` when Lance
    rebased that commit over a concurrent one (its version is not the one expected)."""
    latest = open_leaf(uri, storage_options=options)
    if latest.version != version:
        raise _Rebased(uri)
    return latest


class _Rebased(Exception):
    """A leaf commit was rebased over another writer's: redo it on the expected version."""


def _conform_leaf(
    uri: str,
    base: LanceDataset,
    schema: pa.Schema,
    options: dict[str, str] | None,
    aliases: Mapping[str, str] | None = None,
) -> LanceDataset:
    """Make the leaf at ``base`` take fragments staged in ``schema`` with metadata-only leaf
    commits (add, rename, make nullable; widen a promoted column, which rewrites that column
    only), each on top of the previous one. Returns the leaf at its new version.

    Raises :class:`~lance_partitioned.errors.ConcurrentSchemaChangeError` when a staged column
    has a type the leaf cannot hold (the schema changed while the write was staged).
    """
    plan = plan_leaf(base.lance_schema, schema, aliases)
    if plan.conflicts:
        raise errors.ConcurrentSchemaChangeError(
            f"the leaf table at {uri!r} (version {base.version}) cannot take the columns "
            f"{plan.conflicts} as this write staged them: the namespace schema changed while "
            "the write was staged; write the data again"
        )
    ds = base
    steps: list[Callable[[LanceDataset], None]] = []
    if plan.nullable or plan.casts:
        alterations: list[Any] = [{"path": p, "nullable": True} for p in plan.nullable]
        alterations += [{"path": p, "data_type": t} for p, t in plan.casts]
        steps.append(lambda d: d.alter_columns(*alterations))
    if plan.renames:
        renames: list[Any] = [{"path": p, "name": n} for p, n in plan.renames]
        steps.append(lambda d: d.alter_columns(*renames))
    if plan.adds:
        steps.append(lambda d: d.add_columns(pa.schema(plan.adds)))
    if plan.stamps:  # field metadata, set by the paths the fields have now
        restamp: dict[str, dict[str, str | None]] = {
            path: dict(values) for path, values in plan.stamps.items()
        }
        steps.append(lambda d: d.update_field_metadata(restamp))
    for step in steps:
        ds = _leaf_step(uri, ds, step, options)
    log.info("leaf %s evolved to version %d for this write's columns", uri, ds.version)
    return ds


def _leaf_step(
    uri: str, ds: LanceDataset, step: Callable[[LanceDataset], Any], options: dict[str, str] | None
) -> LanceDataset:
    """Run one metadata-only schema change on the leaf at ``ds`` and return the leaf at the
    version it made. Lance reports a concurrent leaf commit (another writer's append or
    restore) as an ``OSError`` ("Incompatible transaction") here rather than as a commit
    conflict: raised as :class:`_Rebased`, so that :func:`commit_leaf` looks again and
    retries, as for any other leaf conflict."""
    expected = ds.version + 1
    try:
        step(ds)
    except (OSError, ValueError) as exc:
        text = str(exc).lower()
        if "incompatible transaction" not in text and "conflict" not in text:
            raise
        raise _Rebased(uri) from exc
    return _ensure(uri, expected, options)


def _staged_fragments(uri: str, ds: LanceDataset, leaf: LeafWrite, schema: pa.Schema) -> list[Any]:
    """The staged fragments with the field ids of the leaf at ``ds``, checked column by column
    against its schema (never appends fragments the leaf would misread)."""
    mapping = field_id_map(ds.lance_schema, schema)
    if isinstance(mapping, str):
        raise errors.ConcurrentSchemaChangeError(
            f"leaf table {leaf.object_id!r} at {uri!r} (version {ds.version}) does not hold "
            f"column {mapping!r} as this write staged it: the schema changed while the write "
            "was staged; write the data again"
        )
    return remap(leaf.fragments, mapping)


def commit_leaf(
    manifest: Manifest,
    leaf: LeafWrite,
    expected: int,
    *,
    overwrite: bool,
    schema: pa.Schema,
    stale: Callable[[], bool] | None = None,
    known: str | None = None,
) -> LeafCommit:
    """Commit one leaf's staged fragments on top of the manifest's view of it.

    ``known`` is the leaf schema fingerprint the ``__manifest`` recorded for ``expected``:
    when it is the staged schema's, the leaf takes the fragments as they are and is not
    opened. Otherwise the leaf is opened at ``expected`` and brought to take the staged
    columns first (:func:`_conform_leaf`). Returns the new leaf version, its row count and
    schema fingerprint. Retries Lance-level conflicts with other leaf writers; after a
    conflict, raises :class:`_StaleSnapshot` instead when ``stale()`` says the manifest that
    ``expected`` was read from is no longer the latest.
    """
    uri = manifest.table_uri(leaf.location)
    options = manifest.storage_options or None
    staged = staged_fingerprint(schema)
    # The first attempt takes the leaf to be as the manifest says (absent, or at `expected`
    # with the staged schema) without opening it: that is the common case, and opening costs
    # as much as a quarter of a small leaf's commit. Lance reports any difference (a rebase, a
    # conflict, an existing or a missing dataset), and every later attempt reads the leaf's
    # latest version first.
    for attempt in range(_LEAF_ATTEMPTS):
        looked = attempt > 0 or expected == _NULL
        if looked:
            latest = _latest_version(uri, options)
        else:
            latest = None if expected == _ABSENT else expected
        try:
            if expected == _ABSENT:
                # a new leaf, or an orphan directory (crashed writer, or a partition removed by
                # a whole-namespace overwrite): replace whatever is there
                op: Any = LanceOperation.Overwrite(schema, leaf.fragments)
                ds = LanceDataset.commit(
                    uri, op, read_version=latest, storage_options=options, max_retries=0
                )
                return _committed(uri, options, ds, LeafCommit(int(ds.version), 0, staged))
            if latest is None:
                raise errors.CorruptNamespaceError(
                    f"leaf table {leaf.object_id!r} is in the __manifest but {uri!r} holds no "
                    "Lance dataset"
                )
            if expected >= 0 and latest != expected:
                latest = restore_leaf(uri, expected, latest=latest, options=options)
            fingerprint = staged
            fragments = leaf.fragments
            base = latest
            if overwrite:
                op = LanceOperation.Overwrite(schema, leaf.fragments)
            else:
                if known != staged or looked or not leaf.fragments:
                    ds = _conform_leaf(
                        uri, _open_leaf(uri, latest, options), schema, options, leaf.aliases
                    )
                    fragments = _staged_fragments(uri, ds, leaf, schema)
                    base = int(ds.version)
                    fingerprint = leaf_fingerprint(ds)
                op = LanceOperation.Append(fragments)
            if not overwrite and not fragments:  # a schema change only (rename_column)
                return LeafCommit(int(base), int(ds.count_rows()), fingerprint)
            _pause("leaf_commit")
            ds = LanceDataset.commit(
                _base(uri, base, options),
                op,
                read_version=base,
                storage_options=options,
                max_retries=0,
            )
            if overwrite or ds.version == base + 1:
                return _committed(uri, options, ds, LeafCommit(int(ds.version), 0, fingerprint))
            # Lance rebased our Append over a concurrent commit, so this version also holds
            # another writer's rows that its own retry may append again: do not use it. The
            # next attempt restores the leaf to `expected` and appends on top of that.
            log.info("append to %s was rebased to version %d: redoing it", uri, ds.version)
            if stale is not None and stale():
                raise _StaleSnapshot(leaf.object_id)
            if looked:  # else an orphan may be all there is: look before waiting
                Backoff().sleep(attempt)
        except (CommitConflictError, _Rebased):
            if stale is not None and stale():
                raise _StaleSnapshot(leaf.object_id) from None
            Backoff().sleep(attempt)
        except (OSError, errors.TableNotFoundError):
            # Lance reports a plain "not found" for a version it assumed: a leaf taken to be
            # absent exists (an orphan directory, or another writer created it meanwhile), or
            # one taken to exist does not; look, and retry on top of what is there
            if not looked:
                continue
            if latest is not None or _latest_version(uri, options) is None:
                raise
            Backoff().sleep(attempt)
    raise errors.ConcurrentModificationError(
        f"leaf table {leaf.object_id!r} kept conflicting with concurrent writers "
        f"after {_LEAF_ATTEMPTS} attempts"
    )


def _base(uri: str, version: int, options: dict[str, str] | None) -> str | LanceDataset:
    """What a leaf commit on ``version`` goes through: the leaf at that version when this
    process has it opened (Lance then lists no version and reads no manifest: on an object
    store, an append to a leaf is 3 requests instead of 5), else its URI."""
    known = known_leaf(uri, version, tuple(sorted((options or {}).items())))
    return uri if known is None else known


def _committed(
    uri: str, options: dict[str, str] | None, ds: LanceDataset, commit: LeafCommit
) -> LeafCommit:
    """``commit`` with the row count of the leaf version ``ds`` that a leaf commit returned,
    which the leaf cache keeps for the next read of that version (a scan, or the plan of a
    delete or an optimize, then opens nothing: on an object store a ``HEAD`` and a ``GET``
    of its manifest saved per leaf)."""
    remember_leaf(uri, commit.version, tuple(sorted((options or {}).items())), ds)
    return dataclasses.replace(commit, num_rows=int(ds.count_rows()))


_KEEPS_SCHEMA = (LanceOperation.Delete, LanceOperation.Update)  # ops of commit_change


@dataclass(frozen=True)
class LeafChange:
    """A change to one existing leaf, computed from that leaf at the ``read_version`` of the
    ``__manifest`` snapshot being committed on.

    ``prepare`` is called by :func:`commit_changes` with the leaf opened at that version (after
    restoring the leaf to it when an orphan commit is on top) and returns the Lance operation
    to commit on it (``Delete``, ``Update``, ``Rewrite``, ``Overwrite``, ``Append``), or
    ``None`` when there is nothing to change. It must not commit; it may write data files
    (deletion files, new fragments). It is called again, on the new base, when the leaf moved
    before the ``__manifest`` commit.
    """

    object_id: str
    prepare: Callable[[LanceDataset], Any]


def commit_change(
    manifest: Manifest,
    location: str,
    change: LeafChange,
    expected: int,
    *,
    stale: Callable[[], bool] | None = None,
    operation: tuple[Any] | None = None,
    prepared: Callable[[int, Any], None] | None = None,
    append: Sequence[Any] = (),
    known: str | None = None,
) -> LeafCommit | None:
    """Commit ``change`` on the leaf at ``location``, on top of its ``expected`` version (the
    manifest's ``read_version``; ``_NULL``: its latest). Returns ``None`` when ``prepare`` found
    nothing to change. The first attempt commits on ``expected`` without opening the leaf's
    latest version (the leaf the planner opened at ``expected``, from the leaf cache); an
    orphan commit on top of it makes Lance report a conflict or rebase the commit, and the
    next attempt restores the orphan away first. A commit that Lance rebased over another
    writer's is not used (it may hold rows the manifest does not), and a conflict after the
    manifest moved on raises :class:`_StaleSnapshot`.

    ``operation`` (a 1-tuple: the operation may be ``None``) is committed instead of calling
    ``prepare``: the operation an earlier attempt prepared on a version that ``expected`` only
    appended fragments to (:mod:`lance_partitioned.transaction.rebase`). ``prepared(version,
    operation)`` is told each operation ``prepare`` returns, with the version it was prepared
    on.

    ``append`` are staged fragments in the leaf's own schema to add in the same commit: a
    ``Delete`` that ``prepare`` returns and these fragments become one Lance ``Update`` (as
    pylance's own ``update`` commits), one leaf version instead of two; the result says
    ``appended``. Any other operation is committed alone and the fragments are left to the
    caller.

    ``known`` is the leaf schema fingerprint the ``__manifest`` recorded for ``expected``: a
    ``Delete`` (fused or not) changes no column, so the new version has it too."""
    uri = manifest.table_uri(location)
    options = manifest.storage_options or None
    key = tuple(sorted((options or {}).items()))
    for attempt in range(_LEAF_ATTEMPTS):
        # The first attempt takes the leaf to be at `expected`, as the __manifest says, and
        # does not open its latest version (as commit_leaf): Lance reports any commit on top
        # of it (a conflict, or a rebase that is not used), and every later attempt reads
        # the leaf's latest version first and restores orphan commits away.
        looked = attempt > 0 or expected == _NULL
        latest = _latest_version(uri, options) if looked else expected
        if latest is None:
            raise errors.CorruptNamespaceError(
                f"leaf table {change.object_id!r} is in the __manifest but {uri!r} holds no "
                "Lance dataset"
            )
        base = latest if expected == _NULL else expected
        try:
            if latest != base:
                latest = restore_leaf(uri, base, latest=latest, options=options)
            # the leaf at that version, as the planner opened it (the leaf cache): a prepare
            # reads it and writes files, and the commit goes through it (Lance then does not
            # open the leaf again); neither moves the object on
            try:
                at = cached_leaf(
                    uri, latest, key, functools.partial(_open_leaf, uri, latest, options)
                )
            except errors.TableNotFoundError:
                if not looked:  # not at `expected` after all (removed, or no leaf): look
                    continue
                raise
            if operation is not None:
                op = operation[0]
            else:
                op = change.prepare(at)
                if prepared is not None:
                    prepared(base, op)
            if op is None:
                return None
            fused = bool(append) and isinstance(op, LanceOperation.Delete)
            if fused:
                op = LanceOperation.Update(
                    removed_fragment_ids=list(op.deleted_fragment_ids),
                    updated_fragments=list(op.updated_fragments),
                    new_fragments=list(append),
                )
            _pause("leaf_commit")
            ds = LanceDataset.commit(
                at, op, read_version=latest, storage_options=options, max_retries=0
            )
            if ds.version == latest + 1:
                kept = known is not None and expected >= 0 and isinstance(op, _KEEPS_SCHEMA)
                fingerprint = known if kept else leaf_fingerprint(ds)
                done = LeafCommit(int(ds.version), 0, fingerprint, fused)
                return _committed(uri, options, ds, done)
            log.info("change of %s was rebased to version %d: redoing it", uri, ds.version)
            if stale is not None and stale():
                raise _StaleSnapshot(change.object_id)
        except (CommitConflictError, _Rebased):
            if stale is not None and stale():
                raise _StaleSnapshot(change.object_id) from None
        Backoff().sleep(attempt)
    raise errors.ConcurrentModificationError(
        f"leaf table {change.object_id!r} kept conflicting with concurrent writers "
        f"after {_LEAF_ATTEMPTS} attempts"
    )
