"""Spark on object storage: executors stage on S3, the driver commits, abort cleans S3."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import lance_partitioned as lp
from tests.conftest import BUCKET, s3_client
from tests.integration.helpers import read_leaves
from tests.spark.test_writer import batch, events, plan

pytestmark = pytest.mark.s3


def options_of(storage_options: dict[str, str]) -> dict[str, str]:
    """The data source options that carry ``storage_options`` (``storage.<key>``)."""
    return {f"storage.{key}": value for key, value in storage_options.items()}


def leaf_ids(uri: str, storage_options: dict[str, str]) -> list[int]:
    ns = lp.PartitionedNamespace.open(uri, storage_options=storage_options)
    return sorted(read_leaves(ns).column("id").to_pylist())


def leaf_data_files(s3_endpoint: str, uri: str) -> list[str]:
    """Keys of every leaf data file under the namespace (not the __manifest's)."""
    prefix = uri.removeprefix(f"s3://{BUCKET}/") + "/"
    client = s3_client(s3_endpoint)
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        keys += [item["Key"] for item in page.get("Contents", [])]
    return sorted(
        k for k in keys if "/data/" in k and k.endswith(".lance") and "/__manifest/" not in k
    )


def test_abort_deletes_staged_files_on_s3(
    s3_uri: str, s3_endpoint: str, storage_options: dict[str, str]
) -> None:
    opts = options_of(storage_options)
    plan(s3_uri, partition_by="country", **opts).commit([])
    writer = plan(s3_uri, **opts)
    writer.commit([writer.write(iter([batch(range(4))]))])
    kept = leaf_data_files(s3_endpoint, s3_uri)
    writer = plan(s3_uri, **opts)
    staged = writer.write(iter([batch(range(100, 110))]))
    assert len(leaf_data_files(s3_endpoint, s3_uri)) == len(kept) + 2
    writer.abort([staged, None])
    assert leaf_data_files(s3_endpoint, s3_uri) == kept
    assert leaf_ids(s3_uri, storage_options) == [0, 1, 2, 3]


@pytest.mark.spark
def test_spark_job_writes_and_reads_a_namespace_on_s3(
    spark: SparkSession, s3_uri: str, storage_options: dict[str, str]
) -> None:
    opts = options_of(storage_options)
    writer = events(spark, 0, 300).write.format("lance_partitioned").mode("append")
    writer.options(partition_by="event_date, country", **opts).save(s3_uri)
    assert leaf_ids(s3_uri, storage_options) == list(range(300))
    dynamic = events(spark, 1000, 1012).where("event_date = DATE'2025-01-01'")
    dynamic.write.format("lance_partitioned").mode("overwrite").options(
        overwrite="partitions", **opts
    ).save(s3_uri)
    read = spark.read.format("lance_partitioned").options(**opts).load(s3_uri)
    first_day = read.where("event_date = DATE'2025-01-01'").select("id").collect()
    assert sorted(row.id for row in first_day) == [1000, 1004, 1008]
    assert read.count() == 300 - 75 + 3
    by_country = read.groupBy("country").agg(F.count("*").alias("n")).collect()
    assert sum(row.n for row in by_country) == 228
    assert len(by_country) == 3
