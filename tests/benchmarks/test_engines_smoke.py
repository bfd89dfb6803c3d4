"""Smoke test of ``benchmarks/engines.py``: it runs end to end on a small namespace, every
reader returns the same rows, and the one-partition queries open one leaf."""

from __future__ import annotations

import pytest

from tests.benchmarks.helpers import run


@pytest.mark.slow
def test_engines_benchmark_runs_and_prints_its_table() -> None:
    done = run("engines.py", "--rows", "20000", "--repeat", "1")
    assert "| query | ours `to_table` (ms) | DuckDB (ms) | Polars (ms) |" in done.stdout
    assert "results differ" not in done.stdout, done.stdout
    one = next(line for line in done.stdout.splitlines() if line.startswith("| one partition"))
    assert one.endswith("| 1, 1 of 20 |"), one
    full = next(line for line in done.stdout.splitlines() if line.startswith("| full scan"))
    assert full.endswith("| 20, 20 of 20 |"), full
