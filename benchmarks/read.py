"""Read benchmark (issue 5): queries on one ``events`` namespace, ours against peers.

The same in-memory table (``make_events``) is written once, untimed, by every system:

* ``ours``: a ``PartitionedNamespace`` on ``year(event_date), country`` (20 leaves);
* ``lance``: one unpartitioned ``lance.write_dataset``, the baseline of every ratio, queried
  through its scanner with the same SQL filter;
* ``delta``: ``deltalake.write_deltalake(partition_by=["event_year", "country"])`` with the
  year precomputed, read through ``DeltaTable(...).to_pyarrow_dataset()`` and a pyarrow
  filter expression that names the partition columns;
* ``hive``: Hive-partitioned Parquet (``pyarrow.dataset``, the same two partition columns),
  read with ``pyarrow.dataset.dataset(..., partitioning="hive")`` and the same expression.

Then, ``--repeat`` times, each system runs every measurement and the minimum is reported:

* ``open``: opening the table (ours: reading the ``__manifest``; delta: loading its log;
  hive: listing the directories; lance: reading the manifest of one dataset);
* ``single-partition query``: ``QUERY`` reading ``id, amount``, on an open handle, and again
  *including* the open, so that both the warm (long-lived handle) and the cold
  (open + query) costs are visible;
* ``full scan``: ``id, amount`` of every row, on an open handle;
* ``count_rows()`` of the whole table, on an open handle;
* ``plan_scan`` (ours only): planning a selective filter over a synthetic ``__manifest`` of
  ``--leaves`` leaf tables (``event_date, bucket(100, user_id)``), built with one
  ``__manifest`` commit of rows shaped exactly as ``commit_write`` writes them, with fake
  leaf locations: planning never opens a leaf. Opening that namespace is reported too.

Every query's result is checked against the unpartitioned Lance table (rows and sum of ids):
a system that returns other rows shows the mismatch in its cell instead of a time.

Usage::

    .venv/bin/python benchmarks/read.py [--rows N] [--repeat 5] [--leaves N] [--only ours,lance]
    .venv/bin/python benchmarks/read.py --rows 200000 --repeat 1   # smoke: a few seconds
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# lance warns once per new leaf ("No existing dataset at ..."): keep stderr readable
os.environ.setdefault("LANCE_LOG", "error")

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

# Imported before any reader runs so every Lance reader in this process uses the same Lance CPU
# pool (lance_partitioned sizes it on small machines).
import lance_partitioned  # noqa: F401
from _data import SCHEMA, make_events
from _versions import package_version

SYSTEMS = ("ours", "lance", "delta", "hive")
PARTITION_BY = "year(event_date), country"
PEER_PARTITIONS = ("event_year", "country")
QUERY = "country = 'FR' AND event_date >= DATE '2025-03-01' AND event_date < DATE '2025-04-01'"
COLUMNS = ["id", "amount"]
# the planning benchmark's synthetic namespace: one leaf per (day, bucket)
PLAN_PARTITION_BY = "event_date, bucket(100, user_id)"
PLAN_BUCKETS = 100
PLAN_START = datetime.date(2023, 1, 1)
PLAN_USER = 4242  # the filter's user_id: one bucket per day


def peer_filter() -> pc.Expression:
    """``QUERY`` as a pyarrow expression, with the partition columns the peers need."""
    return (
        (pc.field("event_year") == 2025)
        & (pc.field("country") == "FR")
        & (pc.field("event_date") >= pa.scalar(datetime.date(2025, 3, 1), pa.date32()))
        & (pc.field("event_date") < pa.scalar(datetime.date(2025, 4, 1), pa.date32()))
    )


def with_year(table: pa.Table) -> pa.Table:
    """The table with the peers' precomputed ``event_year`` partition column."""
    return table.append_column("event_year", pc.year(table["event_date"]).cast(pa.int32()))


