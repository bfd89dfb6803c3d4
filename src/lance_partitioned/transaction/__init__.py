"""The commit protocol: every change of data becomes visible in one ``__manifest`` commit.

This package is the only place that commits data. Its modules: :mod:`.plans` (what an
operation commits, what a commit did, an attempt's step per leaf), :mod:`.leaves` (the
leaf-level commits), :mod:`.leafplan` (how staged fragments meet a leaf's schema),
:mod:`.restage` (staged data converted to a type promoted meanwhile), :mod:`.rebase` (moving a
plan over concurrent commits), :mod:`.rows` (the rows of a ``__manifest`` commit) and
:mod:`.write` (the planner of every write).

Every operation hands :func:`commit_changes` a planner that returns a :class:`ChangePlan` for
a ``__manifest`` snapshot: changes of existing leaves computed from
the leaf at its ``read_version`` (:class:`LeafChange`: row-level deletes, updates,
compactions), leaves dropped from the ``__manifest``, and staged new data: a
:class:`PendingWrite` (fragments already staged, invisible, with the field ids of a new leaf in
the leaf schema). Writes (the Python API, the Spark driver, the CLI) commit through
:func:`lance_partitioned.transaction.write.commit_write`, whose planner (:mod:`.write`) adds the
rows an overwrite replaces and records the write. For each attempt the protocol:

1. reads the latest ``__manifest`` snapshot (the first attempt of a write staged right after
   its refresh takes that snapshot, see ``fresh_within``) and checks that the write still
   means what it meant when staged: an ``overwrite`` or ``overwrite_partitions`` staged
   under a partition spec that is no longer current, or columns staged in a type that a
   promotion changed meanwhile, raise
   :class:`~lance_partitioned.errors.ConcurrentSchemaChangeError` (an append staged under an
   older spec still lands, in that spec's leaves); a leaf write without data (no staged
   fragments: a schema change only, as ``rename_column`` commits) for a leaf that the
   snapshot does not list is left out: a concurrent ``delete`` or overwrite removed that
   leaf, there is nothing to write in it, and committing it would create it again, empty and
   without partition values;
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
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lance_partitioned import errors
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.convert.marker import refuse_rebucketed
from lance_partitioned.manifest import (
    CommitConflict,
    Manifest,
    ManifestSnapshot,
    WriterTransactions,
    rows_table,
    spec_namespace_id,
)
from lance_partitioned.transaction.leafplan import staged_fingerprint
from lance_partitioned.transaction.leaves import (
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
from lance_partitioned.transaction.plans import (
    WRITE_MODES,
    ChangePlan,
    CommitResult,
    PendingWrite,
    WriteMode,
    _Attempt,
    _expected,
    _plan_steps,
    _properties,
    _same,
)
from lance_partitioned.transaction.rebase import (
    Prepared,
    appended_only,
    moved_leaves,
    same_objects,
)
from lance_partitioned.transaction.restage import current_names, promoted_schema, restage_fragments
from lance_partitioned.transaction.rows import _known, _manifest_rows, _result

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


# Leaf commits are handed to the pool in batches of consecutive leaves, about this many
# batches per thread: a Future per leaf cost as much Python (under the GIL) as a small leaf's
# commit, while a few batches per thread still balance leaves of uneven cost.
_BATCHES_PER_THREAD = 4


def _batch_size(leaves: int, threads: int) -> int:
    """How many leaf commits one task of the pool runs in sequence.

    >>> _batch_size(731, 8), _batch_size(20, 8), _batch_size(0, 8)
    (23, 1, 1)
    """
    return max(1, -(-leaves // (threads * _BATCHES_PER_THREAD)))


def _commit_batch(
    batch: Sequence[tuple[str, _Attempt]],
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    pending: PendingWrite | None,
    stale: Callable[[], bool],
    prepared: dict[str, Prepared],
) -> list[tuple[str, _Attempt, LeafCommit | _StaleSnapshot | None]]:
    """:func:`_commit_one` of each leaf of ``batch`` in turn: its commit, or the
    :class:`_StaleSnapshot` it raised (the other leaves still commit, as on their own
    thread). Any other error ends the batch and is raised."""
    done: list[tuple[str, _Attempt, LeafCommit | _StaleSnapshot | None]] = []
    for oid, step in batch:
        try:
            done.append(
                (oid, step, _commit_one(manifest, snapshot, step, pending, stale, prepared))
            )
        except _StaleSnapshot as exc:
            done.append((oid, step, exc))
    return done


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


def commit_changes(
    manifest: Manifest,
    plan: Callable[[ManifestSnapshot], ChangePlan],
    *,
    backoff: Backoff | None = None,
    leaf_threads: int | None = None,
    on_leaves_committed: Callable[[dict[str, int]], None] | None = None,
    txn: tuple[str, int] | None = None,
    fresh_within: float = 0.0,
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

    ``fresh_within`` (seconds): the first attempt plans on the snapshot this ``manifest``
    last read or committed, without looking up the latest version again, when that snapshot
    was known to be the latest at most this long ago (a write staged just after its
    namespace was refreshed: one listing of ``__manifest/_versions/`` less, in the chain of
    requests of the commit). A writer who committed meanwhile is still detected: the
    ``__manifest`` commit is a compare-and-swap on the snapshot's version, and the next
    attempt reads the latest.

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
    threads = max(1, leaf_threads or manifest.max_workers)
    with ThreadPoolExecutor(max_workers=threads) as pool:
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
            snapshot = manifest.snapshot(fresh_within=fresh_within if attempt == 0 else 0.0)
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

            todo = [(oid, step) for oid, step in steps.items() if oid not in states]
            size = _batch_size(len(todo), threads)
            futures = [
                pool.submit(
                    _commit_batch, todo[i : i + size], manifest, snapshot, pending, moved, prepared
                )
                for i in range(0, len(todo), size)
            ]
            outdated = []
            for future in futures:
                for oid, step, commit in future.result():
                    if isinstance(commit, _StaleSnapshot):
                        outdated.append(oid)
                    else:
                        states[oid] = (step, commit)
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
