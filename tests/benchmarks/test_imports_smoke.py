"""Smoke test of ``benchmarks/imports.py``: it runs end to end on a small tree and prints its
table, every system bringing in every row (it exits non-zero otherwise)."""

from __future__ import annotations

import pytest

from tests.benchmarks.helpers import run


@pytest.mark.slow  # 731 partitions written three times: about 6 s on 2 CPUs
def test_imports_benchmark_runs_and_prints_its_table() -> None:
    done = run("imports.py", "--rows", "5000")
    assert "| import | seconds | rows | time / ours |" in done.stdout
    assert any(line.startswith("| ours |") for line in done.stdout.splitlines()), done.stdout
