"""Cleanups running in a loop while other processes append: with a cutoff set before the
writers started, everything they stage or commit is younger than it, so no row is lost while
the older history goes."""

from __future__ import annotations

import datetime as dt
import multiprocessing as mp
from pathlib import Path

import pytest

import lance_partitioned as lp
from lance_partitioned.maintenance.cleanup import cleanup
from lance_partitioned.manifest import Manifest
from tests.maintenance.helpers import clock_barrier, manifest_versions, table

WORKERS, ROUNDS, PER_ROUND = 2, 6, 4


def _append_worker(root: str, worker: int) -> None:
    ns = lp.PartitionedNamespace.open(root)
    for r in range(ROUNDS):
        start = 1000 + (worker * ROUNDS + r) * PER_ROUND
        keys = ["a", "b", f"w{worker}r{r}", "a"]  # existing leaves and a new one each round
        ns.write(table(list(range(start, start + PER_ROUND)), keys))


@pytest.mark.slow
def test_cleanups_racing_appends_in_other_processes_lose_nothing(tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    ns = lp.PartitionedNamespace.create(root, schema=table([], []).schema, partition_by="k")
    for i in range(4):
        ns.write(table([i, 100 + i], ["a", "b"]))
    ns.write(table([50], ["a"]), mode="overwrite_partitions")
    old = set(manifest_versions(root))
    cutoff = clock_barrier(tmp_path)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_append_worker, args=(root, w)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    removed = 0
    runs = 0
    while any(p.is_alive() for p in procs) or runs == 0:
        removed += cleanup(Manifest(root), dt.timedelta(0), now=cutoff).files
        runs += 1
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * WORKERS
    removed += cleanup(Manifest(root), dt.timedelta(0), now=cutoff).files
    assert removed > 0
    assert runs > 1, "no cleanup ran while the writers wrote"
    assert not (old - {max(old)}) & set(manifest_versions(root))  # the old history went
    written = {
        1000 + (w * ROUNDS + r) * PER_ROUND + i
        for w in range(WORKERS)
        for r in range(ROUNDS)
        for i in range(PER_ROUND)
    }
    ids = ns.refresh().to_table().column("id").to_pylist()
    assert sorted(ids) == sorted({50, 100, 101, 102, 103} | written)
    for version in manifest_versions(root):  # every version the writers made still reads
        if version >= 2:
            lp.PartitionedNamespace.open(root, version=version).to_table()
