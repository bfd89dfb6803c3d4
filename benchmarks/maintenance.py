"""Maintenance benchmark (issue 18): a year of daily appends, then optimize + cleanup.

``--appends`` appends (default 365) of ``--rows-per-append`` rows (default 30,000) with
columns ``id, ts, country, user_id, amount, text``: append ``n`` holds the events of day ``n``
of 2025, and a fraction ``--late`` of them (default 0.1) are late arrivals from the 7 days
before (as a daily pipeline receives them), so a day's leaf gets a few fragments. Written by:

* ``ours``: a ``PartitionedNamespace`` partitioned by ``--partition-by`` (default
  ``year(ts), month(ts), day(ts)``), one ``ns.write`` per append; then ``ns.optimize()`` and
  ``ns.cleanup(older_than=timedelta(0))`` (``--cleanup auto`` runs it when the namespace has
  it, else prints "n/a");
* ``floor``: the same rows in one ``ns.write`` into a fresh namespace with the same
  partitioning (the floor every ratio is taken against);
* ``delta``: delta-rs ``write_deltalake(mode="append", partition_by=["day"])`` with the day
  precomputed, the same appends; then ``optimize.compact()`` and
  ``vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)``.

After 30, 90 and 365 appends (those not above ``--appends``, and the last) and after the
maintenance, each system reports: files and bytes on disk under its root, a full scan (every
column of every row), a one-day query (every column of one day, the middle day of the first
checkpoint, on an open handle) and the open time (ours: reading the ``__manifest``; delta:
loading the log), each the minimum of ``--repeat`` runs and checked against the rows
generated (a mismatch aborts).

Usage::

    .venv/bin/python benchmarks/maintenance.py                       # the full year: long
    .venv/bin/python benchmarks/maintenance.py --appends 40 --rows-per-append 2000  # smoke
    .venv/bin/python benchmarks/maintenance.py --cleanup no          # optimize only
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# lance warns once per new leaf ("No existing dataset at ..."): keep stderr readable
os.environ.setdefault("LANCE_LOG", "error")

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import lance_partitioned as lp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _versions import package_version

UTC = dt.timezone.utc
YEAR_START = dt.datetime(2025, 1, 1, tzinfo=UTC)
COUNTRIES = pa.array(["US", "FR", "DE", "GB", "JP", "CN", "IN", "BR", "CA", "AU"])
WORDS = pa.array(
    [
        f"{a} {b}"
        for a in ("quick", "late", "repeat", "manual")
        for b in ("checkout", "refund", "signup", "renewal", "page view", "login", "payment")
    ]
)
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("ts", pa.timestamp("us", UTC)),
        ("country", pa.string()),
        ("user_id", pa.int64()),
        ("amount", pa.float64()),
        ("text", pa.string()),
    ]
)
CHECKPOINTS = (30, 90, 365)
LATE_DAYS = 7
_US_PER_DAY = 86_400_000_000


def day_events(day: int, rows: int, late: float, seed: int = 0) -> pa.Table:
    """Append ``day``: ``rows`` events of that day, ``late`` of them from the days before."""
    rng = np.random.default_rng([seed, day])
    days = np.full(rows, day, dtype=np.int64)
    is_late = rng.random(rows) < late
    days[is_late] -= rng.integers(1, LATE_DAYS + 1, int(is_late.sum()))
    days = np.maximum(days, 0)
    start = int(YEAR_START.timestamp() * 1_000_000)
    micros = start + days * _US_PER_DAY + rng.integers(0, _US_PER_DAY, rows)
    return pa.table(
        {
            "id": pa.array(np.arange(day * rows, (day + 1) * rows, dtype=np.int64)),
            "ts": pa.array(micros, pa.timestamp("us", UTC)),
            "country": COUNTRIES.take(rng.integers(0, len(COUNTRIES), rows)),
            "user_id": pa.array(rng.integers(0, 100_000, rows)),
            "amount": pa.array(np.round(rng.random(rows) * 1000, 2)),
            "text": WORDS.take(rng.integers(0, len(WORDS), rows)),
        },
        schema=SCHEMA,
    )


def with_day(table: pa.Table) -> pa.Table:
    """The table with delta's partition column ``day`` (date32 of ``ts`` in UTC)."""
    return table.append_column("day", pc.cast(table.column("ts"), pa.date32()))


def day_bounds(day: int) -> tuple[dt.datetime, dt.datetime]:
    first = YEAR_START + dt.timedelta(days=day)
    return first, first + dt.timedelta(days=1)


def disk(root: Path) -> tuple[int, int]:
    """Files and bytes under ``root``."""
    files = size = 0
    for base, _, names in os.walk(root):
        for name in names:
            files += 1
            size += os.path.getsize(os.path.join(base, name))
    return files, size


