"""Smoke tests of ``benchmarks/write.py``: it runs end to end on a small table, and the runs'
output directories are kept until it ends (deleted earlier only when the disk runs low)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.benchmarks.helpers import available, load, run


@pytest.mark.slow
def test_write_benchmark_runs_prints_its_table_and_cleans_up(tmp_path: Path) -> None:
    writers = available("ours", "floor", "naive", "delta", "hive")
    args = ["--rows", "20000", "--repeat", "2", "--only", ",".join(writers), "--dir", str(tmp_path)]
    done = run("write.py", *args)
    assert "| none | lance (unpartitioned) |" in done.stdout, done.stdout
    for writer in writers:
        assert f"| `event_date` | {writer} |" in done.stdout, done.stdout
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines() if line.startswith("| ")]
    header, measured = rows[0], rows[2:]  # rows[1] is the separator
    cpu = [name.strip() for name in header].index("CPU s (min)")
    assert len(measured) == 1 + 3 * len(writers)  # the baseline, then every spec
    # every row has a CPU time; on 20,000 rows a fast writer's rounds to 0.00, not ours
    # creating 731 Lance datasets
    assert all(float(row[cpu]) >= 0 for row in measured), done.stdout
    (ours,) = [row for row in measured if [c.strip() for c in row[:2]] == ["`event_date`", "ours"]]
    assert float(ours[cpu]) > 0, done.stdout
    assert "FAILED" not in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == [], "the benchmark left output directories behind"


def test_outputs_are_kept_until_deleted_or_the_disk_runs_low(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write = load("write")
    outputs = write.Outputs(str(tmp_path))
    first, second = outputs.new(), outputs.new()
    assert os.path.isdir(first)
    assert os.path.isdir(second)
    assert Path(first).parent == tmp_path
    monkeypatch.setattr(write, "_MIN_FREE_BYTES", 1 << 62)  # no disk has that much free
    third = outputs.new()
    assert not os.path.exists(first)
    assert not os.path.exists(second)
    assert outputs.kept == [third]
    outputs.delete()
    assert not os.path.exists(third)
    assert outputs.kept == []
    assert list(tmp_path.iterdir()) == []
