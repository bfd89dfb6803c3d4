"""Row-level change benchmark (issue 19): delete, update and merge, ours against delta-rs.

The same ``events`` table (``_data.make_events``) is written, untimed, by

* ``ours``: a ``PartitionedNamespace`` partitioned by the spec under test;
* ``delta``: ``deltalake.write_deltalake(..., partition_by=[...])`` on the same partitions,
  the computed partition columns (``event_year``; ``user_bucket``, with our own ``bucket``
  transform so the partitions are the same) precomputed and stored as columns;

then each system runs, in this order and timed one by one:

1. delete one partition's rows (ours: ``event_date_year = 2024 AND country = 'US'``, a
   predicate on partition values, so metadata only; delta: the same on its partition
   columns);
2. delete 1% of the rows scattered by a non-partition predicate (``id % 100 = 0``);
3. update 1% of the rows (``amount = amount + 1`` where ``id % 100 = 1``);
4. merge 100k rows keyed by ``id`` (50% update existing rows, 50% insert new ones);
5. the same merge keyed by ``id`` and the partition source columns;
6. optimize (ours: ``ns.optimize()``; delta: ``optimize.compact()``), after the others;
7. verify (ours: ``lance_partitioned.verify.verify``, which checks every leaf and samples its
   first 1,000 rows against its partition values; the floor: each leaf opened and those rows
   read; delta-rs has none).

The ``months`` spec is issue 33's side-by-side: ``zoned_events`` (Europe/Berlin timestamps
over 2024-2025, 20 countries and NULL, a ``device`` struct) partitioned by ``months(ts),
country``, 24 x 21 = 504 partitions; delta gets the same month number as a ``ts_months``
column, and its keyed merge matches ``country`` with ``IS NOT DISTINCT FROM`` (ours matches
NULL partition sources NULL-safely), so both tables keep the same rows. ``--merge-rows``
sets the merge size (default: 1% of the rows).

The **floor** (issue 31; ``_floor.py``) is pylance alone on the same partitions: one plain
Lance dataset per partition, each operation one pylance call per leaf on a thread pool as wide
as ours (``max_workers``): ``delete("true")`` on the deleted partition's leaf, ``delete`` of
the scattered rows, pylance's own ``update``, ``merge_insert`` of each partition's share of
the merge source (keyed on ``id``; the keyed merge also on the partition sources a leaf does
not fix: a leaf holds one country, matched NULL-safely so), and ``optimize.compact_files``.

Every run starts from freshly written tables in a new directory under ``--dir``, deleted at
the end; ``--repeat N`` runs every system N times (in one process) and keeps each operation's
minimum. The table printed is the wall time of each operation, delta / ours, ours / floor,
and the CPU time of the process during it (every thread: Lance's and delta-rs's Rust threads
included), which a loaded machine disturbs less than the wall time. ``--systems`` runs only
some of ``ours,delta,floor``.

``--ops`` runs only some operations (in the order above), e.g. ``--ops delete_partition``
to time the metadata-only delete without the merges.

Usage::

    .venv/bin/python benchmarks/dml.py [--rows N] [--dir /tmp] [--only date,bucket,months]
        [--ops delete_partition,delete_scattered,update,merge_id,merge_keyed,optimize,verify]
        [--merge-rows N] [--repeat N] [--systems ours,delta,floor]

Issue 33's run: ``--rows 1000000 --only months --merge-rows 15000``. Issue 31's floor run:
``--rows 200000 --only months --ops update,merge_keyed,optimize --repeat 3``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

os.environ.setdefault("LANCE_LOG", "error")

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import lance_partitioned as lp
from _data import USERS, make_events
from _floor import Floor, split_by
from lance_partitioned.runtime import max_workers
from lance_partitioned.spec.transforms import parse_transform
from lance_partitioned.verify import Report, verify

ZONE = "Europe/Berlin"
COUNTRIES_20 = (
    *("US", "FR", "DE", "GB", "JP", "CN", "IN", "BR", "CA", "AU"),
    *("ES", "IT", "NL", "SE", "PL", "MX", "KR", "ZA", "NG", "AR"),
)
DEVICE = pa.struct([("os", pa.string()), ("version", pa.int32())])
OSES = pa.array(["ios", "android", "windows", "macos", "linux"])
MONTHS = parse_transform(
    "(date_part('year', col) - 1970) * 12 + date_part('month', col) - 1", pa.int32()
)


def zoned_events(rows: int, seed: int = 0) -> pa.Table:
    """Issue 33's events: ``id``, ``ts`` (Europe/Berlin, uniform over 2024-2025), ``country``
    (20 codes, 3% NULL), ``user_id``, ``amount``, ``device`` (a struct of ``os`` and
    ``version``); a pure function of ``(id, seed)`` as ``make_events``."""
    rng = np.random.default_rng(seed)
    ids = np.arange(rows, dtype=np.int64)
    start = np.datetime64("2023-12-31T23:00:00", "us")  # 2024-01-01 00:00 in Berlin
    span = 731 * 86_400 * 1_000_000
    micros = rng.integers(0, span, rows)
    country = pa.array(COUNTRIES_20).take(pa.array(rng.integers(0, 20, rows)))
    country = pc.if_else(pa.array(rng.random(rows) < 0.03), pa.scalar(None, pa.string()), country)
    device = pa.StructArray.from_arrays(
        [
            OSES.take(pa.array(rng.integers(0, 5, rows))),
            pa.array(rng.integers(10, 18, rows), pa.int32()),
        ],
        fields=list(DEVICE),
    )
    return pa.table(
        {
            "id": ids,
            "ts": pa.array(start + micros.astype("timedelta64[us]")).cast(pa.timestamp("us", ZONE)),
            "country": country,
            "user_id": pa.array(rng.integers(0, USERS, rows)),
            "amount": pa.array(rng.integers(0, 100_000, rows) / 100.0),
            "device": device,
        }
    )


@dataclass(frozen=True)
class Spec:
    """A partition spec under test, as ours and delta-rs spell it."""

    key: str
    partition_by: str  # ours
    delta_columns: tuple[str, ...]  # delta's partition columns
    sources: tuple[str, ...]  # the partition source columns (for the keyed merge)
    ours_partition: str  # one partition, as ours selects it
    delta_partition: str  # the same, on delta's columns
    make: Callable[[int, int], pa.Table] = make_events  # the table of (rows, seed)
    nullable: tuple[str, ...] = ()  # delta's partition columns holding NULL


SPECS = {
    "date": Spec(
        "date",
        "year(event_date), country",
        ("event_year", "country"),
        ("event_date", "country"),
        "event_date_year = 2024 AND country = 'US'",
        "event_year = 2024 AND country = 'US'",
    ),
    "bucket": Spec(
        "bucket",
        "bucket(16, user_id)",
        ("user_bucket",),
        ("user_id",),
        "user_id_bucket = 3",
        "user_bucket = 3",
    ),
    "months": Spec(
        "months",
        "months(ts), country",
        ("ts_months", "country"),
        ("ts", "country"),
        "ts_months = 660 AND country = 'US'",  # January 2025
        "ts_months = 660 AND country = 'US'",
        zoned_events,
        ("country",),
    ),
}


def with_delta_columns(table: pa.Table) -> pa.Table:
    """``table`` with delta's precomputed partition columns."""
    if "ts" in table.column_names:
        return table.append_column(
            "ts_months", pc.cast(MONTHS.apply(table.column("ts")), pa.int32())
        )
    years = pc.cast(pc.year(table.column("event_date")), pa.int32())
    bucket = parse_transform("abs(hash(col)) % 16", pa.int32())
    buckets = pc.cast(bucket.apply(table.column("user_id")), pa.int32())
    return table.append_column("event_year", years).append_column("user_bucket", buckets)


