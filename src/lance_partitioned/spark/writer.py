"""Distributed writes: executors stage, the driver commits once.

:func:`plan_write` runs on the driver when Spark plans the job (PySpark calls
``DataSource.writer`` in a Python worker on the driver, before any task starts). It checks
the DataFrame's types and the schema and ``partition_by`` of an existing namespace, and pins
the ``__manifest`` version every task stages against. A first write (``partition_by``
required) only decides the new namespace's schema and spec: its tasks stage against an empty
manifest held in memory and the commit creates the namespace, so a job that fails leaves no
namespace behind and binds no spec.

Each task (:meth:`LancePartitionedWriter.write`, on an executor) runs
:func:`lance_partitioned.ingest.stage` on its Arrow batches: partition values from the spec's
vectorized transforms, uncommitted fragments per partition, nothing visible. It returns a
:class:`StagedWrite` message: its :class:`~lance_partitioned.transaction.PendingWrite` (per
leaf: object id, location, partition values, fragment metadata, rows). No executor writes
the ``__manifest``.

The driver's :meth:`~LancePartitionedWriter.commit` merges the messages Spark hands it (one
per successful task: retried and speculative attempts never count twice) and calls
:func:`lance_partitioned.dml.commit_staged`, as the Python API's ``write`` does: the write's
plan (:func:`lance_partitioned.transaction.write.write_plan`, which records the write on the
commit), the same leaf commits and single CAS ``__manifest`` commit: the job is
all-or-nothing.
Every task attempt records what it staged in a journal (:mod:`.staging`): the commit deletes
what attempts whose message it did not use staged (retried, speculative, or failed after
staging; for a streaming micro-batch also the runs of the batch a restarted query replaces),
:meth:`~LancePartitionedWriter.abort` what every attempt staged, unless a leaf version
references it (committed since the job started; any leaf version, for a micro-batch).
"""

from __future__ import annotations

import datetime
import itertools
import logging
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from lance_partitioned import dml, errors, writing
from lance_partitioned.consistency import conform_for_write, leaf_schema
from lance_partitioned.entry import check_partition_by
from lance_partitioned.ingest import WriteOptions, stage
from lance_partitioned.manifest import Manifest, ManifestSnapshot, manifest_schema
from lance_partitioned.namespace import PartitionedNamespace
from lance_partitioned.spark.options import SourceOptions
from lance_partitioned.spark.staging import (
    StagingJournal,
    data_files,
    delete_unreferenced,
)
from lance_partitioned.spark.types import arrow_schema_for
from lance_partitioned.spark.workers import freeze_worker_heap
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.partitioning import PartitionField
from lance_partitioned.transaction import (
    PendingWrite,
    WriteMode,
)
from lance_partitioned.transaction.write import merge_pending

__all__ = [
    "LancePartitionedStreamWriter",
    "LancePartitionedWriter",
    "StagedWrite",
    "WriteJob",
    "plan_stream_write",
    "plan_write",
]

log = logging.getLogger(__name__)

#: Staging threads per Spark task (a task already has a core; staging is mostly I/O).
TASK_THREADS = 4
#: Leaf versions older than the job's start minus this margin cannot reference its files.
_CLOCK_MARGIN = datetime.timedelta(minutes=1)


