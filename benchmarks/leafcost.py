"""What one leaf costs on a local disk (issue 31): ``--partitions`` one-row partitions written,
then a row-level delete across every leaf, ours against delta-rs and the floor.

* ``ours``: ``PartitionedNamespace.create(partition_by="k")`` + one ``write`` of N rows with
  N distinct ``k``; then ``delete("v % 2 = 0")`` (half the leaves lose their row);
* ``delta``: ``write_deltalake(partition_by=["k"])`` and ``DeltaTable.delete`` with the same
  predicate;
* ``floor``: pylance alone (``_floor.py``): one ``write_dataset`` per partition, then one
  ``delete`` per leaf, on a pool as wide as ours (``--max-workers``, default ours' default).

Each system runs ``--repeat`` times on fresh directories; the table has the minimum wall time
of each operation, the milliseconds per leaf, delta / ours and ours / floor.

Usage::

    .venv/bin/python benchmarks/leafcost.py [--partitions 3000] [--repeat 3]
        [--only ours,delta,floor] [--max-workers N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable

os.environ.setdefault("LANCE_LOG", "error")

import pyarrow as pa

import lance_partitioned as lp
from _floor import Floor
from lance_partitioned.runtime import max_workers

OPERATIONS = ("write {n} one-row partitions", "delete across {n} leaves")
PREDICATE = "v % 2 = 0"


def table(partitions: int) -> pa.Table:
    """One row per partition: ``k`` the partition, ``v`` the value deleted on."""
    keys = pa.array(range(partitions), pa.int64())
    return pa.table({"k": keys, "v": keys})


def run_ours(root: str, data: pa.Table, workers: int | None) -> list[Callable[[], object]]:
    handle: dict[str, lp.PartitionedNamespace] = {}

    def write() -> None:
        handle["ns"] = lp.PartitionedNamespace.create(
            root, schema=data.schema, partition_by="k", max_workers=workers
        )
        handle["ns"].write(data)

    return [write, lambda: handle["ns"].delete(PREDICATE)]


def run_delta(root: str, data: pa.Table, workers: int | None) -> list[Callable[[], object]]:
    from deltalake import DeltaTable, write_deltalake

    return [
        lambda: write_deltalake(root, data, partition_by=["k"]),
        lambda: DeltaTable(root).delete(PREDICATE),
    ]


def run_floor(root: str, data: pa.Table, workers: int | None) -> list[Callable[[], object]]:
    floor = Floor(root, workers=max_workers(workers))
    return [lambda: floor.write(data, "k"), lambda: floor.delete(floor.keys, PREDICATE)]


SYSTEMS = {"ours": run_ours, "delta": run_delta, "floor": run_floor}


def measure(system: str, data: pa.Table, args: argparse.Namespace) -> list[float]:
    """The minimum seconds of each operation over ``args.repeat`` fresh runs."""
    best = [float("inf")] * len(OPERATIONS)
    for _ in range(args.repeat):
        work = tempfile.mkdtemp(prefix=f"leafcost-{system}-", dir=args.dir)
        try:
            steps = SYSTEMS[system](os.path.join(work, "t"), data, args.max_workers)
            for i, step in enumerate(steps):
                started = time.perf_counter()
                step()
                best[i] = min(best[i], time.perf_counter() - started)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-workers", type=int, default=None)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    parser.add_argument("--only", default="ours,delta,floor", help="systems: ours, delta, floor")
    args = parser.parse_args()
    systems = [s.strip() for s in args.only.split(",") if s.strip() in SYSTEMS]
    data = table(args.partitions)
    results = {system: measure(system, data, args) for system in systems}
    n = args.partitions
    print(f"partitions: {n:,}, min of {args.repeat}, max_workers: {max_workers(args.max_workers)}")
    print()
    print("| operation | system | s | ms / leaf | delta / ours | ours / floor |")
    print("|---|---|---:|---:|---:|---:|")
    for i, name in enumerate(OPERATIONS):
        label = name.format(n=f"{n:,}")
        ours = results.get("ours", [None] * len(OPERATIONS))[i]
        for system in systems:
            seconds = results[system][i]
            ratio = "-"
            if system == "delta" and ours:
                ratio = f"{seconds / ours:.2f}x"
            floor_ratio = "-"
            if system == "floor" and ours:
                floor_ratio = f"{ours / seconds:.2f}x"
            print(
                f"| {label} | {system} | {seconds:.3f} | {1000 * seconds / n:.2f} | "
                f"{ratio} | {floor_ratio} |"
            )


if __name__ == "__main__":
    main()
