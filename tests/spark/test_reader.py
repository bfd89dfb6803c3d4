"""Spark reads: pushed filters prune leaves, splits are bin-packed, one __manifest version.

The first tests drive the reader in this process as Spark's planner would; the ``spark``
ones run real queries on the shared local session and compare with the same query on the
source DataFrame.
"""

from __future__ import annotations

import datetime as dt
import pickle
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import datasource as sds
from pyspark.sql.types import LongType, StringType, StructField, StructType

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.ingest import WriteOptions
from lance_partitioned.spark import FILTER_PUSHDOWN_CONF
from lance_partitioned.spark.options import SourceOptions
from lance_partitioned.spark.reader import (
    FilteringReader,
    LancePartitionedReader,
    LeafSplit,
    make_reader,
    pack_splits,
)
from lance_partitioned.spark.source import LancePartitionedDataSource
from tests.spark.helpers import assert_same_rows

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("country", pa.string()),
        pa.field("amount", pa.float64()),
    ]
)
COUNTRIES = ("US", "FR", "DE", None)


def table(ids: range) -> pa.Table:
    start = dt.datetime(2025, 1, 1, tzinfo=UTC)
    return pa.table(
        {
            "id": list(ids),
            "ts": [start + dt.timedelta(hours=7 * i) for i in ids],
            "country": [COUNTRIES[i % 4] for i in ids],
            "amount": [i * 0.5 for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture
def ns(tmp_path: Path) -> lp.PartitionedNamespace:
    with pytest.warns(lp.AmbiguousPartitionWarning, match="month of the YEAR"):
        ns = lp.PartitionedNamespace.create(
            str(tmp_path / "ns"), schema=SCHEMA, partition_by="month(ts), country"
        )
    ns.write(table(range(400)))  # 400 x 7 h: January to April, 4 x 4 leaves
    return ns


def planned_reader(ns: lp.PartitionedNamespace, **options: str) -> LancePartitionedReader:
    source = LancePartitionedDataSource({"path": ns.uri, **options})
    schema = source.schema()
    return make_reader(SourceOptions.parse(source.options), schema, ns.version, filtering=True)


def read_ids(reader: LancePartitionedReader) -> list[int]:
    found = []
    for split in reader.partitions():
        for batch in reader.read(split):
            found.extend(batch.column("id").to_pylist())
    return sorted(found)


# ------------------------------------------------------------------------ in this process


def test_pushed_filters_prune_and_the_rest_stays_with_spark(ns: lp.PartitionedNamespace) -> None:
    reader = planned_reader(ns)
    assert isinstance(reader, FilteringReader)
    pushed = [
        sds.EqualTo(("country",), "FR"),
        sds.GreaterThanOrEqual(("ts",), dt.datetime(2025, 3, 1, tzinfo=UTC)),
        sds.GreaterThan(("amount",), 10.0),  # floating point: Spark's own NaN order
        sds.StringEndsWith(("country",), "R"),
    ]
    rest = list(reader.pushFilters(pushed))
    assert [id(f) for f in rest] == [id(pushed[2]), id(pushed[3])]  # the same objects
    assert len(ns.plan_scan()) == 16
    # month-of-year cannot prune a time range (it wraps every year): the FR leaves remain
    assert len(reader.plan()) == 4
    expected = [
        i
        for i in range(400)
        if COUNTRIES[i % 4] == "FR"
        and dt.datetime(2025, 1, 1, tzinfo=UTC) + dt.timedelta(hours=7 * i)
        >= dt.datetime(2025, 3, 1, tzinfo=UTC)
    ]
    assert read_ids(reader) == expected


def test_filters_that_do_not_bind_stay_with_spark(ns: lp.PartitionedNamespace) -> None:
    reader = planned_reader(ns)
    mistyped = sds.EqualTo(("id",), "not a number")
    assert list(reader.pushFilters([mistyped, sds.IsNull(("country",))])) == [mistyped]
    assert [dict(t.partition_values)["country"] for t in reader.plan()] == [None] * 4


def test_a_read_planned_before_a_write_reads_the_planned_version(
    ns: lp.PartitionedNamespace,
) -> None:
    reader = planned_reader(ns)
    list(reader.pushFilters([sds.EqualTo(("country",), "US")]))
    splits = reader.partitions()
    ns.write(table(range(1000, 1100)))  # appends to every leaf the read planned
    found = sorted(i for split in splits for b in reader.read(split) for i in b["id"].to_pylist())
    assert found == [i for i in range(400) if i % 4 == 0]


def test_reader_and_splits_pickle(ns: lp.PartitionedNamespace) -> None:
    reader = planned_reader(ns)
    list(reader.pushFilters([sds.EqualTo(("country",), "US")]))
    splits = reader.partitions()
    shipped = pickle.loads(pickle.dumps(reader))
    assert read_ids(shipped) == [i for i in range(400) if i % 4 == 0]
    assert pickle.loads(pickle.dumps(splits)) == splits


def test_small_leaves_batches_are_merged_for_spark(ns: lp.PartitionedNamespace) -> None:
    """16 leaves of 25 rows reach Spark as batches of ``batch_size`` rows, not 16 tiny ones
    (each batch costs Spark a round trip), with every row once."""
    reader = planned_reader(ns, min_partitions="1")
    (split,) = reader.partitions()
    assert isinstance(split, LeafSplit)
    assert len(split.tasks) == 16
    batches = list(reader.read(split))
    assert [b.num_rows for b in batches] == [400]
    assert sorted(i for b in batches for i in b["id"].to_pylist()) == list(range(400))
    small = planned_reader(ns, min_partitions="1", batch_size="150")
    assert [b.num_rows for b in small.read(small.partitions()[0])] == [150, 150, 100]


def test_the_planning_namespace_is_not_pickled(ns: lp.PartitionedNamespace) -> None:
    reader = planned_reader(ns)
    reader.partitions()  # plans on the namespace make_reader opened
    assert reader._opened is not None
    assert pickle.loads(pickle.dumps(reader))._opened is None


def test_small_leaves_share_splits(ns: lp.PartitionedNamespace) -> None:
    tasks = ns.plan_scan()
    one = pack_splits(tasks, max_bytes=1 << 30, min_partitions=1)
    assert len(one) == 1
    assert sorted(t.object_id for t in one[0].tasks) == sorted(t.object_id for t in tasks)
    two = pack_splits(tasks, max_bytes=1 << 30, min_partitions=2)
    assert len(two) >= 2
    # a split never exceeds the size unless it holds a single piece
    tiny = pack_splits(tasks, max_bytes=1, min_partitions=1)
    assert len(tiny) == len(tasks)


def test_big_leaf_is_cut_at_fragment_boundaries(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    ns.write(table(range(0, 4000, 4)), options=WriteOptions(max_rows_per_file=100))
    (task,) = ns.plan_scan()
    fragments = task.open().get_fragments()
    assert len(fragments) == 10
    size = sum(f.metadata.files[0].file_size_bytes for f in fragments)
    splits = pack_splits([task], max_bytes=size // 3, min_partitions=1)
    assert len(splits) >= 3
    ids = [f for split in splits for t in split.tasks for f in t.fragment_ids or ()]
    assert sorted(ids) == sorted(f.fragment_id for f in fragments)
    reader = planned_reader(ns, max_partition_bytes=str(size // 3))
    assert len(reader.partitions()) == len(splits)
    assert read_ids(reader) == list(range(0, 4000, 4))


def test_user_schema_selects_columns(ns: lp.PartitionedNamespace) -> None:
    options = SourceOptions.parse({"path": ns.uri})
    schema = StructType([StructField("country", StringType()), StructField("id", LongType())])
    reader = make_reader(options, schema, None, filtering=True)
    (batch, *_) = [b for split in reader.partitions() for b in reader.read(split)]
    assert batch.schema.names == ["country", "id"]
    missing = StructType([StructField("nope", LongType())])
    with pytest.raises(errors.InvalidInputError, match="'nope'"):
        make_reader(options, missing, None, filtering=True)


def test_empty_scan_has_one_empty_split(ns: lp.PartitionedNamespace) -> None:
    reader = planned_reader(ns)
    list(reader.pushFilters([sds.EqualTo(("country",), "JP")]))
    (split,) = reader.partitions()
    assert isinstance(split, LeafSplit)
    assert split.tasks == ()
    assert list(reader.read(split)) == []


# ------------------------------------------------------------------------ real Spark jobs


def load(spark: SparkSession, uri: str, **options: str) -> DataFrame:
    reader = spark.read.format("lance_partitioned")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(uri)


QUERIES = (
    "country = 'US'",
    "country IS NULL",
    "country IN ('FR', 'DE') AND id < 300",
    "country <=> 'DE'",
    "NOT (country <=> 'DE')",
    "ts >= TIMESTAMP'2025-02-10 00:00:00' AND ts < TIMESTAMP'2025-03-01 12:00:00'",
    "country LIKE 'U%' OR id = 3",
    "country NOT IN ('US') AND amount > 50",
    "id BETWEEN 10 AND 20 AND country != 'FR'",
)


@pytest.fixture
def pushdown(spark: SparkSession) -> Iterator[None]:
    """Spark hands filters to the source during the test (off by default)."""
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    yield
    spark.conf.set(FILTER_PUSHDOWN_CONF, "false")


@pytest.mark.spark
def test_filtered_reads_match_the_source(spark: SparkSession, tmp_path: Path) -> None:
    source = spark.createDataFrame(table(range(400)))
    uri = str(tmp_path / "ns")
    writer = source.write.format("lance_partitioned").mode("append")
    writer.option("partition_by", "month(ts), country").save(uri)
    # without pushdown (the default), one loaded DataFrame serves every query
    df = load(spark, uri)
    assert df.schema.simpleString() == "struct<id:bigint,ts:timestamp,country:string,amount:double>"
    assert_same_rows(df, source)
    for query in QUERIES:
        assert_same_rows(df.where(query), source.where(query))
    assert_same_rows(df, source)
    # the Python API reads what Spark wrote
    ns = lp.PartitionedNamespace.open(uri)
    assert ns.to_table("country = 'US'").num_rows == 100
    assert ns.count_rows() == 400


@pytest.mark.spark
@pytest.mark.usefixtures("pushdown")
def test_pushed_down_reads_match_the_source(spark: SparkSession, tmp_path: Path) -> None:
    source = spark.createDataFrame(table(range(400)))
    uri = str(tmp_path / "ns")
    writer = source.write.format("lance_partitioned").mode("append")
    writer.option("partition_by", "country").save(uri)
    for query in QUERIES:  # a fresh load per query (see lance_partitioned.spark)
        assert_same_rows(load(spark, uri).where(query), source.where(query))
    # one fragment per split: the pruned query plans only the US leaf's, and drops its filter
    ns = lp.PartitionedNamespace.open(uri)
    fragments = {t.partition_values: len(t.open().get_fragments()) for t in ns.plan_scan()}
    us = load(spark, uri, max_partition_bytes="1").where("country = 'US'")
    assert us.rdd.getNumPartitions() == fragments[(("country", "US"),)]
    everything = load(spark, uri, max_partition_bytes="1")
    assert everything.rdd.getNumPartitions() == sum(fragments.values())
    plan = us._jdf.queryExecution().executedPlan().toString()
    assert "+- Filter" not in plan
    assert not plan.startswith("*(1) Filter")
    kept = load(spark, uri).where("amount > 10.5")._jdf.queryExecution().executedPlan()
    assert "Filter (" in kept.toString()  # floating point: Spark filters


@pytest.mark.spark
def test_spark_reads_what_python_wrote_and_partitions_by_size(
    spark: SparkSession, ns: lp.PartitionedNamespace
) -> None:
    df = load(spark, ns.uri)
    expected = table(range(400))
    assert sorted(r.id for r in df.select("id").collect()) == list(range(400))
    row = df.where("id = 7").collect()[0]
    assert row.ts == expected["ts"][7].as_py().replace(tzinfo=None)  # session zone is UTC
    assert load(spark, ns.uri, max_partition_bytes="1").rdd.getNumPartitions() == 16
    assert load(spark, ns.uri, min_partitions="1").rdd.getNumPartitions() == 1


@pytest.mark.spark
def test_a_loaded_dataframe_reads_one_manifest_version(
    spark: SparkSession, ns: lp.PartitionedNamespace
) -> None:
    df = load(spark, ns.uri)
    assert df.count() == 400
    version = ns.version
    ns.write(table(range(1000, 1040)))  # a concurrent Python-API write
    assert df.count() == 400
    assert df.where("country = 'US'").count() == 100  # planned anew, on the pinned version
    assert load(spark, ns.uri).count() == 440
    travelled = load(spark, ns.uri, version=str(version))
    assert Counter(r.country for r in travelled.collect())["US"] == 100


# --------------------------------------------------------------- the filter and columns options


def test_filter_option_prunes_and_filters(ns: lp.PartitionedNamespace) -> None:
    reader = planned_reader(ns, filter="country = 'US' AND amount < 100")
    assert isinstance(reader, FilteringReader)
    assert len(reader.plan()) == 4  # the US leaf of each month
    assert read_ids(reader) == [i for i in range(200) if i % 4 == 0]
    # pushed filters add to it
    list(reader.pushFilters([sds.LessThan(("id",), 20)]))
    assert read_ids(reader) == [0, 4, 8, 12, 16]
    plain = planned_reader(ns, filter="country IS NULL")
    plain.__class__ = LancePartitionedReader
    assert read_ids(plain) == [i for i in range(400) if i % 4 == 3]


def test_columns_option_selects_and_orders(ns: lp.PartitionedNamespace) -> None:
    source = LancePartitionedDataSource({"path": ns.uri, "columns": "amount, id"})
    assert source.schema().fieldNames() == ["amount", "id"]
    reader = planned_reader(ns, columns="id", filter="amount >= 199")  # filter on another column
    assert reader.job.columns == ("id",)
    assert read_ids(reader) == [398, 399]
    with pytest.raises(errors.InvalidInputError, match=r"\['nope'\]"):
        LancePartitionedDataSource({"path": ns.uri, "columns": "id, nope"}).schema()
    with pytest.raises(errors.InvalidInputError, match="no column 'nope'"):
        LancePartitionedDataSource({"path": ns.uri, "filter": "nope = 1"}).schema()


@pytest.mark.spark
def test_filter_option_is_part_of_the_relation(spark: SparkSession, tmp_path: Path) -> None:
    """The cases where pushed filters go wrong in PySpark 4.3 (a later query on the same
    DataFrame, a view queried twice, cache() after a filtered query, one load scanned twice
    with different filters) are right with the filter option."""
    source = spark.createDataFrame(table(range(400)))
    uri = str(tmp_path / "ns")
    source.write.format("lance_partitioned").mode("append").option("partition_by", "country").save(
        uri
    )
    condition = "country IN ('US', 'FR') AND amount < 150"
    expected = source.where(condition)
    df = load(spark, uri, filter=condition)
    assert_same_rows(df, expected)
    # a later query on the same DataFrame, narrower then wider
    assert_same_rows(df.where("id < 40"), expected.where("id < 40"))
    assert_same_rows(
        df.where("country = 'US' OR id = 1"), expected.where("country = 'US' OR id = 1")
    )
    assert df.count() == expected.count()
    # one load scanned twice with different Spark filters in one query
    union = df.where("id < 20").union(df.where("id >= 280"))
    assert_same_rows(union, expected.where("id < 20").union(expected.where("id >= 280")))
    joined = df.alias("a").join(df.alias("b"), "id").where("a.country = 'US'").select("id")
    assert_same_rows(joined, expected.where("country = 'US'").select("id"))
    # a temporary view queried twice, and one defined in SQL with the option
    df.createOrReplaceTempView("filtered_events")
    try:
        first = spark.sql("SELECT id FROM filtered_events WHERE id < 100")
        assert_same_rows(first, expected.where("id < 100").select("id"))
        assert spark.sql("SELECT count(*) AS n FROM filtered_events").first().n == 150
        spark.sql(
            f"CREATE OR REPLACE TEMPORARY VIEW us_events USING lance_partitioned "
            f"OPTIONS (path '{uri}', filter \"country = 'US'\", columns 'id, country')"
        )
        assert spark.sql("SELECT count(*) AS n FROM us_events").first().n == 100
        assert spark.table("us_events").columns == ["id", "country"]
    finally:
        spark.catalog.dropTempView("filtered_events")
        spark.catalog.dropTempView("us_events")
    # cache() after a filtered query
    df.where("id < 10").collect()
    cached = df.cache()
    try:
        assert cached.count() == 150
        assert_same_rows(cached, expected)
    finally:
        cached.unpersist()
    # only the matching leaves are planned (one split per fragment)
    ns = lp.PartitionedNamespace.open(uri)
    kept = [t for t in ns.plan_scan() if dict(t.partition_values)["country"] in ("US", "FR")]
    fragments = sum(len(t.open().get_fragments()) for t in kept)
    split = load(spark, uri, filter=condition, max_partition_bytes="1")
    assert split.rdd.getNumPartitions() == fragments
