"""A merge routed by a join (``on="id"`` into ``day`` partitions) that inserts takes the
rows to insert from the routing join itself (a left outer join: the rows no leaf key joins
come out with no leaf), not from a second shuffle of the source (an anti-join on the row
ids); the result equals the Python merge's."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

import lance_partitioned as lp
from lance_partitioned.spark import PartitionedTable

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.int32()), ("amount", pa.int64())])
DAYS = 10
WIDE = (1 << 32) + 25  # an int64 key that an int32 source key 25 equals once wrapped


def _rows(root: Path) -> list[tuple[Any, ...]]:
    table = lp.PartitionedNamespace.open(str(root)).to_table(columns=["id", "day", "amount"])
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


def _plans(spark: SparkSession, since: int) -> list[str]:
    """The physical plans (final, with AQE) of the SQL executions from index ``since`` on."""
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()  # type: ignore[attr-defined]
    return [
        executions.apply(i).physicalPlanDescription() for i in range(since, executions.length())
    ]


def _executions(spark: SparkSession) -> int:
    return int(spark._jsparkSession.sharedState().statusStore().executionsList().length())  # type: ignore[attr-defined]


def _namespaces(tmp_path: Path, ids: list[int]) -> tuple[Path, Path]:
    spark_root, python_root = tmp_path / "spark", tmp_path / "python"
    ns = lp.PartitionedNamespace.create(str(spark_root), schema=SCHEMA, partition_by="day")
    ns.write(pa.table({"id": ids, "day": [i % DAYS for i in ids], "amount": ids}, schema=SCHEMA))
    # an older spec's leaf holds id 1 too: a source row with id 1 matches both rows
    ns.update_partition_spec("amount")
    ns.write(pa.table({"id": [1], "day": [1], "amount": [7]}, schema=SCHEMA))
    shutil.copytree(spark_root, python_root)
    return spark_root, python_root


def _merge(
    spark: SparkSession, spark_root: Path, python_root: Path, source: DataFrame
) -> tuple[int, int]:
    result = (
        PartitionedTable.for_path(spark, str(spark_root))
        .merge(source, on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    arrow = source.toArrow()
    expected = (
        lp.PartitionedNamespace.open(str(python_root))
        .merge(arrow, on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.rows_updated, result.rows_inserted) == (
        expected.rows_updated,
        expected.rows_inserted,
    )
    assert _rows(spark_root) == _rows(python_root)
    return result.rows_updated, result.rows_inserted


@pytest.mark.slow  # two merges (a join, two shuffles each): 15-60 s on 2 shared cores
def test_a_join_routed_merge_inserts_without_a_second_shuffle_of_the_source(
    joined: SparkSession, tmp_path: Path
) -> None:
    spark = joined
    spark_root, python_root = _namespaces(tmp_path, list(range(100)))
    # id 1 matches in two leaves (two spec versions), 11 and 22 in one; 100 and 101 are new,
    # and so is the row with a NULL key (a NULL never matches, with null_safe off)
    rows = [(1, 1, -1), (11, 1, -2), (22, 2, -3), (100, 1, -4), (101, 42, -5), (None, 3, -6)]
    source = spark.createDataFrame(
        spark.sparkContext.parallelize(rows, 2), "id long, day int, amount long"
    )
    since = _executions(spark)
    assert _merge(spark, spark_root, python_root, source) == (4, 3)
    plans = _plans(spark, since)
    assert any("SortMergeJoin LeftOuter" in p for p in plans), plans
    assert not [p for p in plans if "LeftAnti" in p], plans  # no second pass over the source
    assert not [p for p in plans if "BroadcastHashJoin" in p], plans


@pytest.mark.slow  # a merge (a join, three shuffles): 10-40 s on 2 shared cores
def test_a_key_joined_only_once_wrapped_to_the_source_type_is_still_inserted(
    joined: SparkSession, tmp_path: Path
) -> None:
    spark = joined
    # the leaf keys are cast to the source's int32 for the join: WIDE joins the source's 25,
    # which the leaf's search (in the namespace's int64) does not match: the merge finds it
    # among the rows a leaf key joined that matched nothing, and inserts it
    spark_root, python_root = _namespaces(tmp_path, [*range(20), WIDE])
    rows = [(1, 1, -1), (25, 5, -2), (30, 3, -3)]
    source = spark.createDataFrame(rows, "id int, day int, amount long")
    since = _executions(spark)
    assert _merge(spark, spark_root, python_root, source) == (2, 2)
    plans = _plans(spark, since)
    assert any("SortMergeJoin LeftOuter" in p for p in plans), plans
    assert any("LeftAnti" in p for p in plans), plans  # (those rows only)
