"""The demo pipeline: a PySpark job writing an event stream into a partitioned namespace.

Run it with ``scripts/demo`` or ``python -m lance_partitioned.examples.demo --rows N --out
DIR``. On ``local[*]`` it

1. generates a realistic event stream in Spark (timestamps over two years, countries,
   users, amounts, a free-text note) and writes it partitioned by ``year(ts), country``;
2. appends a second batch of late events;
3. evolves the partition spec to ``year(ts), month(ts)`` for new data (spec v2);
4. appends the events of early 2026, which land under v2;
5. runs pruned queries through Spark with the ``filter`` option (applied when the namespace
   is loaded, so every query on the DataFrame sees it), printing how many leaves each
   scanned of how many;
6. prints a short summary of the namespace.

>>> parser().parse_args(["--rows", "1000"]).rows
1000
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    import lance_partitioned as lp

COUNTRIES = ("US", "FR", "DE", "JP", "BR", "IN", "GB", "CA", "ES", "IT")
WORDS = ("quick", "late", "repeat", "manual", "checkout", "refund", "signup", "login", "cart")
FIRST_SPEC = "year(ts), country"
EVOLVED_SPEC = "year(ts), month(ts)"
QUERIES = (
    ("one country", "country = 'FR'"),
    ("one month", "ts >= TIMESTAMP '2025-06-01 00:00:00' AND ts < TIMESTAMP '2025-07-01 00:00:00'"),
    ("a country in 2026", "country = 'JP' AND ts >= TIMESTAMP '2026-01-01 00:00:00'"),
    ("one user (no pruning)", "user_id = 4242"),
)
_YEAR_SECONDS = 365 * 86_400
_2024 = 1_704_067_200  # 2024-01-01T00:00:00Z
_2026 = _2024 + 731 * 86_400


class DemoError(Exception):
    """A failure with advice for the person running the demo."""


def parser() -> argparse.ArgumentParser:
    """The command line: ``--rows``, ``--out``, ``--master``."""
    p = argparse.ArgumentParser(
        prog="python -m lance_partitioned.examples.demo",
        description="Write an event stream into a Lance partitioned namespace with PySpark.",
    )
    p.add_argument("--rows", type=int, default=2_000_000, help="events in the first batch")
    p.add_argument("--out", default="demo-data", help="directory for the namespace")
    p.add_argument("--master", default="local[*]", help="Spark master")
    return p


def _say(message: str) -> None:
    print(message, flush=True)


def _spark(master: str) -> tuple[SparkSession, bool]:
    """The active session, or a new local one (True: the demo owns it)."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise DemoError(
            "Spark needs Java 17 and none was found on PATH (nor JAVA_HOME). Install it, e.g. "
            "`sudo apt-get install -y openjdk-17-jre-headless` (Debian/Ubuntu) or "
            "`brew install openjdk@17` (macOS), then run the demo again."
        )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("LANCE_LOG", "error")
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="lance is not fork-safe")
            spark = (
                SparkSession.builder.master(master)
                .appName("lance-partitioned-demo")
                .config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.session.timeZone", "UTC")
                .config("spark.sql.shuffle.partitions", "4")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.driver.host", "127.0.0.1")
                .getOrCreate()
            )
    except Exception as exc:
        text = str(exc)
        if "BindException" in text or "Address already in use" in text or "could not bind" in text:
            raise DemoError(
                f"Spark could not open a port ({text.splitlines()[0]}). Another program holds "
                "it: stop other Spark jobs, or pick a port with "
                "`PYSPARK_SUBMIT_ARGS='--conf spark.driver.port=40123 pyspark-shell'`."
            ) from exc
        if "JAVA_GATEWAY_EXITED" in text or "Java gateway" in text:
            raise DemoError(
                "the JVM did not start. Check that `java -version` prints 17 or newer and that "
                "JAVA_HOME (if set) points to it."
            ) from exc
        raise
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True


def events(spark: SparkSession, start: int, rows: int, first: int, seconds: int) -> DataFrame:
    """``rows`` events with ids from ``start``, timestamps in ``[first, first + seconds)``."""
    from pyspark.sql import functions as F

    def draw(salt: int, modulo: int) -> Any:
        return F.pmod(F.xxhash64(F.col("id"), F.lit(salt)), F.lit(modulo))

    def pick(values: Sequence[str], salt: int) -> Any:
        return F.element_at(F.array(*map(F.lit, values)), (draw(salt, len(values)) + 1).cast("int"))

    parallelism = spark.sparkContext.defaultParallelism
    return spark.range(start, start + rows, numPartitions=parallelism).select(
        F.col("id"),
        F.timestamp_seconds(F.lit(first) + draw(1, seconds)).alias("ts"),
        pick(COUNTRIES, 2).alias("country"),
        draw(3, 100_000).alias("user_id"),
        F.round(draw(4, 500_000) / F.lit(100.0), 2).alias("amount"),
        F.concat_ws(" ", pick(WORDS, 5), pick(WORDS, 6), F.lit("event")).alias("note"),
    )


