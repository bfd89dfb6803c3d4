"""Smoke test of ``benchmarks/liveness.py``: an update and a merge on each of two partitions
while another process appends to one of them as fast as it can; the script checks the rows
itself (every appended row once, every update applied) and exits non-zero otherwise."""

from __future__ import annotations

import pytest

from tests.benchmarks.helpers import run


@pytest.mark.slow
def test_liveness_benchmark_commits_every_change_against_an_appender() -> None:
    done = run("liveness.py", "--rows", "2000")
    assert "checked:" in done.stdout, done.stdout
    table = [line for line in done.stdout.splitlines() if line.startswith("| update")]
    table += [line for line in done.stdout.splitlines() if line.startswith("| merge")]
    assert len(table) == 4, done.stdout
    # none gave up: each committed (ConcurrentModificationError after 16 attempts otherwise)
    assert all(line.split("|")[4].strip() == "False" for line in table), done.stdout
