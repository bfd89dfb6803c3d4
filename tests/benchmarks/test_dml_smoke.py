"""Smoke test of ``benchmarks/dml.py``: it runs end to end on a small table, both systems end
with the same row count, and it prints one row per spec and operation."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import available, run


@pytest.mark.slow
def test_dml_benchmark_runs_and_prints_its_table(tmp_path: Path) -> None:
    if available("delta") != ["delta"]:
        pytest.skip("deltalake (the bench extra) is not installed")
    done = run("dml.py", "--rows", "20000", "--dir", str(tmp_path))
    rows = [line for line in done.stdout.splitlines() if line.startswith("| `")]
    assert len(rows) == 10, done.stdout
    assert "delete one partition" in done.stdout
    assert list(tmp_path.iterdir()) == []
