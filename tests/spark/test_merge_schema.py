"""Spark writes with option mergeSchema: new DataFrame columns are added to the namespace."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp


def test_merge_schema_adds_the_new_columns(spark: SparkSession, tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    first = spark.createDataFrame([(1, "US")], "id long, country string")
    first.write.format("lance_partitioned").mode("append").option("partition_by", "country").save(
        uri
    )
    wider = spark.createDataFrame([(2, "FR", "web")], "id long, country string, channel string")
    with pytest.raises(Exception, match="'channel' is not in the namespace schema"):
        wider.write.format("lance_partitioned").mode("append").save(uri)
    with pytest.raises(Exception, match="mergeSchema='maybe' must be"):
        wider.write.format("lance_partitioned").mode("append").option("mergeSchema", "maybe").save(
            uri
        )
    wider.write.format("lance_partitioned").mode("append").option("mergeSchema", "true").save(uri)
    ns = lp.PartitionedNamespace.open(uri)
    assert ns.schema.names == ["id", "country", "channel"]
    rows = sorted(ns.to_table().to_pylist(), key=lambda r: r["id"])
    assert rows == [
        {"id": 1, "country": "US", "channel": None},
        {"id": 2, "country": "FR", "channel": "web"},
    ]
