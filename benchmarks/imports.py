"""Import benchmark (issue 28): a Hive Parquet tree of the ``events`` table, partitioned by
``event_date`` (731 partitions), brought into a table format.

* ``ours``: ``lp.import_(tree, dst)``: every row read and rewritten as Lance leaves, one per
  date, committed (resumably) in groups of ``--commit-rows`` rows;
* ``delta convert``: ``deltalake.convert_to_deltalake`` on a copy of the tree (the copy is
  not timed): a Delta log over the existing Parquet files, no row rewritten (statistics read
  from the footers);
* ``delta write``: ``deltalake.write_deltalake`` of the tree read with ``pyarrow.dataset``
  (Hive partitioning), partitioned by ``event_date``: every row rewritten, as ours does.

The tree is written once (untimed) from ``stream_events``. Each run writes into a fresh
directory after an ``os.sync()``; the time printed is the minimum over ``--repeat`` runs, and
the ratio is each peer's time over ours (above 1: ours is faster).

Usage::

    .venv/bin/python benchmarks/imports.py [--rows 10000000] [--repeat 1] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable

os.environ.setdefault("LANCE_LOG", "error")

import pyarrow as pa
import pyarrow.dataset as pads

import lance_partitioned as lp
from _data import stream_events
from _versions import package_version

PEERS = ("ours", "delta convert", "delta write")


def write_tree(rows: int, tree: str) -> int:
    """The Hive Parquet tree of ``rows`` events by ``event_date``; its number of files."""
    pads.write_dataset(
        stream_events(rows),
        tree,
        format="parquet",
        partitioning=pads.partitioning(pa.schema([("event_date", pa.date32())]), flavor="hive"),
        max_partitions=1_000,
        max_open_files=1_000,
    )
    return sum(len(files) for _, _, files in os.walk(tree))


def _ours(tree: str, dst: str, commit_rows: int) -> int:
    return lp.import_(tree, dst, commit_rows=commit_rows).rows


def _convert(tree: str, dst: str, commit_rows: int) -> int:
    import deltalake

    deltalake.convert_to_deltalake(
        dst,
        partition_by=deltalake.Schema.from_arrow(pa.schema([("event_date", pa.date32())])),
        partition_strategy="hive",
    )
    return int(deltalake.DeltaTable(dst).to_pyarrow_dataset().count_rows())


def _write(tree: str, dst: str, commit_rows: int) -> int:
    import deltalake

    source = pads.dataset(tree, format="parquet", partitioning="hive")
    deltalake.write_deltalake(dst, source.scanner().to_reader(), partition_by=["event_date"])
    return int(source.count_rows())


RUNNERS: dict[str, Callable[[str, str, int], int]] = {
    "ours": _ours,
    "delta convert": _convert,
    "delta write": _write,
}


def measure(name: str, tree: str, base: str, repeat: int, commit_rows: int) -> tuple[float, int]:
    """The minimum seconds of ``repeat`` runs of ``name``, and the rows it brought in."""
    best = float("inf")
    rows = 0
    for i in range(repeat):
        dst = os.path.join(base, f"{name.replace(' ', '-')}-{i}")
        if name == "delta convert":
            shutil.copytree(tree, dst)  # converted in place: the copy is not timed
        os.sync()
        started = time.perf_counter()
        rows = RUNNERS[name](tree, dst, commit_rows)
        best = min(best, time.perf_counter() - started)
        shutil.rmtree(dst)
    return best, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--commit-rows", type=int, default=4_000_000)
    parser.add_argument("--dir", default=None, help="where the trees are written (default /tmp)")
    args = parser.parse_args(argv)
    has_delta = package_version("deltalake") != "(not installed)"
    peers = [p for p in PEERS if p == "ours" or has_delta]
    base = tempfile.mkdtemp(prefix="lp-imports-", dir=args.dir)
    try:
        tree = os.path.join(base, "tree")
        files = write_tree(args.rows, tree)
        print(
            f"{args.rows:,} rows, Hive Parquet tree of {files} files by event_date; "
            f"lance-partitioned {lp.__version__}, pylance {package_version('pylance')}, "
            f"deltalake {package_version('deltalake')}, min of {args.repeat} run(s)\n"
        )
        results = {p: measure(p, tree, base, args.repeat, args.commit_rows) for p in peers}
    finally:
        shutil.rmtree(base, ignore_errors=True)
    ours = results["ours"][0]
    print("| import | seconds | rows | time / ours |")
    print("| --- | ---: | ---: | ---: |")
    for name, (seconds, rows) in results.items():
        print(f"| {name} | {seconds:.2f} | {rows:,} | {seconds / ours:.2f} |")
    bad = [name for name, (_, rows) in results.items() if rows != args.rows]
    if bad:
        print(f"row counts differ from {args.rows:,}: {bad}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
