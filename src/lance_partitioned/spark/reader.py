"""Reads: filters pushed into the planner, leaves bin-packed into Spark partitions.

Planning happens on the driver, on one ``__manifest`` version (the one
:meth:`~lance_partitioned.spark.source.LancePartitionedDataSource.schema` pinned):
:meth:`FilteringReader.pushFilters` converts Spark's filters (:mod:`.filters`) and keeps the
rest for Spark; :meth:`LancePartitionedReader.partitions` prunes leaves with
:meth:`~lance_partitioned.namespace.PartitionedNamespace.plan_scan`, the Python API's
planner, and packs the surviving :class:`~lance_partitioned.scan.ScanTask`\\ s into
:class:`LeafSplit`\\ s of about ``max_partition_bytes`` (as Spark packs files: the split size
shrinks so that at least ``min_partitions`` splits exist, each leaf costs 4 MiB more to
open, big leaves are cut at fragment boundaries, small ones share a split). Executors run
:meth:`LancePartitionedReader.read`: each leaf at its ``read_version`` with the residual
filter pushed into Lance, batches converted to the Arrow layout Spark expects.

Sizes come from the row counts the ``__manifest`` records and the bytes per row of a few
sampled leaves, so planning opens only big leaves (to cut them) and leaves without a
recorded row count.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from lance_partitioned import errors
from lance_partitioned.columnpaths import resolve_columns
from lance_partitioned.expressions.parse import parse_sql
from lance_partitioned.expressions.tree import AlwaysTrue, Predicate, and_
from lance_partitioned.namespace import PartitionedNamespace
from lance_partitioned.scan import ScanTask, bound_filter, to_batches
from lance_partitioned.spark.filters import pushable_columns, to_predicate
from lance_partitioned.spark.nested_filters import nested_predicate, pushable_paths
from lance_partitioned.spark.options import SourceOptions
from lance_partitioned.spark.types import spark_arrow_schema, spark_type_for, to_spark_batch
from lance_partitioned.spark.workers import freeze_worker_heap
from lance_partitioned.spec.schema import NamespaceSchema

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "OPEN_COST_BYTES",
    "FilteringReader",
    "LancePartitionedReader",
    "LeafSplit",
    "ReadJob",
    "coalesce",
    "make_reader",
    "pack_splits",
]

#: What opening one leaf is worth in bytes when packing (Spark's ``openCostInBytes``).
OPEN_COST_BYTES = 4 << 20
_SAMPLED_LEAVES = 3
_PLANNING_THREADS = 8
_READ_THREADS = 4
#: Rows per Arrow batch handed to Spark when the ``batch_size`` option is not given.
DEFAULT_BATCH_ROWS = 65_536


@dataclass(frozen=True)
class ReadJob:
    """What the driver planned and every task needs (pickled into the reader).

    Attributes
    ----------
    uri : str
        The namespace root.
    storage_options : tuple of (key, value)
        Passed to every Lance call.
    manifest_version : int
        The one ``__manifest`` version the whole read uses.
    namespace_schema : NamespaceSchema
        The namespace schema at that version.
    columns : tuple of str
        The columns of the DataFrame.
    filter : str or None
        The ``filter`` option: a SQL filter that is part of the loaded relation, applied to
        every read planned from this job (pruning leaves, then inside them).
    output_schema : pyarrow.Schema
        The Arrow layout PySpark expects from :meth:`LancePartitionedReader.read`.
    batch_size, max_partition_bytes, min_partitions : int
        From the options.
    """

    uri: str
    storage_options: tuple[tuple[str, str], ...]
    manifest_version: int
    namespace_schema: NamespaceSchema
    columns: tuple[str, ...]
    output_schema: pa.Schema
    filter: str | None
    batch_size: int | None
    max_partition_bytes: int
    min_partitions: int


@dataclass(frozen=True)
class LeafSplit(InputPartition):
    """One Spark partition: leaves (or fragment ranges of one leaf) read by one task."""

    tasks: tuple[ScanTask, ...]
    size_bytes: int = 0


def make_reader(
    options: SourceOptions,
    schema: StructType,
    version: int | dt.datetime | None,
    *,
    filtering: bool,
) -> LancePartitionedReader:
    """The reader of ``schema``'s columns at ``__manifest`` ``version`` (None: latest).

    A user-given schema (``spark.read.schema(...)``) selects a subset of the columns.
    """
    ns = PartitionedNamespace.open(
        options.uri, storage_options=dict(options.storage_options), version=version
    )
    read_schema = ns.schema
    columns = tuple(schema.fieldNames())
    try:
        resolve_columns(read_schema, columns)  # top-level columns or struct fields by path
    except errors.InvalidInputError as exc:
        raise errors.InvalidInputError(
            f"the namespace at {options.uri!r} cannot read these columns: {exc}"
        ) from exc
    job = ReadJob(
        uri=options.uri,
        storage_options=options.storage_options,
        manifest_version=ns.version,
        namespace_schema=ns.namespace_schema,
        columns=columns,
        output_schema=spark_arrow_schema(schema),
        filter=options.filter,
        batch_size=options.batch_size,
        max_partition_bytes=options.max_partition_bytes,
        min_partitions=options.default_min_partitions(),
    )
    reader_class = FilteringReader if filtering else LancePartitionedReader
    reader = reader_class(job, ns)  # partitions() plans on the same open namespace
    # filters may only read columns Spark sees with the namespace's own type and order
    spark_types = {f.name: f.dataType for f in schema.fields}
    native = pushable_columns(read_schema)
    reader.filter_columns = frozenset(
        name
        for name in columns
        if name in native
        and spark_types[name] == spark_type_for(read_schema.field(name).type, name)
    )
    reader.filter_paths = pushable_paths(
        read_schema.field(name)
        for name in columns
        if name in read_schema.names
        and pa.types.is_struct(read_schema.field(name).type)
        and spark_types[name] == spark_type_for(read_schema.field(name).type, name)
    )
    return reader


class LancePartitionedReader(DataSourceReader):
    """Plans leaves into splits (driver) and reads them (executors); no filter pushdown.

    Spark uses this class when ``spark.sql.python.filterPushdown.enabled`` is off: every
    leaf is read and Spark applies the query's filters.
    """

    def __init__(self, job: ReadJob, namespace: PartitionedNamespace | None = None) -> None:
        self.job = job
        self.predicate: Predicate = AlwaysTrue()
        self.filter_columns: frozenset[str] = frozenset()
        self.filter_paths: frozenset[str] = frozenset()  # struct fields, quoted paths
        self._opened = namespace  # the planning worker's, never pickled

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_opened"] = None  # executors need the job only
        return state

    def _namespace(self) -> PartitionedNamespace:
        if self._opened is None:
            self._opened = PartitionedNamespace.open(
                self.job.uri,
                storage_options=dict(self.job.storage_options),
                version=self.job.manifest_version,
            )
        return self._opened

    def plan(self) -> Sequence[ScanTask]:
        """The leaves the read must scan, pruned with the ``filter`` option and the pushed
        predicate (both also filter rows inside the leaves)."""
        ns = self._namespace()
        predicate = self.predicate
        if self.job.filter is not None:
            predicate = and_(parse_sql(self.job.filter, ns.schema), predicate)
        return ns.plan_scan(predicate, list(self.job.columns))

    def partitions(self) -> list[InputPartition]:
        """The surviving leaves packed into splits of about ``max_partition_bytes``."""
        splits = pack_splits(
            self.plan(),
            max_bytes=self.job.max_partition_bytes,
            min_partitions=self.job.min_partitions,
        )
        return list(splits) or [LeafSplit(())]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Stream one split's rows in Spark's Arrow layout (runs on an executor).

        The leaves of the split are read by up to 4 threads; their batches (small ones from
        small leaves included) are merged into batches of ``batch_size`` rows, since every
        batch costs Spark a round trip and a columnar-to-row setup.
        """
        freeze_worker_heap()
        tasks = partition.tasks if isinstance(partition, LeafSplit) else ()
        if not tasks:
            return
        rows = self.job.batch_size or DEFAULT_BATCH_ROWS
        stream = to_batches(
            tasks,
            self.job.namespace_schema,
            list(self.job.columns),
            rows,
            threads=min(_READ_THREADS, len(tasks)),
        )
        for batch in coalesce(stream, rows):
            yield to_spark_batch(batch, self.job.output_schema)


