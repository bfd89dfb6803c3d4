"""``partitions()`` benchmark (issue 20): the leaf listing with and without its sizes.

For each ``--leaves`` count (default 100 and 1,000), a namespace partitioned by ``k`` with
ten rows in each of that many leaves (written once, untimed); then ``ns.partitions(sizes=False)``
(the ``__manifest`` alone) and ``ns.partitions()`` (every leaf opened at its ``read_version``
for its rows, bytes and fragments), interleaved ``--repeat`` times. The table reports the
minimum and the median of each, and checks that the sizes add up to the rows written.

Usage::

    .venv/bin/python benchmarks/partitions.py
    .venv/bin/python benchmarks/partitions.py --leaves 100 1000 --repeat 9
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

import lance_partitioned as lp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _versions import package_version

ROWS_PER_LEAF = 10


def namespace(root: str, leaves: int) -> lp.PartitionedNamespace:
    """``leaves`` leaves of ``ROWS_PER_LEAF`` rows each."""
    ns = lp.PartitionedNamespace.create(
        os.path.join(root, f"ns{leaves}"),
        schema=pa.schema([("id", pa.int64()), ("k", pa.int64())]),
        partition_by="k",
    )
    ids = pa.array(range(leaves * ROWS_PER_LEAF), pa.int64())
    ns.write(pa.table({"id": ids, "k": pa.array([i % leaves for i in range(len(ids))])}))
    return ns


def measure(ns: lp.PartitionedNamespace, repeat: int) -> dict[str, list[float]]:
    """Seconds of each listing, ``repeat`` interleaved runs after one warm-up."""
    times: dict[str, list[float]] = {"sizes=False": [], "sizes=True": []}
    for r in range(repeat + 1):
        for name, sizes in (("sizes=False", False), ("sizes=True", True)):
            started = time.perf_counter()
            listing = ns.partitions(sizes=sizes)
            seconds = time.perf_counter() - started
            if sizes:
                rows = sum(listing.column("rows").to_pylist())
                if rows != listing.num_rows * ROWS_PER_LEAF:
                    raise SystemExit(f"sizes count {rows} rows, {listing.num_rows * 10} written")
            if r:
                times[name].append(seconds)
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leaves", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    repeat = max(1, args.repeat)
    lines = [
        f"min (median) of {repeat} interleaved repeats; pylance {package_version('pylance')}; "
        f"{os.cpu_count()} CPUs",
        "",
        "| leaves | `partitions(sizes=False)` (ms) | `partitions()` with sizes (ms) |",
        "| --- | --- | --- |",
    ]
    root = tempfile.mkdtemp(prefix="lp-partitions-")
    try:
        for leaves in args.leaves:
            times = measure(namespace(root, leaves), repeat)
            cells = [
                f"{min(t) * 1000:.1f} ({statistics.median(t) * 1000:.1f})" for t in times.values()
            ]
            lines.append(f"| {leaves:,} | {' | '.join(cells)} |")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
