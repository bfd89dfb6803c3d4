"""``PartitionedTable.merge``: an upsert whose work runs on executors, committed once.

1. Each source row gets an id (``monotonically_increasing_id``) and is routed to the target
   leaves its keys can match (:mod:`.merge_route`): by the partition values the keys
   determine (computed on executors with the namespace's transforms, looked up in the pinned
   ``__manifest`` snapshot, as the Python merge does), or, when the keys determine no
   partition field of a spec version, by a Spark join with the distinct keys each of its
   leaves holds (read on executors): a row goes to the leaves holding its key only. The
   leaves that a ``when_not_matched_by_source_delete`` searches get a marker row.
2. The rows are grouped by leaf (a shuffle into a few tasks per core); for each of its
   leaves a task runs the Python merge's per-leaf search
   (:meth:`~lance_partitioned.dml.merge_leaf.Clauses.search`, reading only that leaf),
   stages that leaf's updated rows under the current spec (one staged write per leaf, so a
   leaf merged again at the commit replaces its own result only) and prepares the leaf's
   Lance delete; it returns those (pickled metadata) and the ids of the source rows that
   matched.
3. The source rows that matched no target row are staged on executors when the merge
   inserts. When every spec version is routed by a join, the routing join is a left outer
   one: the rows no leaf key joins come out with no leaf and are staged by the tasks of 2
   (one shuffle of the source for both; the rows a leaf key joined that matched nothing
   there, rare, are found by an anti-join of their ids only). Otherwise, an anti-join of the
   source with the matched ids finds them.

The driver collects only the prepared operations and fragment metadata (never the source)
and publishes every leaf in one :func:`lance_partitioned.transaction.commit_changes`. A leaf
that another writer changed before that commit is merged again there, alone
(:mod:`.merge_replan`).
"""

from __future__ import annotations

import pickle
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lance import LanceDataset
from pyspark import TaskContext

from lance_partitioned import errors, scan
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.dml.merge import MergeBuilder
from lance_partitioned.dml.merge_set import check_assignments_sql
from lance_partitioned.dml.plan import DeleteCount, delete_operation, leaf_tasks
from lance_partitioned.dml.results import MergeResult
from lance_partitioned.expressions import AlwaysFalse, Predicate
from lance_partitioned.ingest import WriteOptions, stage
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.spark.dml import TASK_THREADS, LeafJob, TaskHook, job_for, remove_unused
from lance_partitioned.spark.merge_condition import keys_of
from lance_partitioned.spark.merge_local import local_match
from lance_partitioned.spark.merge_replan import _LEAF, _ROW, Replanner, _LeafResult
from lance_partitioned.spark.merge_route import RouteMetrics, route_kinds, routed
from lance_partitioned.spark.merge_source import SourceCount, materialized
from lance_partitioned.spark.staging import StagingJournal, data_files
from lance_partitioned.spark.workers import freeze_worker_heap
from lance_partitioned.transaction import (
    ChangePlan,
    LeafChange,
    PendingWrite,
    commit_changes,
)
from lance_partitioned.transaction.write import Tally, merge_pending

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["SparkMergeBuilder", "keys_of"]

_RESULT_SCHEMA = "kind string, payload binary, row long"


@dataclass(frozen=True)
class _MergeJob:
    leaf: LeafJob
    on: tuple[str, ...]
    null_safe: bool
    update: tuple[bool, str | None]
    insert: bool
    delete: tuple[bool, str | Predicate | None]
    columns: tuple[str, ...]  # the source's columns
    tasks: dict[str, tuple[scan.ScanTask, Predicate]] = field(default_factory=dict)
    matched_delete: tuple[bool, str | None] = (False, None)
    delete_first: bool = False  # when_matched_delete came before when_matched_update_all
    leaves: tuple[str, ...] = ()  # the leaves' object ids, sorted (``_LEAF`` indexes them)
    routes: dict[int, str] = field(default_factory=dict)  # spec version -> route kind
    safe: frozenset[str] = frozenset()  # the keys matched NULL-safely
    assign: tuple[tuple[str, str], ...] | None = None  # when_matched_update(set=...)

    def builder(self, manifest: Manifest) -> MergeBuilder:
        b = MergeBuilder(manifest, None, list(self.on), null_safe=self.null_safe)
        b._update, b._insert, b._delete = self.update, self.insert, self.delete
        b._set = None if self.assign is None else dict(self.assign)
        b._matched_delete, b._delete_first = self.matched_delete, self.delete_first
        return b


