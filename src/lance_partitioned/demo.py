"""The demo pipeline: generate events, write them partitioned, append, inspect.

Run it with ``scripts/demo`` (or ``python -m lance_partitioned.demo --rows 200000``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import lance_partitioned as lp

COUNTRIES = np.array(["US", "FR", "DE", "JP", "BR", "IN", "GB", "CA", "ES", "IT"])
WORDS = np.array(["click", "view", "buy", "share", "like", "scroll", "search", "login"])


def events(rows: int, start_id: int, seed: int) -> pa.Table:
    """A realistic event stream: timestamps over two years, countries, users, amounts, text."""
    rng = np.random.default_rng(seed)
    seconds = rng.integers(0, 2 * 365 * 86_400, rows)
    ts = np.datetime64("2024-01-01T00:00:00", "us") + seconds.astype("timedelta64[s]")
    return pa.table(
        {
            "id": pa.array(np.arange(start_id, start_id + rows), pa.int64()),
            "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "country": pa.array(COUNTRIES[rng.integers(0, len(COUNTRIES), rows)]),
            "user_id": pa.array(rng.integers(0, 100_000, rows), pa.int64()),
            "amount": pa.array(np.round(rng.gamma(2.0, 20.0, rows), 2)),
            "action": pa.array(WORDS[rng.integers(0, len(WORDS), rows)]),
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the first batch")
    parser.add_argument("--root", default="demo-data/events", help="namespace directory")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if root.exists():
        shutil.rmtree(root)
    root.parent.mkdir(parents=True, exist_ok=True)

    first = events(args.rows, 0, seed=1)
    print(f"creating {root} partitioned by year(ts), country")
    ns = lp.PartitionedNamespace.create(
        str(root), schema=first.schema, partition_by="year(ts), country"
    )

    def report(p: lp.WriteProgress) -> None:
        print(f"  ... {p.rows:,} rows grouped into {p.partitions} partitions", flush=True)

    result = ns.write(first, progress=report)
    print(
        f"wrote {result.rows_written:,} rows into {result.partitions_created} partitions "
        f"in {result.seconds:.2f}s (manifest version {result.version})"
    )
    second = events(args.rows // 4, args.rows, seed=2)
    result = ns.write(second)
    print(
        f"appended {result.rows_written:,} rows touching {result.partitions_touched} partitions "
        f"in {result.seconds:.2f}s (manifest version {result.version})"
    )
    parts = ns.partitions()
    print(f"\n{parts.num_rows} leaf tables; the first five:")
    for row in parts.slice(0, 5).to_pylist():
        print(f"  {row['object_id']}  ts_year={row['ts_year']} country={row['country']}")
    fr_2025 = ns.partitions("ts_year = 2025 AND country = 'FR'")
    print(f"\npartitions matching ts_year = 2025 AND country = 'FR': {fr_2025.num_rows}")
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"\ndone in {time.perf_counter() - started:.1f}s", file=sys.stderr)
    sys.exit(code)
