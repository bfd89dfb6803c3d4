"""Planning a row-level change: which leaves a predicate touches, and how.

The leaves are pruned exactly as a read is (:func:`lance_partitioned.scan.plan_scan`): each
surviving leaf carries the residual of the predicate against its partition values. A leaf
whose residual is AlwaysTrue holds only matching rows (a delete drops it from the
``__manifest`` without reading it); any other leaf has its matching rows found by Lance, with
the residual pushed down as SQL over the leaf's own columns when the leaf stores them under
their namespace names and types, or, for a leaf of an older schema (renamed columns, promoted
types, conditions on partition field names), found in memory and addressed by row address.

Nothing here commits: :func:`delete_operation` only writes deletion files and returns the
Lance operation that :func:`lance_partitioned.transaction.commit_changes` commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from lance import LanceDataset, LanceOperation

from lance_partitioned import errors, scan
from lance_partitioned.consistency import conform_batch, leaf_field
from lance_partitioned.dml.merge_keys import sorted_unique
from lance_partitioned.expressions import AlwaysTrue, Predicate
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.runtime.leaf_cache import leaf_schema
from lance_partitioned.scan import ScanTask
from lance_partitioned.spec.schema import NamespaceSchema

__all__ = [
    "ROW_ADDRESS",
    "DeleteCount",
    "Selection",
    "address_filter",
    "addresses",
    "delete_operation",
    "deletion_filter",
    "is_whole_leaf",
    "leaf_rows",
    "leaf_tasks",
    "matched_rows",
    "pushdown",
]

ROW_ADDRESS = "_rowaddr"
#: A leaf of at most this many rows (one Lance batch) has its matching rows read with every
#: column at once: a second pass taking the other columns of the matches costs more there.
EARLY_ROWS = 8192


def leaf_tasks(
    manifest: Manifest, snapshot: ManifestSnapshot, where: str | Predicate | None
) -> scan.ScanTasks:
    """The leaves of ``snapshot`` that may hold rows matching ``where``, with residuals.

    Raises :class:`~lance_partitioned.errors.InvalidInputError` for a predicate that does
    not parse or names an unknown column.
    """
    if where is None or (isinstance(where, str) and not where.strip()):
        raise errors.InvalidInputError(
            "a row-level change needs a predicate: pass where='true' to change every row"
        )
    return scan.plan_scan(manifest, snapshot, where, columns=[])


def is_whole_leaf(task: ScanTask) -> bool:
    """Whether the partition values alone decide that every row of the leaf matches."""
    return isinstance(task.residual, AlwaysTrue)


def pushdown(ds: LanceDataset, task: ScanTask, schema: NamespaceSchema) -> str | None:
    """The residual as Lance SQL over the leaf's columns, or None when Lance cannot evaluate
    it there (older leaf schema, conditions on partition field names)."""
    if is_whole_leaf(task):
        return "true"
    read = schema.read_schema()
    fields = scan.residual_fields(task.residual, read)
    sources = [leaf_field(leaf_schema(ds), f) for f in fields]
    return scan.leaf_filter(ds, task.residual, fields, sources)


def matched_rows(
    ds: LanceDataset,
    task: ScanTask,
    schema: NamespaceSchema,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """The leaf's rows that match the task's residual, in the namespace read schema (only
    ``columns``; None: every live column), with their Lance row address as ``_rowaddr``."""
    read = schema.read_schema()
    wanted = list(read) if columns is None else [read.field(name) for name in columns]
    residual = task.residual
    filtered = [] if is_whole_leaf(task) else scan.residual_fields(residual, read)
    names = {f.name for f in wanted}
    needed = pa.schema([*wanted, *(f for f in filtered if f.name not in names)])
    # (pylance converts its schema at each access, ~0.1 ms per leaf: once per dataset object)
    leaf = leaf_schema(ds)
    sources = [leaf_field(leaf, f) for f in needed]
    sql = pushdown(ds, task, schema)
    small = task.row_count is not None and task.row_count <= EARLY_ROWS
    scanner = ds.scanner(
        columns=sorted({s.name for s in sources if s is not None}),
        filter=None if sql == "true" else sql,
        with_row_address=True,
        late_materialization=False if small else None,
    )
    out_schema = pa.schema([*wanted, pa.field(ROW_ADDRESS, pa.uint64())])
    batches = []
    for batch in scanner.to_batches():
        conformed = conform_batch(batch, sources, needed)
        conformed = conformed.append_column(ROW_ADDRESS, batch.column(ROW_ADDRESS))
        if sql is None:
            conformed = scan.post_filter(conformed, residual)
        batches.append(conformed.select(out_schema.names))
    return pa.Table.from_batches(batches, schema=out_schema)


Selection = str | np.ndarray
"""The rows of a leaf to delete: a Lance SQL filter, or their row addresses (sorted)."""


def deletion_filter(ds: LanceDataset, task: ScanTask, schema: NamespaceSchema) -> Selection | None:
    """Exactly the leaf's matching rows at ``ds``'s version: the pushed-down residual, or
    the row addresses of the rows found in memory (None: no row matches)."""
    sql = pushdown(ds, task, schema)
    if sql is not None:
        return sql
    return addresses(matched_rows(ds, task, schema, columns=[]).column(ROW_ADDRESS))


def addresses(column: pa.ChunkedArray | pa.Array) -> np.ndarray | None:
    """Row addresses as a sorted array without repeats (None for none)."""
    values = sorted_unique(np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.uint64))
    return values if len(values) else None


def address_filter(values: np.ndarray) -> str:
    """A Lance filter selecting rows by address.

    >>> address_filter(np.array([3, 4294967296], dtype=np.uint64))
    '_rowaddr IN (3, 4294967296)'
    """
    return f"{ROW_ADDRESS} IN ({', '.join(map(str, values.tolist()))})"


@dataclass
class DeleteCount:
    """Rows a prepared Lance delete removes from one leaf."""

    rows: int = 0


def _deleted(fragment: Any) -> int:
    deletion = fragment.deletion_file
    return 0 if deletion is None else int(deletion.num_deleted_rows or 0)


_OFFSET_MASK = np.uint64(0xFFFFFFFF)


def _targets(ds: LanceDataset, where: Selection) -> list[tuple[Any, str | np.ndarray]]:
    """The fragments to apply the delete to, each with what to delete: every fragment with
    the SQL filter, or only the fragments holding the addresses, each with the row offsets
    in it (deleted as they are: no filter evaluated again)."""
    if isinstance(where, str):
        return [(fragment, where) for fragment in ds.get_fragments()]
    fragment_ids = where >> np.uint64(32)
    bounds = np.flatnonzero(np.diff(fragment_ids)) + 1
    targets: list[tuple[Any, str | np.ndarray]] = []
    for chunk in np.split(where, bounds):
        fragment = ds.get_fragment(int(chunk[0] >> np.uint64(32)))
        if fragment is None:
            raise errors.InternalError(
                f"row address {int(chunk[0])} names no fragment of the leaf at {ds.uri!r} "
                f"version {ds.version}"
            )
        targets.append((fragment, chunk & _OFFSET_MASK))
    return targets


def _delete(fragment: Any, condition: str | np.ndarray) -> Any:
    """``fragment`` with the rows ``condition`` selects deleted (a SQL filter, or row
    offsets in the fragment): its new metadata, None when no row is left."""
    if isinstance(condition, str):
        return fragment.delete(condition)
    return fragment.delete_rows(condition.tolist())


def delete_operation(
    ds: LanceDataset, where: Selection | None, count: DeleteCount | None = None
) -> Any:
    """The uncommitted Lance ``Delete`` of the rows of ``ds`` that ``where`` selects
    (deletion files are written, nothing is committed), or None when no row matches.
    ``count`` receives the number of rows deleted."""
    if count is not None:
        count.rows = 0
    if where is None:
        return None
    updated, removed = [], []
    rows = 0
    for fragment, condition in _targets(ds, where):
        before = fragment.metadata
        try:
            after = _delete(fragment, condition)
        except (OSError, ValueError) as exc:
            typed = errors.storage_error(exc, ds.uri, "delete rows")
            if typed is not None:
                raise typed from exc
            shown = (
                f"the filter {condition[:200]!r}"
                if isinstance(condition, str)
                else f"the deletion of row offsets {condition[:20].tolist()}"
            )
            raise errors.InvalidInputError(
                f"Lance cannot apply {shown} to fragment "
                f"{fragment.fragment_id} of the leaf at {ds.uri!r}: {exc}"
            ) from exc
        if after is None:
            removed.append(fragment.fragment_id)
            rows += int(before.physical_rows or 0) - _deleted(before)
        elif _deleted(after) != _deleted(before):
            updated.append(after)
            rows += _deleted(after) - _deleted(before)
    if count is not None:
        count.rows = rows
    if not updated and not removed:
        return None
    predicate = where if isinstance(where, str) else address_filter(where)
    return LanceOperation.Delete(updated, removed, predicate)


def leaf_rows(task: ScanTask) -> int:
    """Rows in the leaf at its read_version: the ``__manifest``'s count when recorded."""
    if task.row_count is not None:
        return task.row_count
    return int(task.open().count_rows())
