"""Scan planning: spec 000's partition pruning, from a filter to scan tasks.

1. Parse the filter (SQL through DataFusion's parser, or a tree from
   :mod:`lance_partitioned.expressions`), push NOT down and bind it to the read schema.
2. For each partition spec version, project the predicate onto that spec's partition columns
   (inclusive projection: no leaf holding a matching row is ever dropped) and evaluate the
   projection on that version's leaf rows of the one ``__manifest`` snapshot read.
3. For each surviving leaf, simplify the predicate against the leaf's partition values: what
   remains (the *residual*) is the task's, pushed into the leaf's Lance scanner at read time
   (:mod:`lance_partitioned.scan.read`); a leaf whose residual is false is skipped.

The tasks are built column by column from the ``__manifest`` rows (:func:`_tasks`), with the
columns a leaf lacks that an identity partition value decides (``filled``).
"""

from __future__ import annotations

import contextlib
import gc
import itertools
from collections.abc import Iterator, Mapping, Sequence
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
    DELIMITER,
    READ_VERSION,
    LeafStats,
    Manifest,
    ManifestSnapshot,
)
from lance_partitioned.manifest.root import READ_REFS
from lance_partitioned.pruning import project, residual
from lance_partitioned.pruning.fieldnames import (
    FieldTerm,
    field_schema,
    field_terms,
    on_fields,
    substitute,
    without_fields,
)
from lance_partitioned.scan.filters import sql_filter
from lance_partitioned.scan.task import ScanTask
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
) -> list[ScanTask]:
    """The leaves of ``snapshot`` that may hold rows matching ``filter``, in object-id order."""
    metadata = snapshot.metadata
    output_fields(metadata.schema, columns)  # validates the names
    fields = field_terms(metadata.specs, metadata.schema)
    predicate = bound_filter(filter, metadata.schema.read_schema(), fields)
    if isinstance(predicate, AlwaysFalse):
        return []
    tables = snapshot.tables
    object_ids = tables.column("object_id")
    tasks: list[ScanTask] = []
    for spec in metadata.specs:
        rows = tables.filter(pc.starts_with(object_ids, f"v{spec.version}{DELIMITER}"))
        if rows.num_rows == 0:
            continue
        projected = manifest_filter(predicate, spec, metadata.schema, fields)
        if isinstance(projected, AlwaysFalse):
            continue
        if not isinstance(projected, AlwaysTrue):
            rows = filter_arrow(rows, projected, unknown=True)
        with _collection_paused():
            tasks += _tasks(manifest, snapshot, spec, rows.sort_by("object_id"), predicate, fields)
    return tasks


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a plan builds a task per leaf: the many
    small objects it allocates (none in a cycle) make the collector walk the heap again and
    again, half of an unfiltered plan of 100k leaves. Resumed after, when it was running (a
    thread that finds it paused by another leaves it to that one to resume)."""
    running = gc.isenabled()
    if running:
        gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()


def _task(**fields: Any) -> ScanTask:
    """A :class:`ScanTask` of every field, without the frozen dataclass's ``__init__`` (one
    ``object.__setattr__`` per field: a quarter of an unfiltered plan of 100k leaves)."""
    task = object.__new__(ScanTask)
    object.__setattr__(task, "__dict__", fields)
    return task


def _tasks(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    spec: PartitionSpec,
    rows: pa.Table,
    predicate: Predicate,
    fields: Mapping[str, FieldTerm],
) -> list[ScanTask]:
    """The scan tasks of ``spec``'s leaf ``rows`` (sorted) that ``predicate`` may match in.

    Column by column (100k leaves: a dict per row and a JSON parse per row's ``metadata``
    were most of an unfiltered plan); the row counts come from
    :meth:`~lance_partitioned.manifest.LeafStats.num_rows_column`."""
    metadata = snapshot.metadata
    options = tuple(sorted(manifest.storage_options.items()))
    names = [spec_field.name for spec_field in spec.fields]
    n = rows.num_rows
    columns = [
        rows.column(name).to_pylist() if name in rows.column_names else [None] * n for name in names
    ]
    versions = (
        rows.column(READ_VERSION) if READ_VERSION in rows.column_names else pa.nulls(n, pa.int64())
    )
    counts = LeafStats.num_rows_column(
        rows.column("metadata") if "metadata" in rows.column_names else pa.nulls(n, pa.string()),
        versions,
    )
    read_versions = versions.to_pylist()
    branches, tags = (
        rows.column(name).to_pylist() if name in rows.column_names else [None] * n
        for name in READ_REFS
    )
    uris = list(map(manifest.table_uri, rows.column("location").to_pylist()))
    everything = isinstance(predicate, AlwaysTrue)
    filled = identity_columns(spec, metadata.schema)
    shared = {
        "spec_version": spec.version,
        "fragment_ids": None,
        "storage_options": options,
        "manifest_root": manifest.root,
        "manifest_version": snapshot.version,
    }
    tasks: list[ScanTask] = []
    for object_id, uri, read_version, branch, tag, count, values in zip(
        rows.column("object_id").to_pylist(),
        uris,
        read_versions,
        branches,
        tags,
        counts,
        zip(*columns, strict=True) if columns else itertools.repeat((), n),
        strict=True,
    ):
        partition_values = tuple(zip(names, values, strict=True))
        remaining = predicate
        if not everything:
            bound = dict(partition_values)
            remaining = residual(
                substitute(predicate, spec, fields, bound), spec, metadata.schema, bound
            )
            if isinstance(remaining, AlwaysFalse):
                continue
        tasks.append(
            _task(
                object_id=object_id,
                uri=uri,
                read_version=None if read_version is None else int(read_version),
                partition_values=partition_values,
                residual=remaining,
                row_count=count,
                filled=tuple((column, values[i]) for i, column in filled if values[i] is not None),
                read_branch=branch,
                read_tag=tag,
                **shared,
            )
        )
    return tasks


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
        kept = pa.array([task.object_id for task in tasks], pa.string())
        return listing.filter(pc.is_in(listing.column("object_id"), kept))
