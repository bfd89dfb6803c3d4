"""``benchmarks/spark.py --merge`` (issue 30): an upsert on Spark, three ways.

A namespace of ``rows`` rows (id, day = id % 100, amount, note; partitioned by ``day``) and
the same rows as a Hive tree of Parquet files partitioned by ``day``, both generated and
written from the driver in chunks (pyarrow, untimed: a 10M-row target through Spark took
minutes). The source has ``rows * factor`` rows, half
matching a target row (same day), half new, all in days 0-29 (30 of the 100 partitions):

* ``ours (Spark)``: ``PartitionedTable.for_path(...).merge(source_df, on="id")
  .when_matched_update_all().when_not_matched_insert_all().execute()``;
* ``ours (Python)``: ``source_df.toArrow()`` on the driver, then ``ns.merge`` there;
* ``parquet (dynamic overwrite)``: the classic way: read the touched partitions, drop the
  matched rows (an anti-join on id), add the source, ``localCheckpoint()`` (Spark refuses
  to overwrite a path it reads) and write with ``partitionOverwriteMode=dynamic``.

Each runs on a fresh copy of its table (copied untimed). The driver's peak RSS is read from
``/proc`` (``VmHWM``, reset before each run through ``clear_refs``): the driver's Python
process and, apart, its JVM (with ``local[N]`` the JVM also runs the executors' tasks; their
Python workers are other processes and not counted). Every result is checked: row count and
``sum(amount)`` (in cents, exactly) equal across the three.
"""

from __future__ import annotations

import functools
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import lance_partitioned as lp
from lance_partitioned.spark import PartitionedTable

DAYS, TOUCHED = 100, 30
WAYS = ("ours (Spark)", "ours (Python)", "parquet (dynamic overwrite)")


CHUNK = 1_000_000  # rows generated at a time when preparing the target (bounded memory)
SCHEMA = pa.schema(
    [("id", pa.int64()), ("day", pa.int32()), ("amount", pa.float64()), ("note", pa.string())]
)


def target_batches(rows: int) -> Iterator[pa.RecordBatch]:
    """``rows`` rows over 100 days (id, day = id % 100, amount = id / 100, note = "row <id>"),
    ``CHUNK`` rows at a time, generated on the driver (numpy/pyarrow: no Spark job)."""
    for start in range(0, rows, CHUNK):
        ids = np.arange(start, min(rows, start + CHUNK), dtype=np.int64)
        yield pa.record_batch(
            [
                pa.array(ids),
                pa.array((ids % DAYS).astype(np.int32)),
                pa.array(ids / 100.0),
                pc.binary_join_element_wise("row ", pc.cast(pa.array(ids), pa.string()), ""),
            ],
            schema=SCHEMA,
        )


def target_reader(rows: int) -> pa.RecordBatchReader:
    """:func:`target_batches` as a stream."""
    return pa.RecordBatchReader.from_batches(SCHEMA, target_batches(rows))


def source(spark: SparkSession, rows: int, size: int) -> DataFrame:
    """``size`` rows: the first half updates rows of days 0-29 (keeping their day), the
    other half are new ids in those days."""
    half = size // 2
    if half > rows * TOUCHED // DAYS:
        raise SystemExit(f"a source of {size:,} rows matches more rows than days 0-29 hold")
    k = F.col("id")
    matched = F.floor(k / F.lit(TOUCHED)) * DAYS + k % TOUCHED
    return spark.range(0, size, numPartitions=spark.sparkContext.defaultParallelism).select(
        F.when(k < half, matched).otherwise(F.lit(rows) + k).alias("id"),
        F.when(k < half, matched % DAYS).otherwise(k % TOUCHED).cast("int").alias("day"),
        (-k - F.lit(1)).cast("double").alias("amount"),
        F.concat(F.lit("new "), k.cast("string")).alias("note"),
    )


