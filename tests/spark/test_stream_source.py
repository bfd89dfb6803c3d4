"""The Structured Streaming source: ``spark.readStream.format("lance_partitioned")``.

Namespaces are written through the Python API between runs; each run is a query with
``Trigger.AvailableNow`` on a checkpoint, so a later run resumes where the last one stopped.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.spark import LancePartitionedDataSource
from lance_partitioned.spark.stream_source import StreamOptions
from tests.spark.helpers import assert_same_rows

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string())])


def rows(ids: range | list[int], k: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "k": [k] * len(ids)}, schema=SCHEMA)


def create(tmp_path: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=SCHEMA, partition_by="k")
    ns.write(pa.concat_tables([rows(range(10), "a"), rows(range(10, 20), "b")]))
    return ns


def stream(spark: SparkSession, uri: str, **options: str) -> DataFrame:
    reader = spark.readStream.format("lance_partitioned")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(uri)


def run(
    spark: SparkSession, uri: str, checkpoint: Path, **options: str
) -> list[tuple[int, list[int]]]:
    """Run the query on ``checkpoint`` until it has read what is there: the ids of each
    micro-batch (foreachBatch on the driver)."""
    batches: list[tuple[int, list[int]]] = []

    def collect(df: DataFrame, batch_id: int) -> None:
        batches.append((batch_id, sorted(row.id for row in df.select("id").collect())))

    query = (
        stream(spark, uri, **options)
        .writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    return batches


def emitted(batches: list[tuple[int, list[int]]]) -> list[int]:
    return sorted(i for _, ids in batches for i in ids)


@pytest.mark.spark
@pytest.mark.slow
def test_appends_are_emitted_once_across_batches_and_restarts(
    spark: SparkSession, tmp_path: Path
) -> None:
    """First the namespace as it is, then each later append once; a restart from the
    checkpoint emits nothing again, a new partition mid-stream is read whole. A Parquet sink
    counts unique ids."""
    ns = create(tmp_path)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def to_parquet() -> None:
        query = (
            stream(spark, ns.uri)
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    to_parquet()
    ns.write(rows(range(20, 25), "a"))
    ns.write(pa.concat_tables([rows(range(25, 30), "b"), rows(range(30, 40), "c")]))  # new c
    to_parquet()
    to_parquet()  # nothing new: nothing emitted
    ns.write(rows(range(40, 45), "c"))
    to_parquet()
    got = spark.read.parquet(str(out))
    assert got.count() == 45
    assert sorted(r.id for r in got.select("id").distinct().collect()) == list(range(45))
    assert_same_rows(got, spark.read.format("lance_partitioned").load(ns.uri))


@pytest.mark.spark
def test_batches_follow_versions_and_max_versions_per_trigger(
    spark: SparkSession, tmp_path: Path
) -> None:
    ns = create(tmp_path)
    for start in (20, 30, 40):
        ns.write(rows(range(start, start + 10), "a"))
    batches = run(spark, ns.uri, tmp_path / "c1", maxVersionsPerTrigger="1")
    # the snapshot of the latest version, alone: the versions were there before the start
    assert [ids for _, ids in batches] == [list(range(50))]
    latest = ns.version
    ns.write(rows(range(50, 52), "b"))
    ns.write(rows(range(52, 54), "b"))
    ns.write(rows(range(54, 56), "c"))
    assert [ids for _, ids in run(spark, ns.uri, tmp_path / "c1", maxVersionsPerTrigger="2")] == [
        [50, 51, 52, 53],
        [54, 55],
    ]
    # startingVersion: the changes of that version and later ones, one version per batch
    batches = run(
        spark, ns.uri, tmp_path / "c2", startingVersion=str(latest - 1), maxVersionsPerTrigger="1"
    )
    assert [ids for _, ids in batches] == [
        list(range(30, 40)),
        list(range(40, 50)),
        [50, 51],
        [52, 53],
        [54, 55],
    ]


class Running:
    """A query left running (default trigger) on a checkpoint: :meth:`drain` waits until it
    has read what is there and returns the ids it emitted since the last call."""

    def __init__(self, spark: SparkSession, uri: str, checkpoint: Path, **options: str) -> None:
        self.batches: list[list[dict[str, Any]]] = []
        self._seen = 0

        def collect(df: DataFrame, batch_id: int) -> None:
            self.batches.append([row.asDict() for row in df.collect()])

        self.query = (
            stream(spark, uri, **options)
            .writeStream.foreachBatch(collect)
            .option("checkpointLocation", str(checkpoint))
            .start()
        )

    def drain(self) -> list[int]:
        self.query.processAllAvailable()
        new = self.batches[self._seen :]
        self._seen = len(self.batches)
        return sorted(row["id"] for batch in new for row in batch)

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc: object) -> None:
        self.query.stop()


@pytest.mark.spark
def test_starting_version_latest_and_starting_timestamp(
    spark: SparkSession, tmp_path: Path
) -> None:
    ns = create(tmp_path)
    with Running(spark, ns.uri, tmp_path / "latest", startingVersion="latest") as latest:
        assert latest.drain() == []
        now = dt.datetime.now(dt.timezone.utc)
        marker = now.replace(microsecond=now.microsecond // 1000 * 1000)  # Lance keeps ms
        ns.write(rows([100], "a"))
        assert latest.drain() == [100]
    since = marker.isoformat()
    assert emitted(run(spark, ns.uri, tmp_path / "since", startingTimestamp=since)) == [100]
    future = (marker + dt.timedelta(days=1)).isoformat()
    with Running(spark, ns.uri, tmp_path / "future", startingTimestamp=future) as later:
        assert later.drain() == []  # after the last commit: from the next one on
        ns.write(rows([101], "b"))
        assert later.drain() == [101]
    # startingVersion 1: the changes of every version since the namespace's creation
    assert emitted(run(spark, ns.uri, tmp_path / "all", startingVersion="1")) == [
        *range(20),
        100,
        101,
    ]
    with pytest.raises(StreamingQueryException, match="the latest __manifest version"):
        run(spark, ns.uri, tmp_path / "beyond", startingVersion=str(ns.version + 1))


@pytest.mark.spark
def test_a_rewrite_fails_the_stream_unless_skipped(spark: SparkSession, tmp_path: Path) -> None:
    ns = create(tmp_path)
    checkpoint, skipping = tmp_path / "strict", tmp_path / "skip"
    assert emitted(run(spark, ns.uri, checkpoint)) == list(range(20))
    assert emitted(run(spark, ns.uri, skipping, skipChangeCommits="true")) == list(range(20))
    ns.write(rows([20], "a"))
    ns.write(pa.concat_tables([rows([21], "a"), rows([22], "d")]), mode="overwrite_partitions")
    ns.write(rows([23], "b"))
    overwrite = ns.version - 1
    with pytest.raises(StreamingQueryException) as failure:
        run(spark, ns.uri, checkpoint)
    text = str(failure.value)
    assert "ChangeCommitError" in text
    assert f"__manifest version {overwrite} of" in text
    assert "write (mode overwrite_partitions)" in text
    assert "skipChangeCommits" in text
    # skipping: the overwrite's version is skipped whole (its new partition d included)
    assert emitted(run(spark, ns.uri, skipping, skipChangeCommits="true")) == [20, 23]
    ns.delete("id = 23")
    ns.write(rows([24], "b"))
    assert emitted(run(spark, ns.uri, skipping, skipChangeCommits="true")) == [24]


@pytest.mark.spark
@pytest.mark.slow
def test_compaction_and_a_filter_never_fail_the_stream(spark: SparkSession, tmp_path: Path) -> None:
    ns = create(tmp_path)
    filtered = {"filter": "k = 'b'", "columns": "id"}
    assert emitted(run(spark, ns.uri, tmp_path / "all")) == list(range(20))
    assert emitted(run(spark, ns.uri, tmp_path / "b", **filtered)) == list(range(10, 20))
    ns.write(rows([20], "a"))
    ns.write(rows([21], "b"))
    assert ns.optimize().leaves_compacted == 2
    assert emitted(run(spark, ns.uri, tmp_path / "all")) == [20, 21]  # compaction: nothing
    ns.write(rows([22], "a"), mode="overwrite_partitions")  # not in the filtered stream
    ns.write(rows([23], "b"))
    assert emitted(run(spark, ns.uri, tmp_path / "b", **filtered)) == [21, 23]
    with pytest.raises(StreamingQueryException, match="ChangeCommitError"):
        run(spark, ns.uri, tmp_path / "all")


@pytest.mark.spark
def test_schema_evolution_while_streaming(spark: SparkSession, tmp_path: Path) -> None:
    """A column added later is not in the running stream's schema; a column of the stream
    that is dropped fails it, until the query restarts with the current schema."""
    ns = create(tmp_path)
    ns.add_columns([pa.field("note", pa.string())])
    checkpoint = tmp_path / "checkpoint"
    with Running(spark, ns.uri, checkpoint) as running:
        assert running.drain() == list(range(20))
        ns.add_columns([pa.field("extra", pa.int32())])
        ns.write(pa.table({"id": [20], "k": ["a"], "note": ["x"], "extra": [1]}))
        assert running.drain() == [20]
        assert running.batches[-1] == [{"id": 20, "k": "a", "note": "x"}]
        ns.drop_columns(["note"])
        ns.write(pa.table({"id": [21], "k": ["b"], "extra": [2]}))
        with pytest.raises(StreamingQueryException) as failure:
            running.drain()
    text = str(failure.value)
    assert "SchemaMismatchError" in text
    assert "column 'note' of the stream (string) is not in it" in text
    with Running(spark, ns.uri, checkpoint) as restarted:  # the current schema
        assert restarted.drain() == [21]
        # (the failed micro-batch may end before the write: it is then empty)
        assert [row for batch in restarted.batches for row in batch] == [
            {"id": 21, "k": "b", "extra": 2}
        ]


@pytest.mark.spark
def test_a_replayed_batch_reads_with_the_restarted_schema(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A micro-batch Spark runs again after a restart (its commit record missing: a crash
    before the checkpoint) ends before a column the restarted stream reads was added: its
    rows read NULL there, and nothing is emitted twice or lost."""
    ns = create(tmp_path)
    checkpoint = tmp_path / "checkpoint"
    assert emitted(run(spark, ns.uri, checkpoint)) == list(range(20))
    ns.write(rows([20], "a"))
    assert emitted(run(spark, ns.uri, checkpoint)) == [20]
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
    ns.add_columns([pa.field("extra", pa.int32())])
    ns.write(pa.table({"id": [21], "k": ["b"], "extra": [5]}))
    with Running(spark, ns.uri, checkpoint) as restarted:
        assert restarted.drain() == [20, 21]
    assert sorted((row for batch in restarted.batches for row in batch), key=str) == [
        {"id": 20, "k": "a", "extra": None},
        {"id": 21, "k": "b", "extra": 5},
    ]


