"""Where a Spark merge's source rows go: the target leaves whose rows their keys can match.

A partition spec's leaves are reached one of three ways, chosen on the driver per spec
version (:func:`route_kinds`):

``"values"``
    The merge keys determine some of the spec's partition fields (``on=["id", "day"]`` into
    a ``day``-partitioned spec): on executors (``mapInArrow``), each row's partition values
    are computed with the namespace's transforms and looked up in the pinned ``__manifest``
    snapshot (:func:`lance_partitioned.dml.merge_targets.source_groups`, as the Python merge does).
``"join"``
    The keys determine no partition field (``on="id"`` into ``day`` partitions): executors
    read each leaf's key columns (one task per few leaves, each leaf's distinct keys) and
    Spark joins the source with those (key, leaf) pairs. A source row then goes only to the
    leaves holding its key (a row matching nothing goes to none), once each. Only the
    leaf keys that pass a Bloom filter of the source's keys (built on executors,
    :mod:`.merge_bloom`) are sent to the join.
``"every"``
    Neither is possible (a key whose source and namespace types cannot be compared exactly
    in Spark): every source row goes to every leaf of the spec.

Every route is a superset of the rows that match in the leaf (the leaf's task searches its
slice exactly, :meth:`~lance_partitioned.dml.merge_leaf.Clauses.search`). The leaves are
named in the routed rows by their index in the job's sorted leaf ids (``_LEAF``, an int).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lance_partitioned.dml.merge_targets import source_groups as _source_groups
from lance_partitioned.dml.plan import matched_rows
from lance_partitioned.manifest import ManifestSnapshot
from lance_partitioned.scan import ScanTask
from lance_partitioned.spark.merge_bloom import KeyFilter, source_filter
from lance_partitioned.spark.merge_local import locally_matched
from lance_partitioned.spark.merge_replan import _LEAF
from lance_partitioned.spark.workers import freeze_worker_heap
from lance_partitioned.spec.multicolumn import sources_of

if TYPE_CHECKING:
    from pyspark.accumulators import Accumulator
    from pyspark.sql import DataFrame, SparkSession

    from lance_partitioned.spark.merge import _MergeJob

__all__ = ["RouteMetrics", "route_kinds", "routed"]

_TARGET = "__lp_t_"  # a leaf key column, in the join


def _comparable(namespace: pa.DataType, source: pa.DataType) -> bool:
    """Whether a key compared in the source's type matches exactly the rows that match in
    the namespace's type (the source's values converted to it and back are unchanged)."""
    if namespace == source:
        return True
    if pa.types.is_integer(namespace) and pa.types.is_integer(source):
        return True
    strings = (pa.types.is_string, pa.types.is_large_string)
    if any(f(namespace) for f in strings) and any(f(source) for f in strings):
        return True
    binaries = (pa.types.is_binary, pa.types.is_large_binary)
    return any(f(namespace) for f in binaries) and any(f(source) for f in binaries)


@dataclass
class RouteMetrics:
    """What a join route sent: ``pairs`` counts the (key, leaf) pairs the leaves' key reads
    sent to the join (a Spark accumulator, read once the job ran); ``filter_bytes``, the
    size of the Bloom filter of the source keys the driver received and sent the tasks."""

    pairs: Accumulator[int]
    filter_bytes: int = 0


def route_kinds(
    snapshot: ManifestSnapshot, on: Sequence[str], source_types: Mapping[str, pa.DataType]
) -> dict[int, str]:
    """Each spec version's route: ``"values"``, ``"join"`` or ``"every"`` (see the module)."""
    metadata = snapshot.metadata
    schema = metadata.schema
    read = schema.read_schema()
    comparable = all(_comparable(read.field(k).type, source_types[k]) for k in on)
    kinds = {}
    for spec in metadata.specs:
        determined = any(
            all(not schema.is_deprecated(s) and schema.name_of(s) in on for s in sources_of(f))
            for f in spec.fields
        )
        kinds[spec.version] = "values" if determined else "join" if comparable else "every"
    return kinds


def routed(
    spark: SparkSession,
    job: _MergeJob,
    keyed: DataFrame,
    reads: Mapping[str, Sequence[ScanTask]] | None = None,
    metrics: RouteMetrics | None = None,
    *,
    outer: bool = False,
    local: bool = False,
    rows: Callable[[], int] | None = None,
) -> DataFrame:
    """``keyed`` with one row per (source row, target leaf its keys can match), the leaf's
    index in ``_LEAF``. ``reads``: the leaves routed by a join, each with the versions whose
    keys to read (None: every such leaf at the pinned snapshot); ``metrics``: what the
    join route sent (see :class:`RouteMetrics`). ``outer`` (only when every spec version
    is routed by a join): the join is a left outer one, so a source row that no leaf key
    joins comes out once, with a NULL ``_LEAF`` (it matches no target row: the merge
    inserts it without a second pass over the source). ``local``: the join-routed leaves
    are matched in the source's tasks instead of by a Spark join
    (:func:`.merge_local.locally_matched`). ``rows``: ``keyed``'s row count when known
    (the Bloom filter's size; None: counted)."""
    from pyspark.sql.types import IntegerType, StructField, StructType

    schema = StructType([*keyed.schema.fields, StructField(_LEAF, IntegerType())])
    parts = []
    if any(kind != "join" for kind in job.routes.values()):
        parts.append(keyed.mapInArrow(lambda it: _route(job, it), schema))
    joined = [o for o in job.leaves if job.routes[job.tasks[o][0].spec_version] == "join"]
    if reads is None:
        reads = {o: [job.tasks[o][0]] for o in joined}
    wanted = sorted((o, list(reads[o])) for o in joined if o in reads)
    if wanted and local:
        parts.append(locally_matched(spark, job, keyed, wanted, outer=outer))
    elif wanted:
        parts.append(_joined(spark, job, keyed, wanted, metrics, outer=outer, rows=rows))
    if not parts:
        return spark.createDataFrame([], schema)
    out = parts[0]
    for part in parts[1:]:
        out = out.unionByName(part)
    return out


