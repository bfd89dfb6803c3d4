"""Smoke test of ``benchmarks/spark.py --merge --quick``: it runs end to end on a tiny
namespace, the three ways end with the same rows, and it prints one row per way."""

from __future__ import annotations

import pytest

from tests.benchmarks.helpers import run

pytest.importorskip("pyspark")


@pytest.mark.slow  # starts a JVM, writes two tables, runs three merges: ~1 min on 2 shared cores
@pytest.mark.spark
def test_spark_merge_benchmark_runs_and_prints_its_table() -> None:
    done = run("spark.py", "--merge", "--quick", "--rows", "2000")
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| 2", "| 1"))]
    assert len(rows) == 3, done.stdout  # one source size x 3 ways
    assert [r.split(" | ")[0] for r in rows] == ["| 200"] * 3, done.stdout
    assert "ours (Spark)" in done.stdout
    assert "parquet (dynamic overwrite)" in done.stdout
    assert "RESULTS DIFFER" not in done.stdout, done.stdout
