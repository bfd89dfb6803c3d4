"""Scan planning and reads: spec 000's partition pruning workflow.

1. Parse the filter (SQL through DataFusion's parser, or a tree from
   :mod:`lance_partitioned.expressions`), push NOT down and bind it to the read schema.
2. For each partition spec version, project the predicate onto that spec's partition columns
   (inclusive projection: no leaf holding a matching row is ever dropped) and evaluate the
   projection on that version's leaf rows of the one ``__manifest`` snapshot read.
3. For each surviving leaf, simplify the predicate against the leaf's partition values: what
   remains (the *residual*) is pushed into the leaf's Lance scanner; a leaf whose residual is
   false is skipped.
4. Read each leaf at its ``read_version`` (NULL: latest), matching leaf columns to namespace
   fields by field id, on a bounded thread pool.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("country", pa.string())]),
...     partition_by="country")
>>> _ = ns.write(pa.table({"id": [1, 2, 3], "country": ["US", "FR", "US"]}))
>>> [task.partition_values for task in ns.plan_scan("country = 'FR'")]
[(('country', 'FR'),)]
>>> ns.to_table("id > 1", columns=["id"]).column("id").to_pylist()
[2, 3]
>>> ns.count_rows("country = 'US'")
2
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import itertools
import queue
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors
from lance_partitioned.columnpaths import ColumnPath, resolve_columns, select_columns
from lance_partitioned.consistency import conform_batch, leaf_field
from lance_partitioned.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    Predicate,
    and_,
    bind,
    filter_arrow,
    parse_sql,
    rewrite_not,
    terms,
    to_sql,
)
from lance_partitioned.expressions.sqltext import deep
from lance_partitioned.expressions.tree import Unknown
from lance_partitioned.expressions.visitor import leaves, map_leaves
from lance_partitioned.leaf_cache import cached_leaf
from lance_partitioned.manifest import (
    DELIMITER,
    READ_VERSION,
    LeafStats,
    Manifest,
    ManifestSnapshot,
    open_leaf,
)
from lance_partitioned.manifest.root import READ_REFS
from lance_partitioned.manifest.versions import list_versions
from lance_partitioned.pools import leaf_pool
from lance_partitioned.pruning import project, residual
from lance_partitioned.pruning.fieldnames import (
    FieldCondition,
    FieldExpression,
    FieldTerm,
    field_conditions,
    field_expressions,
    field_schema,
    field_terms,
    on_fields,
    substitute,
    without_fields,
)
from lance_partitioned.runtime import DEFAULT_THREADS
from lance_partitioned.sessions import leaf_session
from lance_partitioned.spec.dialects import identity_columns
from lance_partitioned.spec.evaluate import evaluate
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema

__all__ = [
    "ScanTask",
    "count_rows",
    "count_task",
    "leaf_filter",
    "manifest_filter",
    "plan_scan",
    "post_filter",
    "pushdown_filter",
    "read_task",
    "residual_fields",
    "sql_filter",
    "to_batches",
    "to_table",
]

_QUEUE_BATCHES = 16


@dataclass(frozen=True)
class ScanTask:
    """One leaf table to read, at one version, with what still filters inside it.

    Picklable, so Spark ships it to executors.

    Attributes
    ----------
    object_id : str
        The leaf's ``__manifest`` object id.
    uri : str
        Absolute URI of the leaf Lance table.
    read_version : int or None
        The leaf version to read (None: latest, for a row without ``read_version``).
    spec_version : int
        The partition spec version the leaf belongs to.
    partition_values : tuple of (name, value)
        The leaf's partition values, in spec order.
    residual : Predicate
        The part of the filter partition values do not decide (AlwaysTrue: nothing).
    row_count : int or None
        Rows in the leaf at ``read_version`` when the ``__manifest`` records it.
    fragment_ids : tuple of int or None
        Read only these fragments (None: every fragment).
    storage_options : tuple of (key, value)
        Storage options for opening the leaf.
    manifest_root : str or None
        The root of the namespace whose ``__manifest`` lists the leaf (None: unknown).
    manifest_version : int or None
        The ``__manifest`` version that pins :attr:`read_version` (None: unknown): when the
        leaf cannot be opened, whether a cleanup removed that version tells an outdated
        reader from a damaged namespace.
    """

    object_id: str
    uri: str
    read_version: int | None
    spec_version: int
    partition_values: tuple[tuple[str, Any], ...]
    residual: Predicate
    row_count: int | None = None
    fragment_ids: tuple[int, ...] | None = None
    storage_options: tuple[tuple[str, str], ...] = ()
    manifest_root: str | None = None
    manifest_version: int | None = None
    filled: tuple[tuple[str, Any], ...] = ()
    """``(column, value)``: a leaf lacking the column reads it as the partition value."""
    read_branch: str | None = None
    """The branch of the leaf to read :attr:`read_version` of (None: main)."""
    read_tag: str | None = None
    """The tag of the leaf to read (None: none; set, it wins over :attr:`read_version`)."""

    def open(self) -> lance.LanceDataset:
        """The leaf as a Lance dataset at :attr:`read_version`.

        Raises
        ------
        TableVersionNotFoundError
            The leaf, or its version, is not there because a cleanup removed the
            ``__manifest`` version that pins it (:attr:`manifest_version`): the reader is
            outdated, the namespace is fine.
        CorruptNamespaceError
            The leaf table, or its pinned version, is not there while the ``__manifest``
            version that pins it is (naming both): the namespace is damaged.
        """
        try:
            if self.read_version is None or self.read_tag or self.read_branch:
                return self._open()
            # a fixed version: the dataset opened before (its index metadata loaded)
            return cached_leaf(self.uri, self.read_version, self.storage_options, self._open)
        except errors.TableNotFoundError as exc:
            gone = self.removed_by_cleanup()
            if gone is not None:
                raise gone from exc
            raise errors.CorruptNamespaceError(
                missing_leaf_message(
                    self.object_id, self.uri, self.read_version, exc.__cause__ or exc
                )
            ) from exc

    def _open(self) -> lance.LanceDataset:
        return open_leaf(
            self.uri,
            self.read_version,
            dict(self.storage_options),
            session=self._session(),
            action="read",
            branch=self.read_branch,
            tag=self.read_tag,
        )

    def _session(self) -> lance.Session | None:  # type: ignore[name-defined]
        """The namespace's shared leaf session (:mod:`lance_partitioned.sessions`) for a
        fixed version; None (a fresh one) for the latest, which Lance looks up each time."""
        if self.read_version is None or self.read_tag is not None:
            return None  # a tag may move, like a latest version
        root = self.manifest_root or self.uri.rstrip("/").rsplit("/", 1)[0]
        return leaf_session(root, dict(self.storage_options))

    def removed_by_cleanup(self) -> errors.TableVersionNotFoundError | None:
        """The error to raise when the leaf cannot be opened because a cleanup removed the
        ``__manifest`` version that pins it; None when that version is still there (then the
        leaf is missing behind the ``__manifest``'s back: damage) or unknown.

        A cleanup removes expired ``__manifest`` versions before the leaf versions and leaf
        directories only they need, so a leaf that a kept version lists is always readable.
        """
        if self.manifest_root is None or self.manifest_version is None:
            return None
        manifest = Manifest(self.manifest_root, dict(self.storage_options))
        try:
            kept = [info.version for info in list_versions(manifest, properties=False)]
        except (errors.LancePartitionedError, OSError, ValueError):
            return None  # cannot tell: report what is certain, the leaf cannot be opened
        version = self.manifest_version
        if not kept or version in kept or version > max(kept):
            return None
        leaf = "" if self.read_version is None else f"version {self.read_version} of "
        return errors.TableVersionNotFoundError(
            f"this reader reads __manifest version {version} of {self.manifest_root!r}, which "
            f"a cleanup removed, with the {leaf}leaf table {self.object_id!r} ({self.uri!r}) "
            "that only such old versions needed. The namespace is not damaged (the "
            f"__manifest versions kept are {_ranges(kept)}): call refresh() on the namespace, "
            "or open it again at a version still kept, and read again (a pyarrow dataset or "
            "a Polars scan reads the version its namespace had when it was made: make it "
            "again after the refresh)"
        )


def _ranges(versions: Sequence[int]) -> str:
    """Sorted version numbers as ranges.

    >>> _ranges([1, 2, 3, 5, 7, 8])
    '1-3, 5, 7-8'
    """
    out: list[str] = []
    start = previous = versions[0]
    for version in [*versions[1:], None]:
        if version is not None and version == previous + 1:
            previous = version
            continue
        out.append(str(start) if start == previous else f"{start}-{previous}")
        if version is not None:
            start = previous = version
    return ", ".join(out)


def missing_leaf_message(object_id: str, uri: str, version: int | None, exc: BaseException) -> str:
    """What to say when the leaf table of ``object_id`` cannot be opened at ``version``."""
    what = "its latest version" if version is None else f"its pinned version {version}"
    return (
        f"leaf table {object_id!r} of the __manifest cannot be opened at {uri!r} ({what}): "
        f"{exc}. The namespace is damaged: restore the leaf directory, or remove the "
        "partition with a write in mode 'overwrite'"
    )


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
        project(without_fields(predicate, fields), spec, schema),
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


def residual_fields(predicate: Predicate, read: pa.Schema) -> list[pa.Field]:
    """The read-schema fields a residual reads: its terms, or every column when it holds an
    Unknown that does not name its columns.

    >>> from lance_partitioned.expressions import EqualTo, GreaterThan, and_
    >>> read = pa.schema([("id", pa.int64()), ("c", pa.string()), ("n", pa.int64())])
    >>> [f.name for f in residual_fields(and_(GreaterThan("n", 1), EqualTo("c", "US")), read)]
    ['c', 'n']
    """
    if any(not node.columns for node in _unknowns(predicate)):
        return list(read)
    return [read.field(name) for name in sorted(terms(predicate))]


def pushdown_filter(
    predicate: Predicate, fields: Sequence[pa.Field], sources: Sequence[pa.Field | None]
) -> str | None:
    """The residual as Lance SQL when the leaf stores every column it reads (``fields``, see
    :func:`residual_fields`) under its namespace name and type (``sources[i]`` is the leaf's
    field holding ``fields[i]``, None when absent), else None: then it is evaluated in
    memory by :func:`post_filter` (so are conditions on partition field names).

    >>> from lance_partitioned.expressions import GreaterThan
    >>> n = pa.field("n", pa.int64())
    >>> pushdown_filter(GreaterThan("n", 1), [n], [n])
    '`n` > 1'
    >>> pushdown_filter(GreaterThan("n", 1), [n], [pa.field("n", pa.int32())]) is None
    True
    """
    if (
        not field_conditions(predicate)
        and not field_expressions(predicate)
        and all(
            source is not None and source.name == field.name and source.type == field.type
            for field, source in zip(fields, sources, strict=True)
        )
    ):
        return to_sql(predicate)
    return None


def leaf_filter(
    dataset: lance.LanceDataset,
    predicate: Predicate,
    fields: Sequence[pa.Field],
    sources: Sequence[pa.Field | None],
) -> str | None:
    """:func:`pushdown_filter` for one opened leaf: also None when the residual holds SQL
    Lance's filter cannot evaluate (``CASE``: Lance parses a subset of DataFusion's SQL),
    which :func:`post_filter` then evaluates in memory with DataFusion."""
    sql = pushdown_filter(predicate, fields, sources)
    if sql is None or not _unknowns(predicate):
        return sql  # a tree of plain leaves: Lance takes its SQL
    return sql if _lance_accepts(dataset, sql) else None


_ACCEPTED: dict[tuple[str, pa.Schema], bool] = {}
_ACCEPTED_LOCK = threading.Lock()
_ACCEPTED_SIZE = 1024


def _lance_accepts(dataset: lance.LanceDataset, sql: str) -> bool:
    """Whether Lance plans a scan of ``dataset`` with the filter ``sql`` (by filter and leaf
    schema, cached: planning reads no data, about 0.2 ms)."""
    key = (sql, dataset.schema)
    with _ACCEPTED_LOCK:
        known = _ACCEPTED.get(key)
    if known is not None:
        return known
    try:
        dataset.scanner(columns=[], with_row_id=True, filter=sql).explain_plan()
        accepted = True
    except (OSError, ValueError):  # "... is not supported SQL in lance", a type error
        accepted = False
    with _ACCEPTED_LOCK:
        if len(_ACCEPTED) >= _ACCEPTED_SIZE:
            _ACCEPTED.clear()
        _ACCEPTED[key] = accepted
    return accepted


def read_task(
    task: ScanTask,
    schema: NamespaceSchema,
    columns: Sequence[str] | None = None,
    batch_size: int | None = None,
    limit: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Stream one leaf's matching rows in the namespace read schema (projected to ``columns``).

    Leaf columns are matched to namespace fields by field id (renames), missing ones read as
    NULL, other types are cast. The residual filter runs inside Lance when the leaf stores the
    columns it reads under their namespace names and types, otherwise after conforming.
    """
    outputs = output_columns(schema, columns)
    read = schema.read_schema()
    fields = [read.field(name) for name in dict.fromkeys(c.column for c in outputs)]
    dataset = task.open()
    leaf = dataset.schema
    predicate = task.residual
    filtered = [] if isinstance(predicate, AlwaysTrue) else residual_fields(predicate, read)
    names = {f.name for f in fields}
    needed = pa.schema([*fields, *(f for f in filtered if f.name not in names)])
    sources = [leaf_field(leaf, f) for f in needed]
    by_name = dict(zip(needed.names, sources, strict=True))
    pushdown = (
        None
        if isinstance(predicate, AlwaysTrue)
        else leaf_filter(dataset, predicate, filtered, [by_name[f.name] for f in filtered])
    )
    scan_columns = sorted({s.name for s in sources if s is not None})
    fragments = _fragments(dataset, task)
    scanner = dataset.scanner(
        columns=scan_columns,
        filter=pushdown,
        fragments=fragments,
        batch_size=batch_size,
        limit=limit if pushdown is not None or isinstance(predicate, AlwaysTrue) else None,
        with_row_id=not scan_columns,  # Lance needs one column to count rows
    )
    out_schema = pa.schema([c.field for c in outputs])
    post = None if pushdown is not None or isinstance(predicate, AlwaysTrue) else predicate
    remaining = limit
    for batch in scanner.to_batches():
        conformed = _fill(conform_batch(batch, sources, needed), task, by_name)
        if post is not None:
            conformed = post_filter(conformed, post)
        result = select_columns(conformed, outputs)
        if remaining is not None:
            result = result.slice(0, remaining)
            remaining -= result.num_rows
        out = pa.RecordBatch.from_arrays(result.columns, schema=out_schema)
        step = batch_size or max(1, out.num_rows)
        for offset in range(0, out.num_rows, step):  # Lance treats batch_size as a hint
            yield out.slice(offset, step)
        if remaining == 0:
            return