def _journal(job: LeafJob, pending: Sequence[PendingWrite]) -> str | None:
    staged: dict[str, list[str]] = {}
    for write in pending:
        for leaf in write.leaves:
            staged.setdefault(leaf.location, []).extend(sorted(data_files(leaf.fragments)))
    if not staged:
        return None
    context = TaskContext.get()
    index = context.partitionId() if context is not None else 0
    attempt = context.attemptNumber() if context is not None else 0
    journal = StagingJournal(job.manifest(), job.job_id)
    name = journal.record(index, attempt, staged)
    if journal.done():
        remove_unused(job, set())
    return name


def _payload(kind: str, value: Any) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {"kind": [kind], "payload": [pickle.dumps(value)], "row": [None]},
        schema=pa.schema([("kind", pa.string()), ("payload", pa.binary()), ("row", pa.int64())]),
    )


def _hook(job: LeafJob) -> None:
    context = TaskContext.get()
    if job.hook is not None and context is not None:
        job.hook(context.partitionId(), context.attemptNumber())


class SparkMergeBuilder:
    """A merge of a Spark DataFrame into the namespace: configure it with the ``when_*``
    methods (or delta-spark's camelCase names), then :meth:`execute` it (one commit). The
    rules are the Python merge's (:class:`lance_partitioned.dml.MergeBuilder`)."""

    def __init__(
        self,
        spark: SparkSession,
        manifest: Manifest,
        source: DataFrame,
        on: list[str],
        *,
        null_safe: bool = False,
        hook: TaskHook | None = None,
    ) -> None:
        self._spark, self._manifest, self._source = spark, manifest, source
        self._python = MergeBuilder(manifest, None, on, null_safe=null_safe)  # checks ``on``
        self._on, self._null_safe, self._hook = on, null_safe, hook
        self.replanned: list[str] = []  # the leaves merged again at the commit (moved)
        self.routed = 0  # the source rows the leaves' tasks searched (a row once per leaf)
        # a join route: the (key, leaf) pairs the leaves' key reads sent to the join, and the
        # bytes of the Bloom filter of the source keys that selected them
        self.key_pairs = 0
        self.filter_bytes = 0
        self.local_match = False  # the join route's leaves matched in the source's tasks
        self.materialized = False  # the source was cached (:mod:`.merge_source`)

    def when_matched_update_all(self, condition: str | None = None) -> SparkMergeBuilder:
        """Replace each matched target row by its source row (see the Python merge)."""
        self._python.when_matched_update_all(condition)
        return self

    def when_matched_update(
        self, set: dict[str, str] | None = None, condition: str | None = None
    ) -> SparkMergeBuilder:
        """delta-spark's ``whenMatchedUpdate``: assign ``set`` (column -> SQL over
        ``target.<col>`` and ``source.<col>``) to each matched target row where
        ``condition`` holds; its other columns keep their values (see the Python merge's
        :meth:`~lance_partitioned.dml.MergeBuilder.when_matched_update`). Evaluated in each
        leaf's task."""
        self._python.when_matched_update(set, condition)
        return self

    def when_matched_delete(self, condition: str | None = None) -> SparkMergeBuilder:
        """Delete each matched target row (where ``condition`` holds); with an update
        clause too, the first one added whose condition holds applies (see the Python
        merge)."""
        self._python.when_matched_delete(condition)
        return self

    def when_not_matched_insert_all(self) -> SparkMergeBuilder:
        """Insert each source row that matches no target row."""
        self._python.when_not_matched_insert_all()
        return self

    def when_not_matched_by_source_delete(
        self, condition: str | Predicate | None = None
    ) -> SparkMergeBuilder:
        """Delete each target row that no source row matches (where ``condition`` holds)."""
        self._python.when_not_matched_by_source_delete(condition)
        return self

    whenMatchedUpdateAll = when_matched_update_all  # (delta-spark's names)
    whenMatchedUpdate = when_matched_update
    whenMatchedDelete = when_matched_delete
    whenNotMatchedInsertAll = when_not_matched_insert_all
    whenNotMatchedBySourceDelete = when_not_matched_by_source_delete

    # ------------------------------------------------------------------------- execute
    def execute(self) -> MergeResult:
        """Run the merge on the executors; one ``__manifest`` commit on the driver."""
        from pyspark.errors import PySparkException
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import to_arrow_type

        started = time.perf_counter()
        manifest = self._manifest
        snapshot = manifest.snapshot()
        read = snapshot.metadata.schema.read_schema()
        missing = [k for k in self._on if k not in read.names or k not in self._source.columns]
        if missing:
            raise errors.InvalidInputError(
                f"merge key column(s) {missing} must be columns of the namespace {read.names} "
                f"and of the source {self._source.columns}"
            )
        python = self._python
        if python._update[0] and python._set is not None:  # a wrong set fails on the driver
            columns = [read.field(c) for c in self._source.columns if c in read.names]
            check_assignments_sql(python._set, read, pa.schema(columns).empty_table())
        delete, condition = python._delete
        residuals: dict[str, Predicate] = {}
        if delete:
            every = scan.plan_scan(manifest, snapshot, condition, columns=[])
            if condition is not None:
                every = leaf_tasks(manifest, snapshot, condition)
            residuals = {t.object_id: t.residual for t in every}
        tasks = {
            t.object_id: (t, residuals.get(t.object_id, AlwaysFalse()))
            for t in scan.plan_scan(manifest, snapshot, None, columns=[])
        }
        leaf = job_for(manifest, snapshot, self._hook)
        source_types = {k: to_arrow_type(self._source.schema[k].dataType) for k in self._on}
        job = _MergeJob(
            leaf=leaf,
            on=tuple(self._on),
            null_safe=self._null_safe,
            update=python._update,
            insert=python._insert,
            delete=python._delete,
            columns=tuple(self._source.columns),
            tasks=tasks,
            matched_delete=python._matched_delete,
            delete_first=python._delete_first,
            leaves=tuple(sorted(tasks)),
            routes=route_kinds(snapshot, self._on, source_types),
            safe=python._safe_keys(snapshot),
            assign=None if python._set is None else tuple(python._set.items()),
        )
        keyed = self._source.withColumn(_ROW, F.monotonically_increasing_id())
        self.materialized = materialized(self._spark, self._source)
        if self.materialized:
            keyed = keyed.persist()
        replanner = Replanner(
            job, keyed, lambda frame, reads: routed(self._spark, job, frame, reads)
        )
        self.replanned = replanner.replanned
        results: list[tuple[Any, str | None]] = []
        try:
            results = self._run(job, keyed, residuals)
            self.routed = sum(r[0].routed for r in results if isinstance(r[0], _LeafResult))
            version, attempts, skipped = self._commit(job, snapshot, results, replanner)
        except PySparkException as exc:
            replanner.finish([])
            remove_unused(leaf, set())
            for name in ("DuplicateKeyError", "InvalidInputError", "SchemaMismatchError"):
                if f"{name}:" in str(exc):
                    message = str(exc).split(f"{name}:", 1)[1].strip().splitlines()[0]
                    raise getattr(errors, name)(message) from None
            raise
        except BaseException:
            replanner.finish([])
            remove_unused(leaf, set())
            raise
        finally:
            keyed.unpersist()
        remove_unused(leaf, {r[1] for r in results if r[1] is not None})
        leaves = [r[0] for r in results if isinstance(r[0], _LeafResult)]
        replanner.finish(leaves)
        inserted = sum(r[0] for r in results if isinstance(r[0], int))
        return MergeResult(
            version=version,
            rows_updated=0 if skipped else sum(r.updated for r in leaves),
            rows_inserted=0 if skipped else inserted,
            rows_deleted=0 if skipped else sum(r.by_source for r in leaves),
            leaves_read=len(leaves),
            attempts=attempts,
            seconds=time.perf_counter() - started,
        )

    def _run(
        self, job: _MergeJob, keyed: DataFrame, residuals: dict[str, Predicate]
    ) -> list[tuple[Any, str | None]]:
        with warnings.catch_warnings():
            # mapInArrow checks the pandas version and warns for pandas 3, which it never uses
            warnings.filterwarnings("ignore", "PySpark does not yet fully", FutureWarning)
            return self._jobs(job, keyed, residuals)

    def _jobs(
        self, job: _MergeJob, keyed: DataFrame, residuals: dict[str, Predicate]
    ) -> list[tuple[Any, str | None]]:
        from pyspark.sql import functions as F

        metrics = RouteMetrics(self._spark.sparkContext.accumulator(0))
        # when every spec version is routed by a join, one left outer join routes the
        # matching rows and hands the others (NULL leaf) to the same tasks, which insert
        # them: no second shuffle of the source (an anti-join on the row ids)
        outer = job.insert and bool(job.leaves) and set(job.routes.values()) == {"join"}
        rows = SourceCount(keyed)  # (counted once, when needed)
        self.local_match = local_match(self._spark, job, rows)
        routes = routed(
            self._spark, job, keyed, None, metrics, outer=outer, local=self.local_match, rows=rows
        )
        self.filter_bytes = metrics.filter_bytes
        index = {o: i for i, o in enumerate(job.leaves)}
        markers = [index[o] for o, r in residuals.items() if not isinstance(r, AlwaysFalse)]
        if markers:
            empty = self._spark.createDataFrame([(m,) for m in markers], f"{_LEAF} int")
            for f in keyed.schema.fields:
                empty = empty.withColumn(f.name, F.lit(None).cast(f.dataType))
            routes = routes.unionByName(empty)
        # a few tasks per core (each merges several leaves, one at a time), not
        # spark.sql.shuffle.partitions' (mostly empty) tasks
        cores = self._spark.sparkContext.defaultParallelism
        count = max(1, min(len(job.leaves), 4 * cores))
        by: Column = F.col(_LEAF)
        if outer:  # the rows no leaf key joins (NULL leaf): spread over the tasks
            by = F.coalesce(by, -1 - F.pmod(F.col(_ROW), F.lit(count)))
        merged = routes.repartition(count, by).mapInArrow(
            lambda it: _merge(job, it, outer), _RESULT_SCHEMA
        )
        merged = merged.persist()
        try:
            found = merged.where("kind IN ('leaf', 'missed')").collect()
            out = [pickle.loads(r.payload) for r in found if r.kind == "leaf"]
            missed = sum(pickle.loads(r.payload) for r in found if r.kind == "missed")
            self.key_pairs = metrics.pairs.value
            if job.insert and (missed or not outer):
                matched = merged.where("kind = 'matched'").select(F.col("row").alias(_ROW))
                if outer:  # (rows a leaf key joined that matched no row there: rare)
                    unmatched = merged.where("kind = 'unmatched'").select(F.col("row").alias(_ROW))
                    ids = unmatched.join(matched, on=_ROW, how="left_anti").distinct()
                    new = keyed.join(ids, on=_ROW, how="left_semi")
                else:
                    new = keyed.join(matched, on=_ROW, how="left_anti")
                staged = new.mapInArrow(lambda it: _insert(job, it), _RESULT_SCHEMA)
                out += [pickle.loads(r.payload) for r in staged.collect()]
        finally:
            merged.unpersist()
        return out

    def _commit(
        self,
        job: _MergeJob,
        pinned: ManifestSnapshot,
        results: list[tuple[Any, str | None]],
        replanner: Replanner,
    ) -> tuple[int, int, bool]:
        """Publish the executors' work in one commit; a leaf another writer changed since
        the pinned snapshot is merged again on the driver (``results`` then holds its new
        result)."""
        searched = [r[0] for r in results if isinstance(r[0], _LeafResult)]
        inserts = [r[0] for r in results if isinstance(r[0], PendingWrite)]
        pinned_reads = {r.object_id: r.read_version for r in searched}
        operation = Operation("merge", details={"on": ",".join(self._on), "engine": "spark"})
        # the same objects for the same leaf results: commit_changes keeps their leaf commits
        changes_of: dict[int, tuple[LeafChange | None, DeleteCount]] = {}
        merged: dict[tuple[int, ...], PendingWrite | None] = {}
        final: list[list[_LeafResult]] = [searched]

        def plan(snapshot: ManifestSnapshot) -> ChangePlan:
            if snapshot.metadata != pinned.metadata:
                raise errors.ConcurrentSchemaChangeError(
                    f"the namespace's schema or partition spec changed at __manifest version "
                    f"{snapshot.version} while this merge ran: nothing was changed; run it again"
                )
            moved = [o for o, v in pinned_reads.items() if snapshot.read_version(o) != v]
            again = replanner.results(snapshot, moved) if moved else {}
            leaves = final[0] = [again.get(r.object_id, r) for r in searched]
            for r in leaves:
                if id(r) not in changes_of:
                    count = DeleteCount(r.count)
                    change = None
                    if r.deleted is not None:
                        change = LeafChange(r.object_id, _prepare(r, count))
                    changes_of[id(r)] = (change, count)
            changes = [c for r in leaves if (c := changes_of[id(r)][0]) is not None]
            counts = {r.object_id: changes_of[id(r)][1] for r in leaves}
            reads = {r.object_id: r.read_version for r in leaves}
            writes = [r.staged for r in leaves if r.staged is not None] + inserts
            key = tuple(id(w) for w in writes)
            if key not in merged:
                merged[key] = merge_pending(writes) if writes else None
            staged = merged[key]
            tally = Tally(
                operation,
                written=[] if staged is None else staged.leaves,
                deleted=lambda: {o: c.rows for o, c in counts.items()},
                updated=sum(r.updated for r in leaves),
            )
            return ChangePlan(
                changes=changes, writes=staged, reads=reads, properties=tally.properties
            )

        result = commit_changes(self._manifest, plan, leaf_threads=TASK_THREADS)
        by_leaf = {r.object_id: r for r in final[0]}
        results[:] = [
            (by_leaf[r[0].object_id], r[1]) if isinstance(r[0], _LeafResult) else r for r in results
        ]
        return result.version, result.attempts, result.skipped


