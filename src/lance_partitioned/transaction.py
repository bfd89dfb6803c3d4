"""The commit protocol: staged leaf data becomes visible in one ``__manifest`` commit.

This is the only module that commits data. The Python API, the Spark driver and the CLI all
hand it a :class:`PendingWrite` (fragments already staged, invisible, with the field ids of a
new leaf in the leaf schema) and it:

1. reads the latest ``__manifest`` snapshot and checks that the write still means what it
   meant when staged: an ``overwrite`` or ``overwrite_partitions`` staged under a partition
   spec that is no longer current, or columns staged in a type that a promotion changed
   meanwhile, raise :class:`~lance_partitioned.errors.ConcurrentSchemaChangeError` (an
   append staged under an older spec still lands, in that spec's leaves);
2. commits each touched leaf: a leaf whose row is absent gets an ``Overwrite`` (creating the
   dataset, or replacing an orphan left by a crashed writer); a leaf whose latest version is
   not the manifest's ``read_version`` is first restored to it (the difference is an orphan or
   an in-flight writer that will retry), then gets an ``Append`` or an ``Overwrite``. An
   ``Append`` goes on a leaf version whose schema takes the staged columns: when the
   ``__manifest`` does not record the staged schema for that version, the leaf is opened,
   brought to take them with Lance's metadata-only schema changes (leaf commits too, see
   :mod:`lance_partitioned.leafplan`), and the fragments' field ids are mapped to the leaf's
   and checked column by column, so a commit never publishes fragments that the leaf would
   misread. The first attempt does not open a leaf that is as the manifest says: it commits
   on the manifest's view, and Lance's rebase, conflict or "not found" is what sends the next
   attempt to look;
3. upserts every touched row (new ``read_version``s, new namespace and table rows) in one
   ``merge_insert`` committed as a compare-and-swap on the version read in step 1.

Every manifest commit also rewrites every spec version row (``v1``, ``v2``, …): pylance
rebases concurrent commits that share no row, which would duplicate a partition created by two
writers at once, or let an overwrite be rebased over a write under a newer spec and leave that
write's rows visible; rewriting shared rows turns both into conflicts. On a conflict the
protocol re-reads, keeps the leaf commits whose expected ``read_version`` still holds, redoes
the others on the new base (staged fragments are reusable), and retries with exponential
backoff and jitter. A leaf commit that conflicts after the manifest has moved on does the same
rather than retry on its outdated expectation (two writers restoring a leaf to different
versions would keep undoing each other). Until step 3 succeeds nothing is visible: readers
open leaves at the ``read_version`` of the manifest version they read.

:func:`pause_at` lets a test run another writer or an evolution at a precise step.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import lance
import lance.fragment
import pyarrow as pa
from lance import LanceDataset, LanceOperation
from lance.commit import CommitConflictError

from lance_partitioned import errors
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.leafplan import (
    field_id_map,
    leaf_fingerprint,
    plan_leaf,
    remap,
    staged_fingerprint,
)
from lance_partitioned.manifest import (
    DELIMITER,
    NAMESPACE,
    TABLE,
    CommitConflict,
    LeafStats,
    Manifest,
    ManifestSnapshot,
    WriterTransactions,
    rows_table,
    spec_namespace_id,
)
from lance_partitioned.restage import current_names, promoted_schema, restage_fragments

__all__ = [
    "Backoff",
    "CommitResult",
    "LeafCommit",
    "LeafWrite",
    "PendingWrite",
    "commit_write",
    "merge_pending",
]

log = logging.getLogger(__name__)

WriteMode = Literal["append", "overwrite", "overwrite_partitions"]
_ABSENT = -1  # expected state of a leaf whose manifest row does not exist
_NULL = -2  # expected state of a leaf whose manifest row has a NULL read_version
_LEAF_ATTEMPTS = 8
_SPEC_ID = re.compile(r"v[0-9]+")

# ----------------------------------------------------------------------- pause points
_PAUSES: dict[str, list[Callable[[], None]]] = {}
_PAUSES_LOCK = threading.Lock()


@contextlib.contextmanager
def pause_at(point: str, action: Callable[[], None]) -> Iterator[None]:
    """Run ``action`` once, the first time a commit reaches ``point``, while the block runs.

    For deterministic tests of concurrent writers: ``action`` is another writer or an
    evolution acting at a precise step of this commit. The points are ``"staged"`` (the
    data is staged, nothing is committed yet), ``"leaf_commit"`` (just before a leaf commit)
    and ``"leaves_committed"`` (every leaf is committed, the ``__manifest`` is not).

    >>> with pause_at("staged", lambda: print("another writer runs here")):
    ...     _pause("staged"); _pause("staged")
    another writer runs here
    """
    if point not in ("staged", "leaf_commit", "leaves_committed"):
        raise errors.InternalError(f"no pause point {point!r}")
    fired = threading.Event()

    def once() -> None:
        if not fired.is_set():
            fired.set()
            action()

    with _PAUSES_LOCK:
        _PAUSES.setdefault(point, []).append(once)
    try:
        yield
    finally:
        with _PAUSES_LOCK:
            _PAUSES[point].remove(once)


def _pause(point: str) -> None:
    actions = _PAUSES.get(point)
    if actions:
        for action in list(actions):
            action()


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


@dataclass
class PendingWrite:
    """Everything one write adds: leaves, their ancestor namespaces and the mode.

    ``namespaces`` maps each ancestor partition namespace object id to its inherited values.
    """

    spec_version: int
    leaf_schema: pa.Schema
    leaves: list[LeafWrite]
    namespaces: dict[str, dict[str, Any]]
    mode: WriteMode = "append"


@dataclass
class CommitResult:
    """What a commit did.

    Attributes
    ----------
    version : int
        The new ``__manifest`` version.
    leaf_versions : dict[str, int]
        The committed ``read_version`` of each touched leaf.
    created : list[str]
        Object ids of leaf tables that did not exist before.
    attempts : int
        Manifest commit attempts (1 when there was no conflict).
    """

    version: int
    leaf_versions: dict[str, int]
    created: list[str]
    attempts: int
    rows: int = 0
    deleted_leaves: int = 0
    skipped: bool = False  # an idempotent write whose transaction was already committed


@dataclass
class _LeafState:
    expected: int  # read_version seen in the manifest (or _ABSENT, _NULL)
    commit: LeafCommit  # what was committed for that expectation


@dataclass(frozen=True)
class LeafCommit:
    """A committed leaf: its new Lance version, its row count and its schema fingerprint
    (:func:`~lance_partitioned.leafplan.leaf_fingerprint`) at that version."""

    version: int
    num_rows: int
    fingerprint: str | None = None


@dataclass
class Backoff:
    """Retry policy of every ``__manifest`` compare-and-swap: ``attempts`` tries, sleeping an
    exponential delay (``base`` doubling up to ``cap`` seconds) with jitter between them.

    The default waits at most about 21 s in all: four writers appending to the same partitions
    of a namespace on S3 at once used up to 8 attempts (``tests/objectstore``).
    """

    attempts: int = 16
    base: float = 0.05
    cap: float = 2.0
    _rng: random.Random = field(default_factory=random.Random)

    def sleep(self, attempt: int) -> None:
        delay = min(self.cap, self.base * 2**attempt)
        time.sleep(delay / 2 + self._rng.uniform(0, delay / 2))


class _StaleSnapshot(Exception):
    """A leaf commit conflicted and the ``__manifest`` moved on since it was read: the leaf's
    expected ``read_version`` may be out of date, so re-read before trying again (two writers
    restoring a leaf to different expected versions would otherwise keep undoing each other)."""


def _expected(snapshot: ManifestSnapshot, object_id: str) -> int:
    if not snapshot.has(object_id):
        return _ABSENT
    read_version = snapshot.read_version(object_id)
    return _NULL if read_version is None else read_version


def _latest_version(uri: str, options: dict[str, str] | None) -> int | None:
    try:
        return int(lance.dataset(uri, storage_options=options).latest_version)
    except ValueError:
        return None


def _open_leaf(uri: str, version: int, options: dict[str, str] | None) -> LanceDataset:
    """The leaf at ``version``, opened to compare its schema with the staged one."""
    return lance.dataset(uri, version=version, storage_options=options)


def _ensure(uri: str, version: int, options: dict[str, str] | None) -> LanceDataset:
    """The leaf at ``version``, which a commit just made: raises :class:`_Rebased` when Lance
    rebased that commit over a concurrent one (its version is not the one expected)."""
    latest = lance.dataset(uri, storage_options=options)
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
                return LeafCommit(int(ds.version), int(ds.count_rows()), staged)
            if latest is None:
                raise errors.CorruptNamespaceError(
                    f"leaf table {leaf.object_id!r} is in the __manifest but {uri!r} holds no "
                    "Lance dataset"
                )
            if expected >= 0 and latest != expected:
                log.info("restoring leaf %s from version %d to %d", uri, latest, expected)
                restored = LanceDataset.commit(
                    uri,
                    LanceOperation.Restore(expected),
                    read_version=latest,
                    storage_options=options,
                    max_retries=0,
                )
                latest = restored.version
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
                uri, op, read_version=base, storage_options=options, max_retries=0
            )
            if overwrite or ds.version == base + 1:
                return LeafCommit(int(ds.version), int(ds.count_rows()), fingerprint)
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
        except OSError:
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


def _namespace_row(
    snapshot: ManifestSnapshot, object_id: str, values: Mapping[str, Any]
) -> dict[str, Any]:
    existing = snapshot.row(object_id)
    if existing is not None:
        return existing
    return {"object_id": object_id, "object_type": NAMESPACE, **values}


def _leaf_row(snapshot: ManifestSnapshot, leaf: LeafWrite, commit: LeafCommit) -> dict[str, Any]:
    row = snapshot.row(leaf.object_id) or {
        "object_id": leaf.object_id,
        "object_type": TABLE,
        "location": leaf.location,
        **leaf.values,
    }
    stats = LeafStats(commit.version, commit.num_rows, commit.fingerprint)
    return {
        **row,
        "read_version": commit.version,
        "metadata": stats.merge_into(row.get("metadata")),
    }


def _known(snapshot: ManifestSnapshot, object_id: str, expected: int) -> str | None:
    """The leaf schema fingerprint the ``__manifest`` recorded for version ``expected``."""
    if expected < 0:
        return None
    row = snapshot.row(object_id)
    return None if row is None else LeafStats.schema_at(row.get("metadata"), expected)


def _spec_rows(snapshot: ManifestSnapshot) -> list[str]:
    """The object ids of the spec version namespaces (``v1``, ``v2``, …)."""
    ids = snapshot.rows.column("object_id").to_pylist()
    return [oid for oid in ids if _SPEC_ID.fullmatch(oid)]


def _check_base(
    manifest: Manifest, snapshot: ManifestSnapshot, pending: PendingWrite
) -> PendingWrite:
    """``pending`` as it can be committed on ``snapshot``: with the current names of the
    columns renamed meanwhile (leaves keep the namespace's names), re-staged when a column it
    staged was promoted meanwhile (:mod:`lance_partitioned.restage`); refused with
    ``ConcurrentSchemaChangeError`` when it was staged for an overwrite under a partition
    spec that is no longer current."""
    current = snapshot.metadata.current_spec.version
    if pending.mode != "append" and current != pending.spec_version:
        raise errors.ConcurrentSchemaChangeError(
            f"this {pending.mode!r} write was staged under partition spec v"
            f"{pending.spec_version}, but spec v{current} was published in the __manifest at "
            f"{snapshot.version} meanwhile: nothing was changed; write the data again"
        )
    now = leaf_schema(snapshot.metadata.schema)
    if not any(leaf.aliases for leaf in pending.leaves):  # (not rename_column's own commit)
        renamed = current_names(pending.leaf_schema, now)
        if renamed != pending.leaf_schema:
            pending = dataclasses.replace(pending, leaf_schema=renamed)
    promoted = promoted_schema(pending.leaf_schema, now)
    if promoted is None:
        return pending
    log.info("a column type was promoted while this write was staged: re-staging it")
    options = manifest.storage_options or None
    leaves = [
        dataclasses.replace(
            leaf,
            fragments=restage_fragments(
                manifest.table_uri(leaf.location), leaf.fragments, promoted, options
            ),
        )
        for leaf in pending.leaves
    ]
    return dataclasses.replace(pending, leaf_schema=promoted, leaves=leaves)


def _check_location(snapshot: ManifestSnapshot, leaf: LeafWrite) -> None:
    location = snapshot.location(leaf.object_id)
    if location is not None and location != leaf.location:
        raise errors.ConcurrentModificationError(
            f"leaf {leaf.object_id!r} was created at {location!r} by another client while "
            f"this write staged its data at {leaf.location!r}; retry the write"
        )


def commit_write(
    manifest: Manifest,
    pending: PendingWrite,
    *,
    backoff: Backoff | None = None,
    leaf_threads: int = 8,
    on_leaves_committed: Callable[[dict[str, int]], None] | None = None,
    txn: tuple[str, int] | None = None,
) -> CommitResult:
    """Make a pending write visible atomically (see the module docstring).

    ``txn`` = (application id, version) makes the write idempotent: the commit records it,
    and a write whose application id already committed that version (or a later one) does
    nothing (``skipped``). It is checked on every attempt, so a retry after a conflict
    checks the new base.

    Raises :class:`~lance_partitioned.errors.ConcurrentModificationError` when the manifest
    commit keeps losing to concurrent writers after every retry.
    """
    backoff = backoff or Backoff()
    states: dict[str, _LeafState] = {}
    overwrite = pending.mode != "append"
    sentinel = spec_namespace_id(pending.spec_version)
    _pause("staged")
    with ThreadPoolExecutor(max_workers=max(1, leaf_threads)) as pool:
        for attempt in range(backoff.attempts):
            snapshot = manifest.snapshot()
            if not snapshot.has(sentinel):
                raise errors.InternalError(
                    f"spec version namespace {sentinel!r} has no row in the __manifest"
                )
            if txn is not None:
                done = WriterTransactions.version_of(snapshot, txn[0])
                if done is not None and done >= txn[1]:
                    log.info("transaction %s/%d is already committed: skipped", *txn)
                    return CommitResult(snapshot.version, {}, [], attempt + 1, skipped=True)
            restaged = _check_base(manifest, snapshot, pending)
            if restaged.leaf_schema != pending.leaf_schema:
                pending, states = restaged, {}
            todo: list[tuple[LeafWrite, int]] = []
            for leaf in pending.leaves:
                _check_location(snapshot, leaf)
                expected = _expected(snapshot, leaf.object_id)
                state = states.get(leaf.object_id)
                if state is None or state.expected != expected:
                    todo.append((leaf, expected))

            def moved(read: int = snapshot.version) -> bool:
                return manifest.latest_version() != read

            futures = [
                (
                    leaf,
                    expected,
                    pool.submit(
                        commit_leaf,
                        manifest,
                        leaf,
                        expected,
                        overwrite=overwrite,
                        schema=pending.leaf_schema,
                        stale=moved,
                        known=_known(snapshot, leaf.object_id, expected),
                    ),
                )
                for leaf, expected in todo
            ]
            outdated = []
            for leaf, expected, future in futures:
                try:
                    states[leaf.object_id] = _LeafState(expected, future.result())
                except _StaleSnapshot:
                    outdated.append(leaf.object_id)
            if outdated:
                log.info("leaf commit conflicts on attempt %d: re-reading", attempt + 1)
                backoff.sleep(attempt)
                continue
            versions = {oid: state.commit.version for oid, state in states.items()}
            if on_leaves_committed is not None:
                on_leaves_committed(versions)
            _pause("leaves_committed")
            # every spec version row is rewritten: any two writes conflict, whatever spec
            # each was staged under (Lance would rebase commits that share no row); an
            # idempotent writer's (app id, version) is recorded in the current spec's row
            rows = [_namespace_row(snapshot, oid, {}) for oid in _spec_rows(snapshot)]
            if txn is not None:
                rows = [
                    {**row, "metadata": WriterTransactions.merge_into(row.get("metadata"), *txn)}
                    if row["object_id"] == sentinel
                    else row
                    for row in rows
                ]
            rows += [
                _namespace_row(snapshot, oid, values) for oid, values in pending.namespaces.items()
            ]
            rows += [
                _leaf_row(snapshot, leaf, states[leaf.object_id].commit) for leaf in pending.leaves
            ]
            schema = snapshot.rows.schema
            delete_where = (
                f"object_id LIKE '%{DELIMITER}%'" if pending.mode == "overwrite" else None
            )
            try:
                version = manifest.commit_rows(
                    snapshot, rows_table(schema, rows), delete_where=delete_where
                )
            except CommitConflict as exc:
                log.info("manifest commit conflict on attempt %d: %s", attempt + 1, exc)
                backoff.sleep(attempt)
                continue
            created = [
                leaf.object_id
                for leaf in pending.leaves
                if states[leaf.object_id].expected == _ABSENT
            ]
            deleted = 0
            if delete_where is not None:
                kept = {leaf.object_id for leaf in pending.leaves}
                deleted = sum(
                    1 for oid in snapshot.tables.column("object_id").to_pylist() if oid not in kept
                )
            return CommitResult(
                version=version,
                leaf_versions=versions,
                created=created,
                attempts=attempt + 1,
                rows=sum(leaf.rows for leaf in pending.leaves),
                deleted_leaves=deleted,
            )
    raise errors.ConcurrentModificationError(
        f"the __manifest at {manifest.root!r} kept changing under this write: gave up after "
        f"{backoff.attempts} commit attempts (the staged data stays invisible)"
    )


def merge_pending(writes: Sequence[PendingWrite]) -> PendingWrite:
    """Combine the pending writes staged by several workers (Spark tasks) into one.

    Every write must use the same spec version and mode. Leaves with the same object id are
    one leaf: their fragments are concatenated and their rows summed; namespaces are united.
    The leaf schema is the first write's.

    Raises :class:`~lance_partitioned.errors.InternalError` for an empty input, different spec
    versions or modes, or one leaf staged at two locations (the workers read different
    ``__manifest`` versions).

    >>> schema = pa.schema([("n", pa.int64())])
    >>> def task(rows):
    ...     leaf = LeafWrite("v1$a$dataset", "0_v1$a$dataset", [f"frag{rows}"], rows, {"k": 1})
    ...     return PendingWrite(1, schema, [leaf], {"v1$a": {"k": 1}})
    >>> merged = merge_pending([task(2), task(3)])
    >>> [(leaf.rows, leaf.fragments) for leaf in merged.leaves]
    [(5, ['frag2', 'frag3'])]
    """
    if not writes:
        raise errors.InternalError("merge_pending needs at least one pending write")
    first = writes[0]
    leaves: dict[str, LeafWrite] = {}
    namespaces: dict[str, dict[str, Any]] = {}
    for write in writes:
        if (write.spec_version, write.mode) != (first.spec_version, first.mode):
            raise errors.InternalError(
                f"cannot merge a {write.mode!r} write under spec v{write.spec_version} with a "
                f"{first.mode!r} write under spec v{first.spec_version}"
            )
        for object_id, values in write.namespaces.items():
            namespaces.setdefault(object_id, values)
        for leaf in write.leaves:
            seen = leaves.get(leaf.object_id)
            if seen is None:
                leaves[leaf.object_id] = LeafWrite(
                    leaf.object_id,
                    leaf.location,
                    list(leaf.fragments),
                    leaf.rows,
                    leaf.values,
                )
            elif seen.location != leaf.location:
                raise errors.InternalError(
                    f"leaf {leaf.object_id!r} was staged at {seen.location!r} and at "
                    f"{leaf.location!r}"
                )
            else:
                seen.fragments.extend(leaf.fragments)
                seen.rows += leaf.rows
    return PendingWrite(
        spec_version=first.spec_version,
        leaf_schema=first.leaf_schema,
        leaves=list(leaves.values()),
        namespaces=namespaces,
        mode=first.mode,
    )
