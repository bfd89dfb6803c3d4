"""Engines benchmark (issue 20): DuckDB and Polars over a namespace, against our own reads.

One ``events`` namespace (``_data.stream_events``, written once and untimed) partitioned by
``year(event_date), country`` (20 leaves). Then, ``--repeat`` times, interleaved (each
repeat runs every reader of a query one after the other, starting with a different one):

* ``one partition``: ``id, amount`` of the rows of 2025 in FR, exactly one leaf;
  ``ours`` is ``ns.to_table(QUERY, columns=...)``, ``duckdb`` is
  ``SELECT id, amount FROM ds WHERE <the same SQL>`` over ``ns.to_pyarrow_dataset()``,
  ``polars`` is ``ns.scan_polars().filter(<the same filter>).select(...).collect()``;
* ``full scan``: ``id, amount`` of every row, the same three ways.

The dataset and the LazyFrame are built once (like an open handle); each timing is the query
alone, result materialised as an Arrow table (DuckDB) or a DataFrame (Polars). The table
reports the minimum and the median of the repeats and the engine / ours ratio of the minima,
with the leaves each engine opened (from ``on_scan``) and a check that all three returned the
same rows (count and sum of ids).

Usage::

    .venv/bin/python benchmarks/engines.py                     # 10M rows, 5 repeats
    .venv/bin/python benchmarks/engines.py --rows 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("LANCE_LOG", "error")

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

import lance_partitioned as lp
from _data import stream_events
from _versions import package_version
from lance_partitioned.engines import EngineScan

PARTITION_BY = "year(event_date), country"
QUERY = "country = 'FR' AND event_date >= DATE '2025-01-01' AND event_date < DATE '2026-01-01'"
POLARS_QUERY = (
    (pl.col("country") == "FR")
    & (pl.col("event_date") >= datetime.date(2025, 1, 1))
    & (pl.col("event_date") < datetime.date(2026, 1, 1))
)
COLUMNS = ["id", "amount"]
READERS = ("ours", "duckdb", "polars")


@dataclass
class Cell:
    """The timings of one reader on one query, and what it read."""

    seconds: list[float] = field(default_factory=list)
    check: tuple[int, int] | None = None
    leaves: set[int] = field(default_factory=set)


def _check(table: pa.Table) -> tuple[int, int]:
    ids = table.column("id")
    return table.num_rows, int(pc.sum(ids).as_py() or 0)


def readers(ns: lp.PartitionedNamespace, scans: list[EngineScan]) -> dict[str, dict[str, Any]]:
    """The three ways of running each query: ``{query: {reader: callable}}``."""
    ds = ns.to_pyarrow_dataset(on_scan=scans.append)
    frame = ns.scan_polars(on_scan=scans.append)
    con = duckdb.connect()
    con.register("ds", ds)
    select = ", ".join(COLUMNS)

    def duck(sql: str) -> Callable[[], pa.Table]:
        return lambda: con.sql(sql).arrow().read_all()

    def polars(lazy: pl.LazyFrame) -> Callable[[], pa.Table]:
        return lambda: lazy.collect().to_arrow()

    return {
        "one partition (2025, FR)": {
            "ours": lambda: ns.to_table(QUERY, columns=COLUMNS),
            "duckdb": duck(f"SELECT {select} FROM ds WHERE {QUERY}"),
            "polars": polars(frame.filter(POLARS_QUERY).select(COLUMNS)),
        },
        "full scan": {
            "ours": lambda: ns.to_table(columns=COLUMNS),
            "duckdb": duck(f"SELECT {select} FROM ds"),
            "polars": polars(frame.select(COLUMNS)),
        },
    }


def run(rows: int, repeat: int, directory: str | None) -> tuple[dict[str, dict[str, Cell]], int]:
    root = tempfile.mkdtemp(prefix="lp-engines-", dir=directory)
    try:
        uri = os.path.join(root, "events")
        started = time.perf_counter()
        ns = lp.PartitionedNamespace.create(
            uri, schema=stream_events(1).schema, partition_by=PARTITION_BY
        )
        ns.write(stream_events(rows))
        print(f"wrote {rows:,} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        total = len(ns.plan_scan())
        scans: list[EngineScan] = []
        queries = readers(ns, scans)
        cells = {q: {r: Cell() for r in READERS} for q in queries}
        for r in range(repeat + 1):  # the first round warms caches and is not recorded
            print(f"repeat {r}/{repeat}" if r else "warm-up", file=sys.stderr, flush=True)
            for q, (query, calls) in enumerate(queries.items()):
                shift = (r + q) % len(READERS)
                for reader in READERS[shift:] + READERS[:shift]:
                    scans.clear()
                    started = time.perf_counter()
                    table = calls[reader]()
                    seconds = time.perf_counter() - started
                    cell = cells[query][reader]
                    cell.check = _check(table)
                    cell.leaves.update(len(s.opened) for s in scans)
                    if r:
                        cell.seconds.append(seconds)
        return cells, total
    finally:
        shutil.rmtree(root, ignore_errors=True)


def render(cells: dict[str, dict[str, Cell]], total: int, rows: int, repeat: int) -> str:
    versions = ", ".join(
        f"{name} {package_version(name)}" for name in ("pylance", "duckdb", "polars", "pyarrow")
    )
    lines = [
        f"{rows:,} rows, {total} leaves, min (median) of {repeat} interleaved repeats; "
        f"{versions}; {os.cpu_count()} CPUs",
        "",
        "| query | ours `to_table` (ms) | DuckDB (ms) | Polars (ms) "
        "| DuckDB / ours | Polars / ours | leaves opened (DuckDB, Polars) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for query, by_reader in cells.items():
        checks = {cell.check for cell in by_reader.values()}
        best = {r: min(c.seconds) for r, c in by_reader.items()}

        def ms(reader: str, cells: dict[str, Cell] = by_reader) -> str:
            times = cells[reader].seconds
            return f"{min(times) * 1000:.1f} ({statistics.median(times) * 1000:.1f})"

        leaves = ", ".join(
            "/".join(str(n) for n in sorted(by_reader[r].leaves)) for r in ("duckdb", "polars")
        )
        same = "" if len(checks) == 1 else " **results differ**"
        lines.append(
            f"| {query}{same} | {ms('ours')} | {ms('duckdb')} | {ms('polars')} "
            f"| {best['duckdb'] / best['ours']:.2f} | {best['polars'] / best['ours']:.2f} "
            f"| {leaves} of {total} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where to write the namespace (a temp dir)")
    args = parser.parse_args(argv)
    cells, total = run(args.rows, max(1, args.repeat), args.dir)
    print(render(cells, total, args.rows, max(1, args.repeat)))


if __name__ == "__main__":
    main()