def _prepare(found: _LeafResult, count: DeleteCount) -> Any:
    def prepare(ds: LanceDataset) -> Any:
        if ds.version == found.read_version:
            count.rows = found.count
            return found.operation
        return delete_operation(ds, found.deleted, count)  # appended meanwhile: same rows

    return prepare


def _merge(
    job: _MergeJob, batches: Iterator[pa.RecordBatch], outer: bool = False
) -> Iterator[pa.RecordBatch]:
    """Executor: merge each leaf's slice of the source into that leaf. ``outer`` (a left
    outer routing join): stage the rows without a leaf (they match none) as inserts, and
    return the ids of the rows a leaf's key joined that matched no row there."""
    freeze_worker_heap()
    manifest = job.leaf.manifest()
    snapshot = job.leaf.snapshot()
    schema = snapshot.metadata.schema
    builder = job.builder(manifest)
    builder._insert = False  # the rows that match no leaf are inserted by _insert
    safe = builder._safe_keys(snapshot)
    read = schema.read_schema()
    options = WriteOptions(threads=TASK_THREADS)
    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    if not tables:
        return
    everything = pa.concat_tables(tables).combine_chunks()
    results: list[tuple[Any, str | None]] = []
    matched_ids: list[np.ndarray] = []
    missed_ids: list[np.ndarray] = []
    staged_all: list[PendingWrite] = []
    if outer:
        routed_ = everything.column(_LEAF).is_valid()
        new = everything.filter(pc.invert(routed_))
        everything = everything.filter(routed_)
        if new.num_rows and job.insert:
            inserted, count = _new_rows(job, manifest, snapshot, new)
            if inserted is not None:
                staged_all.append(inserted)
                results += [(inserted, None), (count, None)]
    for leaf, positions in _leaf_slices(everything):
        object_id = job.leaves[leaf]
        slice_ = everything.take(pa.array(positions))
        slice_ = slice_.filter(slice_.column(_ROW).is_valid())  # (marker rows: none)
        ids = np.asarray(slice_.column(_ROW).to_numpy(zero_copy_only=False), dtype=np.int64)
        task, deleting = job.tasks[object_id]
        ds = task.open()
        source = builder._source(schema, slice_.select(list(job.columns)))
        found = builder._clauses().search(ds, task, schema, source, deleting, safe)
        matched_ids.append(ids[found.matched])
        if outer:
            hit = np.zeros(len(ids), dtype=bool)
            hit[found.matched] = True
            missed_ids.append(ids[~hit])
        rows = builder._new_rows(source, [found], read)
        staged = None
        if rows.num_rows:
            staged = stage(
                manifest, snapshot, rows, mode="append", target=leaf_schema(schema), options=options
            )
            staged_all.append(staged)
        result = _LeafResult.prepare(object_id, ds, found, staged, routed=len(ids))
        results.append((result, None))
    name = _journal(job.leaf, staged_all)
    _hook(job.leaf)
    for result, _ in results:
        yield _payload("leaf", (result, name))
        name = None  # (the journal is used once the first result is)
    yield from _ids("matched", matched_ids)
    missed = sum(len(m) for m in missed_ids)
    if missed:
        yield _payload("missed", missed)
        yield from _ids("unmatched", missed_ids)


