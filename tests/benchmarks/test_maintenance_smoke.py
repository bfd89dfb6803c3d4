"""Smoke tests of ``benchmarks/maintenance.py``: its data, and a small run end to end."""

from __future__ import annotations

import datetime as dt

import pyarrow.compute as pc
import pytest

from tests.benchmarks.helpers import available, load, run


def test_each_append_is_its_day_with_late_arrivals_from_the_week_before() -> None:
    bench = load("maintenance")
    day = bench.day_events(10, 5000, 0.1)
    assert day.schema == bench.SCHEMA
    assert day.column("id").to_pylist() == list(range(50_000, 55_000))
    assert day.equals(bench.day_events(10, 5000, 0.1))  # deterministic
    first, last = bench.day_bounds(10)
    ts = day.column("ts")
    on_time = pc.sum(pc.and_(pc.greater_equal(ts, first), pc.less(ts, last))).as_py()
    assert 4300 < on_time < 4700  # about 10% late
    assert pc.min(ts).as_py() >= first - dt.timedelta(days=bench.LATE_DAYS)
    assert pc.max(ts).as_py() < last
    expected = bench.Expected()
    expected.add(day)
    assert expected.rows == 5000
    assert expected.per_day[10] == on_time
    assert set(expected.per_day) <= set(range(10 - bench.LATE_DAYS, 11))


@pytest.mark.slow
def test_the_benchmark_runs_and_prints_its_table() -> None:
    extra = [] if available("delta") else ["--no-delta"]
    done = run(
        "maintenance.py", "--appends", "6", "--rows-per-append", "300", "--repeat", "1", *extra
    )
    out = done.stdout
    assert "| system | stage | files | MB on disk |" in out, out
    assert "| ours | 6 appends |" in out
    assert "| floor | one write |" in out
    assert "| ours optimize |" in out
    assert "- one-day query before maintenance < 100 ms:" in out
    if not extra:
        assert "| delta | compact + vacuum |" in out
