"""A Spark write creating too many small partitions warns as the Python write does
(:class:`~lance_partitioned.errors.PartitionCountWarning`, the rule of
``lance_partitioned.writing``): on the driver's commit, as a warning and a log line, which
Spark keeps in its Python worker logs (``spark.tvf.python_worker_logs()``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp

LOGGING = "spark.sql.pyspark.worker.logging.enabled"


@pytest.fixture
def worker_logs(spark: SparkSession) -> Iterator[SparkSession]:
    """The session with Python worker logging on (restored after the test)."""
    before = spark.conf.get(LOGGING, None)
    spark.conf.set(LOGGING, "true")
    yield spark
    if before is None:
        spark.conf.unset(LOGGING)
    else:
        spark.conf.set(LOGGING, before)


def _partition_count_lines(spark: SparkSession) -> list[str]:
    logs = spark.tvf.python_worker_logs().select("msg").collect()
    return [row.msg for row in logs if "new partitions averaging" in (row.msg or "")]


@pytest.mark.spark
@pytest.mark.slow  # 1,001 leaves staged and committed: ~40 s on 2 shared cores (1,000 is the rule)
def test_spark_write_of_1001_one_row_partitions_warns(
    worker_logs: SparkSession, tmp_path: Path
) -> None:
    spark = worker_logs
    uri = str(tmp_path / "ns")
    df = spark.range(1001).selectExpr("id", "id % 7 AS v").coalesce(1)
    df.write.format("lance_partitioned").mode("append").option("partition_by", "id").save(uri)
    assert lp.PartitionedNamespace.open(uri).count_rows() == 1001
    lines = _partition_count_lines(spark)
    assert any(
        uri in line and "created 1,001 new partitions averaging 1.0 rows" in line for line in lines
    ), lines  # the log line
    assert any("PartitionCountWarning" in line for line in lines), lines  # the warning
    assert any("bucket(N, col)" in line and "id = " in line for line in lines), lines


@pytest.mark.spark
def test_spark_write_of_few_partitions_does_not_warn(
    worker_logs: SparkSession, tmp_path: Path
) -> None:
    spark = worker_logs
    uri = str(tmp_path / "ns")
    df = spark.range(1000).selectExpr("id", "CAST(id % 3 AS STRING) AS k").coalesce(1)
    df.write.format("lance_partitioned").mode("append").option("partition_by", "k").save(uri)
    assert all(uri not in line for line in _partition_count_lines(spark))
