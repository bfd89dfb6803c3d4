"""A merge in ``local-cluster[2,1,1024]`` mode (two executor JVMs).

Run by ``tests/spark/test_cluster_merge.py`` in a subprocess (a JVM runs one SparkContext,
and the test session's is ``local[2]``): ``python _cluster_merge_job.py <namespace uri>``
merges a source of 400 rows (ids 0-399: 0-199 exist) into the namespace, then runs an update
that moves rows between partitions, a row-level delete and an optimize through the same
``PartitionedTable`` (each in Spark tasks on the two executor JVMs), and prints one JSON line
with what the test checks: the version and counts of each step.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

# the steps after the merge; the test runs the same ones through the Python API
UPDATE_WHERE = "id % 5 = 0"
UPDATE_SET = {"country": "'UK'", "amount": "amount + 1000"}  # every matched row moves
DELETE_WHERE = "id % 7 = 0 OR country IS NULL"


def main(uri: str) -> None:
    """Upsert ids 0-399 (``amount = -id``, country moved for the even ids) into ``uri``."""
    os.environ.setdefault("LANCE_LOG", "error")
    warnings.filterwarnings("ignore")
    from _cluster import cluster_session
    from pyspark.sql import functions as F

    from lance_partitioned.spark import PartitionedTable

    spark = cluster_session(
        "lance-partitioned-cluster-merge-test", **{"spark.sql.shuffle.partitions": "4"}
    )
    try:
        sc = spark.sparkContext._jsc.sc()  # type: ignore[union-attr]
        source = spark.range(0, 400, numPartitions=4).select(
            F.col("id"),
            F.when(F.col("id") % 2 == 0, "DE").otherwise("FR").alias("country"),
            (-F.col("id")).alias("amount"),
        )
        table = PartitionedTable.for_path(spark, uri)
        result = (
            table.merge(source, on="id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        out = {
            "version": result.version,
            "updated": result.rows_updated,
            "inserted": result.rows_inserted,
            "executors": str(sc.getExecutorIds().mkString(",")).split(","),
        }
        update = table.update(UPDATE_WHERE, set=UPDATE_SET)
        out["update"] = [update.version, update.rows_updated]
        delete = table.delete(DELETE_WHERE)
        out["delete"] = [delete.version, delete.rows_deleted]
        optimize = table.optimize()
        out["optimize"] = [optimize.version]
    finally:
        spark.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
