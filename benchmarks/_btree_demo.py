"""The ``user_id = 4242`` case of issue 29 (``search.py --btree-demo``): a point filter no
partition prunes, on the demo's namespace, without and with a ``BTREE`` on ``user_id``.

The namespace is either one written by ``python -m lance_partitioned.examples.demo --out DIR``
(``--demo-uri DIR/events``; it must not have an index on ``user_id`` yet, and gets one) or the
same shape generated here with numpy, without Spark: ``rows`` events over 2024-2025 written with
``partition_by="year(ts), country"``, ``rows // 4`` late events appended, the spec evolved to
``year(ts), month(ts)``, then ``rows // 4`` events of January-March 2026 appended (columns
``id, ts, country, user_id, amount, note``; 10 countries, 100,000 users, as the demo).

Each query is timed ``repeats`` times and the minimum is reported. With the index, a **floor**
is printed too: pylance alone running the same call on each kept leaf (opened once, outside
the timing) on a thread pool as wide as the namespace's: what Lance's own indexed calls cost
on these leaves, whatever the namespace does around them.

>>> table = demo_events(0, 100, _2024, 2 * _YEAR_SECONDS, seed=0)
>>> table.num_rows, table.column_names
(100, ['id', 'ts', 'country', 'user_id', 'amount', 'note'])
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import lance_partitioned as lp

COUNTRIES = ("US", "FR", "DE", "JP", "BR", "IN", "GB", "CA", "ES", "IT")
WORDS = ("quick", "late", "repeat", "manual", "checkout", "refund", "signup", "login", "cart")
USERS = 100_000
WHERE = "user_id = 4242"
_YEAR_SECONDS = 365 * 86_400
_2024 = 1_704_067_200  # 2024-01-01T00:00:00Z
_2026 = _2024 + 731 * 86_400
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("country", pa.string()),
        ("user_id", pa.int64()),
        ("amount", pa.float64()),
        ("note", pa.string()),
    ]
)


def demo_events(start: int, rows: int, first: int, seconds: int, seed: int) -> pa.Table:
    """``rows`` events shaped like the demo's, ids from ``start``, timestamps in
    ``[first, first + seconds)``."""
    rng = np.random.default_rng([seed, start])
    words = np.array(WORDS)
    note = np.char.add(
        np.char.add(
            np.char.add(words[rng.integers(0, len(WORDS), rows)], " "),
            words[rng.integers(0, len(WORDS), rows)],
        ),
        " event",
    )
    return pa.table(
        {
            "id": np.arange(start, start + rows, dtype=np.int64),
            "ts": pa.array((first + rng.integers(0, seconds, rows)) * 1_000_000, pa.int64()).cast(
                SCHEMA.field("ts").type
            ),
            "country": np.array(COUNTRIES)[rng.integers(0, len(COUNTRIES), rows)],
            "user_id": rng.integers(0, USERS, rows),
            "amount": np.round(rng.integers(0, 500_000, rows) / 100.0, 2),
            "note": note.tolist(),
        },
        schema=SCHEMA,
    )


def build(uri: str, rows: int, seed: int) -> lp.PartitionedNamespace:
    """The demo's namespace (steps 1-4 of ``lance_partitioned.examples.demo``) at ``uri``."""
    ns = lp.PartitionedNamespace.create(uri, schema=SCHEMA, partition_by="year(ts), country")
    ns.write(demo_events(0, rows, _2024, 2 * _YEAR_SECONDS, seed))
    late = rows // 4
    ns.write(demo_events(rows, late, _2024, 2 * _YEAR_SECONDS, seed))
    ns.update_partition_spec("year(ts), month(ts)")
    ns.write(demo_events(rows + late, rows // 4, _2026, 90 * 86_400, seed))
    return ns.refresh()


def _best(action: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The minimum wall time of ``repeats`` runs of ``action`` (after one warm-up), and its
    result."""
    result = action()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - started)
    return best, result


def run(rows: int, repeats: int, seed: int, uri: str | None = None) -> None:
    """Print the ``user_id = 4242`` table: ``count_rows`` and ``to_table`` without and with a
    ``BTREE`` on ``user_id``."""
    if uri is None:
        uri = str(Path(tempfile.mkdtemp()) / "events")
        started = time.perf_counter()
        ns = build(uri, rows, seed)
        source = (
            f"generated like the demo (--rows {rows:,}) in {time.perf_counter() - started:.1f} s"
        )
    else:
        ns = lp.PartitionedNamespace.open(uri)
        if any(index["column"] == "user_id" for index in ns.list_indices()):
            raise SystemExit(f"{uri} already has an index on user_id: build a fresh demo")
        source = f"written by the demo, {uri}"
    leaves = ns.partitions(sizes=False).num_rows
    specs = "; ".join(
        f"v{spec.version} = {', '.join(field.name for field in spec.fields)}"
        for spec in ns.partition_specs
    )
    scanned = len(ns.plan_scan(WHERE))
    total = ns.count_rows()

    def count() -> int:
        return ns.count_rows(WHERE)

    def read() -> int:
        return ns.to_table(WHERE).num_rows

    count_before, matched = _best(count, repeats)
    read_before, read_rows = _best(read, repeats)
    started = time.perf_counter()
    ns.create_index("user_id", "BTREE")
    build_s = time.perf_counter() - started
    ns = lp.PartitionedNamespace.open(uri)
    count_after, matched_after = _best(count, repeats)
    read_after, read_rows_after = _best(read, repeats)
    floor_count, floor_read, floor_rows = _floor(ns, repeats)
    assert matched == matched_after == read_rows == read_rows_after == floor_rows, "results differ"

    print(
        f"# `{WHERE}` on the demo namespace: {total:,} rows in {leaves} leaves "
        f"(specs {specs}), {scanned} of {leaves} leaves "
        f"scanned (no pruning), {matched} rows match; {source}"
    )
    print(
        f"lance-partitioned {lp.__version__}; min of {repeats} runs after a warm-up; "
        f"BTREE build on every leaf {build_s:.1f} s\n"
    )
    print(
        "| query | no index (ms) | BTREE on user_id (ms) | speed-up | floor: pylance alone, "
        "BTREE (ms) | best speed-up the floor allows |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for label, before, after, floor in (
        (f'ns.count_rows("{WHERE}")', count_before, count_after, floor_count),
        (f'ns.to_table(filter="{WHERE}")', read_before, read_after, floor_read),
    ):
        print(
            f"| `{label}` | {before * 1000:.1f} | {after * 1000:.1f} | {before / after:.1f}x "
            f"| {floor * 1000:.1f} | {before / floor:.1f}x |"
        )


def _floor(ns: lp.PartitionedNamespace, repeats: int) -> tuple[float, float, int]:
    """The best times of pylance alone counting and reading ``WHERE`` on every leaf the
    namespace scans for it (each opened once, before the timing), on a thread pool as wide as
    the namespace's leaf pool, and the rows read."""
    leaves = [task.open() for task in ns.plan_scan(WHERE)]
    with ThreadPoolExecutor(max_workers=ns.max_workers) as pool:

        def count() -> int:
            return sum(pool.map(lambda leaf: leaf.count_rows(WHERE), leaves))

        def read() -> int:
            return sum(pool.map(lambda leaf: leaf.to_table(filter=WHERE).num_rows, leaves))

        count_s, counted = _best(count, repeats)
        read_s, rows = _best(read, repeats)
    assert counted == rows, "the floor's count and read differ"
    return count_s, read_s, rows
