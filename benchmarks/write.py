"""Write benchmark (issue 4): partitioned writes of one ``events`` table, ours against peers.

For each partition spec, the same in-memory table is written by

* ``ours``: ``PartitionedNamespace.create(...)`` + ``ns.write(table)``;
* ``floor``: pylance alone, one ``lance.write_dataset`` per partition on a thread pool as wide
  as ours, of the table split by partition before the timed section (``_floor.py``): what one
  Lance table per partition costs without any code of ours (issue 31);
* ``naive``: one ``lance.write_dataset`` per partition value (``group_by`` + ``filter``);
* ``delta``: ``deltalake.write_deltalake(..., partition_by=[...])``;
* ``iceberg``: PyIceberg with a SQLite catalog, ``tbl.append(table)`` under an Iceberg
  partition spec (identity, year + identity, bucket[16]);
* ``hive``: ``pyarrow.dataset.write_dataset`` as Hive-partitioned Parquet;

and ``lance``, one unpartitioned ``lance.write_dataset``, is the baseline of every ratio.
Computed partition columns (``event_year``, ``user_bucket``) are computed inside the timed
section, since ours computes them too. Each run writes into a fresh directory under /tmp (or
``--dir``) and starts after an ``os.sync()`` (untimed), so that no writer pays for writing back
the previous one's files; the directories are deleted when the benchmark ends (or earlier if the
disk runs low), so that no writer pays for the previous one's deletions either (see
benchmarks/README.md). The reported time is the minimum over ``--repeat`` runs;
beside it, the CPU time (user + system, every thread of the process) of the run that used
the least, since on a machine of 2 CPUs the work done bounds the time more than anything.

``--rss`` instead writes a *streamed* table (``stream_events``) in a fresh subprocess and
reports its peak resident set size.

Usage::

    .venv/bin/python benchmarks/write.py [--rows N] [--repeat 3] [--only ours,delta] [--spec date]
        [--dir /tmp]
    .venv/bin/python benchmarks/write.py --rss [--rows N] [--batch-rows 100000] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# lance warns once per new leaf ("No existing dataset at ..."): keep stderr readable
os.environ.setdefault("LANCE_LOG", "error")

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

# Imported before any writer runs so every Lance writer in this process, the unpartitioned
# baseline included, uses the same Lance CPU pool (lance_partitioned sizes it on small machines).
import lance_partitioned  # noqa: F401
from _data import make_events, stream_events
from _floor import Floor, split_by
from _versions import package_version

WRITERS = ("ours", "floor", "naive", "delta", "iceberg", "hive")
RSS_TARGET_GB = 1.0  # issue 31: a streamed 10M-row write stays within 1 GB


@dataclass(frozen=True)
class Spec:
    """One partitioning, as each writer spells it."""

    key: str  # short name for --spec
    partition_by: str  # ours
    columns: tuple[str, ...]  # partition columns of the peers (computed ones included)
    computed: Callable[[pa.Table], dict[str, pa.Array]]  # extra columns the peers need
    iceberg: tuple[tuple[str, str, str], ...]  # (source column, transform, partition name)


def _no_columns(table: pa.Table) -> dict[str, pa.Array]:
    return {}


def _year(table: pa.Table) -> dict[str, pa.Array]:
    return {"event_year": pc.year(table["event_date"]).cast(pa.int32())}


def _bucket(table: pa.Table) -> dict[str, pa.Array]:
    from lance_partitioned.spec.hashing import bucket_array

    return {"user_bucket": bucket_array(table["user_id"], 16)}


SPECS = (
    Spec(
        "date",
        "event_date",
        ("event_date",),
        _no_columns,
        (("event_date", "identity", "event_date"),),
    ),
    Spec(
        "year_country",
        "year(event_date), country",
        ("event_year", "country"),
        _year,
        (("event_date", "year", "event_year"), ("country", "identity", "country")),
    ),
    Spec(
        "bucket",
        "bucket(16, user_id)",
        ("user_bucket",),
        _bucket,
        (("user_id", "bucket16", "user_bucket"),),
    ),
)


def _with_columns(table: pa.Table, spec: Spec) -> pa.Table:
    for name, values in spec.computed(table).items():
        table = table.append_column(name, values)
    return table


def _data_dirs(root: str, suffix: str = ".parquet") -> int:
    """Distinct directories holding data files: the partitions a peer created."""
    dirs = {path for path, _, files in os.walk(root) if any(f.endswith(suffix) for f in files)}
    return len(dirs)


# ---------------------------------------------------------------------------- writers
# Each takes (table, spec, fresh empty directory) and returns the number of partitions.


def write_lance(table: pa.Table, spec: Spec | None, root: str) -> int:
    import lance

    lance.write_dataset(table, os.path.join(root, "table.lance"))
    return 1


def write_ours(table: pa.Table, spec: Spec, root: str) -> int:
    import lance_partitioned as lp

    ns = lp.PartitionedNamespace.create(root, schema=table.schema, partition_by=spec.partition_by)
    result = ns.write(table)
    if result.rows_written != table.num_rows:
        raise RuntimeError(f"wrote {result.rows_written} rows of {table.num_rows}")
    return int(result.partitions_created)


# The floor's input, split by partition outside the timed section (run() fills it): the
# floor times only what pylance does per leaf.
_SPLIT: dict[str, dict[str, pa.Table]] = {}


def split_for_floor(table: pa.Table, spec: Spec) -> None:
    """Split ``table`` by ``spec``'s partition values for :func:`write_floor` (untimed)."""
    keyed = _with_columns(table, spec)
    _SPLIT[spec.key] = split_by(table, [keyed[c] for c in spec.columns])


