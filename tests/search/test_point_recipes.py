"""A point filter no partition prunes (issue 29's ``user_id = 4242``): how each leaf is read
(its columns mapped, the residual translated to Lance SQL) is worked out once per leaf version
(scan/recipes.py), and the calling thread and the leaf threads each take the next leaf
(scan/read.py ``each_leaf``): no per-leaf work of ours beyond Lance's count."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.scan import filters
from lance_partitioned.scan import read as scan_read

from .helpers import namespace

SIZES = {"a": 40, "b": 5, "c": 15, "d": 9, "e": 12}


class _Calls:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> None:
        self.threads: list[int] = []
        original = getattr(module, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.threads.append(threading.get_ident())
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)


def test_a_repeated_point_query_translates_no_filter_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = namespace(tmp_path / "ns", sizes=SIZES)
    ns.create_index("grp", "BTREE")
    ns = ns.refresh()
    translated = _Calls(monkeypatch, filters, "pushdown_filter")
    expected = sum(1 for i in range(81) if i % 7 == 3)
    assert ns.count_rows("grp = 3") == expected
    assert ns.to_table("grp = 3").num_rows == expected
    first = len(translated.threads)
    assert first >= len(SIZES)  # each leaf's residual translated (count, then read)
    for _ in range(3):
        assert ns.count_rows("grp = 3") == expected
        table = ns.to_table("grp = 3", columns=["id", "grp"])
        assert sorted(table.column("id").to_pylist()) == [i for i in range(81) if i % 7 == 3]
    assert ns.to_table("grp = 3").num_rows == expected
    assert len(translated.threads) == first + len(SIZES)  # only the new columns' reads

    # a write: a new snapshot and leaf versions, worked out again and read as they are now
    ns.write(pa.table({"id": [500], "tenant": ["b"], "grp": [3], "v": [[0.0] * 4], "txt": ["x"]}))
    assert ns.count_rows("grp = 3") == expected + 1
    assert 500 in ns.to_table("grp = 3", columns=["id", "grp"]).column("id").to_pylist()
    older = lp.PartitionedNamespace.open(ns.uri, version=ns.version - 1)
    assert older.count_rows("grp = 3") == expected


def test_a_count_runs_leaves_in_the_calling_thread_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = namespace(tmp_path / "ns", sizes=SIZES)
    counted = _Calls(monkeypatch, scan_read, "count_task")
    assert ns.count_rows("grp = 3") == sum(1 for i in range(81) if i % 7 == 3)
    assert len(counted.threads) == len(SIZES)
    assert threading.get_ident() in counted.threads  # no hand-off for the first chunk
    assert len(set(counted.threads)) <= min(ns.max_workers, len(SIZES))


def test_each_leaf_runs_every_task_once_in_task_order() -> None:
    callers: list[int] = []
    done: list[int] = []

    def work(task: Any) -> Any:
        callers.append(threading.get_ident())
        done.append(task)
        return task * 10

    tasks: Any = list(range(11))
    for width in (1, 2, 3, 4, 11, 20):
        done.clear()
        assert scan_read.each_leaf(tasks, width, work) == [t * 10 for t in tasks]
        assert sorted(done) == tasks
    assert scan_read.each_leaf([], 3, work) == []
    assert threading.get_ident() in callers

    def fails(task: Any) -> Any:
        if task == 5:
            raise lp.errors.InvalidInputError("leaf 5")
        return task

    with pytest.raises(lp.errors.InvalidInputError, match="leaf 5"):
        scan_read.each_leaf(tasks, 3, fails)