def _fill(
    batch: pa.RecordBatch, task: ScanTask, by_name: Mapping[str, pa.Field | None]
) -> pa.RecordBatch:
    """Columns the leaf lacks that an identity partition value decides (never NULL)."""
    for name, value in task.filled:
        if name in by_name and by_name[name] is None:
            index = batch.schema.get_field_index(name)
            dtype = batch.schema.field(index).type
            column = pa.repeat(pa.scalar(value, dtype), batch.num_rows)
            batch = batch.set_column(index, batch.schema.field(index), column)
    return batch


def _unknowns(predicate: Predicate) -> list[Unknown]:
    """The Unknown nodes of a predicate (any depth)."""
    return leaves(predicate, Unknown)


def sql_filter(table: pa.Table, condition: str, what: str = "filter") -> pa.Table:
    """The rows of an in-memory table for which the SQL ``condition`` holds (DataFusion).

    An invalid condition raises :class:`~lance_partitioned.errors.InvalidInputError` that
    calls it ``what``.

    >>> sql_filter(pa.table({"n": [1, 2, 3]}), "n % 2 = 1").column("n").to_pylist()
    [1, 3]
    """
    import datafusion

    def run() -> pa.Table:
        ctx = datafusion.SessionContext()
        ctx.register_record_batches(
            "t", [table.to_batches() or [pa.record_batch([], schema=table.schema)]]
        )
        return ctx.sql(f"SELECT * FROM t WHERE {condition}").to_arrow_table()

    try:
        result = deep(run)  # DataFusion recurses as deep as the condition nests
    except Exception as exc:
        raise errors.InvalidInputError(f"cannot apply {what} {condition!r}: {exc}") from exc
    return result.cast(table.schema) if result.num_rows else table.slice(0, 0)


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