def _log(message: str) -> None:
    """Progress on stderr (a long run shows each result as it comes; stdout has the table)."""
    print(f"[merge {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _peak_kib(pid: int | str, field: str = "VmHWM") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def _reset_peak(pid: int | str) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := the current RSS


def measured(spark: SparkSession, action: Callable[[], Any]) -> tuple[float, int, int, int]:
    """Seconds, the driver Python process's and its JVM's peak RSS (MiB) of ``action``, and
    the Python process's RSS when it started (the peak is at least that: a process keeps
    the memory an earlier run freed)."""
    jvm = spark.sparkContext._gateway.proc.pid  # type: ignore[union-attr]
    for pid in ("self", jvm):
        _reset_peak(pid)
    start_kib = _peak_kib("self", "VmRSS")
    started = time.perf_counter()
    action()
    elapsed = time.perf_counter() - started
    return elapsed, _peak_kib("self") // 1024, _peak_kib(jvm) // 1024, start_kib // 1024


class MergeBench:
    """The tables of one run under ``work`` and the measurements."""

    def __init__(self, spark: SparkSession, work: str, rows: int) -> None:
        self.spark, self.work, self.rows = spark, Path(work), rows
        self.results: list[tuple[int, str, float, int, int, int]] = []
        self.checks: dict[int, dict[str, tuple[int, int]]] = {}

    def prepare(self) -> None:
        """The target, twice: our namespace (``lp.write``, ``partition_by="day"``) and a Hive
        tree of Parquet files partitioned by ``day`` (pyarrow's dataset writer, one file per
        day, as Spark's ``partitionBy("day")`` writes). Both stream :func:`target_batches`
        from the driver: no Spark job, memory bounded by ``CHUNK``."""
        lp.write(str(self.work / "ours"), target_reader(self.rows), partition_by="day")
        pds.write_dataset(
            target_reader(self.rows),
            str(self.work / "parquet"),
            format="parquet",
            partitioning=pds.partitioning(pa.schema([("day", pa.int32())]), flavor="hive"),
            basename_template="part-{i}.parquet",
            max_rows_per_group=CHUNK,
        )

    def _copy(self, name: str) -> str:
        copy = self.work / f"{name}-run"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(self.work / name, copy)
        return str(copy)

    def run(self, size: int, ways: tuple[str, ...] = WAYS) -> None:
        """Each of ``ways`` (default: all three) once, with a source of ``size`` rows."""
        spark, src = self.spark, source(self.spark, self.rows, size)

        def spark_merge(root: str) -> None:
            (
                PartitionedTable.for_path(spark, root)
                .merge(src, on="id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            )

        def python_merge(root: str) -> None:
            arrow = src.toArrow()
            ns = lp.PartitionedNamespace.open(root)
            ns.merge(
                arrow, on="id"
            ).when_matched_update_all().when_not_matched_insert_all().execute()

        # each of our ways on a fresh copy of the namespace, made only for a way that runs
        for way, merge in ((WAYS[0], spark_merge), (WAYS[1], python_merge)):
            if way in ways:
                root = self._copy("ours")
                self._record(
                    size,
                    way,
                    functools.partial(merge, root),
                    functools.partial(spark.read.format("lance_partitioned").load, root),
                )

        def parquet_merge() -> None:
            days = list(range(TOUCHED))
            touched = spark.read.parquet(parquet).where(F.col("day").isin(days))
            kept = touched.join(src.select("id"), on="id", how="left_anti")
            rewritten = kept.unionByName(src).localCheckpoint()
            (
                rewritten.write.mode("overwrite")
                .option("partitionOverwriteMode", "dynamic")
                .partitionBy("day")
                .parquet(parquet)
            )

        if WAYS[2] in ways:
            parquet = self._copy("parquet")
            self._record(size, WAYS[2], parquet_merge, lambda: spark.read.parquet(parquet))
        for name in ("ours-run", "parquet-run"):
            shutil.rmtree(self.work / name, ignore_errors=True)

    def _record(
        self, size: int, way: str, action: Callable[[], Any], load: Callable[[], DataFrame]
    ) -> None:
        seconds, python_mib, jvm_mib, start_mib = measured(self.spark, action)
        self.results.append((size, way, seconds, python_mib, jvm_mib, start_mib))
        # sum(amount) exactly: every amount is a multiple of 0.01 (a float sum's last digits
        # depend on the order of addition, which differs between the ways)
        cents = F.sum(F.round(F.col("amount") * 100).cast("long"))
        row = load().agg(F.count("*"), cents).collect()[0]
        self.checks.setdefault(size, {})[way] = (int(row[0]), int(row[1]))
        _log(
            f"{size:,} source rows, {way}: {seconds:.2f} s, driver peak RSS Python "
            f"{python_mib:,} MiB (from {start_mib:,}), JVM {jvm_mib:,} MiB, "
            f"{int(row[0]):,} rows after"
        )

    def table(self) -> list[str]:
        lines = [
            "| source rows | way | seconds | driver Python peak RSS, MiB (at start) "
            "| driver JVM peak RSS, MiB | rows after |",
            "| ---: | --- | ---: | ---: | ---: | ---: |",
        ]
        for size, way, seconds, python_mib, jvm_mib, start_mib in self.results:
            count, _ = self.checks[size][way]
            lines.append(
                f"| {size:,} | {way} | {seconds:.2f} | {python_mib:,} ({start_mib:,}) "
                f"| {jvm_mib:,} | {count:,} |"
            )
        for size, found in self.checks.items():
            expected = self.rows + size - size // 2
            counts = {count for count, _ in found.values()}
            sums = {total for _, total in found.values()}
            if counts != {expected} or len(sums) != 1:
                lines.append(f"RESULTS DIFFER for {size:,} source rows: {found}")
        return lines


def main(
    spark: SparkSession,
    work: str,
    rows: int,
    factor: float,
    *,
    quick: bool = False,
    ways: tuple[str, ...] = WAYS,
    repeat: int = 1,
) -> list[str]:
    """Run the merge benchmark; the lines of its table. ``quick``: the source at
    ``rows * factor`` only (each way once), not also 5x that (a smoke run); that second
    size is skipped too when its matches do not fit in days 0-29. ``ways``: the ways run
    (default all); ``repeat``: each size's ways run that many times, in turn."""
    size = max(2, int(rows * factor))
    if rows >= 100_000:  # (not worth it for a smoke run)
        warm = MergeBench(spark, f"{work}/warm", 2_000)
        warm.prepare()
        warm.run(200)  # JIT, Python workers, untimed
    bench = MergeBench(spark, work, rows)
    started = time.perf_counter()
    bench.prepare()
    _log(
        f"prepared {rows:,} target rows (ours and Parquet) in {time.perf_counter() - started:.1f} s"
    )
    sizes = [size] if quick or 5 * size // 2 > rows * TOUCHED // DAYS else [size, 5 * size]
    for n in sizes:
        for _ in range(repeat):
            bench.run(n, ways)
    return bench.table()