@pytest.mark.spark
@pytest.mark.slow
def test_a_stream_from_one_namespace_into_another(spark: SparkSession, tmp_path: Path) -> None:
    """readStream from namespace A, writeStream into namespace B: B equals A after every
    round, restarts included."""
    source = create(tmp_path)
    target = str(tmp_path / "target")
    checkpoint = tmp_path / "checkpoint"

    def copy() -> None:
        query = (
            stream(spark, source.uri, maxVersionsPerTrigger="2")
            .writeStream.format("lance_partitioned")
            .option("checkpointLocation", str(checkpoint))
            .option("partition_by", "k")
            .trigger(availableNow=True)
            .start(target)
        )
        query.awaitTermination()

    def same() -> None:
        assert_same_rows(
            spark.read.format("lance_partitioned").load(target),
            spark.read.format("lance_partitioned").load(source.uri),
        )

    copy()
    same()
    for round_ in range(3):
        for part in ("a", "b", f"new{round_}"):
            start = 100 * (round_ + 1) + 10 * ("ab".find(part) + 1)
            source.write(rows(range(start, start + 5), part))
        copy()
        same()
    copy()
    same()


def test_stream_options_are_checked(tmp_path: Path) -> None:
    assert StreamOptions.parse({"startingversion": "7"}).starting == 7
    when = StreamOptions.parse({"startingTimestamp": "2025-01-02"}).starting
    assert when == dt.datetime(2025, 1, 2, tzinfo=dt.timezone.utc)
    assert StreamOptions.parse({"skipChangeCommits": "TRUE"}).skip_change_commits
    for options, message in [
        ({"startingVersion": "1", "startingTimestamp": "2025-01-01"}, "pass one of them"),
        ({"startingVersion": "first"}, "must be a __manifest version number"),
        ({"startingTimestamp": "yesterday"}, "is not a time"),
        ({"skipChangeCommits": "yes"}, "must be 'true' or 'false'"),
        ({"maxVersionsPerTrigger": "0"}, "must be an integer >= 1"),
        ({"versionAsOf": "3"}, "is for batch reads"),
    ]:
        with pytest.raises(errors.InvalidInputError, match=message):
            StreamOptions.parse(options)


