"""Smoke test of ``benchmarks/search.py``: it runs end to end and prints its tables, our flat
search (every leaf under 10,000 rows) at recall 1.0."""

from __future__ import annotations

import pytest

from tests.benchmarks.helpers import run


@pytest.mark.slow
def test_search_benchmark_runs_and_prints_its_tables() -> None:
    done = run("search.py", "--rows", "3000", "--dim", "16", "--tenants", "6", "--queries", "3")
    lines = done.stdout.splitlines()
    assert "| query | system | recall@10 | QPS (1 thread) | QPS (2 threads) |" in lines
    ours = [line for line in lines if "| ours | 1.000 |" in line]
    assert len(ours) == 4, done.stdout
    assert any(line.startswith("| FTS global | ours |") for line in lines), done.stdout
