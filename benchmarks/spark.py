"""Spark benchmark (issue 7): the ``lance_partitioned`` data source against Spark's Parquet.

One local session (``local[2]`` by default), one ``events`` DataFrame generated in Spark and
cached before anything is timed (columns as in ``_data.py``: id, event_date over 731 days,
country, user_id, amount, note). Then, for each spec:

* write: ``df.write.format("lance_partitioned").option("partition_by", spec)`` against
  ``df.write.partitionBy(...).parquet(...)``; a computed partition column (the day-of-month
  spec) is computed inside Parquet's timed section, as ours computes it;
* read, on the data each one wrote: a full-scan ``count()``, a full-scan ``sum(amount)``, and
  ``count``/``sum`` of one partition (``event_date = DATE'2025-01-05'``), a fresh load per
  query with Python filter pushdown on.

Targets: write throughput >= 0.9x Parquet's, full scans <= 1.3x Parquet's time, the
single-partition read <= 2x.

Python data sources receive and return rows as Arrow batches over a socket (of
``spark.sql.execution.arrow.maxRecordsPerBatch`` rows), which sets a floor Parquet does not
pay; and PySpark 4.3 has no column pruning for them, so ``count()`` reads every column.

Usage::

    .venv/bin/python benchmarks/spark.py [--rows 5000000] [--master local[2]] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
warnings.filterwarnings("ignore", message="lance is not fork-safe")
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")

from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402

import lance_partitioned.spark  # noqa: E402

COUNTRIES = ("US", "FR", "DE", "GB", "JP", "CN", "IN", "BR", "CA", "AU")
NOTES = ("quick checkout", "late refund", "repeat signup", "manual renewal", "page view")
ONE_DAY = "event_date = DATE'2025-01-05'"


@dataclass(frozen=True)
class Spec:
    """One partitioning, as each writer spells it."""

    name: str
    partition_by: str  # ours
    parquet_columns: tuple[str, ...]
    computed: Callable[[DataFrame], DataFrame]  # Parquet's extra columns


SPECS = (
    Spec("identity(event_date)", "event_date", ("event_date",), lambda df: df),
    Spec(
        "day(event_date)",
        "day(event_date)",
        ("event_date_day",),
        lambda df: df.withColumn("event_date_day", F.dayofmonth("event_date")),
    ),
)


def events(spark: SparkSession, rows: int) -> DataFrame:
    def draw(salt: int, modulo: int) -> Any:
        return F.pmod(F.xxhash64(F.col("id"), F.lit(salt)), F.lit(modulo))

    def pick(values: tuple[str, ...], salt: int) -> Any:
        return F.element_at(F.array(*map(F.lit, values)), (draw(salt, len(values)) + 1).cast("int"))

    parallelism = spark.sparkContext.defaultParallelism
    return spark.range(0, rows, numPartitions=parallelism).select(
        F.col("id"),
        F.date_add(F.lit("2024-01-01").cast("date"), draw(0, 731).cast("int")).alias("event_date"),
        pick(COUNTRIES, 1).alias("country"),
        draw(2, 100_000).alias("user_id"),
        (draw(3, 100_000) / F.lit(100.0)).alias("amount"),
        pick(NOTES, 4).alias("note"),
    )


def timed(action: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - started)
    return best, result


def reads(load: Callable[[], DataFrame], repeat: int) -> dict[str, tuple[float, Any]]:
    return {
        "full count()": timed(lambda: load().count(), repeat),
        "full sum(amount)": timed(lambda: load().agg(F.sum("amount")).collect()[0][0], repeat),
        "one day count+sum": timed(
            lambda: tuple(load().where(ONE_DAY).agg(F.count("*"), F.sum("amount")).collect()[0]),
            repeat,
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs of each step")
    args = parser.parse_args()
    spark = (
        SparkSession.builder.master(args.master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    lance_partitioned.spark.register(spark, filter_pushdown=True)
    df = events(spark, args.rows).cache()
    df.count()
    # warm up both paths (JIT, Python workers) on a small job, untimed
    work = tempfile.mkdtemp(prefix="bench-spark-")
    small = df.limit(20_000)
    small.write.format("lance_partitioned").mode("overwrite").option(
        "partition_by", "event_date"
    ).save(f"{work}/warm-ours")
    small.write.mode("overwrite").partitionBy("event_date").parquet(f"{work}/warm-parquet")
    reads(lambda: spark.read.format("lance_partitioned").load(f"{work}/warm-ours"), 1)
    reads(lambda: spark.read.parquet(f"{work}/warm-parquet"), 1)
    lines = [
        f"rows: {args.rows:,}, master: {args.master}, "
        f"pyspark {spark.version}, lance-partitioned {lance_partitioned.__version__}",
        "",
        "| spec | operation | ours (s) | parquet (s) | ours vs parquet |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    try:
        for spec in SPECS:
            ours, parquet = f"{work}/ours-{spec.partition_by}", f"{work}/parquet-{spec.name}"
            t_ours, _ = timed(
                lambda spec=spec, ours=ours: (
                    df.write.format("lance_partitioned")
                    .mode("overwrite")
                    .option("partition_by", spec.partition_by)
                    .save(ours)
                ),
                args.repeat,
            )
            t_parquet, _ = timed(
                lambda spec=spec, parquet=parquet: (
                    spec.computed(df)
                    .write.mode("overwrite")
                    .partitionBy(*spec.parquet_columns)
                    .parquet(parquet)
                ),
                args.repeat,
            )
            lines.append(
                f"| {spec.name} | write ({args.rows / t_ours:,.0f} vs "
                f"{args.rows / t_parquet:,.0f} rows/s) | {t_ours:.2f} | {t_parquet:.2f} | "
                f"{t_parquet / t_ours:.2f}x throughput |"
            )
            if spec.partition_by != "event_date":
                continue
            mine = reads(
                lambda ours=ours: spark.read.format("lance_partitioned").load(ours), args.repeat
            )
            theirs = reads(lambda parquet=parquet: spark.read.parquet(parquet), args.repeat)
            for name, (t_mine, r_mine) in mine.items():
                t_theirs, r_theirs = theirs[name]
                same = _same(r_mine, r_theirs)
                lines.append(
                    f"| {spec.name} | read: {name}{'' if same else ' (RESULTS DIFFER)'} | "
                    f"{t_mine:.2f} | {t_theirs:.2f} | {t_mine / t_theirs:.2f}x time |"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()
    print("\n".join(lines))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return abs(a - b) <= 1e-6 * max(1.0, abs(b))
    return bool(a == b)


if __name__ == "__main__":
    main()
