"""The format is available without a call (PySpark's lookup of ``pyspark_*`` modules) and
through :func:`lance_partitioned.spark.register`."""

from __future__ import annotations

import io

import pytest
from pyspark.serializers import read_int
from pyspark.sql import SparkSession
from pyspark.sql.worker import lookup_data_sources
from pyspark.worker_util import pickleSer

import lance_partitioned.spark
from lance_partitioned.spark import FILTER_PUSHDOWN_CONF, LancePartitionedDataSource


def test_pyspark_lookup_finds_the_default_source() -> None:
    out = io.BytesIO()
    lookup_data_sources._main(io.BytesIO(), out)  # what a session runs on first lookup
    out.seek(0)
    found = {}
    for _ in range(read_int(out)):
        name = out.read(read_int(out)).decode("utf-8")
        found[name] = pickleSer._read_with_length(out)
    assert found["lance_partitioned"] is LancePartitionedDataSource


@pytest.mark.spark
def test_register_can_turn_on_filter_pushdown(spark: SparkSession) -> None:
    lance_partitioned.spark.register(spark)
    assert spark.conf.get(FILTER_PUSHDOWN_CONF) == "false"
    lance_partitioned.spark.register(spark, filter_pushdown=True)
    try:
        assert spark.conf.get(FILTER_PUSHDOWN_CONF) == "true"
    finally:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "false")