def post_filter(batch: pa.RecordBatch, predicate: Predicate) -> pa.RecordBatch:
    """Filter a batch conformed to the namespace read schema in memory: residuals Lance
    cannot evaluate in the leaf (over renamed or cast columns), and conditions on partition
    field names (each field's expression is computed over its source column with
    DataFusion, as the transform's reference path does).

    >>> from lance_partitioned.expressions import GreaterThan
    >>> batch = pa.record_batch({"n": [1, 2, 3]})
    >>> post_filter(batch, GreaterThan("n", 1)).column("n").to_pylist()
    [2, 3]
    """
    conditions = field_conditions(predicate)
    if conditions:
        batch, predicate = _field_columns(batch, predicate, conditions)
    expressions = field_expressions(predicate)
    if expressions:
        batch = _named_fields(batch, expressions)
    if not _unknowns(predicate):
        return filter_arrow(batch, predicate)
    table = sql_filter(pa.Table.from_batches([batch]), to_sql(predicate))
    return table.combine_chunks().to_batches()[0] if table.num_rows else batch.slice(0, 0)


def _field_columns(
    batch: pa.RecordBatch, predicate: Predicate, conditions: list[FieldCondition]
) -> tuple[pa.RecordBatch, Predicate]:
    """``batch`` with one computed column per field condition, and ``predicate`` with each
    condition replaced by its leaf on that column."""
    columns = list(batch.columns)
    names = list(batch.schema.names)
    computed: dict[tuple[str, str, pa.DataType], str] = {}
    swap: dict[int, Predicate] = {}
    for node in conditions:
        key = (node.columns[0], node.expression, node.result_type)
        if key not in computed:
            computed[key] = name = f"__lp_field_{len(computed)}__"
            source = batch.column(names.index(node.columns[0]))
            columns.append(evaluate(node.expression, source, node.result_type))
            names.append(name)
        swap[id(node)] = dataclasses.replace(node.leaf, term=computed[key])  # type: ignore[type-var]

    swapped = map_leaves(predicate, lambda p: swap.get(id(p), p))
    return pa.RecordBatch.from_arrays(columns, names=names), swapped