@dataclass(frozen=True)
class WriteJob:
    """What every task and the driver's commit share (pickled into the writer).

    Attributes
    ----------
    uri : str
        The namespace root.
    storage_options : tuple of (key, value)
        Passed to every Lance call.
    manifest_version : int or None
        The ``__manifest`` version the tasks stage against (schema, spec, leaf locations);
        None when the namespace does not exist yet.
    create : NamespaceMetadata or None
        The schema and spec of the namespace the commit creates (a first write), or None.
    mode : {"append", "overwrite", "overwrite_partitions"} or None
        How the commit applies the data; None: an overwrite whose kind each task reads from
        the session's ``spark.sql.sources.partitionOverwriteMode``.
    write_options : WriteOptions
        Buffering and file-size knobs of each task.
    planned_at : float
        Driver wall-clock time (``time.time()``) when the job was planned.
    txn : (str, int) or None
        The ``txnAppId``/``txnVersion`` of an idempotent write.
    replace_where : str or None
        The ``replace_where`` predicate: the commit replaces the rows matching it.
    streaming : bool
        The sink of a streaming query: journals are named by query and batch id.
    job_id : str
        Names the job's staging journals (:mod:`.staging`).
    """

    uri: str
    storage_options: tuple[tuple[str, str], ...]
    manifest_version: int | None
    mode: WriteMode | None
    write_options: WriteOptions
    planned_at: float
    create: NamespaceMetadata | None = None
    txn: tuple[str, int] | None = None
    replace_where: str | None = None
    streaming: bool = False
    job_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def manifest(self) -> Manifest:
        """The ``__manifest`` of the target namespace."""
        return Manifest(self.uri, dict(self.storage_options))

    def snapshot(self) -> ManifestSnapshot:
        """The ``__manifest`` version the job stages against (empty for a new namespace)."""
        if self.create is None or self.manifest().exists():
            return self.manifest().snapshot(self.manifest_version)
        rows = manifest_schema(self.create.partition_columns()).empty_table()
        return ManifestSnapshot(0, self.create, self.create.to_table_metadata(), rows)

    def create_namespace(self) -> None:
        """Create the namespace of a first write (the commit does, once every task staged).

        A namespace another job created meanwhile with the same schema and spec is used.
        """
        if self.create is None:
            return
        try:
            Manifest.create(self.uri, self.create, dict(self.storage_options))
        except errors.NamespaceAlreadyExistsError:
            existing = self.manifest().snapshot().metadata
            if existing.to_table_metadata() != self.create.to_table_metadata():
                raise errors.PartitionSpecError(
                    f"another writer created the namespace at {self.uri!r} with another "
                    "schema or partition spec while this job ran; write again (without "
                    "partition_by, or with its spec) to write into it"
                ) from None
            log.info("namespace %s was created concurrently: writing into it", self.uri)


@dataclass(frozen=True)
class StagedWrite(WriterCommitMessage):
    """The commit message of one task: what it staged (None when it had no rows).

    Attributes
    ----------
    partition_id : int
        Spark's partition (task) index.
    attempt : int
        Spark's attempt number of the task.
    rows : int
        Rows the task staged.
    pending : PendingWrite or None
        The leaves it staged, with their fragment metadata.
    mode : {"append", "overwrite", "overwrite_partitions"}
        The write mode the task staged for.
    stream : (str, int) or None
        The streaming query id and micro-batch id the task ran for, if any.
    journal : str or None
        The file name of the staging journal the attempt wrote (None when it staged
        nothing).
    """

    partition_id: int
    attempt: int
    rows: int
    pending: PendingWrite | None
    mode: WriteMode = "append"
    stream: tuple[str, int] | None = None
    journal: str | None = None


#: The session setting of Spark's file sources that :func:`_mode` honours as they do.
OVERWRITE_MODE_CONF = "spark.sql.sources.partitionOverwriteMode"


def _mode(options: SourceOptions, overwrite: bool) -> WriteMode | None:
    """The write mode, or None when it depends on the session's ``OVERWRITE_MODE_CONF``.

    PySpark does not pass the session configuration to the Python worker that plans a write,
    but Spark sets every explicitly set SQL setting as a local property of the job's tasks:
    each task reads it (:func:`_task_mode`) and the commit checks they agree.
    """
    dynamic = options.partition_overwrite_mode
    if options.replace_where is not None:
        if not overwrite or options.overwrite is not None or dynamic is not None:
            raise errors.InvalidInputError(
                "option replace_where needs .mode('overwrite') and neither overwrite nor "
                "partitionOverwriteMode: it replaces the rows matching the predicate"
            )
        return "append"  # the tasks stage an append; the commit deletes the matching rows
    if not overwrite:
        if options.overwrite is not None:
            raise errors.InvalidInputError(
                f"option overwrite={options.overwrite!r} needs .mode('overwrite'); this write "
                "is an append"
            )
        return "append"
    if options.overwrite is not None:
        if dynamic == "static":
            raise errors.InvalidInputError(
                "options overwrite='partitions' and partitionOverwriteMode='static' "
                "contradict each other: drop one"
            )
        return "overwrite_partitions"
    if dynamic is None:
        return None
    return "overwrite_partitions" if dynamic == "dynamic" else "overwrite"


#: Local properties Spark sets on the tasks of a streaming micro-batch.
_QUERY_ID = "sql.streaming.queryId"
_BATCH_ID = "streaming.sql.batchId"


def _task_stream() -> tuple[str, int] | None:
    """(query id, batch id) of the streaming micro-batch this task runs for, if any."""
    context = TaskContext.get()
    if context is None:
        return None
    query, batch = context.getLocalProperty(_QUERY_ID), context.getLocalProperty(_BATCH_ID)
    if not query or batch is None:
        return None
    try:
        return query, int(batch)
    except ValueError:
        return None


