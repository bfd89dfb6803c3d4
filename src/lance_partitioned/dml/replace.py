"""Writes that replace rows: ``overwrite_partitions`` across spec versions, and
replace-where (``write(data, mode="overwrite", where=...)``).

``overwrite_partitions`` replaces every row that falls in a partition of the current spec
present in the data. Leaves of the current spec are overwritten whole; rows of those
partitions stored under an older spec version (before a spec change) are deleted there, with
the condition "in one of the written partitions" projected onto each old leaf: a leaf it
decides entirely is dropped, one it cannot match is untouched, others get a Lance delete.

Replace-where deletes the rows matching ``where`` (as :func:`~lance_partitioned.dml.delete`
does) and appends the data, every row of which must satisfy ``where``
(:class:`~lance_partitioned.errors.PredicateViolationError` otherwise; nothing is written).

Both commit once, the staged data and the deletes together, through
:func:`lance_partitioned.transaction.write.commit_write`, as every write does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from lance_partitioned import errors, scan
from lance_partitioned.consistency import conform_for_write, leaf_schema
from lance_partitioned.dml.delete import PreparedDelete, delete_changes, deleted_rows, describe
from lance_partitioned.expressions import (
    AlwaysTrue,
    EqualTo,
    IsNull,
    Predicate,
    and_,
    or_,
)
from lance_partitioned.ingest import as_reader
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.pruning.fieldnames import field_terms, substitute
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.transaction import CommitResult, LeafChange, LeafWrite, PendingWrite
from lance_partitioned.transaction.write import RowDeletes, commit_write, write_operation

__all__ = ["commit_staged", "partitions_predicate", "require_matching"]


_NO_SPEC = PartitionSpec(1, ())  # pins no field: every field-name leaf stays a condition


def partitions_predicate(spec: PartitionSpec, leaves: Sequence[LeafWrite]) -> Predicate:
    """The rows that fall in one of ``leaves`` (of ``spec``), as a predicate on ``spec``'s
    partition field names (NULL values included).

    >>> from lance_partitioned.spec.partitioning import PartitionField
    >>> spec = PartitionSpec(2, (PartitionField(1, "c", 0, "col", pa.utf8()),))
    >>> partitions_predicate(spec, [LeafWrite("x", "x", [], 1, {"c": None})])
    IsNull(term='c')
    """
    predicate: Predicate | None = None
    for leaf in leaves:
        cell: Predicate = AlwaysTrue()
        for spec_field in spec.fields:
            value = leaf.values.get(spec_field.name)
            term = IsNull(spec_field.name) if value is None else EqualTo(spec_field.name, value)
            cell = and_(cell, term)
        predicate = cell if predicate is None else or_(predicate, cell)
    return AlwaysTrue() if predicate is None else predicate


def _spec(snapshot: ManifestSnapshot, version: int) -> PartitionSpec:
    for spec in snapshot.metadata.specs:
        if spec.version == version:
            return spec
    raise errors.ConcurrentSchemaChangeError(
        f"partition spec v{version}, which the data was staged under, is not in the "
        f"__manifest at version {snapshot.version}: write the data again"
    )


def commit_staged(
    manifest: Manifest,
    pending: PendingWrite,
    *,
    where: str | Predicate | None = None,
    leaf_threads: int | None = None,
    txn: tuple[str, int] | None = None,
    details: Mapping[str, str] | None = None,
) -> CommitResult:
    """Commit a staged write, recorded as operation ``write`` (with ``details``), through
    :func:`~lance_partitioned.transaction.write.commit_write`: an append or whole overwrite as
    such; ``overwrite_partitions`` with the rows of the written partitions deleted from leaves
    of older spec versions; with ``where`` (pending staged as an append), the rows matching
    ``where`` deleted first (recorded as mode ``replace_where``). The rows those deletes
    remove count in the commit's ``rows_removed``, their leaves in its
    ``partitions_touched``. ``txn`` = (application id, version) makes the commit idempotent."""
    operation = write_operation(pending, details)
    if where is None and pending.mode != "overwrite_partitions":
        return commit_write(
            manifest, pending, operation=operation, leaf_threads=leaf_threads, txn=txn
        )
    cache: dict[str, PreparedDelete] = {}
    if where is not None:
        mode = dataclasses.replace(operation, mode="replace_where")
        operation = mode.with_details(predicate=describe(where))

    def deletes(snapshot: ManifestSnapshot) -> RowDeletes:
        changes: list[LeafChange] = []
        drops: dict[str, int] = {}
        examined: dict[str, int] = {}  # every leaf looked at: an append to one re-plans
        if where is not None:
            leaves = {leaf.object_id for leaf in pending.leaves}
            changes, drops = delete_changes(
                manifest, snapshot, where, cache, None, leaves, examined
            )
        else:
            spec = _spec(snapshot, pending.spec_version)
            older = {s.version for s in snapshot.metadata.specs if s.version != spec.version}
            schema = snapshot.metadata.schema
            if any(schema.is_deprecated(f.source_id) for f in spec.fields):
                # Appendix E: a field of a deprecated source is NULL on write, and rows of
                # older specs cannot be placed in its partitions: only this spec's leaves
                older = set()
            if older and pending.leaves:
                predicate = partitions_predicate(spec, pending.leaves)
                changes, drops = delete_changes(
                    manifest, snapshot, predicate, cache, older, examined=examined
                )
        return RowDeletes(changes, drops, deleted_rows(changes, cache), examined)

    return commit_write(
        manifest,
        pending,
        operation=operation,
        deletes=deletes,
        leaf_threads=leaf_threads,
        txn=txn,
    )


def require_matching(
    data: Any, where: str | Predicate, snapshot: ManifestSnapshot
) -> pa.RecordBatchReader:
    """``data`` as a stream that raises
    :class:`~lance_partitioned.errors.PredicateViolationError` at the first batch holding a
    row for which ``where`` is not true (so a replace-where writes nothing then)."""
    metadata = snapshot.metadata
    schema = metadata.schema
    fields = field_terms(metadata.specs, schema)
    # conditions on partition field names are computed over their source columns
    predicate = substitute(
        scan.bound_filter(where, schema.read_schema(), fields), _NO_SPEC, fields, {}
    )
    reader = as_reader(data)
    target = leaf_schema(schema)

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            if batch.num_rows:
                _check(batch, predicate, where)
            yield batch

    def _check(batch: pa.RecordBatch, predicate: Predicate, where: str | Predicate) -> None:
        table = conform_for_write(pa.Table.from_batches([batch]), schema, target)
        conformed = table.combine_chunks().to_batches()[0]
        kept = scan.post_filter(conformed, predicate).num_rows
        if kept != batch.num_rows:
            raise errors.PredicateViolationError(
                f"{batch.num_rows - kept} row(s) of the data do not satisfy the replace-where "
                f"predicate {describe(where)!r}: a replace-where may only write rows it "
                "replaces. Nothing was written; filter the data, or widen the predicate"
            )

    return pa.RecordBatchReader.from_batches(reader.schema, batches())