def merge_source(
    table: pa.Table, spec: Spec, residue: int, first_new: int, rows: int | None = None
) -> pa.Table:
    """``rows`` rows (default 1% of the table): half are existing rows (outside the deleted
    partition, ids ``== residue`` mod 200) with a new ``amount``, half new ids."""
    half = max(1, (rows or table.num_rows // 100) // 2)
    ids = table.column("id")
    kept = table.filter(pc.equal(pc.remainder(ids, 200), residue))
    outside = with_delta_columns(kept)
    mask = pc.invert(_in_deleted_partition(outside, spec))
    kept = kept.filter(mask).slice(0, half)
    kept = kept.set_column(
        kept.schema.get_field_index("amount"),
        "amount",
        pc.add(kept.column("amount"), 0.5),
    )
    fresh = spec.make(half, 7)
    fresh = fresh.set_column(0, "id", pa.array(np.arange(first_new, first_new + half)))
    return pa.concat_tables([kept, fresh])


def _in_deleted_partition(table: pa.Table, spec: Spec) -> pa.ChunkedArray:
    if spec.key == "months":
        return pc.and_(
            pc.equal(table.column("ts_months"), 660), pc.equal(table.column("country"), "US")
        )
    if spec.key == "date":
        return pc.and_(
            pc.equal(table.column("event_year"), 2024), pc.equal(table.column("country"), "US")
        )
    return pc.equal(table.column("user_bucket"), 3)


def timed(action: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of ``action`` (CPU: the whole process, every thread)."""
    started, cpu = time.perf_counter(), time.process_time()
    action()
    return time.perf_counter() - started, time.process_time() - cpu


OPERATIONS = {
    "delete_partition": "delete one partition",
    "delete_scattered": "delete 1% scattered",
    "update": "update 1%",
    "merge_id": "merge on id",
    "merge_keyed": "merge on id + partition source",
    "optimize": "optimize",
    "verify": "verify",
}
# verify's sample of each leaf (verify()'s default), read by the floor too
SAMPLE_ROWS = 1000


def run(actions: dict[str, Callable[[], object]], ops: list[str]) -> dict[str, tuple[float, float]]:
    """Time the actions named by ``ops`` (keys of :data:`OPERATIONS`), in the order given
    (those a system has: delta-rs has no ``verify``)."""
    names = [OPERATIONS[op] for op in ops]
    return {name: timed(actions[name]) for name in names if name in actions}


def run_ours(
    root: str, table: pa.Table, spec: Spec, ops: list[str], merge_rows: int | None = None
) -> dict[str, tuple[float, float]]:
    schema = table.schema
    ns = lp.PartitionedNamespace.create(root, schema=schema, partition_by=spec.partition_by)
    ns.write(table)
    n = table.num_rows
    sources = [s for s in spec.sources if s != "id"]
    first = merge_source(table, spec, 2, n, merge_rows)
    second = merge_source(table, spec, 4, n + n, merge_rows)
    actions: dict[str, Callable[[], object]] = {
        "delete one partition": lambda: ns.delete(spec.ours_partition),
        "delete 1% scattered": lambda: ns.delete("id % 100 = 0"),
        "update 1%": lambda: ns.update("id % 100 = 1", set={"amount": "amount + 1"}),
        "merge on id": lambda: (
            ns.merge(first, on="id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        ),
        "merge on id + partition source": lambda: (
            ns.merge(second, on=["id", *sources])
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        ),
        "optimize": lambda: ns.optimize(),
        "verify": lambda: _verified(verify(root, sample_rows=SAMPLE_ROWS)),
    }
    return run(actions, ops)


def _verified(report: Report) -> None:
    """Stop the benchmark when ``verify`` found a problem in the namespace it timed."""
    if not report.healthy:
        raise SystemExit(f"verify found problems after the operations: {report.problems}")


def run_delta(
    root: str, table: pa.Table, spec: Spec, ops: list[str], merge_rows: int | None = None
) -> dict[str, tuple[float, float]]:
    from deltalake import DeltaTable, write_deltalake

    extended = with_delta_columns(table)
    write_deltalake(root, extended, partition_by=list(spec.delta_columns))
    dt = DeltaTable(root)
    n = table.num_rows
    first = with_delta_columns(merge_source(table, spec, 2, n, merge_rows))
    second = with_delta_columns(merge_source(table, spec, 4, n + n, merge_rows))
    keyed = " AND ".join(
        f"t.{c} IS NOT DISTINCT FROM s.{c}" if c in spec.nullable else f"t.{c} = s.{c}"
        for c in ("id", *spec.delta_columns)
    )

    def merge(source: pa.Table, predicate: str) -> None:
        (
            DeltaTable(root)
            .merge(source, predicate=predicate, source_alias="s", target_alias="t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )

    actions: dict[str, Callable[[], object]] = {
        "delete one partition": lambda: dt.delete(spec.delta_partition),
        "delete 1% scattered": lambda: DeltaTable(root).delete("id % 100 = 0"),
        "update 1%": lambda: DeltaTable(root).update(
            updates={"amount": "amount + 1"}, predicate="id % 100 = 1"
        ),
        "merge on id": lambda: merge(first, "t.id = s.id"),
        "merge on id + partition source": lambda: merge(second, keyed),
        "optimize": lambda: DeltaTable(root).optimize.compact(),
    }
    return run(actions, ops)


def run_floor(
    root: str, table: pa.Table, spec: Spec, ops: list[str], merge_rows: int | None = None
) -> tuple[dict[str, tuple[float, float]], Floor]:
    """The floor: pylance alone, one dataset per partition (``_floor.py``)."""
    floor = Floor(root, workers=max_workers())

    def parts(rows: pa.Table) -> dict[str, pa.Table]:
        extended = with_delta_columns(rows)
        return split_by(rows, [extended.column(c) for c in spec.delta_columns])

    floor.write_parts(parts(table))
    n = table.num_rows
    first = parts(merge_source(table, spec, 2, n, merge_rows))
    second = parts(merge_source(table, spec, 4, n + n, merge_rows))
    extended = with_delta_columns(table)
    inside = extended.filter(_in_deleted_partition(extended, spec))
    deleted = list(split_by(inside, [inside.column(c) for c in spec.delta_columns]))
    keyed = ["id", *(s for s in spec.sources if s != "id" and s not in spec.nullable)]
    actions: dict[str, Callable[[], object]] = {
        "delete one partition": lambda: floor.delete(deleted, "true"),
        "delete 1% scattered": lambda: floor.delete(floor.keys, "id % 100 = 0"),
        "update 1%": lambda: floor.update(floor.keys, {"amount": "amount + 1"}, "id % 100 = 1"),
        "merge on id": lambda: floor.merge(first, ["id"]),
        "merge on id + partition source": lambda: floor.merge(second, keyed),
        "optimize": lambda: floor.optimize(),
        "verify": lambda: floor.verify(SAMPLE_ROWS),
    }
    return run(actions, ops), floor


def _fastest(
    best: dict[str, tuple[float, float]], new: dict[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    """Each operation's run of least wall time, of ``best`` and ``new``."""
    return {op: min(best.get(op, new[op]), new[op]) for op in new}


def _cell(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _ratio(top: float | None, bottom: float | None) -> str:
    return "-" if top is None or bottom is None else f"{top / bottom:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--only", default="date,bucket", help="specs: date, bucket, months")
    parser.add_argument("--merge-rows", type=int, default=None, help="default: 1%% of --rows")
    parser.add_argument(
        "--ops",
        default=",".join(OPERATIONS),
        help=f"comma-separated operations among {list(OPERATIONS)}, run in that order",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per system; the min is kept")
    parser.add_argument("--systems", default="ours,delta,floor", help="ours, delta, floor")
    args = parser.parse_args()
    ops = [op.strip() for op in args.ops.split(",") if op.strip()]
    unknown = [op for op in ops if op not in OPERATIONS]
    if unknown:
        parser.error(f"unknown operation(s) {unknown}: choose among {list(OPERATIONS)}")
    ops = [op for op in OPERATIONS if op in ops]
    systems = {name.strip() for name in args.systems.split(",") if name.strip()}
    if not systems <= {"ours", "delta", "floor"}:
        parser.error(f"unknown system(s) in {args.systems!r}: choose among ours, delta, floor")
    keys = [key.strip() for key in args.only.split(",") if key.strip()]
    tables = {make: make(args.rows, 1) for make in {SPECS[key].make for key in keys}}
    merge_rows = args.merge_rows or args.rows // 100
    lines = [
        f"rows: {args.rows:,}, merge source: {merge_rows:,} rows, min of {args.repeat}, "
        f"max_workers: {max_workers()}",
        "",
        "| spec | operation | ours s | delta-rs s | floor s | delta / ours | ours / floor "
        "| ours CPU s | delta-rs CPU s | floor CPU s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key in keys:
        spec = SPECS[key]
        table = tables[spec.make]
        best: dict[str, dict[str, tuple[float, float]]] = {name: {} for name in systems}
        for _ in range(args.repeat):
            work = tempfile.mkdtemp(prefix="lp-dml-bench-", dir=args.dir)
            try:
                roots = {name: os.path.join(work, name) for name in ("ours", "delta", "floor")}
                counted: dict[str, int] = {}
                if "ours" in systems:
                    ours = run_ours(roots["ours"], table, spec, ops, merge_rows)
                    best["ours"] = _fastest(best["ours"], ours)
                    counted["ours"] = lp.PartitionedNamespace.open(roots["ours"]).count_rows()
                if "delta" in systems:
                    from deltalake import DeltaTable

                    delta = run_delta(roots["delta"], table, spec, ops, merge_rows)
                    best["delta"] = _fastest(best["delta"], delta)
                    dataset = DeltaTable(roots["delta"]).to_pyarrow_dataset()
                    counted["delta"] = dataset.count_rows()
                if "floor" in systems:
                    timings, floor = run_floor(roots["floor"], table, spec, ops, merge_rows)
                    best["floor"] = _fastest(best["floor"], timings)
                    counted["floor"] = floor.count_rows()
                if len(set(counted.values())) > 1:
                    raise SystemExit(f"row counts differ after the operations: {counted}")
            finally:
                shutil.rmtree(work, ignore_errors=True)
        for operation in (OPERATIONS[op] for op in ops):
            timed_here = [name for name in systems if operation in best[name]]
            wall = {name: best[name][operation][0] for name in timed_here}
            cpu = {name: best[name][operation][1] for name in timed_here}
            ours_s, delta_s, floor_s = (wall.get(n) for n in ("ours", "delta", "floor"))
            lines.append(
                f"| `{spec.partition_by}` | {operation} | {_cell(ours_s)} | {_cell(delta_s)} | "
                f"{_cell(floor_s)} | {_ratio(delta_s, ours_s)} | {_ratio(ours_s, floor_s)} | "
                f"{_cell(cpu.get('ours'))} | {_cell(cpu.get('delta'))} | "
                f"{_cell(cpu.get('floor'))} |"
            )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
