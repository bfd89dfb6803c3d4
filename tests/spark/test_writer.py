"""Spark writes: job planning on the driver, staging per task, one commit, abort cleanup.

The first tests drive the data source's writer in this process, as Spark would (plan on the
driver, ``write`` per task, ``commit``/``abort`` with the messages); the ``spark`` ones run
real jobs on the shared local session.
"""

from __future__ import annotations

import datetime as dt
import os
import pickle
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DateType,
    LongType,
    StringType,
    StructField,
    StructType,
    YearMonthIntervalType,
)

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.spark.source import LancePartitionedDataSource
from lance_partitioned.spark.writer import LancePartitionedWriter, StagedWrite
from tests.integration.helpers import read_leaves

SPARK_SCHEMA = StructType(
    [
        StructField("id", LongType(), False),
        StructField("event_date", DateType()),
        StructField("country", StringType()),
    ]
)


def batch(ids: range, countries: tuple[str, ...] = ("US", "FR")) -> pa.RecordBatch:
    """Rows as Spark hands them to a task (its Arrow layout for SPARK_SCHEMA)."""
    return pa.record_batch(
        {
            "id": pa.array(list(ids), pa.int64()),
            "event_date": pa.array(
                [dt.date(2025, 1, 1) + dt.timedelta(days=i % 3) for i in ids], pa.date32()
            ),
            "country": pa.array([countries[i % len(countries)] for i in ids], pa.string()),
        }
    )


def plan(uri: str, mode: str = "append", **options: str) -> LancePartitionedWriter:
    source = LancePartitionedDataSource({"path": uri, **options})
    writer = source.writer(SPARK_SCHEMA, mode == "overwrite")
    assert isinstance(writer, LancePartitionedWriter)
    # Spark pickles the writer to ship it to executors and to the commit worker
    return pickle.loads(pickle.dumps(writer))


def data_files(root: str) -> list[Path]:
    """Data files of every leaf table (not of the __manifest)."""
    return sorted(p for p in Path(root).glob("*/data/*.lance") if p.parts[-3] != "__manifest")


def ids(ns: lp.PartitionedNamespace) -> list[int]:
    return sorted(read_leaves(ns.refresh()).column("id").to_pylist())


# ------------------------------------------------------------------------ in this process


def test_first_write_needs_partition_by(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidInputError, match="partition_by"):
        plan(str(tmp_path))
    assert not (tmp_path / "__manifest").exists()


def test_tasks_stage_invisibly_and_commit_once(tmp_path: Path) -> None:
    uri = str(tmp_path)
    plan(uri, partition_by="country").commit([])  # an empty first write creates the namespace
    writer = plan(uri)
    ns = lp.PartitionedNamespace.open(uri)
    created = ns.version
    first = writer.write(iter([batch(range(10))]))
    second = writer.write(iter([batch(range(10, 15)), batch(range(15, 20))]))
    retried = writer.write(iter([batch(range(10, 15)), batch(range(15, 20))]))
    assert isinstance(first, StagedWrite)
    assert first.rows == 10
    assert len(data_files(uri)) == 6  # 2 partitions x 3 tasks, all staged
    assert ns.refresh().version == created
    assert ids(ns) == []
    # Spark hands commit one message per partition: the retried attempt's never counts
    messages = pickle.loads(pickle.dumps([first, second]))
    writer.commit(messages)
    assert ids(ns) == list(range(20))
    assert ns.refresh().version == created + 1
    assert sorted(ns.partitions().column("country").to_pylist()) == ["FR", "US"]
    assert retried.pending is not None


def test_empty_tasks_and_empty_append(tmp_path: Path) -> None:
    uri = str(tmp_path)
    plan(uri, partition_by="country").commit([])
    writer = plan(uri)
    empty = writer.write(iter([]))
    assert empty.pending is None
    assert empty.rows == 0
    version = lp.PartitionedNamespace.open(uri).version
    writer.commit([empty])
    assert lp.PartitionedNamespace.open(uri).version == version