def _joined(
    spark: SparkSession,
    job: _MergeJob,
    keyed: DataFrame,
    reads: list[tuple[str, list[ScanTask]]],
    metrics: RouteMetrics | None,
    *,
    outer: bool = False,
    rows: Callable[[], int] | None = None,
) -> DataFrame:
    """The source rows joined with the distinct keys of the ``reads`` leaves that may be
    source keys (:func:`.merge_bloom.source_filter`); ``outer``: a left outer join (the
    rows no key joins with a NULL ``_LEAF``)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import IntegerType, StructField, StructType

    index = {o: i for i, o in enumerate(job.leaves)}
    items = [(index[o], tasks) for o, tasks in reads]
    names = [f"{_TARGET}{i}" for i in range(len(job.on))]
    fields = [StructField(n, keyed.schema[k].dataType) for n, k in zip(names, job.on, strict=True)]
    schema = StructType([*fields, StructField(_LEAF, IntegerType(), False)])
    types = [to_arrow_type(f.dataType) for f in fields]
    tasks = min(len(items), 8 * spark.sparkContext.defaultParallelism)
    # only the leaf keys that may be in the source cross into Spark
    bloom = source_filter(keyed, job.on, rows)
    pairs = None
    if metrics is not None:
        metrics.filter_bytes += 0 if bloom is None else len(bloom.bits)
        pairs = metrics.pairs
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "PySpark does not yet fully", FutureWarning)
        keys = spark.range(len(items), numPartitions=tasks).mapInArrow(
            lambda it: _leaf_keys(job, items, types, bloom, pairs, it), schema
        )
    safe = job.safe
    condition = [
        keyed[k].eqNullSafe(keys[n]) if k in safe else keyed[k] == keys[n]
        for k, n in zip(job.on, names, strict=True)
    ]
    # a sort-merge join: Spark sizes the keys (a mapInArrow over a range of leaf indexes)
    # as the range's few rows and would broadcast them, collecting every key of the
    # namespace into the driver's JVM to build the broadcast (10M keys: a minute, GiBs)
    joined = keyed.join(keys.hint("merge"), on=condition, how="left" if outer else "inner")
    return joined.select(*[keyed[c] for c in keyed.columns], F.col(_LEAF))


def _leaf_keys(
    job: _MergeJob,
    items: list[tuple[int, list[ScanTask]]],
    types: list[pa.DataType],
    bloom: KeyFilter | None,
    pairs: Accumulator[int] | None,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """Executor: each leaf's distinct keys (at each version asked), in the source's types,
    those that may be source keys (``bloom``; None: every key)."""
    freeze_worker_heap()
    schema = job.leaf.snapshot().metadata.schema
    on = list(job.on)
    names = [f"{_TARGET}{i}" for i in range(len(on))]
    for batch in batches:
        for i in batch.column(0).to_pylist():
            leaf, tasks = items[i]
            tables = [matched_rows(t.open(), t, schema, on).select(on) for t in tasks]
            keys = pa.concat_tables(tables)
            for k in on:
                if k not in job.safe:
                    keys = keys.filter(keys.column(k).is_valid())
            keys = pa.Table.from_arrays(
                [keys.column(k).cast(t, safe=False) for k, t in zip(on, types, strict=True)],
                names=names,
            )
            if bloom is not None:
                keys = keys.filter(pa.array(bloom.may_contain(keys.columns)))
            keys = keys.group_by(names, use_threads=False).aggregate([]).combine_chunks()
            if pairs is not None:
                pairs.add(keys.num_rows)
            out = keys.append_column(_LEAF, pa.array(np.full(keys.num_rows, leaf, np.int32)))
            yield from out.to_batches(max_chunksize=1 << 16)


def _route(job: _MergeJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor: each source row with every leaf of a ``"values"`` or ``"every"`` spec its
    keys can match."""
    freeze_worker_heap()
    manifest = job.leaf.manifest()
    snapshot = job.leaf.snapshot()
    metadata = snapshot.metadata
    builder = job.builder(manifest)
    index = {o: i for i, o in enumerate(job.leaves)}
    by_spec: dict[int, list[int]] = {}
    for object_id, (task, _) in job.tasks.items():
        by_spec.setdefault(task.spec_version, []).append(index[object_id])
    for batch in batches:
        if not batch.num_rows:
            continue
        table = pa.Table.from_batches([batch])
        source = builder._source(metadata.schema, table.select(list(job.columns)))
        routes: list[tuple[int, np.ndarray]] = []
        for spec in metadata.specs:
            kind = job.routes[spec.version]
            if kind == "join":
                continue
            if kind == "every":
                everyone = np.arange(table.num_rows)
                routes += [(leaf, everyone) for leaf in by_spec.get(spec.version, [])]
                continue
            groups = _source_groups(snapshot, spec, metadata.schema, source, job.on, job.safe)
            routes += [(index[o], rows) for o, rows in (groups or {}).items()]
        if not routes:
            continue
        every = np.concatenate([rows for _, rows in routes])
        leaves = np.concatenate([np.full(len(rows), leaf, np.int32) for leaf, rows in routes])
        out = table.take(pa.array(every)).append_column(_LEAF, pa.array(leaves))
        yield from out.combine_chunks().to_batches()