class FilteringReader(LancePartitionedReader):
    """A reader that takes Spark's filters for pruning and for the residual inside leaves."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Take the filters that convert and bind; return the others to Spark."""
        read_schema = self.job.namespace_schema.read_schema()
        accepted: list[Predicate] = []
        rest: list[Filter] = []
        for spark_filter in filters:
            predicate = to_predicate(spark_filter, self.filter_columns) or nested_predicate(
                spark_filter, self.filter_paths
            )
            if predicate is not None:
                try:
                    bound_filter(predicate, read_schema)
                except errors.LancePartitionedError:
                    pass
                else:
                    accepted.append(predicate)
                    continue
            rest.append(spark_filter)
        self.predicate = and_(*accepted)
        return rest


def coalesce(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """``batches`` merged into batches of ``rows`` rows (the last one may be smaller).

    A batch that already has ``rows`` rows or more passes through unchanged.

    >>> small = [pa.record_batch({"n": [i, i]}) for i in range(5)]
    >>> [b.num_rows for b in coalesce(small, 4)]
    [4, 4, 2]
    >>> [b.column(0).to_pylist() for b in coalesce(small, 4)][0]
    [0, 0, 1, 1]
    """
    held: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if not held and batch.num_rows >= rows:
            yield batch
            continue
        held.append(batch)
        count += batch.num_rows
        if count >= rows:
            merged = pa.Table.from_batches(held).combine_chunks()
            yield from merged.slice(0, count - count % rows).to_batches(max_chunksize=rows)
            rest = merged.slice(count - count % rows)
            held = rest.to_batches() if rest.num_rows else []
            count = rest.num_rows
    if count:
        yield pa.Table.from_batches(held).combine_chunks().to_batches()[0]


# ---------------------------------------------------------------------------------- sizing


@dataclass(frozen=True)
class _Fragment:
    fragment_id: int
    rows: int
    size: int


def _fragments(task: ScanTask) -> list[_Fragment]:
    """The leaf's fragments at its read version, with rows and bytes on disk."""
    out = []
    for fragment in task.open().get_fragments():
        metadata = fragment.metadata
        size = sum(int(f.file_size_bytes or 0) for f in metadata.files)
        out.append(_Fragment(int(fragment.fragment_id), int(metadata.physical_rows or 0), size))
    return out


def _map(function: Any, items: Sequence[Any]) -> list[Any]:
    if len(items) <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(_PLANNING_THREADS, len(items))) as pool:
        return list(pool.map(function, items))