def test_first_write_creates_the_namespace_when_it_commits(tmp_path: Path) -> None:
    uri = str(tmp_path)
    writer = plan(uri, partition_by="country")
    staged = [writer.write(iter([batch(range(6))])), writer.write(iter([batch(range(6, 9))]))]
    assert not (tmp_path / "__manifest").exists()  # staged, nothing binding yet
    # another first write with another spec may go first: this one then fails at commit
    other = plan(uri, partition_by="event_date")
    writer.abort(staged)
    assert data_files(uri) == []
    other.commit([other.write(iter([batch(range(3))]))])
    ns = lp.PartitionedNamespace.open(uri)
    assert [f.name for f in ns.current_spec.fields] == ["event_date"]
    late = plan(str(tmp_path / "late"), partition_by="country")
    early = plan(str(tmp_path / "late"), partition_by="event_date")
    early.commit([early.write(iter([batch(range(3))]))])
    with pytest.raises(errors.PartitionSpecError, match="while this job ran"):
        late.commit([late.write(iter([batch(range(3))]))])
    # the same spec planned twice: both commit into one namespace
    twice = [plan(str(tmp_path / "twice"), partition_by="country") for _ in range(2)]
    for i, writer in enumerate(twice):
        writer.commit([writer.write(iter([batch(range(10 * i, 10 * i + 4))]))])
    assert ids(lp.PartitionedNamespace.open(str(tmp_path / "twice"))) == [
        0,
        1,
        2,
        3,
        10,
        11,
        12,
        13,
    ]


def test_abort_deletes_staged_files(tmp_path: Path) -> None:
    uri = str(tmp_path)
    plan(uri, partition_by="country").commit([])  # create the namespace
    writer = plan(uri)
    writer.commit([writer.write(iter([batch(range(4))]))])
    kept = data_files(uri)
    version = lp.PartitionedNamespace.open(uri).version
    writer = plan(uri)
    staged = writer.write(iter([batch(range(100, 110))]))
    assert len(data_files(uri)) == len(kept) + 2
    writer.abort([staged, None])
    assert data_files(uri) == kept
    ns = lp.PartitionedNamespace.open(uri)
    assert ns.version == version
    assert ids(ns) == [0, 1, 2, 3]


def journals(root: Path) -> list[Path]:
    return sorted((root / "_spark_staging").glob("*/*.json"))


def test_files_of_unused_attempts_are_deleted(tmp_path: Path) -> None:
    uri = str(tmp_path)
    plan(uri, partition_by="country").commit([])
    writer = plan(uri)
    first = writer.stage_task(iter([batch(range(10))]), 0, 0)
    writer.stage_task(iter([batch(range(10))]), 0, 1)  # a speculative copy of task 0
    writer.stage_task(iter([batch(range(10, 20))]), 1, 0)  # failed after staging: no message
    second = writer.stage_task(iter([batch(range(10, 20))]), 1, 1)
    assert len(data_files(uri)) == 8
    assert len(journals(tmp_path)) == 4
    writer.commit([first, second])
    assert ids(lp.PartitionedNamespace.open(uri)) == list(range(20))
    kept = data_files(uri)
    assert len(kept) == 4  # the used attempts' files only
    assert journals(tmp_path) == []
    # abort deletes what every attempt staged, messages or not
    writer = plan(uri)
    writer.stage_task(iter([batch(range(30, 40))]), 0, 0)
    passed = writer.stage_task(iter([batch(range(40, 50))]), 1, 0)
    writer.abort([None, passed])
    assert data_files(uri) == kept
    assert journals(tmp_path) == []
    # an attempt that finishes staging after the job was aborted removes its own files
    writer.stage_task(iter([batch(range(50, 60))]), 2, 0)
    assert data_files(uri) == kept
    assert journals(tmp_path) == []


def test_a_replayed_transaction_writes_nothing(tmp_path: Path) -> None:
    uri = str(tmp_path)
    writer = plan(uri, partition_by="country", txnAppId="etl", txnVersion="4")
    writer.commit([writer.write(iter([batch(range(5))]))])
    ns = lp.PartitionedNamespace.open(uri)
    version, kept = ns.version, data_files(uri)
    replay = plan(uri, txnAppId="etl", txnVersion="4")
    replay.commit([replay.write(iter([batch(range(5))]))])
    assert ns.refresh().version == version
    assert ids(ns) == list(range(5))
    assert data_files(uri) == kept  # the replay's staged files are deleted
    assert journals(tmp_path) == []
    following = plan(uri, txnAppId="etl", txnVersion="5")
    following.commit([following.write(iter([batch(range(5, 7))]))])
    assert ids(ns) == list(range(7))


