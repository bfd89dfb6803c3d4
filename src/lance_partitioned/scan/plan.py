"""Scan planning: spec 000's partition pruning, from a filter to scan tasks.

1. Parse the filter (SQL through DataFusion's parser, or a tree from
   :mod:`lance_partitioned.expressions`), push NOT down and bind it to the read schema.
2. For each partition spec version, project the predicate onto that spec's partition columns
   (inclusive projection: no leaf holding a matching row is ever dropped) and evaluate the
   projection on that version's leaf rows of the one ``__manifest`` snapshot read.
3. For each surviving leaf, simplify the predicate against the leaf's partition values: what
   remains (the *residual*) is the task's, pushed into the leaf's Lance scanner at read time
   (:mod:`lance_partitioned.scan.read`); a leaf whose residual is false is skipped.

Steps 1 and 2 are Arrow compute over the ``__manifest`` columns; step 3 is Python work for the
leaves kept only. The plan is a :class:`~lance_partitioned.scan.tasks.ScanTasks`, which holds
the kept leaves' positions in the ``__manifest`` rows and builds each task (with the columns a
leaf lacks that an identity partition value decides, ``filled``) when it is asked for.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors
from lance_partitioned.columnpaths import ColumnPath, resolve_columns
from lance_partitioned.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    Predicate,
    and_,
    bind,
    filter_arrow,
    parse_sql,
    rewrite_not,
)
from lance_partitioned.manifest import (
    BASE_COLUMNS,
    DELIMITER,
    TABLE,
    Manifest,
    ManifestSnapshot,
)
from lance_partitioned.pruning import project
from lance_partitioned.pruning.fieldnames import (
    FieldTerm,
    field_schema,
    field_terms,
    on_fields,
    without_fields,
)
from lance_partitioned.scan.filters import sql_filter
from lance_partitioned.scan.leafgroups import leaf_residuals
from lance_partitioned.scan.tasks import LeafRows, ScanTasks
from lance_partitioned.spec.dialects import identity_columns
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.sourcepaths import lift_struct_conditions

__all__ = [
    "Filter",
    "bound_filter",
    "filter_partitions",
    "manifest_filter",
    "output_columns",
    "output_fields",
    "plan_scan",
]


Filter = str | Predicate | None


def bound_filter(
    filter: Filter, schema: pa.Schema, fields: Mapping[str, FieldTerm] | None = None
) -> Predicate:
    """``filter`` as a NOT-free predicate bound to ``schema`` (AlwaysTrue for None).

    ``fields`` are the partition field names the filter may also use (see
    :mod:`lance_partitioned.pruning.fieldnames`).
    """
    if fields:
        schema = field_schema(schema, fields)
    if filter is None:
        return AlwaysTrue()
    if isinstance(filter, str):
        if not filter.strip():
            return AlwaysTrue()
        predicate = parse_sql(filter, schema)
    elif isinstance(filter, Predicate):
        predicate = filter
    else:
        raise errors.InvalidInputError(
            f"filter must be a SQL string or an expressions Predicate, got {type(filter).__name__}"
        )
    return bind(rewrite_not(predicate), schema)


def manifest_filter(
    predicate: Predicate,
    spec: PartitionSpec,
    schema: NamespaceSchema,
    fields: Mapping[str, FieldTerm],
) -> Predicate:
    """The condition on the ``__manifest`` partition columns that ``spec``'s leaves holding
    a matching row meet: the inclusive projection of ``predicate``, and its conditions on
    ``spec``'s own field names (``fields``) as they are."""
    return and_(
        project(
            lift_struct_conditions(
                without_fields(predicate, fields), schema, (f.source_id for f in spec.fields)
            ),
            spec,
            schema,
        ),
        on_fields(predicate, spec, fields),
    )


def output_fields(schema: NamespaceSchema, columns: Sequence[str] | None) -> list[pa.Field]:
    """The output fields selected by ``columns`` (all live columns for None): read-schema
    columns, and struct fields named by their dotted paths (see
    :mod:`~lance_partitioned.columnpaths`)."""
    return [c.field for c in output_columns(schema, columns)]


def output_columns(schema: NamespaceSchema, columns: Sequence[str] | None) -> list[ColumnPath]:
    """The entries of ``columns`` resolved against the read schema (all live columns for None)."""
    read = schema.read_schema()
    if columns is None:
        return [ColumnPath(f.name, f.name, (), f) for f in read]
    return resolve_columns(read, columns)


