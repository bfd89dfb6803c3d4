"""A join route without Spark's join, for a source that is a large part of the target.

With ``on="id"`` into ``day`` partitions the keys name no partition, and a Spark merge finds
the leaves each source row can match by a Spark join of the source with every leaf's
(key, leaf) pairs (:mod:`.merge_route`, a Bloom filter of the source keys thinning the
pairs). When the source holds many of the target's keys the filter passes most pairs and
the join sorts and shuffles millions of them. Here instead:

1. the source's partitions are taken as they are (merged into a few per core without a
   shuffle when there are more, spread over the cores when fewer);
2. each task reads the key columns of every leaf routed by a join (Lance, keys only, a few
   million keys at a time) and joins them with its own source rows in DataFusion (the
   source's types, ``=`` or ``IS NOT DISTINCT FROM`` for the NULL-safe keys, as the Spark
   join compares them): each of its rows comes out once per leaf holding its key, and
   ``outer``, once with a NULL leaf when no leaf holds it.

The rows then go to the per-leaf merge as a join route's do (a superset of the matches:
the leaf's task searches its slice exactly). Every task reads every key once, so this is
chosen (:func:`local_match`) only when the source's rows are at least
:data:`SOURCE_SHARE` of those leaves' rows and those leaves hold at most
:data:`MAX_LOCAL_KEYS` rows (each task's read of every key takes as long however many
executors there are, where the join's work spreads over them), or when the Spark conf
:data:`LOCAL_MATCH_CONF` says ``true`` (``false``: never; ``auto``, the default: by that
rule). The merge then groups the rows by leaf as after the join, so source rows with equal
keys meet in the task of each leaf they match however the source was partitioned
(duplicate keys are found there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.dml.plan import matched_rows
from lance_partitioned.scan import ScanTask
from lance_partitioned.spark.merge_replan import _LEAF
from lance_partitioned.spark.workers import freeze_worker_heap

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lance_partitioned.spark.merge import _MergeJob

__all__ = ["LOCAL_MATCH_CONF", "MAX_LOCAL_KEYS", "SOURCE_SHARE", "local_match", "locally_matched"]

LOCAL_MATCH_CONF = "spark.lance_partitioned.merge.localMatch"
SOURCE_SHARE = 0.1  # source rows / the join-routed leaves' rows from which it is chosen
#: The join-routed leaves' rows above which ``auto`` keeps the join: every task reads every
#: key, so the local match's time does not shrink with more executors.
MAX_LOCAL_KEYS = 100_000_000
_KEYS_AT_ONCE = 4_000_000  # leaf keys joined at a time in a task (bounded memory)
_POSITION = "__lp_pos"


def local_match(spark: SparkSession, job: _MergeJob, rows: Callable[[], int]) -> bool:
    """Whether the leaves routed by a join are matched in the source's tasks (see the
    module): the conf, else the source's row count (``rows()``, counted when needed)
    against the leaves' rows, when those are at most :data:`MAX_LOCAL_KEYS`."""
    joined = [o for o in job.leaves if job.routes[job.tasks[o][0].spec_version] == "join"]
    setting = spark.conf.get(LOCAL_MATCH_CONF, "auto") or "auto"
    if setting.lower() not in ("auto", "true", "false"):
        raise errors.InvalidInputError(
            f"{LOCAL_MATCH_CONF} is {setting!r}: use auto, true or false"
        )
    if not joined or setting.lower() == "false":
        return False
    if setting.lower() == "true":
        return True
    counts = [job.tasks[o][0].row_count for o in joined]
    if any(c is None for c in counts):
        return False
    target = sum(c for c in counts if c is not None)
    if target > MAX_LOCAL_KEYS:
        return False
    return rows() >= SOURCE_SHARE * target