def _task_mode() -> WriteMode:
    """The overwrite mode the session's ``OVERWRITE_MODE_CONF`` asks for (in a task)."""
    context = TaskContext.get()
    value = None if context is None else context.getLocalProperty(OVERWRITE_MODE_CONF)
    return "overwrite_partitions" if (value or "").strip().lower() == "dynamic" else "overwrite"


def _warn_partition_count(rows: list[int], fields: Sequence[PartitionField], uri: str) -> None:
    """The Python write's :class:`~lance_partitioned.errors.PartitionCountWarning` on the
    driver's commit, as a warning and a log line (which Spark's Python worker logs keep)."""
    spec = ", ".join(f"{f.name} = {f.expression}" for f in fields) or "unpartitioned"
    problem = writing.partition_count_problem(rows, spec)
    if problem is None:
        return
    log.warning("%s: %s", uri, problem)
    warnings.warn(problem, errors.PartitionCountWarning, stacklevel=2)


def _new_metadata(options: SourceOptions, arrow_schema: pa.Schema) -> NamespaceMetadata:
    """The schema and first spec of the namespace a first write creates (when it commits)."""
    if options.partition_by is None:
        raise errors.InvalidInputError(
            f"no namespace exists at {options.uri!r}: the first write creates it and needs "
            "the option partition_by (e.g. .option('partition_by', 'event_date, "
            "bucket(16, user_id)'), or '' for an unpartitioned namespace)"
        )
    return NamespaceMetadata.create(arrow_schema, options.partition_by)


def plan_write(
    options: SourceOptions, schema: StructType, overwrite: bool
) -> LancePartitionedWriter:
    """Check a write and create the namespace if needed; runs on the driver at job start.

    Raises
    ------
    UnknownTypeError
        A DataFrame column has a type that cannot be stored.
    SchemaMismatchError
        The DataFrame does not fit the namespace schema (spec 000 write rules).
    PartitionSpecError
        ``partition_by`` differs from the namespace's current spec.
    InvalidInputError
        A bad option, or no namespace and no ``partition_by``.
    """
    if options.version is not None:
        raise errors.InvalidInputError(
            f"option version={options.version} is for reads (time travel); a write always "
            "goes on top of the latest __manifest version"
        )
    for name, value in (("filter", options.filter), ("columns", options.columns)):
        if value is not None:
            raise errors.InvalidInputError(
                f"option {name} is for reads; a write stores every row and column of the "
                "DataFrame (filter or select the DataFrame instead)"
            )
    mode = _mode(options, overwrite)
    arrow_schema = arrow_schema_for(schema)
    storage = dict(options.storage_options)
    create: NamespaceMetadata | None = None
    version: int | None = None
    if Manifest(options.uri, storage).exists():
        ns = PartitionedNamespace.open(options.uri, storage_options=storage)
        if options.partition_by is not None:
            check_partition_by(ns, options.partition_by, option=True)
        if options.merge_schema:  # mergeSchema: the new columns first, in their own commit
            from lance_partitioned.writing import new_columns

            added = new_columns(arrow_schema, ns.namespace_schema)
            if added:
                ns.add_columns(added)
        namespace_schema, version = ns.namespace_schema, ns.version
    else:  # created by the commit: a job that fails leaves nothing behind
        create = _new_metadata(options, arrow_schema)
        namespace_schema = create.schema
    target = leaf_schema(namespace_schema)
    conform_for_write(arrow_schema.empty_table(), namespace_schema, target)
    if options.replace_where is not None:
        if create is not None:
            raise errors.InvalidInputError(
                f"option replace_where replaces rows of an existing namespace; there is none "
                f"at {options.uri!r}"
            )
        ns.plan_scan(options.replace_where)  # a bad predicate fails before any task runs
    defaults = WriteOptions()
    write_options = replace(
        defaults,
        max_rows_per_file=options.max_rows_per_file or defaults.max_rows_per_file,
        threads=TASK_THREADS,
    )
    job = WriteJob(
        uri=options.uri,
        storage_options=options.storage_options,
        manifest_version=version,
        create=create,
        txn=options.txn,
        replace_where=options.replace_where,
        mode=mode,
        write_options=write_options,
        planned_at=time.time(),
    )
    return LancePartitionedWriter(job)