# ---------------------------------------------------------------------------- systems
class System:
    """One storage layout: written once (untimed), then opened and queried."""

    name = ""

    def __init__(self, root: str) -> None:
        self.root = root

    def write(self, table: pa.Table) -> None:
        raise NotImplementedError

    def open(self) -> Any:
        raise NotImplementedError

    def query(self, handle: Any) -> pa.Table:
        raise NotImplementedError

    def scan(self, handle: Any) -> pa.Table:
        raise NotImplementedError

    def count(self, handle: Any) -> int:
        raise NotImplementedError


class Ours(System):
    name = "ours"

    def write(self, table: pa.Table) -> None:
        import lance_partitioned as lp

        ns = lp.PartitionedNamespace.create(
            self.root, schema=table.schema, partition_by=PARTITION_BY
        )
        ns.write(table)

    def open(self) -> Any:
        import lance_partitioned as lp

        return lp.PartitionedNamespace.open(self.root)

    def query(self, handle: Any) -> pa.Table:
        return handle.to_table(QUERY, columns=COLUMNS)

    def scan(self, handle: Any) -> pa.Table:
        return handle.to_table(columns=COLUMNS)

    def count(self, handle: Any) -> int:
        return int(handle.count_rows())


class Lance(System):
    name = "lance"

    def write(self, table: pa.Table) -> None:
        import lance

        lance.write_dataset(table, self.root, mode="overwrite")

    def open(self) -> Any:
        import lance

        return lance.dataset(self.root)

    def query(self, handle: Any) -> pa.Table:
        return handle.scanner(filter=QUERY, columns=COLUMNS).to_table()

    def scan(self, handle: Any) -> pa.Table:
        return handle.to_table(columns=COLUMNS)

    def count(self, handle: Any) -> int:
        return int(handle.count_rows())


class _PyarrowDataset(System):
    """A peer read through a ``pyarrow.dataset.Dataset`` and a filter expression."""

    def query(self, handle: Any) -> pa.Table:
        return handle.to_table(filter=peer_filter(), columns=COLUMNS)

    def scan(self, handle: Any) -> pa.Table:
        return handle.to_table(columns=COLUMNS)

    def count(self, handle: Any) -> int:
        return int(handle.count_rows())


class Delta(_PyarrowDataset):
    name = "delta"

    def write(self, table: pa.Table) -> None:
        from deltalake import write_deltalake

        write_deltalake(self.root, with_year(table), partition_by=list(PEER_PARTITIONS))

    def open(self) -> Any:
        from deltalake import DeltaTable

        return DeltaTable(self.root).to_pyarrow_dataset()


class Hive(_PyarrowDataset):
    name = "hive"

    def write(self, table: pa.Table) -> None:
        pads.write_dataset(
            with_year(table),
            self.root,
            format="parquet",
            partitioning=list(PEER_PARTITIONS),
            partitioning_flavor="hive",
            existing_data_behavior="overwrite_or_ignore",
        )

    def open(self) -> Any:
        return pads.dataset(self.root, format="parquet", partitioning="hive")


SYSTEM_CLASSES: dict[str, type[System]] = {
    "ours": Ours,
    "lance": Lance,
    "delta": Delta,
    "hive": Hive,
}


