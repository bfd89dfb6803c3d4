"""The write planner: how staged data is committed, and what the commit records.

Every write (the Python API, the Spark driver, the CLI) stages its data first
(:func:`lance_partitioned.write.stage`: fragments written, invisible, described by a
:class:`~lance_partitioned.transaction.PendingWrite`), then commits it with
:func:`commit_write`: :func:`~lance_partitioned.transaction.commit_changes` with the planner
that :func:`write_plan` returns. On each attempt's ``__manifest`` snapshot the planner
returns a :class:`~lance_partitioned.transaction.ChangePlan` that writes the staged leaves,
deletes the rows the write replaces outside them (:class:`RowDeletes`, for
``overwrite_partitions`` across spec versions and for replace-where, planned by
:func:`lance_partitioned.dml.commit_staged`) and records the write as operation ``write``
with its counts (:class:`Tally`).

:class:`Tally` is also how deletes, updates and merges count what they did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lance_partitioned import errors
from lance_partitioned.manifest import LeafStats, Manifest, ManifestSnapshot, open_leaf
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.transaction import (
    Backoff,
    ChangePlan,
    CommitResult,
    LeafChange,
    LeafWrite,
    PendingWrite,
    commit_changes,
)

__all__ = [
    "FRESH_WRITE_SECONDS",
    "RowDeletes",
    "Tally",
    "commit_write",
    "leaf_rows",
    "merge_pending",
    "replaced_rows",
    "write_operation",
    "write_plan",
]

#: A write staged this soon (seconds) after its ``__manifest`` snapshot was known to be the
#: latest commits its first attempt on that snapshot without listing ``__manifest/_versions/``
#: again: a small append (a few leaves, round trips of tens of milliseconds) saves one request
#: in its chain, and a long staging looks again, so that concurrent writers do not make it
#: commit its leaves on a view that is likely outdated (correct, a compare-and-swap catches
#: it, but the leaf commits are then redone).
FRESH_WRITE_SECONDS = 1.0


@dataclass
class Tally:
    """What one commit attempt does, counted for its history row: its ``properties``
    (:class:`~lance_partitioned.manifest.operations.Operation` with its counts) are a
    :class:`~lance_partitioned.transaction.ChangePlan`'s, resolved after the attempt's leaf
    commits, so a retried commit records what the attempt that committed did.

    Attributes
    ----------
    operation : Operation
        What is recorded besides the counts.
    written : sequence of LeafWrite
        The staged leaf writes: their rows are added.
    removed : dict of str to int
        Leaves whose every row goes (dropped from the ``__manifest``, or overwritten whole),
        with their rows.
    deleted : callable, optional
        Leaf object id to the rows its Lance delete removed, read when the properties are:
        the counts that the ``LeafChange.prepare`` of the attempt wrote.
    updated : int
        Rows the operation replaces by new values (an update's, a merge's): each is one row
        deleted and one staged, recorded as one row updated instead.

    A leaf counts as touched when it is written, dropped, overwritten, or has rows deleted.

    >>> Tally(Operation("delete"), removed={"v1$a": 4}).properties()[
    ...     "lance_partitioned.rows_removed"]
    '4'
    """

    operation: Operation
    written: Sequence[LeafWrite] = ()
    removed: Mapping[str, int] = dataclasses.field(default_factory=dict)
    deleted: Callable[[], Mapping[str, int]] | None = None
    reads: dict[str, int] = dataclasses.field(default_factory=dict)
    updated: int = 0

    def properties(self) -> dict[str, str]:
        """The transaction properties of the commit: the operation with its counts."""
        gone = dict(self.removed)
        for object_id, rows in (self.deleted() if self.deleted is not None else {}).items():
            if rows:
                gone[object_id] = gone.get(object_id, 0) + rows
        added = sum(leaf.rows for leaf in self.written)
        removed = sum(gone.values())
        updated = min(self.updated, added, removed)
        leaves = {leaf.object_id for leaf in self.written} | set(gone)
        counted = self.operation.counted(added - updated, removed - updated, updated, len(leaves))
        return counted.to_properties()


@dataclass(frozen=True)
class RowDeletes:
    """Rows that a write deletes outside the leaves it writes, planned on one snapshot.

    Attributes
    ----------
    changes : list of LeafChange
        The leaves that get a Lance delete.
    drops : dict of str to int
        The leaves dropped whole from the ``__manifest``, with their rows.
    deleted : callable, optional
        Leaf object id to the rows its Lance delete removed (see :attr:`Tally.deleted`).
    reads : dict of str to int
        Every leaf the deletes looked at (object id -> ``read_version``), those where no row
        matched too: an append to one of them meanwhile makes the write plan again (its rows
        are in the partitions the write replaces).
    """

    changes: list[LeafChange] = dataclasses.field(default_factory=list)
    drops: dict[str, int] = dataclasses.field(default_factory=dict)
    deleted: Callable[[], Mapping[str, int]] | None = None
    reads: dict[str, int] = dataclasses.field(default_factory=dict)


def write_operation(pending: PendingWrite, details: Mapping[str, str] | None = None) -> Operation:
    """A write recorded as operation ``write``, its mode and ``details``."""
    return Operation("write", mode=pending.mode, details=dict(details or {}))


def leaf_rows(
    manifest: Manifest, snapshot: ManifestSnapshot, object_ids: Iterable[str] | None = None
) -> dict[str, int]:
    """Rows of the leaves ``object_ids`` of ``snapshot`` (None: every leaf; an id it does not
    list is left out) at their ``read_version``: the count the ``__manifest`` records, else
    (another client's leaf) the leaf's own, read from its Lance manifest."""
    tables = snapshot.tables
    wanted = None if object_ids is None else set(object_ids)
    found: dict[str, int] = {}
    for object_id, location, metadata, read_version in zip(
        tables.column("object_id").to_pylist(),
        tables.column("location").to_pylist(),
        tables.column("metadata").to_pylist(),
        tables.column("read_version").to_pylist(),
        strict=True,
    ):
        if wanted is not None and object_id not in wanted:
            continue
        count = None if read_version is None else LeafStats.num_rows_at(metadata, read_version)
        if count is None:
            count = _count_rows(manifest, location, read_version)
        found[object_id] = count
    return found


def _count_rows(manifest: Manifest, location: str, read_version: int | None) -> int:
    uri = manifest.table_uri(location)
    try:
        leaf = open_leaf(uri, read_version, manifest.storage_options, action="count the rows of")
    except (errors.TableNotFoundError, errors.TableVersionNotFoundError) as exc:
        raise errors.CorruptNamespaceError(
            f"the leaf table at {uri!r} (version {read_version}), which the __manifest lists, "
            f"cannot be read: {exc}"
        ) from exc
    with errors.typed_storage_errors(uri, "count the rows of a leaf table"):
        return int(leaf.count_rows())


def replaced_rows(
    manifest: Manifest, snapshot: ManifestSnapshot, pending: PendingWrite
) -> dict[str, int]:
    """The leaves of ``snapshot`` whose every row ``pending`` replaces, with their rows: none
    for an ``append``, every leaf for an ``overwrite``, the written leaves that exist for an
    ``overwrite_partitions`` (rows of its partitions under older specs are deleted by a
    separate change, see :func:`lance_partitioned.dml.commit_staged`)."""
    if pending.mode == "append":
        return {}
    if pending.mode == "overwrite":
        return leaf_rows(manifest, snapshot)
    return leaf_rows(manifest, snapshot, [leaf.object_id for leaf in pending.leaves])


def write_plan(
    manifest: Manifest,
    pending: PendingWrite,
    operation: Operation,
    deletes: Callable[[ManifestSnapshot], RowDeletes] | None = None,
) -> Callable[[ManifestSnapshot], ChangePlan]:
    """The :func:`~lance_partitioned.transaction.commit_changes` planner of a write: on the
    ``__manifest`` snapshot each attempt commits on, the staged leaves, the rows ``deletes``
    removes elsewhere, and ``operation`` with its counts: the rows the write adds, the rows
    it replaces (an ``overwrite`` every leaf's, an ``overwrite_partitions`` those of the
    leaves it overwrites, plus the deleted ones), the leaves it writes and replaces.

    A write with ``deletes`` is planned again after any concurrent commit that created or
    removed a leaf (``serializable``): what it deletes depends on every leaf.
    """

    def plan(snapshot: ManifestSnapshot) -> ChangePlan:
        extra = RowDeletes() if deletes is None else deletes(snapshot)
        removed = {**replaced_rows(manifest, snapshot, pending), **extra.drops}
        tally = Tally(operation, written=pending.leaves, removed=removed, deleted=extra.deleted)
        return ChangePlan(
            changes=extra.changes,
            drops=list(extra.drops),
            writes=pending,
            reads={oid: v for oid, v in extra.reads.items() if oid not in extra.drops},
            properties=tally.properties,
            serializable=deletes is not None,
        )

    return plan


def commit_write(
    manifest: Manifest,
    pending: PendingWrite,
    *,
    operation: Operation | None = None,
    deletes: Callable[[ManifestSnapshot], RowDeletes] | None = None,
    txn: tuple[str, int] | None = None,
    leaf_threads: int | None = None,
    backoff: Backoff | None = None,
    on_leaves_committed: Callable[[dict[str, int]], None] | None = None,
    fresh_within: float | None = None,
) -> CommitResult:
    """Make a staged write visible atomically, in one ``__manifest`` commit
    (:func:`write_plan` committed by :func:`~lance_partitioned.transaction.commit_changes`).

    ``operation`` is what the commit records (default: operation ``write`` in the write's
    mode); ``deletes`` plans the rows the write deletes outside its leaves; ``txn`` =
    (application id, version) makes the write idempotent; ``backoff``, ``leaf_threads`` and
    ``on_leaves_committed`` are passed to ``commit_changes``, and ``fresh_within`` (None:
    :data:`FRESH_WRITE_SECONDS`): a write staged that soon after reading the latest
    ``__manifest`` version commits on that snapshot without looking the latest up again.
    """
    recorded = write_operation(pending) if operation is None else operation
    return commit_changes(
        manifest,
        write_plan(manifest, pending, recorded, deletes),
        backoff=backoff,
        leaf_threads=leaf_threads,
        on_leaves_committed=on_leaves_committed,
        txn=txn,
        fresh_within=FRESH_WRITE_SECONDS if fresh_within is None else fresh_within,
    )


def merge_pending(writes: Sequence[PendingWrite]) -> PendingWrite:
    """Combine the pending writes staged by several workers (Spark tasks) into one.

    Every write must use the same spec version and mode. Leaves with the same object id are
    one leaf: their fragments are concatenated and their rows summed; namespaces are united.
    The leaf schema is the first write's.

    Raises :class:`~lance_partitioned.errors.InternalError` for an empty input, different spec
    versions or modes, or one leaf staged at two locations (the workers read different
    ``__manifest`` versions).

    >>> import pyarrow as pa
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