def test_the_driver_commit_records_its_operation(tmp_path: Path) -> None:
    uri = str(tmp_path)
    writer = plan(uri, partition_by="country", txnAppId="etl", txnVersion="4")
    writer.commit([writer.write(iter([batch(range(5))])), writer.write(iter([batch(range(5, 8))]))])
    last = lp.PartitionedNamespace.open(uri).versions().to_pylist()[-1]
    assert (last["operation"], last["mode"], last["rows_added"]) == ("write", "append", 8)
    assert (last["rows_removed"], last["partitions_touched"]) == (0, 2)
    properties = dict(last["properties"])
    assert properties["lance_partitioned.engine"] == "spark"
    assert properties["lance_partitioned.txn_app_id"] == "etl"
    assert properties["lance_partitioned.txn_version"] == "4"


def test_abort_keeps_files_a_leaf_version_references(tmp_path: Path) -> None:
    uri = str(tmp_path)
    writer = plan(uri, partition_by="country")
    staged = writer.write(iter([batch(range(6))]))
    writer.commit([staged])
    writer.abort([staged])  # e.g. Spark aborting after a commit that did happen
    assert ids(lp.PartitionedNamespace.open(uri)) == list(range(6))


def test_later_write_with_another_partition_by_is_refused(tmp_path: Path) -> None:
    uri = str(tmp_path)
    plan(uri, partition_by="country").commit([])
    plan(uri, partition_by="country")  # the same spec is fine
    with pytest.raises(errors.PartitionSpecError, match="update_partition_spec") as info:
        plan(uri, partition_by="event_date, country")
    assert "country = col" in str(info.value)


def test_schema_and_types_are_checked_when_the_job_is_planned(tmp_path: Path) -> None:
    uri = str(tmp_path)
    plan(uri, partition_by="country").commit([])
    extra = StructType([*SPARK_SCHEMA.fields, StructField("note", StringType())])
    with pytest.raises(errors.SchemaMismatchError, match="'note'"):
        LancePartitionedDataSource({"path": uri}).writer(extra, False)
    interval = StructType([StructField("age", YearMonthIntervalType())])
    with pytest.raises(errors.UnknownTypeError, match="'age'"):
        LancePartitionedDataSource({"path": str(tmp_path / "new"), "partition_by": ""}).writer(
            interval, False
        )


def test_bad_options(tmp_path: Path) -> None:
    uri = str(tmp_path)
    with pytest.raises(errors.InvalidInputError, match=r"mode\('overwrite'\)"):
        plan(uri, partition_by="country", overwrite="partitions")
    with pytest.raises(errors.InvalidInputError, match="'everything'"):
        plan(uri, "overwrite", partition_by="country", overwrite="everything")
    with pytest.raises(errors.InvalidInputError, match="time travel"):
        plan(uri, partition_by="country", version="1")
    with pytest.raises(errors.InvalidInputError, match="path"):
        LancePartitionedDataSource({}).writer(SPARK_SCHEMA, False)


# ------------------------------------------------------------------------ real Spark jobs


def events(spark: SparkSession, start: int, end: int, partitions: int = 3) -> DataFrame:
    return spark.range(start, end, numPartitions=partitions).select(
        F.col("id"),
        F.date_add(F.lit(dt.date(2025, 1, 1)), (F.col("id") % 4).cast("int")).alias("event_date"),
        F.element_at(
            F.array(*map(F.lit, ["US", "FR", "DE"])), (F.col("id") % 3 + 1).cast("int")
        ).alias("country"),
    )


def save(df: DataFrame, uri: str, mode: str = "append", **options: str) -> None:
    writer = df.write.format("lance_partitioned").mode(mode)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(uri)