def write_floor(table: pa.Table, spec: Spec, root: str) -> int:
    """pylance alone: one ``write_dataset`` per partition on a pool as wide as ours (issue
    31's floor: the Lance operations one table per partition needs, no code of ours)."""
    from lance_partitioned.runtime import max_workers

    parts = _SPLIT[spec.key]
    Floor(root, workers=max_workers()).write_parts(parts)
    return len(parts)


def write_naive(table: pa.Table, spec: Spec, root: str) -> int:
    import lance

    keyed = _with_columns(table, spec)
    groups = keyed.select(list(spec.columns)).group_by(list(spec.columns)).aggregate([])
    for i, values in enumerate(groups.to_pylist()):
        mask = None
        for name, value in values.items():
            test = pc.equal(keyed[name], pa.scalar(value, keyed.schema.field(name).type))
            mask = test if mask is None else pc.and_(mask, test)
        part = keyed.filter(mask).select(table.column_names)
        lance.write_dataset(part, os.path.join(root, f"part-{i}.lance"))
    return groups.num_rows


def write_delta(table: pa.Table, spec: Spec, root: str) -> int:
    from deltalake import write_deltalake

    write_deltalake(root, _with_columns(table, spec), partition_by=list(spec.columns))
    return _data_dirs(root)


def _iceberg_transform(name: str) -> Any:
    from pyiceberg import transforms

    if name == "identity":
        return transforms.IdentityTransform()
    if name == "year":
        return transforms.YearTransform()
    if name == "bucket16":
        return transforms.BucketTransform(16)
    raise ValueError(f"unknown transform {name!r}")


def write_iceberg(table: pa.Table, spec: Spec, root: str) -> int:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.io.pyarrow import pyarrow_to_schema
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema

    catalog = SqlCatalog(
        "bench", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse"
    )
    catalog.create_namespace("bench")
    # field ids 1..n in column order (the same ids PyIceberg assigns to a pyarrow schema)
    with_ids = pa.schema(
        [f.with_metadata({"PARQUET:field_id": str(i)}) for i, f in enumerate(table.schema, 1)]
    )
    schema: Schema = pyarrow_to_schema(with_ids)
    fields = [
        PartitionField(
            source_id=schema.find_field(source).field_id,
            field_id=1000 + i,
            transform=_iceberg_transform(transform),
            name=name,
        )
        for i, (source, transform, name) in enumerate(spec.iceberg)
    ]
    tbl = catalog.create_table("bench.events", schema, partition_spec=PartitionSpec(*fields))
    tbl.append(table)
    return _data_dirs(os.path.join(root, "warehouse"))


def write_hive(table: pa.Table, spec: Spec, root: str) -> int:
    pads.write_dataset(
        _with_columns(table, spec),
        root,
        format="parquet",
        partitioning=list(spec.columns),
        partitioning_flavor="hive",
        existing_data_behavior="overwrite_or_ignore",
    )
    return _data_dirs(root)


WRITE = {
    "ours": write_ours,
    "floor": write_floor,
    "naive": write_naive,
    "delta": write_delta,
    "iceberg": write_iceberg,
    "hive": write_hive,
}


# ---------------------------------------------------------------------------- runner
@dataclass
class Cell:
    """Every run of one (spec, writer)."""

    seconds: list[float]
    cpu: list[float] = field(default_factory=list)  # user + system seconds of each run
    partitions: int | None = None
    error: str | None = None


