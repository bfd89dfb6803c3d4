"""What the command line writes: results to a pipe are not folded at 80 columns, partition
values read as periods (``2025-08``, not ``667``), a failed ``scan -o FILE`` leaves no file,
and a warning is one line without a file path. Run as a process, as a user runs it."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp

# the command line as a user runs it, a new interpreter per command (about 1 s of CPU
# each): with the console-script tests, in the full run only
pytestmark = pytest.mark.console_script

SRC = Path(__file__).resolve().parents[2] / "src"
UTC = dt.timezone.utc
LONG = "a note much longer than a terminal is wide: " + "x" * 120
SCHEMA = pa.schema([("ts", pa.timestamp("us", UTC)), ("note", pa.string())])


def _cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command line writing to pipes, as in ``cmd | less`` or ``cmd > file``: no
    terminal on any standard stream and no ``COLUMNS`` (a shell does not export it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "TTY_COMPATIBLE")}
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "lance_partitioned", *map(str, args)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(SRC)},
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def periods(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One row at 2025-08-01 13:05 UTC with a long note, partitioned by every period."""
    root = str(tmp_path_factory.mktemp("periods") / "ns")
    ns = lp.PartitionedNamespace.create(
        root, schema=SCHEMA, partition_by="years(ts), months(ts), days(ts), hours(ts)"
    )
    moment = dt.datetime(2025, 8, 1, 13, 5, tzinfo=UTC)
    ns.write(pa.table({"ts": [moment], "note": [LONG]}, schema=SCHEMA))
    return root


def test_a_scan_to_a_pipe_is_not_folded(periods: str) -> None:
    done = _cli("scan", periods)
    assert done.returncode == 0, done.stderr
    (row,) = [line for line in done.stdout.splitlines() if "2025-08-01" in line]
    assert LONG in row
    assert "2025-08-01T13:05:00+00:00" in row  # the timestamp whole, on the row's line


def test_partition_values_read_as_periods(periods: str) -> None:
    done = _cli("partitions", periods)
    assert done.returncode == 0, done.stderr
    header, _, row = done.stdout.splitlines()[:3]
    assert header.split()[:9:2] == ["spec", "ts_years", "ts_months", "ts_date", "ts_hours"]
    assert row.split()[:9:2] == ["v1", "2025", "2025-08", "2025-08-01", "2025-08-01T13"]
    stats = _cli("stats", periods)
    assert stats.returncode == 0, stats.stderr
    assert "v1 2025/2025-08/2025-08-01/" in stats.stdout  # the chart (its labels are cut)
    assert "ts_years=2025, ts_months=2025-08, ts_date=2025-08-01" in stats.stdout


def test_a_failed_csv_scan_leaves_no_file(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("device", pa.struct([("os", pa.string())]))])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=schema, partition_by="id")
    ns.write(pa.table({"id": [1], "device": [{"os": "ios"}]}, schema=schema))
    out = tmp_path / "out"
    out.mkdir()
    (out / "kept.csv").write_text("before\n")  # a file that was there stays as it was
    for name in ("rows.csv", "kept.csv"):
        done = _cli("scan", ns.uri, "--format", "csv", "--output", out / name)
        assert done.returncode == 2, done.stderr
        assert "cannot be written as CSV" in done.stderr
    assert [p.name for p in out.iterdir()] == ["kept.csv"]
    assert (out / "kept.csv").read_text() == "before\n"
    done = _cli("scan", ns.uri, "--format", "csv", "--columns", "id", "--output", out / "ok.csv")
    assert done.returncode == 0, done.stderr
    assert (out / "ok.csv").read_text().splitlines() == ['"id"', "1"]
    assert sorted(p.name for p in out.iterdir()) == ["kept.csv", "ok.csv"]


def test_a_warning_is_one_line_without_a_file_path(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_text('{"ts": "timestamp[us, tz=UTC]", "id": "int64"}')
    done = _cli(
        "create",
        tmp_path / "ns",
        "--schema",
        tmp_path / "schema.json",
        "--partition-by",
        "month(ts)",
    )
    assert done.returncode == 0, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("lance-partitioned: warning: AmbiguousPartitionWarning: partition field")
    assert ".py" not in line
    assert "typer" not in done.stderr
