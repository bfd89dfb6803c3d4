"""The Structured Streaming source: ``spark.readStream.format("lance_partitioned").load(uri)``.

Offsets are ``__manifest`` versions. The offset ``{"version": N}`` means: every row the
namespace holds at version ``N`` has been emitted (or was before the stream's start);
``{"version": S, "initial_snapshot": true}`` is a new query's start when it first emits the
whole namespace at version ``S``. A micro-batch from offset ``a`` to ``b`` emits

1. with ``initial_snapshot``, every row at version ``a`` (read as a batch read of ``a``);
2. for each version ``v`` in ``a + 1 .. b``, the rows in the fragments ``v`` appended
   (:class:`lance_partitioned.history.changes.ChangeLog` compares each leaf's fragments at its
   ``read_version`` of ``v - 1`` and of ``v``). A version that changed or removed rows
   (overwrite, ``overwrite_partitions``, ``replace_where``, delete, update, merge, a leaf
   dropped) fails the query with :class:`~lance_partitioned.errors.ChangeCommitError`,
   unless ``skipChangeCommits`` is true: then that whole version is skipped, as Delta skips
   a commit, its appended rows included. Schema/spec evolution and ``optimize``
   (compaction: same rows) emit nothing and never fail.

Where it starts, as Delta's source (``startingVersion``/``startingTimestamp`` count only for a
query without a checkpoint; a restarted query resumes from its checkpointed offset):

====================================  ==================================================
(neither)                             the whole namespace at the latest version, then
                                      every version after it
``startingVersion = N``               the changes of version ``N`` and later (no
                                      snapshot); ``"latest"``: only versions committed
                                      after the query starts
``startingTimestamp = T``             the changes of the versions committed at or after
                                      ``T`` (ISO 8601 or a date; no zone: UTC); after the
                                      last commit: as ``latest``
====================================  ==================================================

``maxVersionsPerTrigger`` bounds the versions one micro-batch covers (the initial snapshot
counts as one), as Delta's ``maxFilesPerTrigger`` bounds files; ``Trigger.AvailableNow``
honours it (several micro-batches), ``Trigger.Once`` and an explicit read-all do not. The
``filter`` and ``columns`` options work as for batch reads (leaves the filter prunes are
not compared either: their rewrites never fail the stream).

The stream's schema is fixed when the query starts (``load()``): rows are read with the
namespace schema of the batch's end version (or of the start, if later), so columns added
later are not in the stream and older rows read NULL for a column added after them. A
column of the stream that a later version drops, renames or retypes fails the batch with
:class:`~lance_partitioned.errors.SchemaMismatchError`: restart the query (it then reads the
current schema).

Reads are deterministic for a given pair of offsets: each version's fragments are read at the
leaf versions that ``__manifest`` version names, which cleanup keeps while any kept version
names them; Spark's checkpoint makes the source exactly once. A stream that falls behind a
``cleanup`` (a version it has not read, or the one before, removed with the leaf versions
it pins; when planning or while its tasks read) fails with
:class:`~lance_partitioned.errors.TableVersionNotFoundError`, naming the version and how to
resume.

>>> StreamOptions.parse({"startingVersion": "latest", "maxVersionsPerTrigger": "3"})
StreamOptions(starting='latest', skip_change_commits=False, max_versions=3)
>>> StreamOptions.parse({"startingVersion": "0"})
Traceback (most recent call last):
...
lance_partitioned.errors.InvalidInputError: option startingVersion='0' must be a __manifest ...
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from lance_partitioned import errors
from lance_partitioned.history.changes import (
    AppendedFragments,
    ChangeLog,
    kept_versions,
    removed_by_cleanup,
)
from lance_partitioned.manifest import Manifest
from lance_partitioned.manifest.versions import list_versions
from lance_partitioned.scan import ScanTask
from lance_partitioned.spark.options import STREAM_OPTIONS, SourceOptions
from lance_partitioned.spark.reader import (
    OPEN_COST_BYTES,
    LancePartitionedReader,
    LeafSplit,
    ReadJob,
    pack_splits,
)
from lance_partitioned.spark.types import spark_arrow_schema, spark_type_for
from lance_partitioned.spark.workers import freeze_worker_heap
from lance_partitioned.spec.schema import NamespaceSchema

__all__ = [
    "STREAM_OPTIONS",
    "LancePartitionedStreamReader",
    "StreamOptions",
    "StreamSplit",
    "make_stream_reader",
]

_SNAPSHOT = "initial_snapshot"


def _flag(raw: object, name: str) -> bool:
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise errors.InvalidInputError(f"option {name}={raw!r} must be 'true' or 'false'")
    return text == "true"


@dataclass(frozen=True)
class StreamOptions:
    """The streaming options, parsed (see the module docstring).

    ``starting`` is None (snapshot, then changes), ``"latest"``, a version number or a time.
    """

    starting: int | str | dt.datetime | None = None
    skip_change_commits: bool = False
    max_versions: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> StreamOptions:
        """Parse Spark's option map (names compared in lower case)."""
        lowered = {str(k).lower(): v for k, v in options.items()}
        for name in ("version", "versionasof", "timestampasof"):
            if name in lowered:
                raise errors.InvalidInputError(
                    f"option {name!r} is for batch reads: a stream starts at startingVersion "
                    "or startingTimestamp"
                )
        version, stamp = lowered.get("startingversion"), lowered.get("startingtimestamp")
        if version is not None and stamp is not None:
            raise errors.InvalidInputError(
                "options startingVersion and startingTimestamp both say where the stream "
                "starts: pass one of them"
            )
        starting: int | str | dt.datetime | None = None
        if version is not None:
            text = str(version).strip().lower()
            if text == "latest":
                starting = "latest"
            elif text.isascii() and text.isdigit() and int(text) >= 1:
                starting = int(text)
            else:
                raise errors.InvalidInputError(
                    f"option startingVersion={version!r} must be a __manifest version number "
                    "(>= 1; see ns.versions()) or 'latest'"
                )
        elif stamp is not None:
            try:
                when = dt.datetime.fromisoformat(str(stamp).strip().replace("Z", "+00:00"))
            except ValueError:
                raise errors.InvalidInputError(
                    f"option startingTimestamp={stamp!r} is not a time: give an ISO 8601 "
                    "timestamp ('2025-01-31 23:00:00', UTC without a zone) or a date"
                ) from None
            starting = when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)
        skip = lowered.get("skipchangecommits")
        raw_max = lowered.get("maxversionspertrigger")
        max_versions = None
        if raw_max is not None:
            text = str(raw_max).strip()
            if not (text.isascii() and text.isdigit() and int(text) >= 1):
                raise errors.InvalidInputError(
                    f"option maxVersionsPerTrigger={raw_max!r} must be an integer >= 1"
                )
            max_versions = int(text)
        return cls(
            starting=starting,
            skip_change_commits=False if skip is None else _flag(skip, "skipChangeCommits"),
            max_versions=max_versions,
        )


