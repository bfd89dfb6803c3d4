"""Distributed writes: executors stage, the driver commits once.

:func:`plan_write` runs on the driver when Spark plans the job (PySpark calls
``DataSource.writer`` in a Python worker on the driver, before any task starts). It checks
the DataFrame's types, creates the namespace on the first write (``partition_by`` required)
or checks the schema and ``partition_by`` of an existing one, and pins the ``__manifest``
version every task stages against.

Each task (:meth:`LancePartitionedWriter.write`, on an executor) runs
:func:`lance_partitioned.write.stage` on its Arrow batches: partition values from the spec's
vectorized transforms, uncommitted fragments per partition, nothing visible. It returns a
:class:`StagedWrite` message: its :class:`~lance_partitioned.transaction.PendingWrite` (per
leaf: object id, location, partition values, fragment metadata, rows). No executor writes
the ``__manifest``.

The driver's :meth:`~LancePartitionedWriter.commit` merges the messages Spark hands it (one
per successful task: retried and speculative attempts never count twice) and calls
:func:`lance_partitioned.transaction.commit_write`, the same leaf commits and single CAS
``__manifest`` commit as the Python API: the job is all-or-nothing.
:meth:`~LancePartitionedWriter.abort` deletes the staged files it knows of (the messages Spark
passes, often none) unless a leaf version committed since the job started references them;
files of tasks that failed mid-way stay as invisible orphans that Lance's
``cleanup_old_versions`` reclaims.
"""

from __future__ import annotations

import datetime
import itertools
import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import lance
import lance.file
import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from lance_partitioned import errors
from lance_partitioned.consistency import conform_for_write, leaf_schema
from lance_partitioned.manifest import Manifest
from lance_partitioned.namespace import PartitionedNamespace
from lance_partitioned.spark.source import SourceOptions
from lance_partitioned.spark.types import arrow_schema_for
from lance_partitioned.spec.shorthand import parse_partition_by
from lance_partitioned.transaction import (
    LeafWrite,
    PendingWrite,
    WriteMode,
    commit_write,
    merge_pending,
)
from lance_partitioned.write import WriteOptions, stage

__all__ = ["LancePartitionedWriter", "StagedWrite", "WriteJob", "plan_write"]

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
    manifest_version : int
        The ``__manifest`` version the tasks stage against (schema, spec, leaf locations).
    mode : {"append", "overwrite", "overwrite_partitions"} or None
        How the commit applies the data; None: an overwrite whose kind each task reads from
        the session's ``spark.sql.sources.partitionOverwriteMode``.
    write_options : WriteOptions
        Buffering and file-size knobs of each task.
    planned_at : float
        Driver wall-clock time (``time.time()``) when the job was planned.
    """

    uri: str
    storage_options: tuple[tuple[str, str], ...]
    manifest_version: int
    mode: WriteMode | None
    write_options: WriteOptions
    planned_at: float

    def manifest(self) -> Manifest:
        """The ``__manifest`` of the target namespace."""
        return Manifest(self.uri, dict(self.storage_options))


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
    """

    partition_id: int
    attempt: int
    rows: int
    pending: PendingWrite | None
    mode: WriteMode = "append"


#: The session setting of Spark's file sources that :func:`_mode` honours as they do.
OVERWRITE_MODE_CONF = "spark.sql.sources.partitionOverwriteMode"


def _mode(options: SourceOptions, overwrite: bool) -> WriteMode | None:
    """The write mode, or None when it depends on the session's ``OVERWRITE_MODE_CONF``.

    PySpark does not pass the session configuration to the Python worker that plans a write,
    but Spark sets every explicitly set SQL setting as a local property of the job's tasks:
    each task reads it (:func:`_task_mode`) and the commit checks they agree.
    """
    dynamic = options.partition_overwrite_mode
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


def _task_mode() -> WriteMode:
    """The overwrite mode the session's ``OVERWRITE_MODE_CONF`` asks for (in a task)."""
    context = TaskContext.get()
    value = None if context is None else context.getLocalProperty(OVERWRITE_MODE_CONF)
    return "overwrite_partitions" if (value or "").strip().lower() == "dynamic" else "overwrite"


def _describe(ns: PartitionedNamespace) -> str:
    fields = ns.current_spec.fields
    return ", ".join(f"{f.name} = {f.expression}" for f in fields) or "unpartitioned"


def _check_partition_by(ns: PartitionedNamespace, text: str) -> None:
    unbound = parse_partition_by(text, ns.namespace_schema)
    if ns.current_spec.same_fields(unbound):
        return
    raise errors.PartitionSpecError(
        f"option partition_by={text!r} differs from the current partition spec "
        f"v{ns.current_spec.version} of {ns.uri!r} ({_describe(ns)}); drop the option to "
        f"write with the current spec, or evolve it first with "
        f"PartitionedNamespace.open({ns.uri!r}).update_partition_spec({text!r})"
    )