def best(repeat: int, action: Callable[[], Any]) -> tuple[float, Any]:
    """The minimum wall time of ``repeat`` runs (seconds) and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return min(times), result


@dataclass
class Figures:
    system: str
    stage: str
    files: int
    bytes: int
    scan: float
    day: float
    open: float


class Expected:
    """Rows per day of what was generated so far, to check every read."""

    def __init__(self) -> None:
        self.rows = 0
        self.per_day: dict[int, int] = {}

    def add(self, table: pa.Table) -> None:
        self.rows += table.num_rows
        start = int(YEAR_START.timestamp() * 1_000_000)
        days = (pc.cast(table.column("ts"), pa.int64()).to_numpy() - start) // _US_PER_DAY
        for day, count in zip(*np.unique(days, return_counts=True), strict=True):
            self.per_day[int(day)] = self.per_day.get(int(day), 0) + int(count)


def check(what: str, got: int, want: int) -> None:
    if got != want:
        raise SystemExit(f"{what}: read {got} rows, expected {want}")


def measure_ours(
    root: Path, stage: str, system: str, expected: Expected, day: int, repeat: int
) -> Figures:
    files, size = disk(root)
    opened, ns = best(repeat, lambda: lp.PartitionedNamespace.open(str(root)))
    scan, table = best(repeat, lambda: ns.to_table())
    check(f"{system} {stage} full scan", table.num_rows, expected.rows)
    first, last = day_bounds(day)
    where = f"ts >= TIMESTAMP '{first.isoformat()}' AND ts < TIMESTAMP '{last.isoformat()}'"
    one, table = best(repeat, lambda: ns.to_table(where))
    check(f"{system} {stage} one-day query", table.num_rows, expected.per_day[day])
    return Figures(system, stage, files, size, scan, one, opened)


def measure_delta(root: Path, stage: str, expected: Expected, day: int, repeat: int) -> Figures:
    from deltalake import DeltaTable

    files, size = disk(root)
    opened, table = best(repeat, lambda: DeltaTable(str(root)))
    scan, read = best(repeat, lambda: table.to_pyarrow_table())
    check(f"delta {stage} full scan", read.num_rows, expected.rows)
    date = (YEAR_START + dt.timedelta(days=day)).date()
    one, read = best(
        repeat,
        lambda: table.to_pyarrow_dataset().to_table(filter=pc.field("day") == pa.scalar(date)),
    )
    check(f"delta {stage} one-day query", read.num_rows, expected.per_day[day])
    return Figures("delta", stage, files, size, scan, one, opened)


def batches(appends: int, rows: int, late: float) -> Iterator[pa.RecordBatch]:
    for day in range(appends):
        yield from day_events(day, rows, late).to_batches()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=365)
    parser.add_argument("--rows-per-append", type=int, default=30_000)
    parser.add_argument("--late", type=float, default=0.1, help="fraction of late arrivals")
    parser.add_argument("--partition-by", default="year(ts), month(ts), day(ts)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per read measurement")
    parser.add_argument(
        "--cleanup",
        choices=("auto", "yes", "no"),
        default="auto",
        help="run ns.cleanup after optimize (auto: when the namespace has it)",
    )
    parser.add_argument("--no-delta", action="store_true", help="skip delta-rs")
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args(argv)
    appends, rows = args.appends, args.rows_per_append
    checkpoints = sorted({c for c in CHECKPOINTS if c < appends} | {appends})
    query_day = checkpoints[0] // 2  # written by every checkpoint
    work = Path(tempfile.mkdtemp(prefix="lp-maintenance-", dir=args.dir))
    print(
        f"# maintenance benchmark: {appends} appends x {rows:,} rows "
        f"({appends * rows:,} rows), late {args.late:.0%}, partition_by {args.partition_by!r}",
        flush=True,
    )
    named = ", ".join(f"{p} {package_version(p)}" for p in ("pylance", "pyarrow", "deltalake"))
    print(f"# {named}", flush=True)
    figures: list[Figures] = []
    timings: dict[str, float | None] = {}
    try:
        expected = Expected()
        ours_root, delta_root = work / "ours", work / "delta"
        ns = lp.PartitionedNamespace.create(
            str(ours_root), schema=SCHEMA, partition_by=args.partition_by
        )
        spent = {"ours": 0.0, "delta": 0.0}
        run_delta = not args.no_delta
        if run_delta:
            from deltalake import write_deltalake
        for day in range(appends):
            table = day_events(day, rows, args.late)
            expected.add(table)
            started = time.perf_counter()
            ns.write(table)
            spent["ours"] += time.perf_counter() - started
            if run_delta:
                started = time.perf_counter()
                write_deltalake(
                    str(delta_root), with_day(table), mode="append", partition_by=["day"]
                )
                spent["delta"] += time.perf_counter() - started
            if day + 1 in checkpoints:
                stage = f"{day + 1} appends"
                figures.append(
                    measure_ours(ours_root, stage, "ours", expected, query_day, args.repeat)
                )
                if run_delta:
                    figures.append(
                        measure_delta(delta_root, stage, expected, query_day, args.repeat)
                    )
                print(f"# {stage} measured", flush=True)
        timings["ours appends"] = spent["ours"]
        timings["delta appends"] = spent["delta"] if run_delta else None

        ns.refresh()
        started = time.perf_counter()
        optimized = ns.optimize()
        timings["ours optimize"] = time.perf_counter() - started
        print(
            f"# optimize: {optimized.leaves_compacted} leaves compacted, "
            f"{optimized.leaves_skipped} skipped, fragments {optimized.fragments_before} -> "
            f"{optimized.fragments_after}, __manifest fragments "
            f"{optimized.manifest_fragments_before} -> {optimized.manifest_fragments_after}",
            flush=True,
        )
        cleanup = getattr(ns, "cleanup", None)
        if args.cleanup == "yes" and cleanup is None:
            raise SystemExit("--cleanup yes: this lance_partitioned has no cleanup()")
        if cleanup is not None and args.cleanup != "no":
            started = time.perf_counter()
            cleanup(older_than=dt.timedelta(0))
            timings["ours cleanup"] = time.perf_counter() - started
            stage = "optimize + cleanup"
        else:
            timings["ours cleanup"] = None
            stage = "optimize (cleanup n/a)"
        figures.append(measure_ours(ours_root, stage, "ours", expected, query_day, args.repeat))
        if run_delta:
            from deltalake import DeltaTable

            table = DeltaTable(str(delta_root))
            started = time.perf_counter()
            table.optimize.compact()
            timings["delta compact"] = time.perf_counter() - started
            started = time.perf_counter()
            table.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
            timings["delta vacuum"] = time.perf_counter() - started
            figures.append(
                measure_delta(delta_root, "compact + vacuum", expected, query_day, args.repeat)
            )
        floor_root = work / "floor"
        floor = lp.PartitionedNamespace.create(
            str(floor_root), schema=SCHEMA, partition_by=args.partition_by
        )
        started = time.perf_counter()
        floor.write(pa.RecordBatchReader.from_batches(SCHEMA, batches(appends, rows, args.late)))
        timings["floor write"] = time.perf_counter() - started
        floor_figures = measure_ours(
            floor_root, "one write", "floor", expected, query_day, args.repeat
        )
        figures.append(floor_figures)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(figures, floor_figures, timings, appends)
    return 0


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def _s(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds:,.1f}"


def report(
    figures: list[Figures], floor: Figures, timings: dict[str, float | None], appends: int
) -> None:
    print()
    print(
        "| system | stage | files | MB on disk | full scan (ms) | one-day query (ms) | "
        "open (ms) | bytes / floor | scan / floor |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for f in figures:
        print(
            f"| {f.system} | {f.stage} | {f.files:,} | {f.bytes / 1e6:,.1f} | {_ms(f.scan)} | "
            f"{_ms(f.day)} | {_ms(f.open)} | {f.bytes / floor.bytes:.2f} | "
            f"{f.scan / floor.scan:.2f} |"
        )
    print()
    print("| operation | seconds |")
    print("| --- | ---: |")
    for name, seconds in timings.items():
        print(f"| {name} | {_s(seconds)} |")
    ours = next(f for f in reversed(figures) if f.system == "ours")
    before = next(f for f in figures if f.system == "ours" and f.stage == f"{appends} appends")
    maintenance = [timings.get("ours optimize"), timings.get("ours cleanup")]
    delta = [timings.get("delta compact"), timings.get("delta vacuum")]
    print()
    print("targets:")
    print(f"- bytes after maintenance <= 1.2x floor: {ours.bytes / floor.bytes:.2f}x")
    print(f"- full scan after maintenance <= 1.3x floor: {ours.scan / floor.scan:.2f}x")
    if None in delta:
        print("- optimize + cleanup vs delta compact + vacuum: n/a (delta not run)")
    else:
        what = "optimize + cleanup" if None not in maintenance else "optimize (cleanup n/a)"
        ours_s = sum(s for s in maintenance if s is not None)
        delta_s = sum(s for s in delta if s is not None)
        print(f"- {what} faster than delta compact + vacuum: {ours_s:.1f} s vs {delta_s:.1f} s")
    print(f"- one-day query before maintenance < 100 ms: {_ms(before.day)} ms")


if __name__ == "__main__":
    sys.exit(main())
