"""Smoke test of ``benchmarks/objectstore.py``: a ``--quick`` run (50 partitions) through the
delaying proxy prints every operation with seconds and request counts for both systems and
the floor (pylance alone)."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks.helpers import available, load, run

pytestmark = pytest.mark.s3


@pytest.mark.slow  # starts moto's server and runs seven operations twice: about 30 s
def test_the_quick_run_prints_every_operation_for_both_systems() -> None:
    systems = available("ours", "delta")
    done = run(
        "objectstore.py", "--quick", "--delay-ms", "1", "--only", ",".join([*systems, "floor"])
    )
    bench = load("objectstore")
    lines = done.stdout.splitlines()
    for operation in bench.OPERATIONS:
        label = operation.format(n=50, d=50)
        rows = [line for line in lines if line.startswith(f"| {label} |")]
        assert len(rows) == 2, done.stdout  # the seconds table and the methods table
        seconds = [cell.strip() for cell in rows[0].strip("|").split("|")]
        assert re.fullmatch(r"\d+\.\d{3}", seconds[1]), rows[0]  # ours s
        assert int(seconds[4]) > 0, rows[0]  # ours requests
        if "delta" in systems:
            assert re.fullmatch(r"\d+\.\d{3}", seconds[2]), rows[0]
            assert re.fullmatch(r"\d+\.\d\dx", seconds[3]), rows[0]
            assert int(seconds[5]) > 0, rows[0]
        assert re.fullmatch(r"\d+\.\d{3}", seconds[6]), rows[0]  # floor s
        assert re.fullmatch(r"\d+\.\d\dx", seconds[7]), rows[0]  # ours / floor
        assert int(seconds[8]) > 0, rows[0]
