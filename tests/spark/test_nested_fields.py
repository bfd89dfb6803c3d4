"""Spark reads of struct fields (issue 33): the ``columns`` and ``filter`` options name
them by dotted path, and Spark's filters on them are pushed into the leaves."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import datasource as sds

import lance_partitioned as lp
from lance_partitioned.spark import FILTER_PUSHDOWN_CONF
from lance_partitioned.spark.options import SourceOptions
from lance_partitioned.spark.reader import make_reader
from lance_partitioned.spark.source import LancePartitionedDataSource
from lance_partitioned.verify import verify
from tests.spark.helpers import assert_same_rows

DEVICE = pa.struct([("os", pa.string()), ("ver", pa.int32())])
SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.string()), ("device", DEVICE)])
OSES = ("ios", "android", None, "ios", "linux")


def _table() -> pa.Table:
    devices = [None if i % 7 == 6 else {"os": OSES[i % 5], "ver": i % 20} for i in range(40)]
    countries = [("US", "FR", None)[i % 3] for i in range(40)]
    return pa.table(
        {"id": range(40), "country": countries, "device": pa.array(devices, DEVICE)}, SCHEMA
    )


def _ios(table: pa.Table) -> list[int]:
    return [r["id"] for r in table.to_pylist() if (r["device"] or {}).get("os") == "ios"]


@pytest.fixture
def uri(tmp_path: Path) -> str:
    lp.write(str(tmp_path / "ns"), _table(), partition_by="country")
    return str(tmp_path / "ns")


def test_options_and_pushed_filters_name_struct_fields(uri: str) -> None:
    source = LancePartitionedDataSource(
        {"path": uri, "columns": "id, device.os", "filter": "device.os = 'ios'"}
    )
    schema = source.schema()
    assert schema.fieldNames() == ["id", "device.os"]
    reader = make_reader(SourceOptions.parse(source.options), schema, None, filtering=True)
    rows = [r for split in reader.partitions() for b in reader.read(split) for r in b.to_pylist()]
    assert sorted(r["id"] for r in rows) == _ios(_table())
    assert {r["device.os"] for r in rows} == {"ios"}
    # Spark's filter on the field of a struct column it reads whole is taken
    whole = LancePartitionedDataSource({"path": uri})
    reader = make_reader(SourceOptions.parse(whole.options), whole.schema(), None, filtering=True)
    pushed = [sds.EqualTo(("device", "os"), "ios"), sds.Not(sds.IsNull(("device", "ver")))]
    assert list(reader.pushFilters(pushed)) == []
    ids = sorted(
        r["id"] for split in reader.partitions() for b in reader.read(split) for r in b.to_pylist()
    )
    assert ids == _ios(_table())


@pytest.fixture
def pushdown(spark: SparkSession) -> Iterator[None]:
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    yield
    spark.conf.set(FILTER_PUSHDOWN_CONF, "false")


@pytest.mark.spark
@pytest.mark.usefixtures("pushdown")
def test_spark_queries_on_struct_fields_match_the_source(spark: SparkSession, uri: str) -> None:
    source = spark.createDataFrame(_table())
    reader = spark.read.format("lance_partitioned")
    for query in ("device.os = 'ios'", "device.ver >= 10 AND country = 'US'"):
        assert_same_rows(reader.load(uri).where(query), source.where(query))
    plan = reader.load(uri).where("device.os = 'ios'")._jdf.queryExecution().executedPlan()
    text = plan.toString()  # taken by the source: Spark does not filter
    assert "+- Filter" not in text, text
    assert not text.startswith("*(1) Filter"), text
    picked = reader.option("columns", "id, device.os").load(uri).where("id < 10")
    assert sorted((r[0], r[1]) for r in picked.collect()) == sorted(
        (r.id, r.device.os if r.device else None) for r in source.where("id < 10").collect()
    )


EVENT = pa.struct(
    [
        ("os", pa.string()),
        ("seen", pa.timestamp("us", tz="UTC")),
        ("local", pa.timestamp("us")),
        ("price", pa.decimal128(10, 2)),
    ]
)
EVENT_SCHEMA = pa.schema([("id", pa.int64()), ("device", EVENT)])


def _events() -> pa.Table:
    start = dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc)
    devices = [
        None
        if i % 9 == 8
        else {
            "os": OSES[i % 5],
            "seen": start + dt.timedelta(hours=7 * i),
            "local": (start + dt.timedelta(hours=5 * i)).replace(tzinfo=None),
            "price": decimal.Decimal(i * 37 % 500) / 100,
        }
        for i in range(30)
    ]
    return pa.table({"id": range(30), "device": pa.array(devices, EVENT)}, EVENT_SCHEMA)


@pytest.mark.spark
@pytest.mark.usefixtures("pushdown")
def test_spark_pushes_timestamp_and_decimal_struct_field_filters(
    spark: SparkSession, tmp_path: Path
) -> None:
    uri = str(tmp_path / "ns")
    lp.write(uri, _events(), partition_by="bucket(2, id)")
    rows = [r for r in _events().to_pylist() if r["device"] is not None]
    day = dt.datetime(2025, 6, 3, tzinfo=dt.timezone.utc)
    cases = [
        (
            "device.seen >= TIMESTAMP '2025-06-03 00:00:00' "
            "AND device.seen < TIMESTAMP '2025-06-05'",
            lambda d: day <= d["seen"] < day + dt.timedelta(days=2),
        ),
        (
            "device.local > TIMESTAMP_NTZ '2025-06-02 12:00:00'",
            lambda d: d["local"] > dt.datetime(2025, 6, 2, 12),
        ),
        ("device.price >= 2.5", lambda d: d["price"] >= decimal.Decimal("2.5")),
        ("NOT device.price = 1.11", lambda d: d["price"] != decimal.Decimal("1.11")),
    ]
    reader = spark.read.format("lance_partitioned")
    for query, keep in cases:
        frame = reader.load(uri).where(query)
        assert sorted(r.id for r in frame.collect()) == [r["id"] for r in rows if keep(r["device"])]
        text = frame._jdf.queryExecution().executedPlan().toString()
        assert "Filter (" not in text, (query, text)  # taken by the source: Spark does not filter


@pytest.mark.spark
@pytest.mark.usefixtures("pushdown")
def test_spark_writes_by_struct_sources_and_their_filters_prune(
    spark: SparkSession, tmp_path: Path
) -> None:
    uri = str(tmp_path / "ns")
    source = spark.createDataFrame(_events())
    (
        source.write.format("lance_partitioned")
        .mode("append")
        .option("partition_by", "device.os, days(device.seen)")
        .save(uri)
    )
    ns = lp.PartitionedNamespace.open(uri)
    assert [ns.namespace_schema.name_of(f.source_id) for f in ns.current_spec.fields] == [
        "device.os",
        "device.seen",
    ]
    assert verify(uri).problems == []
    query = "device.os = 'ios' AND device.seen >= TIMESTAMP '2025-06-03 00:00:00'"
    assert_same_rows(
        spark.read.format("lance_partitioned").load(uri).where(query), source.where(query)
    )
    # the filters Spark pushes on the sources prune leaves
    scan = make_reader(
        SourceOptions.parse({"path": uri}),
        LancePartitionedDataSource({"path": uri}).schema(),
        None,
        filtering=True,
    )
    low = dt.datetime(2025, 6, 3, tzinfo=dt.timezone.utc)
    pushed = [sds.EqualTo(("device", "os"), "ios"), sds.GreaterThanOrEqual(("device", "seen"), low)]
    assert list(scan.pushFilters(pushed)) == []
    assert 0 < len(list(scan.partitions())) < len(ns.plan_scan())
