"""Spark benchmark (issues 7, 17): the ``lance_partitioned`` data source against Spark's Parquet.

One local session (``local[2]`` by default), one ``events`` DataFrame generated in Spark and
cached before anything is timed (id, event_date over 731 days, country, user_id, amount,
note). Two layouts, each written by both:

* ``day``: ours ``partition_by="event_date"``, Parquet ``partitionBy("event_date")`` (731
  partitions);
* ``bucket16``: ours ``partition_by="bucket(16, user_id)"``, Parquet
  ``partitionBy("user_bucket")`` on ``pmod(hash(user_id), 16)``, computed inside Parquet's
  timed section as ours computes its buckets.

Then, on the data each one wrote, every query on a DataFrame loaded fresh for that query:

* ``full count()`` and ``full sum(amount)``;
* ``one day count+sum``: ``count(*), sum(amount)`` where ``event_date = DATE'2025-01-05'``.

Ours is read four ways: ``options`` (the always-correct pruning options: ``filter`` with the
one-day condition for the one-day query, ``columns`` with the one column a full scan needs,
``id`` for ``count()`` and ``amount`` for ``sum``), ``pushdown`` (no option, Spark's
``where`` pushed with ``spark.sql.python.filterPushdown.enabled``), ``plain`` (no option,
pushdown off: Spark filters every row). Each repeat runs every measurement once, in turn
(interleaved), and the table shows each one's best time; every variant's result is checked
against Parquet's.

Targets (issue 17): full scan (plain) <= 1.5x Parquet's time, one-day query with the
``filter`` option <= 2x, write throughput >= 1.0x Parquet's, on both layouts.

Python data sources hand Spark every column of every row as Arrow batches over a socket
(PySpark 4.3 prunes no column for them: ``count()`` transfers all six), a cost Parquet's
``count()``, which reads only file footers, does not pay.

Usage::

    .venv/bin/python benchmarks/spark.py [--rows 4000000] [--master local[2]] [--repeat 3]
    .venv/bin/python benchmarks/spark.py --merge [--rows 10000000] [--merge-factor 0.1] [--quick]
        [--only spark,python,parquet] [--repeat 1]

``--merge`` runs the upsert benchmark instead (issue 30, :mod:`spark_merge`): ours on Spark
against our Python merge and Parquet's dynamic partition overwrite, with the source at
``rows * merge-factor`` and 5x that (``--quick``: the first only, for a smoke run; the
second is skipped too when its matches do not fit in the touched days), each of the
``--only`` ways ``--repeat`` times in turn.
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
class Layout:
    """One partitioning, as each writer spells it."""

    name: str
    partition_by: str  # ours
    parquet_column: str
    computed: Callable[[DataFrame], DataFrame]  # Parquet's partition column


LAYOUTS = (
    Layout("day", "event_date", "event_date", lambda df: df),
    Layout(
        "bucket16",
        "bucket(16, user_id)",
        "user_bucket",
        lambda df: df.withColumn("user_bucket", F.pmod(F.hash("user_id"), F.lit(16))),
    ),
)
VARIANTS = ("options", "pushdown", "plain", "parquet")


@dataclass(frozen=True)
class Query:
    """One read: what it computes, and the options of the ``options`` variant."""

    name: str
    run: Callable[[DataFrame], Any]
    options: dict[str, str]
    where: str | None = None


QUERIES = (
    Query("full count()", lambda df: df.count(), {"columns": "id"}),
    Query(
        "full sum(amount)",
        lambda df: df.agg(F.sum("amount")).collect()[0][0],
        {"columns": "amount"},
    ),
    Query(
        "one day count+sum",
        lambda df: tuple(df.agg(F.count("*"), F.sum("amount")).collect()[0]),
        {"filter": ONE_DAY},
        where=ONE_DAY,
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


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


class Bench:
    """The session, the cached DataFrame and the directories of one run."""

    def __init__(self, spark: SparkSession, df: DataFrame, work: str, rows: int) -> None:
        self.spark, self.df, self.work, self.rows = spark, df, work, rows
        self.times: dict[tuple[str, ...], list[float]] = {}
        self.results: dict[tuple[str, ...], Any] = {}

    def ours(self, layout: Layout) -> str:
        return f"{self.work}/ours-{layout.name}"

    def parquet(self, layout: Layout) -> str:
        return f"{self.work}/parquet-{layout.name}"

    def record(self, key: tuple[str, ...], elapsed: float, result: Any = None) -> None:
        self.times.setdefault(key, []).append(elapsed)
        self.results[key] = result

    def write(self, layout: Layout) -> None:
        elapsed, _ = timed(
            lambda: (
                self.df.write.format("lance_partitioned")
                .mode("overwrite")
                .option("partition_by", layout.partition_by)
                .save(self.ours(layout))
            )
        )
        self.record((layout.name, "write", "ours"), elapsed)
        elapsed, _ = timed(
            lambda: (
                layout.computed(self.df)
                .write.mode("overwrite")
                .partitionBy(layout.parquet_column)
                .parquet(self.parquet(layout))
            )
        )
        self.record((layout.name, "write", "parquet"), elapsed)

    def read(self, layout: Layout, query: Query, variant: str) -> None:
        self.spark.conf.set(
            lance_partitioned.spark.FILTER_PUSHDOWN_CONF, str(variant == "pushdown").lower()
        )

        def load() -> DataFrame:
            if variant == "parquet":
                df = self.spark.read.parquet(self.parquet(layout))
            else:
                reader = self.spark.read.format("lance_partitioned")
                if variant == "options":
                    reader = reader.options(**query.options)
                df = reader.load(self.ours(layout))
            return df if query.where is None else df.where(query.where)

        elapsed, result = timed(lambda: query.run(load()))
        self.record((layout.name, query.name, variant), elapsed, result)

    def best(self, *key: str) -> float:
        return min(self.times[key])

    def table(self) -> list[str]:
        lines = [
            "| layout | operation | ours: options | ours: pushdown | ours: plain | parquet "
            "| options / parquet | plain / parquet |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for layout in LAYOUTS:
            ours, theirs = (
                self.best(layout.name, "write", "ours"),
                self.best(layout.name, "write", "parquet"),
            )
            lines.append(
                f"| {layout.name} | write (rows/s: ours {self.rows / ours:,.0f}, parquet "
                f"{self.rows / theirs:,.0f}) | | | {ours:.2f} | {theirs:.2f} | "
                f"| {theirs / ours:.2f}x throughput |"
            )
            for query in QUERIES:
                times = [self.best(layout.name, query.name, v) for v in VARIANTS]
                expected = self.results[(layout.name, query.name, "parquet")]
                differ = [
                    v
                    for v in VARIANTS[:-1]
                    if not _same(self.results[(layout.name, query.name, v)], expected)
                ]
                label = query.name + (f" (RESULTS DIFFER: {differ})" if differ else "")
                cells = " | ".join(f"{t:.2f}" for t in times)
                lines.append(
                    f"| {layout.name} | {label} | {cells} | {times[0] / times[3]:.2f}x "
                    f"| {times[2] / times[3]:.2f}x |"
                )
        return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=None, help="4M; 10M with --merge")
    parser.add_argument("--merge", action="store_true", help="the merge benchmark (issue 30)")
    parser.add_argument("--merge-factor", type=float, default=0.1, help="source rows / rows")
    parser.add_argument(
        "--quick", action="store_true", help="--merge: one source size, each way once (smoke)"
    )
    parser.add_argument(
        "--only",
        default="spark,python,parquet",
        help="--merge: the ways run, comma-separated (spark, python, parquet)",
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--repeat", type=int, default=None, help="interleaved runs (3; 1 with --merge); best shown"
    )
    args = parser.parse_args()
    builder = SparkSession.builder
    if args.quick:  # (a smoke run: tiny shuffles, not 200 mostly empty tasks each)
        builder = builder.config("spark.sql.shuffle.partitions", "2")
    spark = (
        builder.master(args.master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "4g")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    lance_partitioned.spark.register(spark)
    if args.merge:
        _merge(spark, args, args.rows or 10_000_000)
        return
    args.rows = args.rows or 4_000_000
    args.repeat = args.repeat or 3
    df = events(spark, args.rows).cache()
    df.count()
    work = tempfile.mkdtemp(prefix="bench-spark-")
    load = os.getloadavg()
    try:
        # warm up every path (JIT, Python workers) on a small job, untimed
        warm = Bench(spark, df.limit(20_000), f"{work}/warm", 20_000)
        for layout in LAYOUTS:
            warm.write(layout)
            for query in QUERIES:
                for variant in VARIANTS:
                    warm.read(layout, query, variant)
        bench = Bench(spark, df, work, args.rows)
        for _ in range(args.repeat):
            for layout in LAYOUTS:
                bench.write(layout)
            for layout in LAYOUTS:
                for query in QUERIES:
                    for variant in VARIANTS:
                        bench.read(layout, query, variant)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()
    after = os.getloadavg()
    print(
        f"rows: {args.rows:,}, master: {args.master}, repeats: {args.repeat} (interleaved, "
        f"best shown), pyspark {spark.version}, lance-partitioned "
        f"{lance_partitioned.__version__}, {os.cpu_count()} CPUs, load average "
        f"{load[0]:.1f} at start, {after[0]:.1f} at end\n"
    )
    print("\n".join(bench.table()))


def _merge(spark: SparkSession, args: argparse.Namespace, rows: int) -> None:
    import spark_merge

    names = dict(zip(("spark", "python", "parquet"), spark_merge.WAYS, strict=True))
    only = [w.strip() for w in args.only.split(",") if w.strip()]
    if not only or set(only) - set(names):
        raise SystemExit(f"--only: a comma-separated list of {', '.join(names)}, not {args.only!r}")
    ways = tuple(names[w] for w in only)
    master = args.master
    work = tempfile.mkdtemp(prefix="bench-spark-merge-")
    load = os.getloadavg()
    try:
        lines = spark_merge.main(
            spark,
            work,
            rows,
            args.merge_factor,
            quick=args.quick,
            ways=ways,
            repeat=args.repeat or 1,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
        spark.stop()
    print(
        f"namespace rows: {rows:,}, master: {master}, pyspark {spark.version}, "
        f"lance-partitioned {lance_partitioned.__version__}, {os.cpu_count()} CPUs, load "
        f"average {load[0]:.1f} at start, {os.getloadavg()[0]:.1f} at end, repeats: "
        f"{args.repeat or 1} (interleaved, each shown)\n"
    )
    print("\n".join(lines))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return abs(a - b) <= 1e-6 * max(1.0, abs(b))
    return bool(a == b)


if __name__ == "__main__":
    main()
