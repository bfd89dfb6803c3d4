"""The rows of one ``__manifest`` commit of the commit protocol (every spec version row, new
namespace rows, each committed leaf's row with its new ``read_version`` and statistics) and
the :class:`~.plans.CommitResult` it reports; one place that builds them from an attempt's
leaf commits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from lance_partitioned import errors
from lance_partitioned.convert.marker import fill_moved, named_for, pending_moves
from lance_partitioned.manifest import (
    NAMESPACE,
    TABLE,
    LeafStats,
    ManifestSnapshot,
    WriterTransactions,
    spec_namespace_id,
)
from lance_partitioned.transaction.leaves import _ABSENT, LeafCommit, LeafWrite
from lance_partitioned.transaction.plans import ChangePlan, CommitResult, PendingWrite, _Attempt

__all__: list[str] = []

_SPEC_ID = re.compile(r"v[0-9]+")


def _namespace_row(
    snapshot: ManifestSnapshot, object_id: str, values: Mapping[str, Any]
) -> dict[str, Any]:
    existing = snapshot.row(object_id)
    if existing is not None:
        return existing
    return {"object_id": object_id, "object_type": NAMESPACE, **values}


def _leaf_row(
    snapshot: ManifestSnapshot,
    leaf: LeafWrite,
    values: Mapping[str, Any],
    commit: LeafCommit,
    fields: Sequence[str],
) -> dict[str, Any]:
    """The ``__manifest`` row of a written leaf: its row in ``snapshot`` with the new
    ``read_version``, or a new row carrying the leaf's value of each partition field of its
    spec version (``values``, by ``__manifest`` column, with one for each of ``fields``; a
    value may be NULL, when the data's is, never missing)."""
    row = snapshot.row(leaf.object_id)
    if row is None:
        missing = [name for name in fields if name not in values]
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
            **values,
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


def _changed_row(snapshot: ManifestSnapshot, object_id: str, commit: LeafCommit) -> dict[str, Any]:
    row = snapshot.row(object_id)
    if row is None:
        raise errors.InternalError(f"leaf {object_id!r} has no __manifest row")
    stats = LeafStats(commit.version, commit.num_rows, commit.fingerprint)
    return {**row, "read_version": commit.version, "metadata": stats.merge_into(row["metadata"])}


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
    fields_of: dict[str, list[str]] = {}  # by spec version namespace: the leaves share a few
    for oid, (step, commit) in states.items():
        if commit is None:
            continue
        if step.write is not None:
            head = oid.split("$", 1)[0]
            fields = fields_of.get(head)
            if fields is None:
                fields = fields_of[head] = _fields_of(snapshot, oid, version)
            values = named_for(fields, step.write.values)
            rows.append(_leaf_row(snapshot, step.write, values, commit, fields))
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