# ---------------------------------------------------------------------------- synthetic manifest
def synthetic_manifest(
    root: str,
    schema: pa.Schema,
    partition_by: str,
    levels: Sequence[Sequence[Any]],
    *,
    leaf_rows: int = 10_000,
) -> int:
    """Create a namespace whose ``__manifest`` lists one leaf per combination of ``levels``.

    ``levels[i]`` holds the values of partition field ``i``. The namespace and leaf rows are
    exactly those ``commit_write`` produces for a write touching every combination (derived
    names, inherited values, ``location``, ``read_version`` 1 and the row count in
    ``metadata``), committed in ONE ``commit_rows``; no leaf table is written, so only
    planning (which never opens a leaf) works on the result. Returns the number of leaves.
    """
    import lance_partitioned as lp
    from lance_partitioned.manifest import (
        LeafStats,
        Manifest,
        leaf_location,
        leaf_object_id,
        partition_name,
        spec_namespace_id,
    )

    ns = lp.PartitionedNamespace.create(root, schema=schema, partition_by=partition_by)
    spec = ns.current_spec
    if len(levels) != len(spec.fields):
        raise ValueError(f"{len(levels)} value lists for {len(spec.fields)} partition fields")
    manifest_schema = ns.snapshot.rows.schema
    columns: dict[str, list[Any]] = {name: [] for name in manifest_schema.names}
    names = [f.name for f in spec.fields]
    stats = LeafStats(1, leaf_rows).merge_into(None)

    def add(object_id: str, values: Sequence[Any], *, leaf: bool) -> None:
        row = dict(zip(names, values, strict=False))
        row["object_id"] = object_id
        row["object_type"] = "table" if leaf else "namespace"
        if leaf:
            row.update(location=leaf_location(object_id), read_version=1, metadata=stats)
        for name, values_of in columns.items():
            values_of.append(row.get(name))

    spec_id = spec_namespace_id(spec.version)
    add(spec_id, [], leaf=False)  # rewritten by every commit, as commit_write does
    ids: dict[tuple[Any, ...], str] = {(): spec_id}
    leaves = 0
    for depth in range(1, len(levels) + 1):
        result_type = spec.fields[depth - 1].result_type
        for prefix in itertools.product(*levels[:depth]):
            parent = ids[prefix[:-1]]
            scalar = pa.scalar(prefix[-1], result_type)
            object_id = f"{parent}${partition_name(spec.version, parent, scalar)}"
            ids[prefix] = object_id
            add(object_id, prefix, leaf=False)
            if depth == len(levels):
                add(leaf_object_id(object_id), prefix, leaf=True)
                leaves += 1
    rows = pa.table(
        {f.name: pa.array(columns[f.name], f.type) for f in manifest_schema},
        schema=manifest_schema,
    )
    Manifest(root).commit_rows(ns.snapshot, rows)
    return leaves


