"""Smoke test of ``benchmarks/partitions.py``: it runs end to end and prints its table, the
sizes it measured adding up to the rows it wrote (it exits non-zero otherwise)."""

from __future__ import annotations

import pytest

from tests.benchmarks.helpers import run


@pytest.mark.slow
def test_partitions_benchmark_runs_and_prints_its_table() -> None:
    done = run("partitions.py", "--leaves", "40", "--repeat", "1")
    assert "| leaves | `partitions(sizes=False)` (ms) | `partitions()` with sizes (ms) |" in (
        done.stdout
    )
    assert any(line.startswith("| 40 |") for line in done.stdout.splitlines()), done.stdout
