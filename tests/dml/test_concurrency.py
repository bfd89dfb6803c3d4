"""A delete, appends and a merge in separate processes at once, on one namespace: every
operation lands exactly once (unique ids: nothing lost, nothing duplicated)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp

from .helpers import create, rows


def _delete(root: str, barrier: Any) -> None:
    ns = lp.PartitionedNamespace.open(root)
    barrier.wait()
    ns.delete("id < 500 AND id % 7 = 0")


def _append(root: str, barrier: Any) -> None:
    ns = lp.PartitionedNamespace.open(root)
    barrier.wait()
    for i in range(3):
        ns.write(rows(20, seed=200 + i, first_id=10_000 + 100 * i))


def _merge(root: str, barrier: Any) -> None:
    ns = lp.PartitionedNamespace.open(root)
    barrier.wait()
    source = _merge_source()
    ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()


def _merge_source() -> pa.Table:
    changed = rows(100, seed=301, first_id=500)  # ids 500..599 exist: new values (and leaves)
    fresh = rows(50, seed=302, first_id=20_000)
    return pa.concat_tables([changed, fresh])


@pytest.mark.slow  # three spawned interpreters, each importing the library, racing
def test_delete_append_and_merge_in_separate_processes(tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    data = rows(800, seed=300)
    create(Path(root), "country, bucket(2, user_id)", data)
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(3)
    workers = [context.Process(target=f, args=(root, barrier)) for f in (_delete, _append, _merge)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=600)
    assert [w.exitcode for w in workers] == [0, 0, 0]

    got = lp.PartitionedNamespace.open(root).to_table().sort_by("id")
    ids = got.column("id").to_pylist()
    assert len(ids) == len(set(ids))  # no duplicate
    original = [i for i in range(800) if not (i < 500 and i % 7 == 0) and not 500 <= i < 600]
    appended = [10_000 + 100 * b + i for b in range(3) for i in range(20)]
    merged = _merge_source().column("id").to_pylist()
    assert ids == sorted([*original, *appended, *merged])  # nothing lost
    # the merged rows carry the source's values
    mask = pc.is_in(got.column("id"), pa.array(merged))
    assert got.filter(mask).to_pylist() == _merge_source().sort_by("id").to_pylist()