def _ids(kind: str, ids: list[np.ndarray]) -> Iterator[pa.RecordBatch]:
    """Rows of ``kind`` with these source row ids (none if there are none)."""
    every = np.concatenate(ids) if ids else np.zeros(0, np.int64)
    if len(every):
        yield pa.RecordBatch.from_pydict(
            {"kind": [kind] * len(every), "payload": [b""] * len(every), "row": every.tolist()},
            schema=pa.schema(
                [("kind", pa.string()), ("payload", pa.binary()), ("row", pa.int64())]
            ),
        )


def _leaf_slices(table: pa.Table) -> list[tuple[int, np.ndarray]]:
    """The positions of ``table``'s rows of each ``_LEAF`` index, by index."""
    codes = np.asarray(table.column(_LEAF).to_numpy(zero_copy_only=False), dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    leaves, starts = np.unique(codes[order], return_index=True)
    bounds = [*starts.tolist(), len(order)]
    return [(int(leaf), order[bounds[i] : bounds[i + 1]]) for i, leaf in enumerate(leaves)]


def _insert(job: _MergeJob, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Executor: stage the source rows that matched no target row."""
    freeze_worker_heap()
    manifest = job.leaf.manifest()
    snapshot = job.leaf.snapshot()
    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    if not tables:
        return
    staged, count = _new_rows(job, manifest, snapshot, pa.concat_tables(tables))
    if staged is None:
        return
    name = _journal(job.leaf, [staged])
    _hook(job.leaf)
    yield _payload("leaf", (staged, name))
    yield _payload("leaf", (count, None))


def _new_rows(
    job: _MergeJob, manifest: Manifest, snapshot: ManifestSnapshot, table: pa.Table
) -> tuple[PendingWrite | None, int]:
    """Stage ``table``'s source rows (they match no target row) under the current spec:
    the staged write (None: no row) and its row count."""
    schema = snapshot.metadata.schema
    builder = job.builder(manifest)
    builder._update = (False, None)
    source = builder._source(schema, table.select(list(job.columns)))
    rows = builder._new_rows(source, [], schema.read_schema())
    if not rows.num_rows:
        return None, 0
    options = WriteOptions(threads=TASK_THREADS)
    staged = stage(
        manifest, snapshot, rows, mode="append", target=leaf_schema(schema), options=options
    )
    return staged, int(rows.num_rows)