def _named_fields(batch: pa.RecordBatch, expressions: list[FieldExpression]) -> pa.RecordBatch:
    """``batch`` with one column per partition field the expressions read, named as the
    field and computed over its source column (field names are never read-schema columns)."""
    columns = list(batch.columns)
    names = list(batch.schema.names)
    for node in expressions:
        for term in node.fields:
            if term.name not in names:
                source = batch.column(names.index(term.source))
                columns.append(evaluate(term.expression, source, term.result_type))
                names.append(term.name)
    return pa.RecordBatch.from_arrays(columns, names=names)


def _fragments(dataset: lance.LanceDataset, task: ScanTask) -> list[Any] | None:
    if task.fragment_ids is None:
        return None
    fragments = []
    for fragment_id in task.fragment_ids:
        fragment = dataset.get_fragment(fragment_id)
        if fragment is None:
            raise errors.InvalidInputError(
                f"leaf {task.object_id!r} has no fragment {fragment_id} at version "
                f"{task.read_version}"
            )
        fragments.append(fragment)
    return fragments


# ---------------------------------------------------------------------------------- drivers


def _threads(threads: int | None, tasks: int) -> int:
    return max(1, min(threads or DEFAULT_THREADS, tasks))


def to_table(
    tasks: Sequence[ScanTask],
    schema: NamespaceSchema,
    columns: Sequence[str] | None = None,
    limit: int | None = None,
    threads: int | None = None,
) -> pa.Table:
    """Read every task into one table (leaves in parallel; ``limit`` stops early)."""
    out_schema = pa.schema(output_fields(schema, columns))
    if limit is not None and limit < 0:
        raise errors.InvalidInputError(f"limit must be >= 0, got {limit}")
    if limit == 0 or not tasks:
        return out_schema.empty_table()

    def read(task: ScanTask) -> list[pa.RecordBatch]:
        return list(read_task(task, schema, columns, limit=limit))

    batches: list[pa.RecordBatch] = []
    width = _threads(threads, len(tasks))
    with leaf_pool(width) as pool:
        step = width if limit is not None else len(tasks)
        for start in range(0, len(tasks), step):
            for part in pool.map(read, tasks[start : start + step]):
                batches.extend(part)
            if limit is not None and sum(b.num_rows for b in batches) >= limit:
                break
    table = pa.Table.from_batches(batches, schema=out_schema)
    return table if limit is None else table.slice(0, limit)


