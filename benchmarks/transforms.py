"""Transform benchmark: rows/s of every partition transform, fast path against DataFusion.

For each column (int64; a UTC timestamp; strings with 1k and with 1M distinct values) and each
transform that applies to it, three timings over the same in-memory column (the minimum of
``--repeat`` runs each):

* ``fast``: ``transform.apply(col)``, the vectorised path;
* ``datafusion``: ``transform.apply_reference(col)``, the SQL expression run by DataFusion
  (with our ``hash()`` UDF), cast to the result type;
* ``peer``: a plain one-kernel ``pyarrow.compute`` pass over the same column, the floor of
  what any per-row transform costs: ``pc.add(col, 1)`` for numbers (on the int64 storage of the
  timestamps) and ``pc.utf8_length(col)`` for strings.

The table reports rows/s of each and ``fast / peer``, the fast path's time as a multiple of the
peer's (targets: bucket on int64 at least 50M rows/s; every transform within 3x of the peer).
``col`` (identity) returns the column itself, so its fast path shows as zero-copy.

Usage::

    .venv/bin/python benchmarks/transforms.py [--rows 10000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned.spec.transforms import (
    Bucket,
    Date,
    Day,
    Hour,
    Hours,
    Identity,
    Month,
    Months,
    Transform,
    Truncate,
    Year,
    Years,
)

START_US = 1_577_836_800_000_000  # 2020-01-01T00:00:00Z
SPAN_US = 6 * 365 * 86_400_000_000  # six years


@dataclass(frozen=True)
class Column:
    """A named benchmark column, its peer pass and the transforms that apply to it."""

    name: str
    values: pa.Array
    peer: Callable[[], object]
    peer_name: str
    transforms: tuple[Transform, ...]


def _strings(rows: int, distinct: int, rng: np.random.Generator) -> pa.Array:
    pool = pa.array([f"user-{i:08d}-{(i * 7919) % 1000:03d}" for i in range(distinct)])
    return pool.take(pa.array(rng.integers(0, distinct, rows)))


def make_columns(rows: int, seed: int = 0) -> list[Column]:
    """The benchmark columns, ``rows`` rows each (about 1% NULL in none of them: no NULLs)."""
    rng = np.random.default_rng(seed)
    ints = pa.array(rng.integers(-(2**62), 2**62, rows, dtype=np.int64))
    micros = rng.integers(START_US, START_US + SPAN_US, rows, dtype=np.int64)
    stamps = pa.array(micros, pa.int64()).view(pa.timestamp("us", tz="UTC"))
    stamp_storage = stamps.view(pa.int64())
    few = _strings(rows, min(1000, rows), rng)
    many = _strings(rows, min(1_000_000, rows), rng)
    string_transforms = (Identity(), Bucket(16), Truncate(3, string=True))
    return [
        Column(
            "int64",
            ints,
            lambda: pc.add(ints, 1),
            "pc.add",
            (Identity(), Bucket(16), Bucket(10), Truncate(10)),
        ),
        Column(
            "timestamp[us, UTC]",
            stamps,
            lambda: pc.add(stamp_storage, 1),
            "pc.add",
            (
                Identity(),
                Year(),
                Month(),
                Day(),
                Hour(),
                Date(),
                Years(),
                Months(),
                Hours(),
                Bucket(16),
            ),
        ),
        Column(
            "utf8, 1k distinct",
            few,
            lambda: pc.utf8_length(few),
            "pc.utf8_length",
            string_transforms,
        ),
        Column(
            "utf8, 1M distinct",
            many,
            lambda: pc.utf8_length(many),
            "pc.utf8_length",
            string_transforms,
        ),
    ]


def best_of(repeat: int, run: Callable[[], object]) -> float:
    """The minimum wall time of ``repeat`` calls, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


ZERO_COPY = 1e-4  # seconds: a pass over millions of rows takes milliseconds; this is a no-op


def _rate(rows: int, seconds: float) -> str:
    return "zero-copy" if seconds < ZERO_COPY else f"{rows / seconds / 1e6:,.1f}M"


def _ratio(numerator: float, denominator: float) -> str:
    if numerator < ZERO_COPY or denominator < ZERO_COPY:
        return "-"
    return f"{numerator / denominator:.1f}x"


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows, repeat = args.rows, args.repeat

    print(f"rows: {rows:,}; min of {repeat} runs; rows/s in millions\n")
    print(
        "| column | transform | fast rows/s | DataFusion rows/s | peer | peer rows/s "
        "| fast / peer (time) | DataFusion / fast (time) |"
    )
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for column in make_columns(rows, args.seed):
        peer = best_of(repeat, column.peer)
        for transform in column.transforms:
            # Check once that both paths agree before timing them.
            fast_result = transform.apply(column.values)
            if not fast_result.equals(transform.apply_reference(column.values)):
                raise SystemExit(f"{transform!r} on {column.name}: fast path != DataFusion")
            fast = best_of(repeat, lambda t=transform, c=column: t.apply(c.values))
            reference = best_of(repeat, lambda t=transform, c=column: t.apply_reference(c.values))
            print(
                f"| {column.name} | `{transform.expression}` | {_rate(rows, fast)} "
                f"| {_rate(rows, reference)} | {column.peer_name} | {_rate(rows, peer)} "
                f"| {_ratio(fast, peer)} | {_ratio(reference, fast)} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
