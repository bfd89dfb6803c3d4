"""The commit protocol: every change of data becomes visible in one ``__manifest`` commit.

This package is the only place that commits data. Its modules: :mod:`.leaves` (the
leaf-level commits), :mod:`.leafplan` (how staged fragments meet a leaf's schema),
:mod:`.restage` (staged data converted to a type promoted meanwhile), :mod:`.rebase` (moving a
plan over concurrent commits) and :mod:`.write` (the planner of every write).

Every operation hands :func:`commit_changes` a planner that returns a :class:`ChangePlan` for
a ``__manifest`` snapshot: changes of existing leaves computed from
the leaf at its ``read_version`` (:class:`LeafChange`: row-level deletes, updates,
compactions), leaves dropped from the ``__manifest``, and staged new data: a
:class:`PendingWrite` (fragments already staged, invisible, with the field ids of a new leaf in
the leaf schema). Writes (the Python API, the Spark driver, the CLI) commit through
:func:`lance_partitioned.transaction.write.commit_write`, whose planner (:mod:`.write`) adds the
rows an overwrite replaces and records the write. For each attempt the protocol:

1. reads the latest ``__manifest`` snapshot and checks that the write still means what it
   meant when staged: an ``overwrite`` or ``overwrite_partitions`` staged under a partition
   spec that is no longer current, or columns staged in a type that a promotion changed
   meanwhile, raise :class:`~lance_partitioned.errors.ConcurrentSchemaChangeError` (an
   append staged under an older spec still lands, in that spec's leaves); a leaf write
   without data (no staged fragments: a schema change only, as ``rename_column`` commits)
   for a leaf that the snapshot does not list is left out: a concurrent ``delete`` or
   overwrite removed that leaf, there is nothing to write in it, and committing it would
   create it again, empty and without partition values;
2. commits each touched leaf: a leaf whose row is absent gets an ``Overwrite`` (creating the
   dataset, or replacing an orphan left by a crashed writer); a leaf whose latest version is
   not the manifest's ``read_version`` is first restored to it (the difference is an orphan or
   an in-flight writer that will retry), then gets an ``Append`` or an ``Overwrite``. An
   ``Append`` goes on a leaf version whose schema takes the staged columns: when the
   ``__manifest`` does not record the staged schema for that version, the leaf is opened,
   brought to take them with Lance's metadata-only schema changes (leaf commits too, see
   :mod:`.leafplan`), and the fragments' field ids are mapped to the leaf's
   and checked column by column, so a commit never publishes fragments that the leaf would
   misread. The first attempt does not open a leaf that is as the manifest says: it commits
   on the manifest's view, and Lance's rebase, conflict or "not found" is what sends the next
   attempt to look;
   A changed leaf is opened at its ``read_version`` (an orphan on top restored away), the
   change prepared on it and committed; a leaf both changed and appended to gets both in
   one Lance ``Update`` when the change is a ``Delete`` and the fragments were staged in the
   leaf's recorded schema (a row-level update or merge: one leaf version, as pylance's own
   update makes), otherwise the change, then the staged fragments on top;
3. upserts every touched row (new ``read_version``s, new namespace and table rows) and deletes
   the dropped ones in one Lance ``Update`` committed as a compare-and-swap on the version
   read in step 1 (:meth:`~lance_partitioned.manifest.Manifest.commit_rows`), with the
   plan's properties as its Lance transaction properties.

Every manifest commit also rewrites every spec version row (``v1``, ``v2``, …): pylance
rebases concurrent commits that share no row, which would duplicate a partition created by two
writers at once, or let an overwrite be rebased over a write under a newer spec and leave that
write's rows visible; rewriting shared rows turns both into conflicts. On a conflict the
protocol re-reads and rebases over what won (:mod:`.rebase`, WriteSerializable): commits to
other leaves cost only a new ``__manifest`` commit of the same rows; appends to a leaf this
operation changes get its prepared operation and staged fragments committed again on top.
Anything else (a schema or spec change, a leaf created, dropped or changed in place under
the plan; for a ``serializable`` plan any new or removed leaf) re-plans: it keeps the leaf
commits whose expected ``read_version`` still holds, redoes the others on the new base
(staged fragments are reusable), and retries with exponential backoff and jitter. A leaf
commit that conflicts after the manifest has moved on does the same rather than retry on
its outdated expectation (two writers restoring a leaf to different versions would keep
undoing each other). Until step 3 succeeds nothing is visible: readers
open leaves at the ``read_version`` of the manifest version they read.

:func:`pause_at` lets a test run another writer or an evolution at a precise step.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.convert.marker import (
    fill_moved,
    named_for,
    pending_moves,
    refuse_rebucketed,
)
from lance_partitioned.manifest import (
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
from lance_partitioned.transaction.leafplan import staged_fingerprint
from lance_partitioned.transaction.leaves import (
    _ABSENT,
    _NULL,
    Backoff,
    LeafChange,
    LeafCommit,
    LeafWrite,
    _pause,
    _StaleSnapshot,
    commit_change,
    commit_leaf,
    pause_at,
)
from lance_partitioned.transaction.rebase import (
    Prepared,
    appended_only,
    moved_leaves,
    same_objects,
)
from lance_partitioned.transaction.restage import current_names, promoted_schema, restage_fragments

__all__ = [
    "WRITE_MODES",
    "Backoff",
    "ChangePlan",
    "CommitResult",
    "LeafChange",
    "LeafCommit",
    "LeafWrite",
    "PendingWrite",
    "WriteMode",
    "commit_change",
    "commit_changes",
    "commit_leaf",
    "pause_at",
]

log = logging.getLogger(__name__)

WriteMode = Literal["append", "overwrite", "overwrite_partitions"]
"""How a write meets the data there: the one definition of the write modes."""
#: The write modes, in order (the values of :data:`WriteMode`).
WRITE_MODES: tuple[WriteMode, ...] = get_args(WriteMode)
_SPEC_ID = re.compile(r"v[0-9]+")


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
    skipped: bool = False  # nothing to commit, or an idempotent write already committed
    changed: dict[str, int] = field(default_factory=dict)  # leaf -> read_version of a change
    dropped: list[str] = field(default_factory=list)  # leaves whose rows were removed


def _expected(snapshot: ManifestSnapshot, object_id: str) -> int:
    if not snapshot.has(object_id):
        return _ABSENT
    read_version = snapshot.read_version(object_id)
    return _NULL if read_version is None else read_version


def _namespace_row(
    snapshot: ManifestSnapshot, object_id: str, values: Mapping[str, Any]
) -> dict[str, Any]:
    existing = snapshot.row(object_id)
    if existing is not None:
        return existing
    return {"object_id": object_id, "object_type": NAMESPACE, **values}


def _leaf_row(
    snapshot: ManifestSnapshot, leaf: LeafWrite, commit: LeafCommit, fields: Sequence[str]
) -> dict[str, Any]:
    """The ``__manifest`` row of a written leaf: its row in ``snapshot`` with the new
    ``read_version``, or a new row carrying the leaf's value of each partition field of its
    spec version (``fields``; a value may be NULL, when the data's is, never missing)."""
    row = snapshot.row(leaf.object_id)
    if row is None:
        missing = [name for name in fields if name not in leaf.values]
        if missing:
            raise errors.InternalError(
                f"leaf {leaf.object_id!r} would be added to the __manifest at "
                f"{snapshot.version} without a value for its partition fields {missing}: no "
                "predicate on them could reach its rows"
            )
        row = {
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
    staged was promoted meanwhile (:mod:`.restage`); refused with
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


def _existing_only(snapshot: ManifestSnapshot, pending: PendingWrite) -> PendingWrite:
    """``pending`` without its leaf writes that carry no data (no staged fragments: a schema
    change only, as ``rename_column`` commits to every leaf) for a leaf that ``snapshot`` does
    not list: a concurrent ``delete`` or overwrite removed it since the plan listed it, and
    there is nothing to write in it. Committing one would create the leaf again, empty, with a
    ``__manifest`` row that holds no partition values, where a later write of that partition
    would land out of every partition predicate's reach. A write with data creates its leaf."""
    kept = [leaf for leaf in pending.leaves if leaf.fragments or snapshot.has(leaf.object_id)]
    if len(kept) == len(pending.leaves):
        return pending
    log.info(
        "%d leaf writes without data are for leaves not in the __manifest at %d (removed "
        "meanwhile): skipped",
        len(pending.leaves) - len(kept),
        snapshot.version,
    )
    return dataclasses.replace(pending, leaves=kept)


def _spec_fields(snapshot: ManifestSnapshot, version: int) -> list[str]:
    """The partition field names of spec version ``version``."""
    for spec in snapshot.metadata.specs:
        if spec.version == version:
            return [spec_field.name for spec_field in spec.fields]
    raise errors.InternalError(
        f"partition spec v{version} is not in the __manifest at {snapshot.version}"
    )


def _fields_of(snapshot: ManifestSnapshot, object_id: str, default: int) -> list[str]:
    """The partition field names of the spec version of ``object_id`` (``v<N>$...``): a
    commit may write leaves of several (a conversion re-bucketing them); ``default`` when the
    id names none."""
    head = object_id.split("$", 1)[0]
    version = int(head[1:]) if _SPEC_ID.fullmatch(head) else default
    return _spec_fields(snapshot, version)


def _check_location(snapshot: ManifestSnapshot, leaf: LeafWrite) -> None:
    location = snapshot.location(leaf.object_id)
    if location is not None and location != leaf.location:
        raise errors.ConcurrentModificationError(
            f"leaf {leaf.object_id!r} was created at {location!r} by another client while "
            f"this write staged its data at {leaf.location!r}; retry the write"
        )


@dataclass
class ChangePlan:
    """Everything one operation changes, planned on one ``__manifest`` snapshot.

    Attributes
    ----------
    changes : list of LeafChange
        Changes to existing leaves (row-level deletes, updates, compactions).
    drops : list of str
        Leaf object ids whose rows leave the ``__manifest`` (metadata only: older versions
        still read the data; cleanup removes it).
    writes : PendingWrite, optional
        New staged data, mode ``append`` or ``overwrite_partitions`` (each written leaf
        replaced) or ``overwrite`` (the whole namespace). A leaf with both a change and an
        append gets the change first, then the staged fragments on top, in one leaf commit
        chain. A leaf write without fragments updates a leaf of the snapshot committed on
        (its schema) and never creates one: for a leaf that snapshot does not list, it is
        left out.
    reads : dict of str to int
        Leaf object id to the ``read_version`` whose content the plan depends on (rows that
        an update moves, merge matches); checked against the snapshot the plan was made on.
    properties : dict of str to str, or a callable returning one
        Recorded as the Lance transaction properties of the ``__manifest`` commit. A
        callable (no argument) is called after the attempt's leaf commits, right before its
        ``__manifest`` commit (:func:`_properties`): for what only the leaf commits know
        (rows a ``LeafChange.prepare`` deleted).
    serializable : bool
        The plan depends on every leaf of the snapshot, not only on those it touches (it
        replaces what a set of partitions holds): after a lost compare-and-swap it is planned
        again whenever a leaf was created or removed, or a leaf it touches moved. Otherwise
        (and for writes in mode ``append``) it is WriteSerializable: appends to its leaves
        and commits to other leaves are rebased over (:mod:`.rebase`).
    """

    changes: list[LeafChange] = field(default_factory=list)
    drops: list[str] = field(default_factory=list)
    writes: PendingWrite | None = None
    reads: dict[str, int] = field(default_factory=dict)
    properties: dict[str, str] | Callable[[], dict[str, str]] = field(default_factory=dict)
    serializable: bool = False

    def is_empty(self) -> bool:
        """Whether the plan changes nothing."""
        return not (self.changes or self.drops or (self.writes and self.writes.leaves)) and (
            self.writes is None or self.writes.mode != "overwrite"
        )


def _properties(plan: ChangePlan) -> dict[str, str]:
    """The plan's properties, a callable one called now (after the attempt's leaf commits)."""
    found = plan.properties
    return found() if callable(found) else found


@dataclass
class _Attempt:
    """What one commit attempt does to one leaf, and what it reuses from the previous one:
    ``operation``, a 1-tuple, is the change's operation prepared by an earlier attempt on a
    version that ``expected`` only appended to (committed again instead of preparing)."""

    expected: int
    change: LeafChange | None
    write: LeafWrite | None
    operation: tuple[Any] | None = None


def _same(a: _Attempt, b: _Attempt) -> bool:
    return a.expected == b.expected and a.change is b.change and a.write is b.write


def _commit_one(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    step: _Attempt,
    pending: PendingWrite | None,
    stale: Callable[[], bool],
    prepared: dict[str, Prepared],
) -> LeafCommit | None:
    """One leaf's part of an attempt: its change, then its staged fragments on top. The
    operation a change prepares is recorded in ``prepared``."""
    commit: LeafCommit | None = None
    expected = step.expected
    if step.change is not None:
        object_id = step.change.object_id
        location = snapshot.location(object_id)
        if location is None:
            raise errors.InternalError(f"leaf {object_id!r} has no location")

        def record(version: int, operation: Any) -> None:
            prepared[object_id] = Prepared(version, operation)

        commit = commit_change(
            manifest,
            location,
            step.change,
            expected,
            stale=stale,
            operation=step.operation,
            prepared=record,
            append=_fusable(snapshot, step, pending),
            known=_known(snapshot, object_id, expected),
        )
        if commit is not None:
            if commit.appended:
                return commit
            expected = commit.version
    if step.write is None or pending is None:
        return commit
    known = (
        commit.fingerprint
        if commit is not None
        else _known(snapshot, step.write.object_id, expected)
    )
    return commit_leaf(
        manifest,
        step.write,
        expected,
        overwrite=pending.mode != "append",
        schema=pending.leaf_schema,
        stale=stale,
        known=known,
    )


def _fusable(
    snapshot: ManifestSnapshot, step: _Attempt, pending: PendingWrite | None
) -> Sequence[Any]:
    """The staged fragments that may join the leaf's change in one Lance commit: an append
    of fragments staged in exactly the leaf's schema as the ``__manifest`` records it at the
    expected version (so they need no field-id remapping and no schema step first)."""
    if step.write is None or pending is None or pending.mode != "append":
        return ()
    known = _known(snapshot, step.write.object_id, step.expected)
    if known is None or known != staged_fingerprint(pending.leaf_schema):
        return ()
    return step.write.fragments


def _plan_steps(
    snapshot: ManifestSnapshot, plan: ChangePlan, pending: PendingWrite | None
) -> dict[str, _Attempt]:
    """Per touched leaf, what this attempt does to it; checks the plan against ``snapshot``."""
    steps: dict[str, _Attempt] = {}
    for object_id, version in plan.reads.items():
        if _expected(snapshot, object_id) != version:
            raise errors.InternalError(
                f"the plan read leaf {object_id!r} at version {version}, but the __manifest at "
                f"{snapshot.version} says {snapshot.read_version(object_id)}"
            )
    for change in plan.changes:
        expected = _expected(snapshot, change.object_id)
        if expected == _ABSENT or change.object_id in steps:
            raise errors.InternalError(
                f"a change of leaf {change.object_id!r}, which is not in the __manifest at "
                f"{snapshot.version} or is changed twice by one plan"
            )
        steps[change.object_id] = _Attempt(expected, change, None)
    if pending is not None:
        for leaf in pending.leaves:
            _check_location(snapshot, leaf)
            seen = steps.get(leaf.object_id)
            if seen is not None and (pending.mode != "append" or seen.write is not None):
                raise errors.InternalError(
                    f"leaf {leaf.object_id!r} is both changed and overwritten by one plan"
                )
            if seen is not None:
                seen.write = leaf
            else:
                steps[leaf.object_id] = _Attempt(_expected(snapshot, leaf.object_id), None, leaf)
    for object_id in plan.drops:
        if object_id in steps or not snapshot.has(object_id):
            raise errors.InternalError(
                f"leaf {object_id!r} is dropped by a plan that also changes it, or is not in "
                f"the __manifest at {snapshot.version}"
            )
    return steps


def _changed_row(snapshot: ManifestSnapshot, object_id: str, commit: LeafCommit) -> dict[str, Any]:
    row = snapshot.row(object_id)
    if row is None:
        raise errors.InternalError(f"leaf {object_id!r} has no __manifest row")
    stats = LeafStats(commit.version, commit.num_rows, commit.fingerprint)
    return {**row, "read_version": commit.version, "metadata": stats.merge_into(row["metadata"])}


def commit_changes(
    manifest: Manifest,
    plan: Callable[[ManifestSnapshot], ChangePlan],
    *,
    backoff: Backoff | None = None,
    leaf_threads: int | None = None,
    on_leaves_committed: Callable[[dict[str, int]], None] | None = None,
    txn: tuple[str, int] | None = None,
) -> CommitResult:
    """Make what ``plan`` returns visible atomically (see the module docstring).

    Leaves commit on ``leaf_threads`` threads (None: ``manifest.max_workers``).

    Each attempt reads the latest ``__manifest`` snapshot and calls ``plan(snapshot)``; after a
    conflict it is called again with the new snapshot, so a planner caches its work by (leaf,
    ``read_version``) and redoes only what moved. Leaf commits whose expected ``read_version``
    still holds (and whose change and staged data are the same objects) are reused. Then one
    ``__manifest`` compare-and-swap publishes every changed, written and dropped leaf, with the
    plan's ``properties`` as the Lance transaction properties of that commit.

    ``txn`` = (application id, version) makes the operation idempotent: the commit records it,
    and an operation whose application id already committed that version (or a later one)
    does nothing (``skipped``). It is checked on every attempt.

    Raises :class:`~lance_partitioned.errors.ConcurrentModificationError` when the manifest
    commit keeps losing to concurrent writers after every retry.
    """
    backoff = backoff or Backoff()
    states: dict[str, tuple[_Attempt, LeafCommit | None]] = {}
    staged_in: PendingWrite | None = None  # the planner's writes, as last seen
    staged_out: PendingWrite | None = None  # the same, re-staged for the last snapshot
    prepared: dict[str, Prepared] = {}  # leaf -> the operation its change prepared
    last: _Planned | None = None  # the last attempt's plan, to rebase the next one on
    _pause("staged")
    with ThreadPoolExecutor(max_workers=max(1, leaf_threads or manifest.max_workers)) as pool:
        counted = 0  # the attempts that use up backoff.attempts (see the stale leaf commits)
        lost_since: float | None = None  # when an attempt first lost to another writer

        def free_retry() -> bool:
            # after losing to another writer's publication: the retry uses up no attempt
            # within backoff.free_seconds of the first such loss
            nonlocal lost_since
            now = time.monotonic()
            lost_since = now if lost_since is None else lost_since
            return now - lost_since < backoff.free_seconds

        made = 0  # every attempt, the free retries too (the error says how many)
        for attempt in itertools.count():
            if counted >= backoff.attempts:
                break
            made = attempt + 1
            counted += 1
            snapshot = manifest.snapshot()
            if txn is not None:
                done = WriterTransactions.version_of(snapshot, txn[0])
                if done is not None and done >= txn[1]:
                    log.info("transaction %s/%d is already committed: skipped", *txn)
                    return CommitResult(snapshot.version, {}, [], attempt + 1, skipped=True)
            rebased = None if last is None else _rebase(manifest, last, snapshot, prepared)
            if rebased is not None:
                current, steps = rebased
                pending = current.writes
            else:
                current = plan(snapshot)
                pending = current.writes
                if pending is not None:
                    sentinel = spec_namespace_id(pending.spec_version)
                    if not snapshot.has(sentinel):
                        raise errors.InternalError(
                            f"spec version namespace {sentinel!r} has no row in the __manifest"
                        )
                    base = (
                        staged_out if pending is staged_in and staged_out is not None else pending
                    )
                    staged_in, staged_out = pending, _check_base(manifest, snapshot, base)
                    if staged_out.leaf_schema != base.leaf_schema:  # renamed/promoted meanwhile
                        states = {oid: st for oid, st in states.items() if not st[0].write}
                    pending = _existing_only(snapshot, staged_out)
                    refuse_rebucketed(
                        snapshot.metadata.specs, pending.leaves, snapshot.table_metadata
                    )
                    current = dataclasses.replace(current, writes=pending)
                steps = _plan_steps(snapshot, current, pending)
                if current.is_empty() and txn is None:
                    return CommitResult(snapshot.version, {}, [], attempt + 1, skipped=True)
            states = {
                oid: state
                for oid, state in states.items()
                if oid in steps and _same(state[0], steps[oid])
            }
            last = _Planned(snapshot, current, steps)

            def moved(read: int = snapshot.version) -> bool:
                return manifest.latest_version() != read

            futures = [
                (
                    oid,
                    step,
                    pool.submit(_commit_one, manifest, snapshot, step, pending, moved, prepared),
                )
                for oid, step in steps.items()
                if oid not in states
            ]
            outdated = []
            for oid, step, future in futures:
                try:
                    states[oid] = (step, future.result())
                except _StaleSnapshot:
                    outdated.append(oid)
            if outdated:
                # A leaf commit conflicted after the __manifest moved on: another writer
                # published meanwhile (progress was made), so re-read at once, as after a lost
                # compare-and-swap. An exponential wait here let a writer committing to the
                # same leaf many times a second grow the __manifest by hundreds of commits
                # per wait, each re-read slower than the last, until every attempt lost.
                log.info("leaf commit conflicts on attempt %d: re-reading", attempt + 1)
                backoff.sleep_briefly()
                if free_retry():
                    counted -= 1
                continue
            versions = {
                oid: commit.version for oid, (_, commit) in states.items() if commit is not None
            }
            if on_leaves_committed is not None:
                on_leaves_committed(versions)
            _pause("leaves_committed")
            rows = _manifest_rows(snapshot, current, pending, states, txn)
            try:
                version = manifest.commit_rows(
                    snapshot,
                    rows_table(snapshot.rows.schema, rows),
                    delete=current.drops,
                    delete_partitions=pending is not None and pending.mode == "overwrite",
                    properties=_properties(current),
                )
            except CommitConflict as exc:
                log.info("manifest commit conflict on attempt %d: %s", attempt + 1, exc)
                backoff.sleep_briefly()  # the next attempt mostly re-commits rows only
                if free_retry():  # another writer published: as after a stale leaf commit
                    counted -= 1
                continue
            return _result(snapshot, current, pending, states, version, attempt + 1)
    raise errors.ConcurrentModificationError(
        f"the __manifest at {manifest.root!r} kept changing under this operation: gave up "
        f"after {made} commit attempts (nothing of it is visible)"
    )


@dataclass
class _Planned:
    """An attempt's plan: the snapshot it was made on, the plan and its steps."""

    snapshot: ManifestSnapshot
    plan: ChangePlan
    steps: dict[str, _Attempt]


def _rebase(
    manifest: Manifest,
    last: _Planned,
    snapshot: ManifestSnapshot,
    prepared: dict[str, Prepared],
) -> tuple[ChangePlan, dict[str, _Attempt]] | None:
    """The last attempt's plan and steps moved onto ``snapshot``, or ``None`` when the
    operation must be planned again (:mod:`.rebase`): the steps of leaves that did not move
    are the same (their leaf commits are kept), a leaf that only received appended fragments
    gets its change's prepared operation and its staged fragments again, on its new
    ``read_version``."""
    plan, old = last.plan, last.snapshot
    expected = {oid: step.expected for oid, step in last.steps.items()}
    for oid in [*plan.drops, *plan.reads]:
        expected.setdefault(oid, _expected(old, oid))
    moved = moved_leaves(old, snapshot, expected)
    if moved is None:
        return None
    pending = plan.writes
    serializable = plan.serializable or (pending is not None and pending.mode != "append")
    if serializable and (moved or not same_objects(old, snapshot)):
        return None
    steps = dict(last.steps)
    rebased: dict[str, Prepared] = {}
    for oid, version in moved.items():
        if oid in plan.drops:
            return None
        step = steps.get(oid)
        operation = None
        if step is not None and step.change is not None:
            known = prepared.get(oid)
            if known is None or known.version != step.expected or not known.rebasable():
                return None
            operation = (known.operation,)
            rebased[oid] = Prepared(version, known.operation)
        location = snapshot.location(oid)
        if location is None or not appended_only(manifest, location, expected[oid], version):
            return None
        if step is not None:
            steps[oid] = dataclasses.replace(step, expected=version, operation=operation)
    prepared.update(rebased)
    log.info(
        "the __manifest moved to %d: rebasing over it (%d of this commit's leaves were "
        "appended to meanwhile)",
        snapshot.version,
        len(moved),
    )
    reads = {oid: moved.get(oid, version) for oid, version in plan.reads.items()}
    return dataclasses.replace(plan, reads=reads), steps


def _manifest_rows(
    snapshot: ManifestSnapshot,
    plan: ChangePlan,
    pending: PendingWrite | None,
    states: Mapping[str, tuple[_Attempt, LeafCommit | None]],
    txn: tuple[str, int] | None,
) -> list[dict[str, Any]]:
    """The rows of one ``__manifest`` commit. Every spec version row is rewritten: any two
    commits conflict, whatever spec each was staged under (Lance would rebase commits that
    share no row); an idempotent writer's (app id, version) is recorded in the current spec's
    row."""
    current = spec_namespace_id(snapshot.metadata.current_spec.version)
    sentinel = current if pending is None else spec_namespace_id(pending.spec_version)
    rows = [_namespace_row(snapshot, oid, {}) for oid in _spec_rows(snapshot)]
    if txn is not None:
        rows = [
            {**row, "metadata": WriterTransactions.merge_into(row.get("metadata"), *txn)}
            if row["object_id"] == sentinel
            else row
            for row in rows
        ]
    version = 0 if pending is None else pending.spec_version
    if pending is not None:  # (values named as when staged: named_for, a dialect converted)
        rows += [
            _namespace_row(snapshot, oid, named_for(_fields_of(snapshot, oid, version), values))
            for oid, values in pending.namespaces.items()
        ]
    for oid, (step, commit) in states.items():
        if commit is None:
            continue
        if step.write is not None:
            fields = _fields_of(snapshot, oid, version)
            leaf = dataclasses.replace(step.write, values=named_for(fields, step.write.values))
            rows.append(_leaf_row(snapshot, leaf, commit, fields))
        else:
            rows.append(_changed_row(snapshot, oid, commit))
    # a dialect conversion under way: its new columns filled too (lance_partitioned.convert.marker)
    moves = pending_moves(snapshot.table_metadata)
    return fill_moved(rows, moves, snapshot.rows.column_names)


def _result(
    snapshot: ManifestSnapshot,
    plan: ChangePlan,
    pending: PendingWrite | None,
    states: Mapping[str, tuple[_Attempt, LeafCommit | None]],
    version: int,
    attempts: int,
) -> CommitResult:
    written = [] if pending is None else pending.leaves
    deleted = len(plan.drops)
    if pending is not None and pending.mode == "overwrite":
        kept = {leaf.object_id for leaf in written}
        deleted = sum(
            1 for oid in snapshot.tables.column("object_id").to_pylist() if oid not in kept
        )
    return CommitResult(
        version=version,
        leaf_versions={
            leaf.object_id: commit.version
            for leaf in written
            if (commit := states[leaf.object_id][1]) is not None
        },
        created=[
            leaf.object_id for leaf in written if states[leaf.object_id][0].expected == _ABSENT
        ],
        attempts=attempts,
        rows=sum(leaf.rows for leaf in written),
        deleted_leaves=deleted,
        changed={
            oid: commit.version
            for oid, (step, commit) in states.items()
            if step.change is not None and commit is not None
        },
        dropped=list(plan.drops),
    )
