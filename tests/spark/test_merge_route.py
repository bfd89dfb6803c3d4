"""``PartitionedTable.merge`` on keys that determine no partition field (``on="id"`` into a
``day``-partitioned namespace) routes by a join with the leaves' keys: each source row goes
to the leaf task of the leaf holding its key only (a new row to none), not to every leaf,
and the result equals the Python merge's."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from lance_partitioned.spark import PartitionedTable

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.int32()), ("amount", pa.int64())])
DAYS = 10


def _rows(root: Path) -> list[tuple[Any, ...]]:
    table = lp.PartitionedNamespace.open(str(root)).to_table(columns=["id", "day", "amount"])
    return sorted(tuple(r.values()) for r in table.to_pylist())


@pytest.mark.slow  # four Spark jobs (a join, three shuffles): 10-70 s on 2 shared, loaded cores
def test_a_merge_on_id_sends_each_source_row_to_the_one_leaf_holding_its_key(
    spark: SparkSession, tmp_path: Path
) -> None:
    spark_root, python_root = tmp_path / "spark", tmp_path / "python"
    ns = lp.PartitionedNamespace.create(str(spark_root), schema=SCHEMA, partition_by="day")
    ns.write(
        pa.table(
            {
                "id": list(range(100)),
                "day": [i % DAYS for i in range(100)],
                "amount": list(range(100)),
            },
            schema=SCHEMA,
        )
    )
    shutil.copytree(spark_root, python_root)
    # 6 matches in days 1 and 2 (one moves to day 7), 4 new rows (one in a new day 42)
    rows = [(1, 1, -1), (11, 1, -2), (21, 1, -3), (2, 2, -4), (12, 7, -5), (22, 2, -6)]
    rows += [(100, 1, -7), (101, 3, -8), (102, 9, -9), (103, 42, -10)]
    source = spark.createDataFrame(
        spark.sparkContext.parallelize(rows, 2), "id long, day int, amount long"
    )
    merge = (
        PartitionedTable.for_path(spark, str(spark_root))
        .merge(source, on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
    )
    result = merge.execute()
    arrow = pa.Table.from_pylist(
        [dict(zip(["id", "day", "amount"], r, strict=True)) for r in rows], schema=SCHEMA
    )
    expected = (
        lp.PartitionedNamespace.open(str(python_root))
        .merge(arrow, on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.rows_updated, result.rows_inserted) == (6, 4)
    assert (expected.rows_updated, expected.rows_inserted) == (6, 4)
    assert _rows(spark_root) == _rows(python_root)
    assert result.leaves_read == 2  # the leaves of days 1 and 2, not all 10
    assert merge.routed == 6  # each matching source row searched in one leaf; new rows in none


def _plans(spark: SparkSession, since: int) -> list[str]:
    """The physical plans (final, with AQE) of the SQL executions from index ``since`` on."""
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()  # type: ignore[attr-defined]
    return [
        executions.apply(i).physicalPlanDescription() for i in range(since, executions.length())
    ]


@pytest.mark.slow  # a merge's Spark jobs (a join, three shuffles): 10-70 s on 2 shared cores
def test_the_routing_join_never_broadcasts_the_namespace_keys(
    joined: SparkSession, tmp_path: Path
) -> None:
    spark = joined
    # Spark sized the leaf keys (a mapInArrow over a range of leaf indexes) as a few rows and
    # broadcast them: every key of the namespace collected into the driver (10M keys: a
    # minute and GiBs of driver JVM in benchmarks/spark.py --merge)
    root = tmp_path / "ns"
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="day")
    ids = list(range(100))
    ns.write(pa.table({"id": ids, "day": [i % DAYS for i in ids], "amount": ids}, schema=SCHEMA))
    source = spark.createDataFrame([(1, 1, -1), (100, 3, -2)], "id long, day int, amount long")
    since = spark._jsparkSession.sharedState().statusStore().executionsList().length()  # type: ignore[attr-defined]
    result = (
        PartitionedTable.for_path(spark, str(root))
        .merge(source, on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.rows_updated, result.rows_inserted) == (1, 1)
    plans = _plans(spark, since)
    # the routing join (a left outer one: the merge inserts the rows it joins no key to)
    assert any("SortMergeJoin LeftOuter" in p for p in plans), plans
    assert not [p for p in plans if "BroadcastHashJoin" in p], plans