def _short(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines() or [""]
    text = f"{type(exc).__name__}: {lines[0]}"
    return (text[:117] + "...") if len(text) > 120 else text


# Outputs are kept until the end of the benchmark while this much disk stays free.
_MIN_FREE_BYTES = 8 << 30


class Outputs:
    """The runs' output directories, deleted together at the end rather than after each run.

    On ext4, allocating inodes shortly after many files were deleted is slower (the kernel
    scans past the recently freed ones), so deleting each output right after its run made the
    next writer pay for it; benchmarks/README.md gives the figures.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.kept: list[str] = []

    def new(self) -> str:
        if self.kept and shutil.disk_usage(self.directory).free < _MIN_FREE_BYTES:
            print("  (disk low: deleting earlier outputs now)", file=sys.stderr, flush=True)
            self.delete()
        root = tempfile.mkdtemp(prefix="lp-bench-", dir=self.directory)
        self.kept.append(root)
        return root

    def delete(self) -> None:
        for root in self.kept:
            shutil.rmtree(root, ignore_errors=True)
        self.kept.clear()


def _cpu_seconds() -> float:
    """User + system time of this process so far, every thread (``getrusage``: microseconds,
    where ``os.times`` counts 10 ms clock ticks)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _timed(write: Callable[[str], int], cell: Cell, label: str, outputs: Outputs) -> None:
    """Run ``write`` into a fresh output directory and record its time."""
    root = outputs.new()
    os.sync()  # the previous run's dirty pages are not written back during this one
    try:
        started, cpu_started = time.perf_counter(), _cpu_seconds()
        partitions = write(root)
        seconds = time.perf_counter() - started
        cpu = _cpu_seconds() - cpu_started
    except Exception as exc:
        cell.error = _short(exc)
        print(f"  {label}: FAILED {cell.error}", file=sys.stderr, flush=True)
        return
    cell.seconds.append(seconds)
    cell.cpu.append(cpu)
    cell.partitions = partitions
    print(
        f"  {label}: {seconds:.2f} s, {cpu:.2f} CPU s, {partitions} partitions",
        file=sys.stderr,
        flush=True,
    )


def _warm_imports(writers: list[str]) -> None:
    """Import every writer's library up front so that no timed run pays for it."""
    import lance

    import lance_partitioned.namespace

    del lance, lance_partitioned
    for writer, module in (("delta", "deltalake"), ("iceberg", "pyiceberg.catalog.sql")):
        if writer in writers:
            try:
                importlib.import_module(module)
            except ImportError as exc:  # reported by the writer's own row
                print(f"cannot import {module}: {exc}", file=sys.stderr)


def run(rows: int, repeat: int, writers: list[str], specs: list[Spec], directory: str) -> str:
    """Time every (spec, writer) ``repeat`` times and render the markdown table."""
    _warm_imports(writers)
    started = time.perf_counter()
    table = make_events(rows)
    print(
        f"built {rows:,} rows ({table.nbytes / 1e6:.0f} MB) in "
        f"{time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    if "floor" in writers:
        for spec in specs:
            split_for_floor(table, spec)
    baseline = Cell([])
    cells = {(s.key, w): Cell([]) for s in specs for w in writers}
    outputs = Outputs(directory)
    try:
        for r in range(repeat):
            print(f"repeat {r + 1}/{repeat}", file=sys.stderr, flush=True)
            _timed(
                lambda root: write_lance(table, None, root),
                baseline,
                "lance (unpartitioned)",
                outputs,
            )
            for spec in specs:
                for writer in writers:
                    cell = cells[(spec.key, writer)]
                    if cell.error is not None:
                        continue  # failed once: do not retry
                    write = WRITE[writer]
                    _timed(
                        lambda root, w=write, s=spec: w(table, s, root),
                        cell,
                        f"{spec.partition_by} / {writer}",
                        outputs,
                    )
    finally:
        outputs.delete()
    return _render(rows, repeat, baseline, cells, writers, specs)


def _render(
    rows: int,
    repeat: int,
    baseline: Cell,
    cells: dict[tuple[str, str], Cell],
    writers: list[str],
    specs: list[Spec],
) -> str:
    base = min(baseline.seconds) if baseline.seconds else None
    base_cpu = min(baseline.cpu) if baseline.cpu else None
    lines = [
        f"{rows:,} rows, min of {repeat} runs; pylance {package_version('pylance')}, "
        f"deltalake {package_version('deltalake')}, pyiceberg {package_version('pyiceberg')}, "
        f"pyarrow {pa.__version__}, {os.cpu_count()} CPUs, "
        f"LANCE_CPU_THREADS={os.environ.get('LANCE_CPU_THREADS', 'unset')}",
        "",
        "| spec | writer | seconds (min) | ratio vs unpartitioned lance | CPU s (min) "
        "| CPU ratio | partitions |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]

    def row(spec: str, writer: str, cell: Cell) -> str:
        if cell.error is not None and not cell.seconds:
            error = cell.error.replace("|", "\\|")
            return f"| {spec} | {writer} | failed: {error} | | | | |"
        best, cpu = min(cell.seconds), min(cell.cpu)
        ratio = f"{best / base:.2f}x" if base else ""
        cpu_ratio = f"{cpu / base_cpu:.2f}x" if base_cpu else ""
        return (
            f"| {spec} | {writer} | {best:.2f} | {ratio} | {cpu:.2f} | {cpu_ratio} "
            f"| {cell.partitions} |"
        )

    lines.append(row("none", "lance (unpartitioned)", baseline))
    for spec in specs:
        for writer in writers:
            lines.append(row(f"`{spec.partition_by}`", writer, cells[(spec.key, writer)]))
    return "\n".join(lines)


# ---------------------------------------------------------------------------- peak RSS
def rss_child(rows: int, batch_rows: int, partition_by: str, directory: str) -> None:
    """Stream ``rows`` rows into a fresh namespace; print the result as JSON on stdout."""
    import lance_partitioned as lp

    root = tempfile.mkdtemp(prefix="lp-bench-rss-", dir=directory)
    try:
        reader = stream_events(rows, batch_rows)
        ns = lp.PartitionedNamespace.create(root, schema=reader.schema, partition_by=partition_by)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = ns.write(reader)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    finally:
        shutil.rmtree(root, ignore_errors=True)
    report = {
        "rows": result.rows_written,
        "partitions": result.partitions_created,
        "seconds": result.seconds,
        "before_kb": before,
        "peak_kb": peak,
    }
    print(json.dumps(report))


def rss(rows: int, batch_rows: int, partition_by: str, directory: str) -> str:
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--rss-child",
        f"--rows={rows}",
        f"--batch-rows={batch_rows}",
        f"--partition-by={partition_by}",
        f"--dir={directory}",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the --rss child failed ({done.returncode}):\n{done.stderr}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    peak = report["peak_kb"] * 1024 / 1e9
    verdict = "ok" if peak <= RSS_TARGET_GB else "OVER"
    return "\n".join(
        [
            f"ns.write(stream_events({rows:,}, {batch_rows:,})) in a fresh subprocess; "
            "ru_maxrss (KiB on Linux) in GB of 10^9 bytes",
            "",
            "| spec | rows | partitions | seconds | RSS before write (GB) | peak RSS (GB) "
            f"| target <= {RSS_TARGET_GB} GB |",
            "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
            f"| `{partition_by}` | {report['rows']:,} | {report['partitions']} "
            f"| {report['seconds']:.2f} | {report['before_kb'] * 1024 / 1e9:.2f} | {peak:.2f} "
            f"| {verdict} |",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--only", default=",".join(WRITERS), help=f"comma-separated writers among {WRITERS}"
    )
    parser.add_argument(
        "--spec",
        default=",".join(s.key for s in SPECS),
        help=f"comma-separated specs among {[s.key for s in SPECS]}",
    )
    parser.add_argument(
        "--dir", default="/tmp", help="where the runs write (the filesystem being measured)"
    )
    parser.add_argument("--rss", action="store_true", help="peak RSS of a streamed write")
    parser.add_argument("--batch-rows", type=int, default=100_000, help="batch size for --rss")
    parser.add_argument("--partition-by", default="event_date", help="spec for --rss")
    parser.add_argument("--rss-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child:
        rss_child(args.rows, args.batch_rows, args.partition_by, args.dir)
        return
    if args.rss:
        print(rss(args.rows, args.batch_rows, args.partition_by, args.dir))
        return
    writers = [w for w in args.only.split(",") if w]
    specs = [s for s in SPECS if s.key in args.spec.split(",")]
    unknown = set(writers) - set(WRITERS)
    if unknown or not specs:
        parser.error(f"unknown writers {sorted(unknown)} or no spec selected")
    print(run(args.rows, args.repeat, writers, specs, args.dir))


if __name__ == "__main__":
    main()
