"""A Spark conf set for the length of a test."""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql import SparkSession


def conf_set(spark: SparkSession, key: str, value: str) -> Iterator[SparkSession]:
    """``spark`` with ``key`` set to ``value`` while the generator runs, then restored
    (unset when it was not set): for fixtures to ``yield from``."""
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield spark
    finally:
        if before is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, before)