class LancePartitionedWriter(DataSourceArrowWriter):
    """Stages each task's rows on executors; commits them all at once on the driver."""

    def __init__(self, job: WriteJob) -> None:
        self.job = job

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedWrite:
        """Stage one task's batches as uncommitted fragments (runs on an executor)."""
        freeze_worker_heap()
        context = TaskContext.get()
        partition_id = context.partitionId() if context is not None else 0
        attempt = context.attemptNumber() if context is not None else 0
        return self.stage_task(iterator, partition_id, attempt, _task_stream())

    def stage_task(
        self,
        iterator: Iterator[pa.RecordBatch],
        partition_id: int,
        attempt: int,
        stream: tuple[str, int] | None = None,
    ) -> StagedWrite:
        """Stage the batches of attempt ``attempt`` of task ``partition_id`` (for the
        streaming micro-batch ``stream``: query id, batch id)."""
        mode = self.job.mode or _task_mode()
        first = next(iterator, None)
        if first is None:
            return StagedWrite(partition_id, attempt, 0, None, mode, stream)
        manifest = self.job.manifest()
        snapshot = self.job.snapshot()
        reader = pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], iterator))
        if self.job.replace_where is not None:
            reader = dml.require_matching(reader, self.job.replace_where, snapshot)
        pending = stage(
            manifest,
            snapshot,
            reader,
            mode=mode,
            target=leaf_schema(snapshot.metadata.schema),
            options=self.job.write_options,
        )
        rows = sum(leaf.rows for leaf in pending.leaves)
        staged = {leaf.location: sorted(data_files(leaf.fragments)) for leaf in pending.leaves}
        journal = StagingJournal(manifest, self._journal_id(stream))
        name = journal.record(partition_id, attempt, staged)
        if not self.job.streaming and journal.done():  # the driver finished without us
            since = datetime.datetime.fromtimestamp(self.job.planned_at) - _CLOCK_MARGIN
            for location, names in staged.items():
                delete_unreferenced(manifest, location, names, since)
            journal.clear(p for p in journal.paths() if _file_name(p) == name)
        return StagedWrite(partition_id, attempt, rows, pending, mode, stream, name)

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Make every task's staged data visible in one ``__manifest`` commit (driver)."""
        self._commit(messages, self.job.txn)

    def _journal_id(self, stream: tuple[str, int] | None) -> str:
        # a streaming sink's tasks and commits run writers planned separately (PySpark plans
        # the sink again in its commit process): they share only the query and batch ids
        if self.job.streaming and stream is not None:
            return f"{stream[0]}-b{stream[1]}"
        return self.job.job_id

    def _stream_of(self, messages: Sequence[WriterCommitMessage | None]) -> tuple[str, int] | None:
        return next((m.stream for m in _staged(messages) if m.stream is not None), None)

    def _commit(
        self, messages: Sequence[WriterCommitMessage | None], txn: tuple[str, int] | None
    ) -> None:
        freeze_worker_heap()
        manifest = self.job.manifest()
        mode = self._mode(messages)
        self.job.create_namespace()
        staged = [m.pending for m in _staged(messages) if m.pending is not None]
        if not staged and mode != "overwrite" and self.job.replace_where is None:
            log.info("nothing to commit to %s: the job wrote no rows", self.job.uri)
            self._discard_unused(messages)
            return
        snapshot = self.job.snapshot()
        target = leaf_schema(snapshot.metadata.schema)
        if staged:
            pending = replace(merge_pending(staged), leaf_schema=target)
        else:  # overwriting everything with nothing
            pending = PendingWrite(
                spec_version=snapshot.metadata.current_spec.version,
                leaf_schema=target,
                leaves=[],
                namespaces={},
                mode=mode,
            )
        details = {"engine": "spark-streaming" if self.job.streaming else "spark"}
        if txn is not None:
            details |= {"txn_app_id": txn[0], "txn_version": str(txn[1])}
        # overwrite_partitions also deletes the rows of the written partitions from leaves of
        # older spec versions, replace_where the rows matching it, in the same commit
        result = dml.commit_staged(
            manifest, pending, where=self.job.replace_where, txn=txn, details=details
        )
        if result.skipped:
            log.info("%s: transaction %s already committed, nothing written", self.job.uri, txn)
            self._remove({}, set(), self._stream_of(messages))  # every staged file is unused
            return
        log.info(
            "committed %d rows into %d leaves of %s as __manifest version %d",
            result.rows,
            len(result.leaf_versions),
            self.job.uri,
            result.version,
        )
        created = set(result.created)
        _warn_partition_count(
            [leaf.rows for leaf in pending.leaves if leaf.object_id in created],
            snapshot.metadata.current_spec.fields,
            self.job.uri,
        )
        self._discard_unused(messages)

    def _discard_unused(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """After the commit: delete what attempts whose message was not used staged."""
        used = {m.journal for m in _staged(messages) if m.journal is not None}
        deleted = self._remove({}, used, self._stream_of(messages))
        if deleted:
            log.info("deleted %d files staged by unused task attempts", deleted)

    def _mode(self, messages: Sequence[WriterCommitMessage | None]) -> WriteMode:
        """The job's write mode: planned, or as its tasks read it from the session."""
        if self.job.mode is not None:
            return self.job.mode
        modes = {m.mode for m in _staged(messages)}
        if len(modes) == 1:
            return modes.pop()
        if not modes:
            raise errors.InvalidInputError(
                f"this overwrite of {self.job.uri!r} ran no Spark task, so it cannot tell "
                f"whether the session's {OVERWRITE_MODE_CONF} asks for a static or a dynamic "
                "overwrite: say it with .option('partitionOverwriteMode', 'static' or "
                "'dynamic')"
            )
        raise errors.InternalError(
            f"the tasks of one job disagree on {OVERWRITE_MODE_CONF}: {sorted(modes)}"
        )

    def abort(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Delete what every attempt of the job staged, where that is safe (driver)."""
        freeze_worker_heap()
        staged: dict[str, set[str]] = {}
        for message in _staged(messages):
            for leaf in message.pending.leaves if message.pending is not None else ():
                staged.setdefault(leaf.location, set()).update(data_files(leaf.fragments))
        deleted = self._remove(staged, set(), self._stream_of(messages))
        log.info("aborted write to %s: deleted %d staged files", self.job.uri, deleted)

    def _remove(
        self,
        staged: dict[str, set[str]],
        used: set[str],
        stream: tuple[str, int] | None,
    ) -> int:
        """Delete the files in ``staged`` and those the journals not named in ``used``
        record, unless a leaf version committed since the job started references them (any
        leaf version, for a micro-batch: its journals may be an earlier run's, committed at
        any time before); then delete the job's journals. Returns the number of files
        deleted."""
        manifest = self.job.manifest()
        journal = StagingJournal(manifest, self._journal_id(stream))
        if not self.job.streaming:
            journal.finish()
        paths = journal.paths()
        for path in paths:
            if _file_name(path) not in used:
                for location, names in journal.read(path).items():
                    staged.setdefault(location, set()).update(names)
        since = (
            datetime.datetime.min
            if self.job.streaming
            else datetime.datetime.fromtimestamp(self.job.planned_at) - _CLOCK_MARGIN
        )
        deleted = sum(
            delete_unreferenced(manifest, location, names, since)
            for location, names in sorted(staged.items())
            if names
        )
        journal.clear(paths)
        if self.job.streaming:
            journal.remove_directory()
        return deleted


def _file_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _staged(messages: Iterable[WriterCommitMessage | None]) -> list[StagedWrite]:
    return [m for m in messages if isinstance(m, StagedWrite)]


class LancePartitionedStreamWriter(DataSourceStreamArrowWriter):
    """The Structured Streaming sink: each micro-batch is a job like a batch write, committed
    exactly once: the commit records (query id, batch id) as its transaction, so a batch that
    Spark replays after a restart (committed, not yet in the checkpoint) writes nothing."""

    def __init__(self, job: WriteJob) -> None:
        self.writer = LancePartitionedWriter(job)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedWrite:
        """Stage one task's batches (runs on an executor)."""
        return self.writer.write(iterator)

    def commit(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        """Commit micro-batch ``batchId`` once (driver)."""
        stream = self.writer._stream_of(messages)
        if stream is None:
            if any(m.pending is not None for m in _staged(messages)):
                raise errors.InternalError(
                    f"micro-batch {batchId} staged rows but its tasks saw no streaming query "
                    "id: cannot commit it exactly once"
                )
            self.writer._commit(messages, None)  # no rows: nothing to record
            return
        self.writer._commit(messages, (f"{STREAM_TXN_PREFIX}{stream[0]}", batchId))

    def abort(self, messages: Sequence[WriterCommitMessage | None], batchId: int) -> None:
        """Delete what the micro-batch staged (driver)."""
        self.writer.abort(messages)


#: The transaction application id of a streaming query is this prefix and its query id.
STREAM_TXN_PREFIX = "spark-streaming-query:"


def plan_stream_write(
    options: SourceOptions, schema: StructType, overwrite: bool
) -> LancePartitionedStreamWriter:
    """The sink of a streaming query (driver). Each micro-batch stages against the latest
    ``__manifest``; the first batch's commit creates the namespace."""
    if options.txn is not None:
        raise errors.InvalidInputError(
            "options txnAppId/txnVersion are for batch writes (foreachBatch): the streaming "
            "sink records its own (query id, batch id) in every commit"
        )
    writer = plan_write(options, schema, overwrite)
    return LancePartitionedStreamWriter(replace(writer.job, manifest_version=None, streaming=True))