def test_a_batch_read_refuses_streaming_options(tmp_path: Path) -> None:
    ns = create(tmp_path)
    source = LancePartitionedDataSource({"path": ns.uri, "startingVersion": "1"})
    with pytest.raises(errors.InvalidInputError, match="is for streaming reads"):
        source.reader(source.schema())


def test_a_stream_behind_a_cleanup_is_told_how_to_resume(tmp_path: Path) -> None:
    """The driver's source (in this process, as PySpark runs it) has planned up to version
    3; version 4 appends to leaf 'a'; a cleanup keeps only version 4. Planning 3 -> 4
    compares leaf 'a' at the version 3 pinned (cached, removed): a damaged namespace was
    reported."""
    ns = create(tmp_path)
    source = LancePartitionedDataSource({"path": ns.uri})
    reader = source.streamReader(source.schema())
    start = reader.initialOffset()
    assert reader.partitions(start, {"version": ns.version})  # the snapshot of version 3
    read = ns.version
    ns.write(rows([20], "a"))
    ns.cleanup(dt.timedelta(0))
    with pytest.raises(errors.TableVersionNotFoundError) as failure:
        reader.partitions({"version": read}, {"version": read + 1})
    text = str(failure.value)
    assert f"__manifest version {read} of {ns.uri!r}, and version " in text
    assert "a cleanup removed them" in text
    assert "Start a new query (new checkpoint) with startingVersion='latest'" in text
    assert "cleanup(older_than=...)" in text


def test_a_cleanup_while_a_micro_batch_reads_is_named(tmp_path: Path) -> None:
    """A micro-batch (3 -> 4) is planned; version 5 appends to the same leaf and a cleanup
    removes version 4 and the leaf version it pinned before the task reads it."""
    ns = create(tmp_path)
    source = LancePartitionedDataSource({"path": ns.uri})
    reader = source.streamReader(source.schema())
    read = ns.version
    ns.write(rows([20], "a"))
    (split,) = reader.partitions({"version": read}, {"version": read + 1})
    assert [b.num_rows for b in reader.read(split)] == [1]  # read in time: fine
    ns.write(rows([21], "a"))
    ns.cleanup(dt.timedelta(0))
    with pytest.raises(errors.TableVersionNotFoundError) as failure:
        list(reader.read(split))
    text = str(failure.value)
    assert f"__manifest version {read + 1} of {ns.uri!r} is not there: a cleanup" in text
    assert "startingVersion='latest'" in text