@dataclass(frozen=True)
class StreamJob:
    """What the driver and every task of a stream need (pickled into the reader)."""

    options: SourceOptions
    stream: StreamOptions
    columns: tuple[str, ...]
    spark_schema: StructType
    output_schema: pa.Schema
    #: the ``__manifest`` version whose schema the stream's schema came from
    schema_version: int | None


@dataclass(frozen=True)
class StreamSplit(InputPartition):
    """One task of a micro-batch: leaves (or appended fragments of leaves) to read, the
    namespace schema (of ``version``) the rows are conformed to, and the ``__manifest``
    version that pins each task's leaf version (in ``tasks`` order)."""

    version: int
    schema: NamespaceSchema
    tasks: tuple[ScanTask, ...]
    sources: tuple[int, ...] = ()


def make_stream_reader(
    options: Mapping[str, str], schema: StructType, schema_version: int | None
) -> LancePartitionedStreamReader:
    """The stream reader of ``schema``'s columns (the driver's, and the tasks')."""
    parsed = SourceOptions.parse(options)
    job = StreamJob(
        options=parsed,
        stream=StreamOptions.parse(options),
        columns=tuple(schema.fieldNames()),
        spark_schema=schema,
        output_schema=spark_arrow_schema(schema),
        schema_version=schema_version,
    )
    return LancePartitionedStreamReader(job)


class LancePartitionedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets, planning (driver) and reads (executors) of the streaming source."""

    def __init__(self, job: StreamJob) -> None:
        self.job = job
        self._log: ChangeLog | None = None  # the driver's, never pickled
        self._target: int | None = None  # Trigger.AvailableNow's last version
        self._schema_floor: int | None = None

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_log"] = None
        return state

    # ------------------------------------------------------------------------------ driver

    def _changes(self) -> ChangeLog:
        if self._log is None:
            options = self.job.options
            manifest = Manifest(options.uri, dict(options.storage_options))
            self._log = ChangeLog(manifest, options.filter)
        return self._log

    def _latest(self) -> int:
        if self._target is not None:
            return self._target
        return self._changes().manifest.latest_version()

    def initialOffset(self) -> dict[str, object]:
        """Where a query without a checkpoint starts (see the module docstring)."""
        latest = self._changes().manifest.latest_version()
        starting = self.job.stream.starting
        if starting is None:
            return {"version": latest, _SNAPSHOT: True}
        if starting == "latest":
            return {"version": latest}
        if isinstance(starting, int):
            if starting > latest:
                raise errors.TableVersionNotFoundError(
                    f"option startingVersion={starting}: the latest __manifest version of "
                    f"{self.job.options.uri!r} is {latest} (use 'latest' to read only what "
                    "is committed from now on)"
                )
            return {"version": starting - 1}
        assert isinstance(starting, dt.datetime)
        later = [
            info.version
            for info in list_versions(self._changes().manifest, properties=False)
            if info.timestamp is not None and info.timestamp >= starting
        ]
        return {"version": (min(later) - 1) if later else latest}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxVersionsPerTrigger`` (carried as Spark's ``ReadMaxFiles``), or everything."""
        limit = self.job.stream.max_versions
        return ReadAllAvailable() if limit is None else ReadMaxFiles(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        """``Trigger.AvailableNow``: read up to the version that is the latest now."""
        self._target = self._changes().manifest.latest_version()

    def latestOffset(self, start: dict[str, object], limit: ReadLimit) -> dict[str, object]:
        """The end offset of the next micro-batch: the latest version, at most
        ``maxVersionsPerTrigger`` versions after ``start``; ``start`` when nothing is new."""
        version = int(str(start["version"]))
        snapshot = bool(start.get(_SNAPSHOT))
        latest = self._latest()
        if latest <= version and not snapshot:
            return start
        end = max(latest, version)
        if isinstance(limit, ReadMaxFiles):
            end = min(end, version + limit.max_files - (1 if snapshot else 0))
        return {"version": end}

    def partitions(self, start: dict[str, object], end: dict[str, object]) -> list[InputPartition]:
        """The tasks of the micro-batch from ``start`` to ``end`` (see the module docstring).

        Raises
        ------
        ChangeCommitError
            A version in the range changed or removed rows (without ``skipChangeCommits``).
        SchemaMismatchError
            A column of the stream is no longer in the namespace, or has another type.
        """
        first, last = int(str(start["version"])), int(str(end["version"]))
        snapshot = bool(start.get(_SNAPSHOT))
        if last == first and not snapshot:
            return []
        changes = self._changes()
        version, schema = self._read_schema(last)
        options = self.job.options
        splits: list[InputPartition] = []
        if snapshot:
            leaves = list(changes.leaves(first).tasks.values())
            packed = pack_splits(
                leaves,
                max_bytes=options.max_partition_bytes,
                min_partitions=options.default_min_partitions(),
            )
            splits += [
                StreamSplit(version, schema, split.tasks, (first,) * len(split.tasks))
                for split in packed
            ]
        appended: list[tuple[int, AppendedFragments]] = []
        for change in changes.changes(first, last):
            if change.rewritten:
                if self.job.stream.skip_change_commits:
                    continue
                raise errors.ChangeCommitError(
                    f"__manifest version {change.version} of {options.uri!r} changed or "
                    f"removed rows ({change.describe()}); a stream of lance_partitioned "
                    "only follows appends. Set .option('skipChangeCommits', 'true') to skip "
                    "such versions (their rows are not emitted), or start a new query (new "
                    f"checkpoint) with startingVersion={change.version + 1} or from a snapshot"
                )
            appended += [(change.version, fragments) for fragments in change.appended]
        for pieces in _pack(appended, options.max_partition_bytes):
            tasks, sources = zip(*pieces, strict=True)
            splits.append(StreamSplit(version, schema, tuple(tasks), tuple(sources)))
        return splits

    def _read_schema(self, end: int) -> tuple[int, NamespaceSchema]:
        """The namespace schema rows are conformed to, and its version: the end version's,
        or that of the stream's schema if later (a micro-batch replayed after a restart may
        end before a column the restarted stream reads was added); every column of the
        stream must be in it, with its Spark type."""
        if self._schema_floor is None:  # the version the stream's schema came from, or
            # (PySpark did not keep it) the latest when this run first plans: no earlier
            self._schema_floor = (
                self.job.schema_version or self._changes().manifest.latest_version()
            )
        version = max(end, self._schema_floor)
        schema = self._changes().leaves(version).schema
        if schema is None:
            raise errors.InternalError("a stream ends at __manifest version 0")
        read = schema.read_schema()
        for field in self.job.spark_schema.fields:
            if field.name not in read.names:
                problem = "is not in it (dropped or renamed)"
            elif spark_type_for(read.field(field.name).type, field.name) != field.dataType:
                problem = f"has type {read.field(field.name).type} there"
            else:
                continue
            raise errors.SchemaMismatchError(
                f"column {field.name!r} of the stream ({field.dataType.simpleString()}) "
                f"{problem} at __manifest version {version} of {self.job.options.uri!r}: "
                "the schema of a running stream is fixed; restart the query to read with "
                f"the namespace's current schema (its columns: {read.names})"
            )
        return version, schema

    # ---------------------------------------------------------------------------- executors

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Stream one split's rows in Spark's Arrow layout (the batch reader's read path)."""
        freeze_worker_heap()
        if not isinstance(partition, StreamSplit) or not partition.tasks:
            return iter(())
        options = self.job.options
        job = ReadJob(
            uri=options.uri,
            storage_options=options.storage_options,
            manifest_version=partition.version,
            namespace_schema=partition.schema,
            columns=self.job.columns,
            output_schema=self.job.output_schema,
            filter=options.filter,
            batch_size=options.batch_size,
            max_partition_bytes=options.max_partition_bytes,
            min_partitions=1,
        )
        return self._read(LancePartitionedReader(job), partition)

    def _read(self, reader: LancePartitionedReader, split: StreamSplit) -> Iterator[pa.RecordBatch]:
        try:
            yield from reader.read(LeafSplit(split.tasks))
        # a cleanup since the batch was planned? (a leaf says so when it knows the
        # __manifest version that pins it; the stream says how to resume)
        except (errors.CorruptNamespaceError, errors.TableVersionNotFoundError) as exc:
            options = self.job.options
            manifest = Manifest(options.uri, dict(options.storage_options))
            kept = kept_versions(manifest)
            for source in sorted(set(split.sources)):
                gone = removed_by_cleanup(manifest, source, kept)
                if gone is not None:
                    raise gone from exc
            raise  # the __manifest versions still pin them: damage

    def commit(self, end: dict[str, object]) -> None:
        """Nothing to do: offsets are versions, and Spark's checkpoint keeps them."""


def _piece(task: ScanTask, fragment_ids: list[int]) -> ScanTask:
    return dataclasses.replace(task, fragment_ids=tuple(fragment_ids), row_count=None)


def _pack(
    appended: Sequence[tuple[int, AppendedFragments]], max_bytes: int
) -> list[tuple[tuple[ScanTask, int], ...]]:
    """Appended fragments (with the ``__manifest`` version that appended them) packed into
    splits of about ``max_bytes``: a leaf's fragments cut into runs of at most
    ``max_bytes``, runs packed largest first, each costing 4 MiB more (as
    :func:`lance_partitioned.spark.reader.pack_splits` packs leaves)."""
    pieces: list[tuple[ScanTask, int, int]] = []
    for version, item in appended:
        ids = item.task.fragment_ids or ()
        run: list[int] = []
        size = 0
        for fragment_id, fragment_size in zip(ids, item.sizes, strict=True):
            if run and size + fragment_size > max_bytes:
                pieces.append((_piece(item.task, run), size, version))
                run, size = [], 0
            run.append(fragment_id)
            size += fragment_size
        if run:
            pieces.append((_piece(item.task, run), size, version))
    pieces.sort(key=lambda piece: -piece[1])
    splits: list[tuple[tuple[ScanTask, int], ...]] = []
    current: list[tuple[ScanTask, int]] = []
    current_size = 0
    for task, size, version in pieces:
        if current and current_size + size > max_bytes:
            splits.append(tuple(current))
            current, current_size = [], 0
        current.append((task, version))
        current_size += size + OPEN_COST_BYTES
    if current:
        splits.append(tuple(current))
    return splits