def _estimate(tasks: Sequence[ScanTask]) -> tuple[list[int], dict[int, list[_Fragment]]]:
    """Estimated bytes of each task, and the fragments of the leaves that were opened."""
    opened: dict[int, list[_Fragment]] = {}
    unknown = [i for i, task in enumerate(tasks) if task.row_count is None]
    counted = sorted(
        (i for i, task in enumerate(tasks) if task.row_count),
        key=lambda i: -(tasks[i].row_count or 0),
    )
    sample = unknown or counted[:_SAMPLED_LEAVES]
    for i, fragments in zip(sample, _map(lambda i: _fragments(tasks[i]), sample), strict=True):
        opened[i] = fragments
    rows = sum(f.rows for fragments in opened.values() for f in fragments)
    size = sum(f.size for fragments in opened.values() for f in fragments)
    bytes_per_row = size / rows if rows else 1.0
    estimates = []
    for i, task in enumerate(tasks):
        if i in opened:
            estimates.append(sum(f.size for f in opened[i]))
        else:
            estimates.append(int((task.row_count or 0) * bytes_per_row))
    return estimates, opened


def _cut(task: ScanTask, fragments: list[_Fragment], limit: int) -> list[tuple[ScanTask, int]]:
    """A big leaf cut into runs of consecutive fragments of at most ``limit`` bytes each."""
    pieces: list[tuple[ScanTask, int]] = []
    run: list[_Fragment] = []
    for fragment in fragments:
        if run and sum(f.size for f in run) + fragment.size > limit:
            pieces.append(_piece(task, run))
            run = []
        run.append(fragment)
    if run:
        pieces.append(_piece(task, run))
    return pieces


def _piece(task: ScanTask, run: list[_Fragment]) -> tuple[ScanTask, int]:
    piece = dataclasses.replace(
        task,
        fragment_ids=tuple(f.fragment_id for f in run),
        row_count=sum(f.rows for f in run),
    )
    return piece, sum(f.size for f in run)


def pack_splits(
    tasks: Sequence[ScanTask], *, max_bytes: int, min_partitions: int = 1
) -> list[LeafSplit]:
    """Pack scan tasks into splits as Spark packs files (see the module docstring).

    The split size is ``min(max_bytes, max(4 MiB, total / min_partitions))``, where ``total``
    counts every leaf's bytes plus 4 MiB to open it; leaves bigger than that are cut into
    runs of fragments; pieces are packed largest first, a split closing when the next piece
    does not fit.
    """
    if not tasks:
        return []
    estimates, opened = _estimate(tasks)
    total = sum(estimates) + OPEN_COST_BYTES * len(tasks)
    split_size = min(max_bytes, max(OPEN_COST_BYTES, total // max(1, min_partitions)))
    big = [i for i, size in enumerate(estimates) if size > split_size and i not in opened]
    for i, fragments in zip(big, _map(lambda i: _fragments(tasks[i]), big), strict=True):
        opened[i] = fragments
    pieces: list[tuple[ScanTask, int]] = []
    for i, task in enumerate(tasks):
        fragments = opened.get(i)
        if estimates[i] > split_size and fragments is not None and len(fragments) > 1:
            pieces.extend(_cut(task, fragments, split_size))
        else:
            pieces.append((task, estimates[i]))
    pieces.sort(key=lambda piece: -piece[1])
    splits: list[LeafSplit] = []
    current: list[ScanTask] = []
    current_size = 0
    for task, size in pieces:
        if current and current_size + size > split_size:
            splits.append(LeafSplit(tuple(current), current_size))
            current, current_size = [], 0
        current.append(task)
        current_size += size + OPEN_COST_BYTES
    if current:
        splits.append(LeafSplit(tuple(current), current_size))
    return splits