def to_batches(
    tasks: Sequence[ScanTask],
    schema: NamespaceSchema,
    columns: Sequence[str] | None = None,
    batch_size: int | None = None,
    threads: int | None = None,
) -> pa.RecordBatchReader:
    """Stream every task's batches with bounded memory (a few batches per reading thread)."""
    out_schema = pa.schema(output_fields(schema, columns))
    return pa.RecordBatchReader.from_batches(
        out_schema, _stream(tasks, schema, columns, batch_size, _threads(threads, len(tasks)))
    )


_DONE = object()


def _stream(
    tasks: Sequence[ScanTask],
    schema: NamespaceSchema,
    columns: Sequence[str] | None,
    batch_size: int | None,
    threads: int,
) -> Iterator[pa.RecordBatch]:
    if not tasks:
        return
    results: queue.Queue[Any] = queue.Queue(maxsize=_QUEUE_BATCHES)
    stop = threading.Event()
    pending = iter(tasks)
    lock = threading.Lock()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                results.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def worker() -> None:
        try:
            while not stop.is_set():
                with lock:
                    task = next(pending, None)
                if task is None:
                    break
                for batch in read_task(task, schema, columns, batch_size):
                    if not put(batch):
                        return
        except BaseException as exc:  # handed to the consumer
            put(exc)
        finally:
            put(_DONE)

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for thread in workers:
        thread.start()
    try:
        done = 0
        while done < len(workers):
            item = results.get()
            if item is _DONE:
                done += 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
    finally:
        stop.set()
        for thread in workers:
            thread.join()