def plan_scan(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    filter: Filter = None,
    columns: Sequence[str] | None = None,
) -> ScanTasks:
    """The leaves of ``snapshot`` that may hold rows matching ``filter``, in object-id order
    (spec version by spec version).

    Columnar (:mod:`~lance_partitioned.scan.tasks`): the leaves are kept by Arrow compute over
    the ``__manifest`` columns, and only the kept leaves cost Python work (their residuals);
    each :class:`ScanTask` is built when the returned sequence is iterated or indexed.
    """
    metadata = snapshot.metadata
    output_fields(metadata.schema, columns)  # validates the names
    fields = field_terms(metadata.specs, metadata.schema)
    predicate = bound_filter(filter, metadata.schema.read_schema(), fields)
    if isinstance(predicate, AlwaysFalse):
        return ScanTasks()
    rows = snapshot.rows
    leaves = pc.equal(rows.column("object_type"), TABLE)
    shared = {
        "fragment_ids": None,
        "storage_options": tuple(sorted(manifest.storage_options.items())),
        "manifest_root": manifest.root,
        "manifest_version": snapshot.version,
    }
    parts: list[LeafRows] = []
    for spec in metadata.specs:
        prefix = pc.starts_with(rows.column("object_id"), f"v{spec.version}{DELIMITER}")
        positions = pc.indices_nonzero(pc.and_(leaves, prefix)).cast(pa.int64())
        if len(positions) == 0:
            continue
        projected = manifest_filter(predicate, spec, metadata.schema, fields)
        if isinstance(projected, AlwaysFalse):
            continue
        if not isinstance(projected, AlwaysTrue):
            positions = _matching(rows, positions, projected)
        parts.append(
            _leaf_rows(
                manifest, snapshot, spec, _by_object_id(rows, positions), predicate, fields, shared
            )
        )
    return ScanTasks(parts)


def _matching(rows: pa.Table, positions: pa.Array, projected: Predicate) -> pa.Array:
    """Those of ``positions`` whose row of ``rows`` ``projected`` (a condition on the
    partition columns) may hold for: one Arrow filter over the partition columns of those
    rows only."""
    names = [name for name in rows.column_names if name not in BASE_COLUMNS]
    position = "__position"
    while position in names:
        position += "_"
    slim = pa.Table.from_arrays(
        [*(rows.column(name).take(positions) for name in names), positions],
        names=[*names, position],
    )
    kept = filter_arrow(slim, projected, unknown=True)
    return kept.column(position).combine_chunks()


def _by_object_id(rows: pa.Table, positions: pa.Array) -> pa.Array:
    """``positions`` in the order of their rows' object ids (unchanged when already)."""
    if len(positions) < 2:
        return positions
    ids = rows.column("object_id").take(positions)
    if pc.all(pc.less_equal(ids.slice(0, len(ids) - 1), ids.slice(1))).as_py():
        return positions
    return positions.take(pc.sort_indices(ids))


def _leaf_rows(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    spec: PartitionSpec,
    positions: pa.Array,
    predicate: Predicate,
    fields: Mapping[str, FieldTerm],
    shared: dict[str, Any],
) -> LeafRows:
    """The leaves of ``spec`` at ``positions`` (sorted) that ``predicate`` may match in,
    with their residuals: the predicate simplified against each one's partition values,
    computed once per distinct combination of the values it depends on
    (:mod:`~lance_partitioned.scan.leafgroups`); a leaf whose residual is false is dropped."""
    metadata = snapshot.metadata
    residuals: tuple[Predicate, ...] = (predicate,)
    groups = None
    if not isinstance(predicate, AlwaysTrue):
        positions, residuals, groups = leaf_residuals(
            snapshot.rows, positions, spec, metadata.schema, predicate, fields
        )
    return LeafRows(
        snapshot.rows,
        positions,
        tuple(spec_field.name for spec_field in spec.fields),
        tuple(identity_columns(spec, metadata.schema)),
        residuals,
        groups,
        spec.version,
        manifest.table_uri,
        shared,
    )


def filter_partitions(
    manifest: Manifest, snapshot: ManifestSnapshot, listing: pa.Table, condition: str
) -> pa.Table:
    """The rows of a partitions ``listing`` (one per leaf of ``snapshot``, with its
    ``object_id``) that ``condition`` keeps: SQL over the listing's own columns (partition
    columns, ``spec_version``...), else a filter over the namespace's columns, which keeps
    the leaves a scan with it reads (pruned as :func:`plan_scan` does).

    Raises
    ------
    InvalidInputError
        A condition that is neither, with the error of the listing's SQL.
    """
    try:
        return sql_filter(listing, condition, what="partition filter")
    except errors.InvalidInputError as exc:
        try:
            tasks = plan_scan(manifest, snapshot, condition, columns=[])
        except errors.InvalidInputError:
            raise exc from exc.__cause__
        return listing.filter(pc.is_in(listing.column("object_id"), tasks.object_ids()))
