"""Options of the data source: every name checked, aliases, refused time travel by time."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.spark.options import OPTIONS, SourceOptions


def test_unknown_options_are_refused_with_the_supported_ones() -> None:
    with pytest.raises(errors.InvalidInputError, match="unknown option 'partiton_by'") as info:
        SourceOptions.parse({"path": "/x", "partiton_by": "day"})
    message = str(info.value)
    assert all(name.lower() in message.lower() for name in OPTIONS)
    assert "partitionOverwriteMode" in message
    assert "storage.<key>" in message
    parsed = SourceOptions.parse({"PATH": "/x", "Storage.Region": "eu", "BATCH_SIZE": "7"})
    assert (parsed.uri, parsed.storage_options, parsed.batch_size) == ("/x", (("region", "eu"),), 7)


def test_version_as_of_is_an_alias_of_version() -> None:
    assert SourceOptions.parse({"path": "/x", "versionAsOf": "4"}).version == 4
    assert SourceOptions.parse({"path": "/x", "version": "4", "versionasof": "4"}).version == 4
    with pytest.raises(errors.InvalidInputError, match="disagree"):
        SourceOptions.parse({"path": "/x", "version": "4", "versionAsOf": "5"})
    with pytest.raises(errors.InvalidInputError, match="versionAsOf='x'"):
        SourceOptions.parse({"path": "/x", "versionAsOf": "x"})


def test_timestamp_as_of_names_a_time() -> None:
    utc = dt.timezone.utc
    parsed = SourceOptions.parse({"path": "/x", "timestampAsOf": "2025-01-01"})
    assert parsed.version == dt.datetime(2025, 1, 1, tzinfo=utc)
    zoned = SourceOptions.parse({"path": "/x", "timestampasof": "2025-01-01T10:00:00+02:00"})
    assert zoned.version == dt.datetime(2025, 1, 1, 8, tzinfo=utc)
    with pytest.raises(errors.InvalidInputError, match="not a time"):
        SourceOptions.parse({"path": "/x", "timestampAsOf": "yesterday"})
    with pytest.raises(errors.InvalidInputError, match="pass one"):
        SourceOptions.parse({"path": "/x", "timestampAsOf": "2025-01-01", "version": "2"})


def test_txn_options_go_together() -> None:
    parsed = SourceOptions.parse({"path": "/x", "txnAppId": " etl ", "txnVersion": "0"})
    assert parsed.txn == ("etl", 0)
    for partial in ({"txnAppId": "etl"}, {"txnVersion": "3"}, {"txnAppId": " ", "txnVersion": "1"}):
        with pytest.raises(errors.InvalidInputError, match="go together"):
            SourceOptions.parse({"path": "/x", **partial})
    with pytest.raises(errors.InvalidInputError, match="txnVersion='-1'"):
        SourceOptions.parse({"path": "/x", "txnAppId": "etl", "txnVersion": "-1"})


def test_columns_and_filter() -> None:
    parsed = SourceOptions.parse({"path": "/x", "columns": " id, amount ,", "filter": "id > 1"})
    assert (parsed.columns, parsed.filter) == (("id", "amount"), "id > 1")
    with pytest.raises(errors.InvalidInputError, match="names no column"):
        SourceOptions.parse({"path": "/x", "columns": " , "})


@pytest.mark.spark
def test_options_on_a_real_session(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    ns = lp.PartitionedNamespace.create(
        uri, schema=pa.schema([("id", pa.int64())]), partition_by=""
    )
    ns.write(pa.table({"id": [1, 2]}))
    first = ns.version
    ns.write(pa.table({"id": [3]}))
    old = spark.read.format("lance_partitioned").option("versionAsOf", first).load(uri)
    assert old.count() == 2
    assert spark.read.format("lance_partitioned").load(uri).count() == 3
    first_time = ns.versions().column("timestamp")[first - 1].as_py()
    ns.write(pa.table({"id": [9]}))
    at = (first_time + dt.timedelta(microseconds=1)).isoformat()
    by_time = spark.read.format("lance_partitioned").option("timestampAsOf", at).load(uri)
    assert sorted(r.id for r in by_time.collect()) == [1, 2]
    with pytest.raises(Exception, match="was committed at or before"):
        spark.read.format("lance_partitioned").option("timestampAsOf", "2000-01-01").load(uri)
    with pytest.raises(Exception, match="unknown option 'verison'"):
        spark.read.format("lance_partitioned").option("verison", 1).load(uri)
    df = spark.createDataFrame([(4,)], "id long")
    with pytest.raises(Exception, match="unknown option 'compression'"):
        df.write.format("lance_partitioned").mode("append").option("compression", "zstd").save(uri)
    assert lp.PartitionedNamespace.open(uri).count_rows() == 4


CATALOG_HELP = r"CREATE TEMPORARY VIEW v USING lance_partitioned OPTIONS \(path 'uri'\)"


@pytest.mark.spark
def test_catalog_tables_fail_at_once_saying_what_works(spark: SparkSession, tmp_path: Path) -> None:
    """PySpark hands a Python data source no options for catalog tables (not even their
    location): every use of one fails, with the ways that work."""
    uri = str(tmp_path / "ns")
    df = spark.createDataFrame([(1, "US")], "id long, country string")
    attempts = {
        "saveAsTable": lambda: (
            df.write.format("lance_partitioned")
            .mode("append")
            .option("partition_by", "country")
            .saveAsTable("lp_saved")
        ),
        "writeTo": lambda: df.writeTo("lp_written").using("lance_partitioned").create(),
        "CREATE TABLE AS": lambda: spark.sql(
            f"CREATE TABLE lp_ctas USING lance_partitioned LOCATION '{uri}' AS SELECT 1 AS id"
        ),
        "INSERT INTO": lambda: spark.sql("INSERT INTO lp_created VALUES (1)"),
        "SELECT": lambda: spark.table("lp_created").collect(),
        "a table saved with a path": lambda: spark.table("lp_pathed").collect(),
    }
    try:
        spark.sql(f"CREATE TABLE lp_created (id long) USING lance_partitioned LOCATION '{uri}'")
        # with an explicit path the data is written (PySpark passes the path to the write),
        # but the table registered with it cannot be read
        df.write.format("lance_partitioned").mode("append").option(
            "partition_by", "country"
        ).option("path", str(tmp_path / "pathed")).saveAsTable("lp_pathed")
        for way, attempt in attempts.items():
            with pytest.raises(Exception, match=CATALOG_HELP) as info:
                attempt()
            assert "catalog tables" in str(info.value), way
    finally:
        for table in ("lp_saved", "lp_written", "lp_ctas", "lp_created", "lp_pathed"):
            spark.sql(f"DROP TABLE IF EXISTS {table}")
    assert not (tmp_path / "ns" / "__manifest").exists()
    pathed = spark.read.format("lance_partitioned").load(str(tmp_path / "pathed"))
    assert [tuple(r) for r in pathed.collect()] == [(1, "US")]
