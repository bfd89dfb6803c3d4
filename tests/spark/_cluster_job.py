"""A write and a pruned read in ``local-cluster[2,1,1024]`` mode (two executor JVMs).

Run by ``tests/spark/test_cluster.py`` in a subprocess (a JVM runs one SparkContext, and the
test session's is ``local[2]``): ``python _cluster_job.py <namespace uri>`` prints one JSON
line with what the test checks.
"""

from __future__ import annotations

import json
import os
import sys
import warnings


def _pid(_: object) -> list[int]:
    return [os.getpid()]


def main(uri: str) -> None:
    """Write 3 days x 2 countries into ``uri`` from 4 tasks, then read it back."""
    os.environ.setdefault("LANCE_LOG", "error")
    warnings.filterwarnings("ignore")
    from _cluster import cluster_session
    from pyspark.sql import functions as F

    import lance_partitioned.spark

    spark = cluster_session(
        "lance-partitioned-cluster-test", **{"spark.sql.session.timeZone": "UTC"}
    )
    try:
        lance_partitioned.spark.register(spark)
        sc = spark.sparkContext._jsc.sc()  # type: ignore[union-attr]
        df = spark.range(0, 3000, numPartitions=4).select(
            F.col("id"),
            F.date_add(F.lit("2025-01-01").cast("date"), (F.col("id") % 3).cast("int")).alias(
                "event_date"
            ),
            F.when(F.col("id") % 2 == 0, "US").otherwise("FR").alias("country"),
        )
        df.write.format("lance_partitioned").mode("append").option(
            "partition_by", "event_date, country"
        ).save(uri)
        read = spark.read.format("lance_partitioned")
        everything = read.load(uri)
        pruned = read.option("filter", "event_date = DATE '2025-01-02'").load(uri)
        result = {
            "rows": everything.count(),
            "distinct_ids": everything.select("id").distinct().count(),
            "pruned_rows": pruned.count(),
            "pruned_dates": sorted({str(r[0]) for r in pruned.select("event_date").collect()}),
            "pruned_us": pruned.where("country = 'US'").count(),
            "pruned_partitions": pruned.rdd.getNumPartitions(),
            "task_pids": sorted(set(everything.rdd.mapPartitions(_pid).collect())),
            # the executors that ran the jobs (a Scala Seq through py4j)
            "executors": str(sc.getExecutorIds().mkString(",")).split(","),
        }
    finally:
        spark.stop()
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