def count_task(task: ScanTask, schema: NamespaceSchema) -> int:
    """Rows of one task that match its residual, reading as little as possible."""
    dataset = task.open()
    fragments = _fragments(dataset, task)
    if isinstance(task.residual, AlwaysTrue):
        if fragments is not None:
            return sum((int(f.count_rows()) for f in fragments), 0)
        return task.row_count if task.row_count is not None else int(dataset.count_rows())
    filtered = residual_fields(task.residual, schema.read_schema())
    sources = [leaf_field(dataset.schema, f) for f in filtered]
    pushdown = leaf_filter(dataset, task.residual, filtered, sources)
    if pushdown is not None:
        if fragments is None:  # Lance's own count: no row ids (half the time with an index)
            return int(dataset.count_rows(pushdown))
        scanner = dataset.scanner(
            columns=[], with_row_id=True, filter=pushdown, fragments=fragments
        )
        return int(scanner.count_rows())
    names = [f.name for f in filtered]
    return sum(b.num_rows for b in read_task(task, schema, columns=names))


def count_rows(
    tasks: Sequence[ScanTask], schema: NamespaceSchema, threads: int | None = None
) -> int:
    """Rows matching the planned filter: recorded leaf counts where partition values decide
    the filter, a Lance count with the residual pushed down, or a read otherwise."""
    if not tasks:
        return 0
    with leaf_pool(_threads(threads, len(tasks))) as pool:
        return sum(pool.map(lambda task: count_task(task, schema), tasks))


def partition_values(task: ScanTask) -> Mapping[str, Any]:
    """The task's partition values as a dict."""
    return dict(task.partition_values)
