"""Smoke tests of ``benchmarks/write.py``: it runs end to end on a small table, and the runs'
output directories are kept until it ends (deleted earlier only when the disk runs low)."""

from __future__ import annotations

import glob
import os

import pytest

from tests.benchmarks.helpers import available, load, run


def _outputs() -> set[str]:
    return set(glob.glob("/tmp/lp-bench-*"))


@pytest.mark.slow
def test_write_benchmark_runs_prints_its_table_and_cleans_up() -> None:
    writers = available("ours", "naive", "delta", "hive")
    before = _outputs()
    done = run("write.py", "--rows", "20000", "--repeat", "2", "--only", ",".join(writers))
    assert "| none | lance (unpartitioned) |" in done.stdout, done.stdout
    for writer in writers:
        assert f"| `event_date` | {writer} |" in done.stdout, done.stdout
    assert "FAILED" not in done.stderr, done.stderr
    assert _outputs() <= before, "the benchmark left output directories behind"


def test_outputs_are_kept_until_deleted_or_the_disk_runs_low(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write = load("write")
    outputs = write.Outputs()
    first, second = outputs.new(), outputs.new()
    assert os.path.isdir(first)
    assert os.path.isdir(second)
    monkeypatch.setattr(write, "_MIN_FREE_BYTES", 1 << 62)  # no disk has that much free
    third = outputs.new()
    assert not os.path.exists(first)
    assert not os.path.exists(second)
    assert outputs.kept == [third]
    outputs.delete()
    assert not os.path.exists(third)
    assert outputs.kept == []