@pytest.mark.spark
def test_append_overwrite_and_dynamic_overwrite(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    save(events(spark, 0, 300), uri, partition_by="event_date, country")
    ns = lp.PartitionedNamespace.open(uri)
    assert ids(ns) == list(range(300))
    assert len(ns.partitions()) == 12  # 4 days x 3 countries
    save(events(spark, 300, 400), uri)
    assert ids(ns) == list(range(400))
    # dynamic: only (2025-01-01, *) partitions are replaced
    only_first_day = events(spark, 1000, 1012).where("event_date = DATE'2025-01-01'")
    save(only_first_day, uri, "overwrite", overwrite="partitions")
    table = read_leaves(ns.refresh())
    first_day = table.filter(pa.compute.equal(table["event_date"], dt.date(2025, 1, 1)))
    assert sorted(first_day["id"].to_pylist()) == [1000, 1004, 1008]
    assert table.num_rows == 400 - 100 + 3  # the 100 rows of day one replaced by 3
    save(events(spark, 5000, 5010), uri, "overwrite")
    assert ids(ns) == list(range(5000, 5010))


@pytest.mark.spark
def test_failed_job_leaves_nothing_visible(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    save(events(spark, 0, 30), uri, partition_by="country")
    version = lp.PartitionedNamespace.open(uri).version

    failing = events(spark, 30, 120, partitions=3).withColumn(
        "id",
        F.when(F.col("id") == 77, F.raise_error(F.lit("injected failure"))).otherwise(F.col("id")),
    )
    with pytest.raises(Exception, match="injected failure"):
        save(failing, uri)
    ns = lp.PartitionedNamespace.open(uri)
    assert ns.version == version
    assert ids(ns) == list(range(30))


def leaf_files(root: str) -> tuple[int, int]:
    """Files, and their bytes, in every leaf directory (not the __manifest)."""
    found = [
        p
        for p in Path(root).glob("*/**/*")
        if p.is_file() and p.relative_to(root).parts[0] not in ("__manifest", "_spark_staging")
    ]
    return len(found), sum(p.stat().st_size for p in found)


@pytest.mark.spark
def test_failed_job_leaves_no_staged_files(spark: SparkSession, tmp_path: Path) -> None:
    """A task whose last rows fail in Spark has staged the rest (6 files, 0.8 MB were left
    on disk before): the job's abort removes what every attempt staged."""
    uri = str(tmp_path / "ns")
    save(events(spark, 0, 30), uri, partition_by="country")
    before = leaf_files(uri)
    rows = 300_000
    failing = events(spark, 30, 30 + rows).withColumn(
        "id",
        F.when(F.col("id") == 30 + rows - 5, F.raise_error(F.lit("injected failure"))).otherwise(
            F.col("id")
        ),
    )
    with pytest.raises(Exception, match="injected failure"):
        save(failing, uri)
    assert leaf_files(uri) == before
    assert journals(tmp_path / "ns") == []
    assert ids(lp.PartitionedNamespace.open(uri)) == list(range(30))


@pytest.mark.spark
def test_failed_first_write_binds_nothing(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    failing = events(spark, 0, 90).withColumn(
        "id",
        F.when(F.col("id") == 77, F.raise_error(F.lit("injected failure"))).otherwise(F.col("id")),
    )
    with pytest.raises(Exception, match="injected failure"):
        save(failing, uri, partition_by="country")
    assert not os.path.exists(os.path.join(uri, "__manifest"))
    save(events(spark, 0, 90), uri, partition_by="event_date")  # the retry, another spec
    ns = lp.PartitionedNamespace.open(uri)
    assert [f.name for f in ns.current_spec.fields] == ["event_date"]
    assert ids(ns) == list(range(90))


@pytest.mark.spark
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_retried_task_never_duplicates_rows(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    marker = tmp_path / "failed-once"

    @F.udf("long")
    def fail_first_attempt(value):  # no hints: PySpark would read them as a pandas UDF
        if value == 50 and not marker.exists():
            marker.touch()
            raise ValueError("first attempt fails")
        return value

    df = events(spark, 0, 90, partitions=3).withColumn("id", fail_first_attempt("id"))
    save(df, uri, partition_by="country")
    assert marker.exists()
    assert ids(lp.PartitionedNamespace.open(uri)) == list(range(90))


@pytest.mark.spark
def test_unsupported_type_fails_at_job_start(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    df = spark.sql("SELECT 1 AS id, INTERVAL '2' YEAR AS age")
    with pytest.raises(Exception, match="column 'age'"):
        save(df, uri, partition_by="id")
    assert not os.path.exists(os.path.join(uri, "__manifest"))


OVERWRITE_MODE_CONF = "spark.sql.sources.partitionOverwriteMode"


@pytest.mark.spark
@pytest.mark.parametrize(
    ("conf", "option"),
    [(None, None), ("dynamic", None), ("dynamic", "static"), ("static", "dynamic")],
)
def test_partition_overwrite_mode_as_parquet(
    spark: SparkSession, tmp_path: Path, conf: str | None, option: str | None
) -> None:
    """``spark.sql.sources.partitionOverwriteMode`` and the write option of the same name
    (which wins) decide what mode('overwrite') replaces, as for Spark's file sources."""
    first = events(spark, 0, 24)  # 3 countries
    second = events(spark, 100, 101)  # one row, in one country
    lance_uri, parquet_uri = str(tmp_path / "lance"), str(tmp_path / "parquet")
    first.write.format("lance_partitioned").mode("append").option("partition_by", "country").save(
        lance_uri
    )
    first.write.partitionBy("country").parquet(parquet_uri)
    if conf is not None:
        spark.conf.set(OVERWRITE_MODE_CONF, conf)
    try:
        lance_writer = second.write.format("lance_partitioned").mode("overwrite")
        parquet_writer = second.write.mode("overwrite").partitionBy("country")
        if option is not None:
            lance_writer = lance_writer.option("partitionOverwriteMode", option)
            parquet_writer = parquet_writer.option("partitionOverwriteMode", option)
        lance_writer.save(lance_uri)
        parquet_writer.parquet(parquet_uri)
    finally:
        spark.conf.unset(OVERWRITE_MODE_CONF)
    expected = sorted(r.id for r in spark.read.parquet(parquet_uri).collect())
    assert ids(lp.PartitionedNamespace.open(lance_uri)) == expected
    dynamic = (option or conf) == "dynamic"
    assert len(expected) == (17 if dynamic else 1)


def test_partition_overwrite_mode_option(tmp_path: Path) -> None:
    uri = str(tmp_path)
    plan(uri, partition_by="country").commit([])
    assert plan(uri, "overwrite", partitionOverwriteMode="DYNAMIC").job.mode == (
        "overwrite_partitions"
    )
    assert plan(uri, "overwrite", partitionOverwriteMode="static").job.mode == "overwrite"
    assert plan(uri, "overwrite").job.mode is None  # the tasks read the session's setting
    assert plan(uri, partitionOverwriteMode="dynamic").job.mode == "append"
    with pytest.raises(errors.InvalidInputError, match="contradict"):
        plan(uri, "overwrite", overwrite="partitions", partitionOverwriteMode="static")
    with pytest.raises(errors.InvalidInputError, match="'static'"):
        plan(uri, "overwrite", partitionOverwriteMode="sometimes")
    # a task outside Spark reads no session setting: a static overwrite, as Spark's default
    writer = plan(uri, "overwrite")
    staged = writer.write(iter([batch(range(3))]))
    assert staged.mode == "overwrite"
    with pytest.raises(errors.InvalidInputError, match="ran no Spark task"):
        writer.commit([])


@pytest.mark.spark
def test_foreach_batch_replay_after_a_crash_writes_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A streaming query writing each micro-batch with txnAppId/txnVersion = its batch id
    crashes after a commit, before its checkpoint records the batch; the restarted query
    replays the batch and the write recognises it."""
    source, uri = tmp_path / "in", str(tmp_path / "ns")
    for part in range(3):
        events(spark, 100 * part, 100 * part + 100, partitions=1).write.parquet(
            str(source / f"part={part}")
        )
    crashed = tmp_path / "crashed"

    def write(batch_df: DataFrame, batch_id: int) -> None:
        batch_df.write.format("lance_partitioned").mode("append").option(
            "partition_by", "country"
        ).option("txnAppId", "events-sink").option("txnVersion", batch_id).save(uri)
        if batch_id == 1 and not crashed.exists():
            crashed.touch()
            raise RuntimeError("crash after the commit of batch 1")

    def run() -> None:
        query = (
            spark.readStream.schema(events(spark, 0, 1).schema)
            .option("maxFilesPerTrigger", 1)
            .parquet(str(source / "part=*"))
            .writeStream.foreachBatch(write)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()

    with pytest.raises(Exception, match="crash after the commit of batch 1"):
        run()
    assert len(ids(lp.PartitionedNamespace.open(uri))) == 200  # batches 0 and 1
    run()  # restarts from the checkpoint: batch 1 again, then batch 2
    assert ids(lp.PartitionedNamespace.open(uri)) == list(range(300))


@pytest.mark.spark
def test_a_job_creating_a_namespace_checks_column_names(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A first write through Spark builds the namespace metadata as ``create`` does
    (``NamespaceMetadata.create``): a column Lance cannot store is refused with the Python
    API's SchemaError before anything is staged, not by Lance's raw error at the first write."""
    uri = str(tmp_path / "ns")
    arrow = pa.schema([("id", pa.int64()), ("dot.ted", pa.string())])
    with pytest.raises(errors.SchemaError) as python_api:
        lp.PartitionedNamespace.create(str(tmp_path / "py"), schema=arrow, partition_by="id")
    df = spark.range(0, 4, numPartitions=1).select(F.col("id"), F.lit("x").alias("dot.ted"))
    with pytest.raises(Exception, match="SchemaError") as job:
        save(df, uri, partition_by="id")
    assert str(python_api.value) in str(job.value)
    assert not (tmp_path / "ns" / "__manifest").exists()