def _write(df: DataFrame, uri: str, mode: str, **options: str) -> float:
    started = time.perf_counter()
    writer = df.write.format("lance_partitioned").mode(mode)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(uri)
    return time.perf_counter() - started


def _evolve(ns: lp.PartitionedNamespace) -> bool:
    """Evolve the spec to :data:`EVOLVED_SPEC`, if this build has partition evolution."""
    from lance_partitioned import errors

    try:
        ns.update_partition_spec(EVOLVED_SPEC)
    except (ImportError, AttributeError, NotImplementedError, errors.UnsupportedOperationError):
        return False
    return True


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def run(spark: SparkSession, rows: int, out: Path) -> None:
    """The pipeline (see the module docstring)."""
    from pyspark.sql import functions as F

    import lance_partitioned as lp
    import lance_partitioned.spark

    lance_partitioned.spark.register(spark)
    root = out / "events"
    if root.exists():
        shutil.rmtree(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    uri = str(root.resolve())

    _say(f"[1/6] writing {rows:,} events (2024-2025) to {root}, partition_by={FIRST_SPEC!r}")
    seconds = _write(
        events(spark, 0, rows, _2024, 2 * _YEAR_SECONDS), uri, "overwrite", partition_by=FIRST_SPEC
    )
    ns = lp.PartitionedNamespace.open(uri)
    leaves = len(ns.partitions(sizes=False))
    _say(f"      {leaves} leaves in {seconds:.1f}s ({rows / seconds:,.0f} rows/s)")

    late = rows // 4
    _say(f"[2/6] appending {late:,} late events")
    seconds = _write(events(spark, rows, late, _2024, 2 * _YEAR_SECONDS), uri, "append")
    _say(f"      done in {seconds:.1f}s, __manifest version {ns.refresh().version}")

    _say(f"[3/6] evolving the partition spec to {EVOLVED_SPEC!r} for new data")
    evolved = _evolve(ns)
    _say(
        f"      now writing with spec v{ns.current_spec.version}"
        if evolved
        else "      skipped: this build has no partition evolution yet"
    )

    fresh = rows // 4
    _say(f"[4/6] appending {fresh:,} events of January-March 2026")
    seconds = _write(events(spark, rows + late, fresh, _2026, 90 * 86_400), uri, "append")
    parts = ns.refresh().partitions(sizes=False)
    by_spec = Counter(parts.column("spec_version").to_pylist())
    spread = ", ".join(f"v{v}: {n}" for v, n in sorted(by_spec.items()))
    _say(f"      done in {seconds:.1f}s; leaves per spec version: {spread}")

    total = parts.num_rows
    _say(f"[5/6] pruned queries (Spark, option 'filter' on the {total}-leaf namespace)")
    for title, condition in QUERIES:
        scanned = len(ns.plan_scan(condition))
        started = time.perf_counter()
        df = spark.read.format("lance_partitioned").option("filter", condition).load(uri)
        row = df.agg(F.count("*").alias("n"), F.sum("amount").alias("amount")).collect()[0]
        took = time.perf_counter() - started
        _say(
            f"      {title:<22} scanned {scanned:>3} of {total} leaves: {row.n:>9,} rows, "
            f"amount {row.amount or 0:>14,.2f}  ({took:.1f}s)   filter {condition}"
        )

    _say("[6/6] summary")
    specs = "; ".join(
        f"v{s.version} = {', '.join(f.name for f in s.fields) or 'unpartitioned'}"
        for s in ns.partition_specs
    )
    _say(f"      {uri}")
    _say(f"      {ns.count_rows():,} rows in {total} leaf tables, __manifest version {ns.version}")
    _say(f"      partition specs: {specs}")
    _say(f"      columns: {', '.join(ns.schema.names)}")
    _say(f"      {_size(root) / 2**20:,.1f} MiB on disk")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns the process exit code."""
    args = parser().parse_args(argv)
    if args.rows < 1:
        print("error: --rows must be at least 1", file=sys.stderr)
        return 2
    started = time.perf_counter()
    warnings.filterwarnings("ignore", message="lance is not fork-safe")
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    try:
        _say(f"starting Spark ({args.master}) ...")
        spark, owned = _spark(args.master)
        try:
            run(spark, args.rows, Path(args.out))
        finally:
            if owned:
                spark.stop()
    except DemoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _say(f"done in {time.perf_counter() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
