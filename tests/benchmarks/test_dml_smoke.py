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
    assert len(rows) == 14, done.stdout  # 2 specs x 7 operations
    assert "delete one partition" in done.stdout
    assert "| optimize |" in done.stdout
    # verify: ours and the floor timed, delta-rs has none ("-")
    verified = [row.split("|") for row in rows if "| verify |" in row]
    assert len(verified) == 2, done.stdout
    for cells in verified:
        ours, delta, floor = (c.strip() for c in cells[3:6])
        assert float(ours) > 0, cells
        assert float(floor) > 0, cells
        assert delta == "-", cells
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_dml_benchmark_runs_issue_33_months_spec(tmp_path: Path) -> None:
    if available("delta") != ["delta"]:
        pytest.skip("deltalake (the bench extra) is not installed")
    ops = "delete_partition,merge_keyed,optimize"
    args = ("--rows", "5000", "--merge-rows", "100", "--only", "months", "--ops", ops)
    done = run("dml.py", *args, "--dir", str(tmp_path))
    rows = [line for line in done.stdout.splitlines() if line.startswith("| `months(ts)")]
    assert len(rows) == 3, done.stdout
    assert "merge source: 100 rows" in done.stdout
