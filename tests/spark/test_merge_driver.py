"""``PartitionedTable.merge`` never brings the source to the driver.

What the driver receives from its executors is measured in the JVM: the ``resultSize`` of
every task Spark ran for the merge (the bytes each task sent back to the driver: a
``collect()``, ``toArrow()``, ``toLocalIterator()`` or a broadcast of the source would all
count there), read from the session's status store. Merging 100x more source rows into the
same leaves (the same matched rows, the extra rows all new) must not grow it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import lance_partitioned as lp
from lance_partitioned.spark import PartitionedTable

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.string()), ("amount", pa.int64())])
COUNTRIES = ("FR", "US", "DE")


def _namespace(root: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="country")
    ns.write(
        pa.table(
            {
                "id": list(range(300)),
                "country": [COUNTRIES[i % 3] for i in range(300)],
                "amount": list(range(300)),
            },
            schema=SCHEMA,
        )
    )


def _source(spark: SparkSession, rows: int) -> DataFrame:
    """``rows`` rows: ids 0-99 match a target row, the others are new; all in the same
    three countries (the same leaves)."""
    countries = F.element_at(
        F.array(*map(F.lit, COUNTRIES)), (F.pmod(F.col("id"), F.lit(3)) + 1).cast("int")
    )
    ids = F.when(F.col("id") < 100, F.col("id")).otherwise(F.col("id") + 1000)
    return spark.range(0, rows, numPartitions=2).select(
        ids.alias("id"), countries.alias("country"), (F.col("id") * 7).alias("amount")
    )


def _stages(spark: SparkSession) -> dict[tuple[int, int], int]:
    """Every stage attempt the session ran so far, with the bytes its tasks sent back to
    the driver (the status store is filled by the listener bus: drained first)."""
    context: Any = spark.sparkContext
    jvm, sc = context._jvm, context._jsc.sc()
    sc.listenerBus().waitUntilEmpty()
    every = jvm.java.util.ArrayList()  # (no status: every stage; no task status filter)
    quantiles = context._gateway.new_array(jvm.double, 0)
    found = sc.statusStore().stageList(every, False, False, quantiles, jvm.java.util.ArrayList())
    return {
        (int(s.stageId()), int(s.attemptId())): int(s.resultSize())
        for s in (found.apply(i) for i in range(found.size()))
    }


def _driver_bytes(spark: SparkSession, root: Path, source: DataFrame) -> tuple[int, Any]:
    before = _stages(spark)
    merge = (
        PartitionedTable.for_path(spark, str(root))
        .merge(source, on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
    )
    result = merge.execute()
    after = _stages(spark)
    # less the Bloom filter of the source keys (a summary of 10-20 bits a key, <= 8 MiB,
    # that the driver sends the tasks reading the leaves' keys): not the source's rows
    sent = sum(size for key, size in after.items() if key not in before)
    return sent - merge.filter_bytes, result


@pytest.mark.slow  # two merges of three Spark jobs each: 15-30 s on 2 shared cores
def test_merge_sends_the_driver_no_source_rows(spark: SparkSession, tmp_path: Path) -> None:
    _namespace(tmp_path / "small")
    _namespace(tmp_path / "large")
    small, small_result = _driver_bytes(spark, tmp_path / "small", _source(spark, 200))
    large, large_result = _driver_bytes(spark, tmp_path / "large", _source(spark, 20_000))
    assert (small_result.rows_updated, small_result.rows_inserted) == (100, 100)
    assert (large_result.rows_updated, large_result.rows_inserted) == (100, 19_900)
    assert small_result.leaves_read == large_result.leaves_read == 3
    assert lp.PartitionedNamespace.open(str(tmp_path / "large")).count_rows() == 300 + 19_900
    # 20,000 source rows are >= 480,000 bytes however they are encoded (three 8-byte values)
    assert large < 20_000 * 24 // 4, (small, large)
    assert large < 1.5 * small + 16_384, (small, large)  # flat in the source's rows
