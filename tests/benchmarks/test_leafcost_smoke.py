"""Smoke test of ``benchmarks/leafcost.py``: a small run prints, per operation, a row for each
system, the floor's with ours / floor."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.helpers import available, run


@pytest.mark.slow  # a child interpreter runs the benchmark, deltalake too: about 6 s
def test_a_small_run_prints_ours_delta_and_the_floor() -> None:
    systems = available("ours", "delta", "floor")
    done = run("leafcost.py", "--partitions", "12", "--repeat", "1", "--only", ",".join(systems))
    lines = done.stdout.splitlines()
    for label in ("write 12 one-row partitions", "delete across 12 leaves"):
        rows = {line.split("|")[2].strip(): line for line in lines if f"| {label} |" in line}
        assert set(rows) == set(systems), done.stdout
        floor = [cell.strip() for cell in rows["floor"].strip("|").split("|")]
        assert re.fullmatch(r"\d+\.\d\dx", floor[5]), rows["floor"]
