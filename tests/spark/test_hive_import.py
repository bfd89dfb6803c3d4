"""The Spark path of an import (``spark.read.parquet(tree)`` then
``write.format("lance_partitioned")``) and ``lp.import_`` of the same Hive tree, written by
Spark, give the same namespace rows (DuckDB oracle)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from tests.interop._oracle import same_rows

pytestmark = pytest.mark.spark


def test_spark_path_and_import_give_the_same_rows(spark: SparkSession, tmp_path: Path) -> None:
    rows = [
        (i, dt.date(2025, 1, 1 + i % 3), None if i % 7 == 0 else ("US" if i % 2 else "F R"))
        for i in range(40)
    ]
    frame = spark.createDataFrame(rows, "id long, day date, country string")
    tree = str(tmp_path / "tree")
    frame.write.partitionBy("day", "country").parquet(tree)

    by_spark = str(tmp_path / "by_spark")
    (
        spark.read.parquet(tree)
        .write.format("lance_partitioned")
        .mode("append")
        .option("partition_by", "day, country")
        .save(by_spark)
    )
    by_import = str(tmp_path / "by_import")
    result = lp.import_(tree, by_import)

    imported = lp.PartitionedNamespace.open(by_import)
    assert [f.name for f in imported.current_spec.fields] == ["day", "country"]
    assert result.rows == len(rows)
    same_rows(imported.to_table(), lp.PartitionedNamespace.open(by_spark).to_table())
    assert imported.count_rows("country IS NULL") == 6