def locally_matched(
    spark: SparkSession,
    job: _MergeJob,
    keyed: DataFrame,
    reads: list[tuple[str, list[ScanTask]]],
    *,
    outer: bool = False,
) -> DataFrame:
    """``keyed``'s rows, each with the index (``_LEAF``) of every leaf of ``reads`` holding
    its keys (``outer``: a row no leaf holds once, with a NULL ``_LEAF``)."""
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import IntegerType, StructField, StructType

    index = {o: i for i, o in enumerate(job.leaves)}
    items = [(index[o], tasks) for o, tasks in reads]
    types = [to_arrow_type(keyed.schema[k].dataType) for k in job.on]
    schema = StructType([*keyed.schema.fields, StructField(_LEAF, IntegerType())])
    cores = max(1, spark.sparkContext.defaultParallelism)
    # every task reads every key: a few tasks per core (no shuffle to merge partitions)
    parts = keyed.rdd.getNumPartitions()
    frame = keyed
    if parts > 2 * cores:
        frame = keyed.coalesce(2 * cores)
    elif parts < cores:
        frame = keyed.repartition(cores)
    return frame.mapInArrow(lambda it: _match(job, items, types, outer, it), schema)


def _match(
    job: _MergeJob,
    items: list[tuple[int, list[ScanTask]]],
    types: list[pa.DataType],
    outer: bool,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """Executor: this task's source rows with the leaves holding their keys."""
    freeze_worker_heap()
    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    if not tables:
        return
    source = pa.concat_tables(tables).combine_chunks()
    on = list(job.on)
    keys = source.select(on).append_column(_POSITION, pa.array(np.arange(source.num_rows)))
    hit = np.zeros(source.num_rows, dtype=bool)
    for positions, leaves in _pairs(job, items, types, keys):
        hit[positions] = True
        out = source.take(pa.array(positions)).append_column(_LEAF, pa.array(leaves))
        yield from out.combine_chunks().to_batches()
    if outer and not hit.all():
        missed = np.flatnonzero(~hit)
        out = source.take(pa.array(missed)).append_column(_LEAF, pa.nulls(len(missed), pa.int32()))
        yield from out.combine_chunks().to_batches()


def _pairs(
    job: _MergeJob,
    items: list[tuple[int, list[ScanTask]]],
    types: list[pa.DataType],
    keys: pa.Table,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The (source position, leaf index) pairs whose keys are equal, distinct, a group of
    leaves (about :data:`_KEYS_AT_ONCE` keys) at a time."""
    import datafusion

    from lance_partitioned.dml.merge_leaf import quoted as _quoted

    schema = job.leaf.snapshot().metadata.schema
    on = list(job.on)
    condition = " AND ".join(
        f"(t.{_quoted(k)} {'IS NOT DISTINCT FROM' if k in job.safe else '='} s.{_quoted(k)})"
        for k in on
    )
    position, leaf_ = _quoted(_POSITION), _quoted(_LEAF)
    query = f"SELECT DISTINCT s.{position}, t.{leaf_} FROM t JOIN s ON {condition}"
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("s", [keys.to_batches()])
    group: list[pa.Table] = []
    size = 0
    for at, (leaf, tasks) in enumerate(items):
        for task in tasks:
            read = matched_rows(task.open(), task, schema, on).select(on)
            read = pa.Table.from_arrays(
                [read.column(k).cast(t, safe=False) for k, t in zip(on, types, strict=True)],
                names=on,
            )
            group.append(
                read.append_column(_LEAF, pa.array(np.full(read.num_rows, leaf, np.int32)))
            )
            size += read.num_rows
        if size < _KEYS_AT_ONCE and at < len(items) - 1:
            continue
        target = pa.concat_tables(group).combine_chunks()
        group, size = [], 0
        if not target.num_rows:
            continue
        ctx.register_record_batches("t", [target.to_batches()])
        found = ctx.sql(query).to_arrow_table()
        ctx.deregister_table("t")
        if found.num_rows:
            yield (
                np.asarray(found.column(_POSITION).to_numpy(zero_copy_only=False), np.int64),
                np.asarray(found.column(_LEAF).to_numpy(zero_copy_only=False), np.int32),
            )
