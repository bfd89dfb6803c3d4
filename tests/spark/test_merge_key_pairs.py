"""A Spark merge routed by a join (``on=["id", "name"]`` into ``day`` partitions) sends the
join only the leaf keys that may be source keys (a Bloom filter of the source's keys, built
on the executors), and its result still equals the Python merge's."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from lance_partitioned.spark import PartitionedTable

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.int32())])
DAYS = 10


def _rows(root: Path) -> list[tuple[Any, ...]]:
    table = lp.PartitionedNamespace.open(str(root)).to_table(columns=SCHEMA.names)
    return sorted(tuple(r.values()) for r in table.to_pylist())


@pytest.mark.spark
@pytest.mark.slow  # a merge routed by a join: six Spark jobs, 10-60 s on 2 shared cores
def test_a_join_routed_merge_reads_only_the_leaf_keys_that_may_be_source_keys(
    joined: SparkSession, tmp_path: Path
) -> None:
    spark = joined
    spark_root, python_root = tmp_path / "spark", tmp_path / "python"
    ns = lp.PartitionedNamespace.create(str(spark_root), schema=SCHEMA, partition_by="day")
    ids = list(range(2000))
    ns.write(
        pa.table(
            {"id": ids, "name": [f"n{i}" for i in ids], "day": [i % DAYS for i in ids]},
            schema=SCHEMA,
        )
    )
    shutil.copytree(spark_root, python_root)
    # 5 matches (one with another name: no match on both keys), 3 new rows
    rows = [(1, "n1", 1), (11, "n11", 5), (999, "n999", 9), (1500, "x", 0), (3, "n3", 3)]
    rows += [(5000, "n5000", 1), (5001, "n5001", 2), (1501, "n1501", 4)]
    source = spark.createDataFrame(
        spark.sparkContext.parallelize(rows, 2), "id long, name string, day int"
    )
    merge = (
        PartitionedTable.for_path(spark, str(spark_root))
        .merge(source, on=["id", "name"])
        .when_matched_update_all()
        .when_not_matched_insert_all()
    )
    result = merge.execute()
    arrow = pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, r, strict=True)) for r in rows], schema=SCHEMA
    )
    expected = (
        lp.PartitionedNamespace.open(str(python_root))
        .merge(arrow, on=["id", "name"])
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.rows_updated, result.rows_inserted) == (5, 3)
    assert (expected.rows_updated, expected.rows_inserted) == (5, 3)
    assert _rows(spark_root) == _rows(python_root)
    # the 2,000 leaf keys were read; only the 5 source keys (and false positives) were sent
    assert 5 <= merge.key_pairs < 100


@pytest.mark.spark
def test_a_source_without_rows_builds_a_filter_no_key_passes(spark: SparkSession) -> None:
    from lance_partitioned.spark.merge_bloom import source_filter

    empty = spark.createDataFrame([], "id long, name string")
    keys = source_filter(empty, ["id", "name"])
    assert keys is not None
    assert not keys.may_contain([pa.array([1, 2]), pa.array(["a", "b"])]).any()