def _open_or_create(options: SourceOptions, arrow_schema: pa.Schema) -> PartitionedNamespace:
    storage = dict(options.storage_options)
    if not Manifest(options.uri, storage).exists():
        if options.partition_by is None:
            raise errors.InvalidInputError(
                f"no namespace exists at {options.uri!r}: the first write creates it and needs "
                "the option partition_by (e.g. .option('partition_by', 'event_date, "
                "bucket(16, user_id)'), or '' for an unpartitioned namespace)"
            )
        try:
            return PartitionedNamespace.create(
                options.uri,
                schema=arrow_schema,
                partition_by=options.partition_by,
                storage_options=storage,
            )
        except errors.NamespaceAlreadyExistsError:
            log.info("namespace %s was created concurrently: writing into it", options.uri)
    return PartitionedNamespace.open(options.uri, storage_options=storage)


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
    ns = _open_or_create(options, arrow_schema)
    target = leaf_schema(ns.namespace_schema)
    conform_for_write(arrow_schema.empty_table(), ns.namespace_schema, target)
    if options.partition_by is not None:
        _check_partition_by(ns, options.partition_by)
    defaults = WriteOptions()
    write_options = replace(
        defaults,
        max_rows_per_file=options.max_rows_per_file or defaults.max_rows_per_file,
        threads=TASK_THREADS,
    )
    job = WriteJob(
        uri=options.uri,
        storage_options=options.storage_options,
        manifest_version=ns.version,
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
        context = TaskContext.get()
        partition_id = context.partitionId() if context is not None else 0
        attempt = context.attemptNumber() if context is not None else 0
        mode = self.job.mode or _task_mode()
        first = next(iterator, None)
        if first is None:
            return StagedWrite(partition_id, attempt, 0, None, mode)
        manifest = self.job.manifest()
        snapshot = manifest.snapshot(self.job.manifest_version)
        reader = pa.RecordBatchReader.from_batches(first.schema, itertools.chain([first], iterator))
        pending = stage(
            manifest,
            snapshot,
            reader,
            mode=mode,
            target=leaf_schema(snapshot.metadata.schema),
            options=self.job.write_options,
        )
        rows = sum(leaf.rows for leaf in pending.leaves)
        return StagedWrite(partition_id, attempt, rows, pending, mode)

    def commit(self, messages: Sequence[WriterCommitMessage | None]) -> None:
        """Make every task's staged data visible in one ``__manifest`` commit (driver)."""
        manifest = self.job.manifest()
        mode = self._mode(messages)
        staged = [m.pending for m in _staged(messages) if m.pending is not None]
        if not staged and mode != "overwrite":
            log.info("nothing to commit to %s: the job wrote no rows", self.job.uri)
            return
        snapshot = manifest.snapshot(self.job.manifest_version)
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
        result = commit_write(manifest, pending)
        log.info(
            "committed %d rows into %d leaves of %s as __manifest version %d",
            result.rows,
            len(result.leaf_versions),
            self.job.uri,
            result.version,
        )

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
        """Delete the staged files of the messages Spark passes, where that is safe (driver)."""
        manifest = self.job.manifest()
        since = datetime.datetime.fromtimestamp(self.job.planned_at) - _CLOCK_MARGIN
        deleted = 0
        for message in _staged(messages):
            if message.pending is None:
                continue
            for leaf in message.pending.leaves:
                deleted += _delete_staged(manifest, leaf, since)
        log.info("aborted write to %s: deleted %d staged files", self.job.uri, deleted)


def _staged(messages: Iterable[WriterCommitMessage | None]) -> list[StagedWrite]:
    return [m for m in messages if isinstance(m, StagedWrite)]


def _data_files(fragments: Iterable[Any]) -> set[str]:
    return {data_file.path for fragment in fragments for data_file in fragment.files}


def _referenced_since(uri: str, options: dict[str, str], since: datetime.datetime) -> set[str]:
    """Data files referenced by any version of the leaf committed after ``since``."""
    try:
        dataset = lance.dataset(uri, storage_options=options or None)
    except (ValueError, OSError):
        return set()  # no dataset: nothing references anything
    referenced: set[str] = set()
    for version in dataset.versions():
        committed = cast(datetime.datetime, version["timestamp"])
        if committed >= since:
            at = dataset.checkout_version(int(version["version"]))
            referenced |= _data_files(f.metadata for f in at.get_fragments())
    return referenced


def _delete_staged(manifest: Manifest, leaf: LeafWrite, since: datetime.datetime) -> int:
    uri = manifest.table_uri(leaf.location)
    staged = _data_files(leaf.fragments)
    try:
        unreferenced = staged - _referenced_since(uri, manifest.storage_options, since)
    except Exception as exc:  # cannot tell: keep the files (invisible either way)
        log.warning("not deleting staged files of %s: %s", uri, exc)
        return 0
    # Lance's own object store, with the namespace's storage options (endpoint, credentials)
    store = lance.file.LanceFileSession(
        f"{uri}/data", storage_options=manifest.storage_options or None
    )
    deleted = 0
    for name in sorted(unreferenced):
        try:
            store.delete_file(name)
            deleted += 1
        except (OSError, ValueError, RuntimeError) as exc:
            log.warning("could not delete staged file %s/data/%s: %s", uri, name, exc)
    return deleted