def plan_levels(leaves: int) -> tuple[list[datetime.date], list[int]]:
    """Days from ``PLAN_START`` and buckets 0..99 whose product has about ``leaves`` leaves."""
    days = max(1, leaves // PLAN_BUCKETS)
    dates = [PLAN_START + datetime.timedelta(days=i) for i in range(days)]
    return dates, list(range(PLAN_BUCKETS))


def plan_filter(dates: Sequence[datetime.date]) -> tuple[str, int]:
    """A selective filter on the synthetic namespace (31 days of one user) and how many leaves
    it must keep (one bucket on each of those days that exists)."""
    start = dates[len(dates) // 2]
    end = start + datetime.timedelta(days=31)
    expected = sum(1 for d in dates if start <= d < end)
    text = f"event_date >= DATE '{start}' AND event_date < DATE '{end}' AND user_id = {PLAN_USER}"
    return text, expected


# ---------------------------------------------------------------------------- runner
@dataclass
class Cell:
    """Every run of one (measurement, system)."""

    seconds: list[float] = field(default_factory=list)
    error: str | None = None

    def best(self) -> float | None:
        return min(self.seconds) if self.seconds else None


def _short(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines() or [""]
    text = f"{type(exc).__name__}: {lines[0]}"
    return (text[:97] + "...") if len(text) > 100 else text


def _outcome(result: Any) -> Any:
    """What a run's result is checked on: (rows, sum of ids) of a table, the length of a list
    of scan tasks, a count as it is."""
    if isinstance(result, pa.Table):
        total = pc.sum(result["id"]).as_py() if result.num_rows else 0
        return result.num_rows, int(total or 0)
    if isinstance(result, Sequence):  # a list, or the ScanTasks of plan_scan
        return len(result)
    return result


def _time(cell: Cell, label: str, run: Callable[[], Any], expected: Any, *, record: bool) -> None:
    """Run ``run`` once, check its outcome against ``expected`` (None: anything) and, when
    ``record``, keep its time in ``cell``. A failure is kept in the cell and never retried."""
    if cell.error is not None:
        return
    try:
        started = time.perf_counter()
        result = run()
        seconds = time.perf_counter() - started
        if expected is not None and _outcome(result) != expected:
            raise AssertionError(f"wrong result {_outcome(result)}, expected {expected}")
    except Exception as exc:
        cell.error = _short(exc)
        print(f"  {label}: FAILED {cell.error}", file=sys.stderr, flush=True)
        return
    if record:
        cell.seconds.append(seconds)
    note = "" if record else " (warm-up, not kept)"
    print(f"  {label}: {seconds * 1000:.1f} ms{note}", file=sys.stderr, flush=True)


MEASUREMENTS = ("open", "query", "open_query", "scan", "count")
PLAN_MEASUREMENTS = ("open", "plan", "plan_all")


@dataclass
class Results:
    rows: int
    repeat: int
    systems: list[str]
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    plan: dict[str, Cell] = field(default_factory=dict)
    leaves: int = 0
    plan_text: str = ""
    expected: dict[str, Any] = field(default_factory=dict)


def _write_all(table: pa.Table, scratch: str, results: Results) -> dict[str, System]:
    """Write every system's copy (untimed); return those that succeeded."""
    live: dict[str, System] = {}
    for name in results.systems:
        system = SYSTEM_CLASSES[name](os.path.join(scratch, name))
        cells = [results.cells.setdefault((m, name), Cell()) for m in MEASUREMENTS]
        started = time.perf_counter()
        try:
            system.write(table)
        except Exception as exc:
            print(f"  {name}: write failed: {_short(exc)}", file=sys.stderr, flush=True)
            for cell in cells:
                cell.error = f"write failed: {_short(exc)}"
            continue
        seconds = time.perf_counter() - started
        print(f"wrote {name} in {seconds:.1f} s (untimed)", file=sys.stderr, flush=True)
        live[name] = system
    return live


def run(rows: int, repeat: int, systems: list[str], leaves: int) -> Results:
    """Write every system's copy, then time every measurement ``repeat`` times."""
    started = time.perf_counter()
    table = make_events(rows)
    print(f"built {rows:,} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    results = Results(rows, repeat, systems)
    # the reference results, from the in-memory table
    in_march = pc.and_(
        pc.greater_equal(table["event_date"], pa.scalar(datetime.date(2025, 3, 1))),
        pc.less(table["event_date"], pa.scalar(datetime.date(2025, 4, 1))),
    )
    mask = pc.and_(pc.equal(table["country"], "FR"), in_march)
    query = _outcome(table.filter(mask).select(COLUMNS))
    scan = _outcome(table.select(COLUMNS))
    results.expected["query"] = query
    scratch = tempfile.mkdtemp(prefix="lp-bench-read-", dir="/tmp")
    try:
        live = _write_all(table, scratch, results)
        del table
        plan_root = os.path.join(scratch, "plan")
        if "ours" in live and leaves > 0:
            _plan_setup(plan_root, leaves, results)
        for r in range(repeat + 1):
            # round 0 warms up (first-call costs: imports, DataFusion and Lance sessions, the
            # page cache) and checks every result; its times are not kept
            record = r > 0
            print(f"repeat {r}/{repeat}" if record else "warm-up", file=sys.stderr, flush=True)
            for name, system in live.items():
                handle = system.open()
                steps = (
                    ("open", system.open, None),
                    ("query", lambda s=system, h=handle: s.query(h), query),
                    ("open_query", lambda s=system: s.query(s.open()), query),
                    ("scan", lambda s=system, h=handle: s.scan(h), scan),
                    ("count", lambda s=system, h=handle: s.count(h), rows),
                )
                for measurement, call, expected in steps:
                    cell = results.cells[(measurement, name)]
                    _time(cell, f"{name} {measurement}", call, expected, record=record)
            if results.leaves:
                _plan_once(plan_root, results, record=record)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


def _plan_setup(root: str, leaves: int, results: Results) -> None:
    started = time.perf_counter()
    dates, buckets = plan_levels(leaves)
    try:
        built = synthetic_manifest(root, SCHEMA, PLAN_PARTITION_BY, [dates, buckets])
    except Exception as exc:
        error = f"building the manifest failed: {_short(exc)}"
        print(f"  {error}", file=sys.stderr, flush=True)
        results.plan = {key: Cell(error=error) for key in PLAN_MEASUREMENTS}
        return
    seconds = time.perf_counter() - started
    print(
        f"built a synthetic __manifest of {built:,} leaves in {seconds:.1f} s (untimed)",
        file=sys.stderr,
        flush=True,
    )
    results.plan = {key: Cell() for key in PLAN_MEASUREMENTS}
    results.leaves = built
    results.plan_text, results.expected["plan"] = plan_filter(dates)


def _plan_once(root: str, results: Results, *, record: bool) -> None:
    import lance_partitioned as lp

    def open_it() -> Any:
        return lp.PartitionedNamespace.open(root)

    selective, everything = open_it(), open_it()  # planning caches on the snapshot it reads
    steps = (
        ("open", "open (synthetic manifest)", open_it, None),
        (
            "plan",
            "plan_scan",
            lambda: selective.plan_scan(results.plan_text),
            results.expected["plan"],
        ),
        ("plan_all", "plan_scan, no filter", everything.plan_scan, results.leaves),
    )
    for key, label, call, expected in steps:
        _time(results.plan[key], label, call, expected, record=record)


# ---------------------------------------------------------------------------- rendering
LABELS = {
    "open": "open (ours: read the `__manifest`)",
    "query": "single-partition query, open handle",
    "open_query": "single-partition query, open + query",
    "scan": "full scan of `id, amount`, open handle",
    "count": "`count_rows()` of everything, open handle",
}


def _ms(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds * 1000:.1f}"


def _cell(cell: Cell | None) -> str:
    if cell is None:
        return "n/a"
    if cell.error is not None and not cell.seconds:
        return "failed: " + cell.error.replace("|", "\\|")
    return _ms(cell.best())


def _verdict(
    measurement: str, ours: float | None, peers: dict[str, float | None]
) -> tuple[str, str]:
    """(target text, ok / MISSED / blank) for one measurement."""
    lance = peers.get("lance")
    delta = peers.get("delta")
    if measurement in ("query", "open_query"):
        target = "<= delta-rs and <= 1/15 of lance"
        if ours is None or lance is None:
            return target, ""
        ok = ours <= lance / 15 and (delta is None or ours <= delta)
        return target, "ok" if ok else "MISSED"
    if measurement == "scan":
        target = "<= 1.2x lance"
        if ours is None or lance is None:
            return target, ""
        return target, "ok" if ours <= 1.2 * lance else "MISSED"
    if measurement == "count":
        target = "< 50 ms"
        if ours is None:
            return target, ""
        return target, "ok" if ours < 0.050 else "MISSED"
    return "none (reported for context)", ""


def render(results: Results) -> str:
    systems = results.systems
    peers = [s for s in systems if s != "ours"]
    header = (
        "| measurement | "
        + " | ".join(f"{s} (ms)" for s in systems)
        + " | ours / lance | target | met |"
    )
    lines = [
        f"{results.rows:,} rows, min of {results.repeat} runs; "
        f"pylance {package_version('pylance')}, deltalake {package_version('deltalake')}, "
        f"pyarrow {pa.__version__}, {os.cpu_count()} CPUs, "
        f"LANCE_CPU_THREADS={os.environ.get('LANCE_CPU_THREADS', 'unset')}",
        "",
        f"ours: `PartitionedNamespace` on `{PARTITION_BY}`; delta and hive partitioned by "
        f"`{', '.join(PEER_PARTITIONS)}` (year precomputed); lance: one unpartitioned table.",
        f"single-partition query: `{QUERY}`, reading `{', '.join(COLUMNS)}` "
        f"({results.expected.get('query', (0, 0))[0]:,} rows).",
        "",
        header,
        "| --- | " + " | ".join("---:" for _ in systems) + " | ---: | --- | --- |",
    ]
    for measurement in MEASUREMENTS:
        cells = {s: results.cells.get((measurement, s)) for s in systems}
        best = {s: (c.best() if c is not None else None) for s, c in cells.items()}
        ours, lance = best.get("ours"), best.get("lance")
        ratio = f"{ours / lance:.3f}x" if ours is not None and lance else ""
        target, met = _verdict(measurement, ours, {p: best[p] for p in peers})
        row = " | ".join(_cell(cells[s]) for s in systems)
        lines.append(f"| {LABELS[measurement]} | {row} | {ratio} | {target} | {met} |")
    if results.plan:
        blank = " | ".join("n/a" for _ in peers)
        blank = f" | {blank}" if peers else ""
        leaves = f"{results.leaves:,}" if results.leaves else "?"
        open_cell = results.plan.get("open")
        plan_cell = results.plan.get("plan")
        lines.append(
            f"| open, synthetic `__manifest` of {leaves} leaves | {_cell(open_cell)}{blank} "
            "| | none (reported for context) | |"
        )
        best = plan_cell.best() if plan_cell is not None else None
        met = "" if best is None else ("ok" if best < 0.200 else "MISSED")
        lines.append(
            f"| `plan_scan` over {leaves} leaves, selective filter, open handle "
            f"| {_cell(plan_cell)}{blank} | | < 200 ms | {met} |"
        )
        lines.append(
            f"| `plan_scan` over {leaves} leaves, no filter (every leaf), open handle "
            f"| {_cell(results.plan.get('plan_all'))}{blank} | | none (reported for context) | |"
        )
    notes = [
        '"open handle" rows exclude opening: the namespace (or dataset) is opened once '
        'before the timed call. "open + query" includes it. On an open handle, ours still '
        "opens each leaf it scans (a Lance dataset at its `read_version`) inside the call."
    ]
    if results.plan_text:
        notes.append(
            f"Planning filter on `{PLAN_PARTITION_BY}`: `{results.plan_text}` "
            f"({results.expected.get('plan')} leaves kept)."
        )
    if results.rows < 10_000_000:
        notes.append(f"The targets are stated for 10,000,000 rows, not {results.rows:,}.")
    for note in notes:
        lines += ["", note]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--leaves",
        type=int,
        default=None,
        help="leaves of the planning manifest (default: 100,000, or 1,000 when --rows is "
        "below 1,000,000, for quick smoke runs; 0: skip planning)",
    )
    parser.add_argument(
        "--only",
        default=",".join(SYSTEMS),
        help=f"comma-separated systems among {SYSTEMS} (lance is the baseline of the ratios)",
    )
    args = parser.parse_args(argv)
    systems = [s for s in args.only.split(",") if s]
    unknown = set(systems) - set(SYSTEMS)
    if unknown or not systems or args.repeat < 1 or args.rows < 1:
        parser.error(f"unknown systems {sorted(unknown)}, or no system, rows or repeat")
    systems = [s for s in SYSTEMS if s in systems]  # ours first, then the baseline
    leaves = args.leaves
    if leaves is None:
        leaves = 100_000 if args.rows >= 1_000_000 else 1_000
    print(render(run(args.rows, args.repeat, systems, max(0, leaves))))


if __name__ == "__main__":
    main()
