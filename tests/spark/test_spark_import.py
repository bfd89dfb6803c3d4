"""``lance_partitioned.spark.import_``: a Hive tree read by Spark and written through the
distributed path gives the rows ``lp.import_`` gives for the same tree (DuckDB oracle)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from lance_partitioned.spark import import_
from tests.interop._oracle import same_rows

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("format", ["parquet", "json"])
def test_spark_import_equals_import(spark: SparkSession, tmp_path: Path, format: str) -> None:
    rows = [
        (i, dt.date(2025, 1, 1 + i % 3), None if i % 7 == 0 else ("US" if i % 2 else "F R"))
        for i in range(40)
    ]
    frame = spark.createDataFrame(rows, "id long, day date, country string")
    tree = str(tmp_path / "tree")
    frame.coalesce(1).write.partitionBy("day", "country").format(format).save(tree)

    by_spark = str(tmp_path / "by_spark")
    result = import_(spark, tree, by_spark, format=format)
    expected = lp.import_(tree, str(tmp_path / "by_import"))

    imported = lp.PartitionedNamespace.open(by_spark)
    assert [f.name for f in imported.current_spec.fields] == ["day", "country"]
    assert (result.rows, result.partition_by) == (40, expected.partition_by)
    assert result.commits == 1
    assert imported.version == result.version
    python = lp.PartitionedNamespace.open(str(tmp_path / "by_import")).to_table()
    same_rows(imported.to_table(), python)
    assert imported.count_rows("country IS NULL") == 6

    if format == "parquet":  # into the existing namespace: appended
        assert import_(spark, tree, by_spark, format=format).rows == 40
        assert imported.refresh().count_rows() == 80


def test_partition_by_of_an_existing_namespace_must_match(
    spark: SparkSession, tmp_path: Path
) -> None:
    frame = spark.createDataFrame([(1, "US")], "id long, country string")
    tree = str(tmp_path / "tree")
    frame.write.partitionBy("country").parquet(tree)
    import_(spark, tree, str(tmp_path / "ns"))
    with pytest.raises(lp.errors.PartitionSpecError):
        import_(spark, tree, str(tmp_path / "ns"), partition_by="id")
