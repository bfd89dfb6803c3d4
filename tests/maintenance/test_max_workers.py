"""One knob sizes every per-leaf thread pool: a namespace's ``max_workers`` option, else
``$LANCE_PARTITIONED_MAX_WORKERS``. The widths are those of the real pools, seen as each pool
is made (which module made it, with how many threads)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp
import lance_partitioned.runtime.pools
from lance_partitioned import errors, runtime
from lance_partitioned.verify import verify

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
LEAVES = 160  # partitions() opens 32 leaves per thread: 160 leaves let it use 5


def _rows(keys: range) -> pa.Table:
    return pa.table({"k": list(keys), "v": list(keys)}, schema=SCHEMA)


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[int]]:
    """Module name -> the widths of the pools it made (a spy, the pools are real)."""
    seen: dict[str, set[int]] = {}
    real: Callable[..., None] = ThreadPoolExecutor.__init__

    def spy(self: ThreadPoolExecutor, max_workers: int | None = None, *a: Any, **k: Any) -> None:
        module = sys._getframe(1).f_globals.get("__name__", "?")
        seen.setdefault(module, set()).add(int(max_workers or 0))
        real(self, max_workers, *a, **k)

    monkeypatch.setattr(ThreadPoolExecutor, "__init__", spy)
    monkeypatch.setattr(lance_partitioned.runtime.pools, "_pools", {})  # reads make theirs anew
    monkeypatch.delenv(runtime.MAX_WORKERS_ENV, raising=False)
    return seen


def _namespace(root: Path, **options: Any) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="k", **options)
    ns.write(_rows(range(LEAVES)))
    ns.write(_rows(range(4)))  # four leaves with two fragments: optimize compacts them
    return ns


def test_the_option_sizes_writes_reads_sizes_and_optimize(
    tmp_path: Path, pools: dict[str, set[int]]
) -> None:
    ns = _namespace(tmp_path / "ns", max_workers=3)
    assert ns.max_workers == 3
    assert pools["lance_partitioned.ingest"] == {3}
    assert pools["lance_partitioned.transaction"] == {3}
    pools.clear()
    assert ns.partitions().num_rows == LEAVES
    assert pools == {"lance_partitioned.sizes": {3}}
    pools.clear()
    assert ns.to_table().num_rows == LEAVES + 4
    assert ns.count_rows("v > 1") == LEAVES  # 158 + 2
    assert pools == {"lance_partitioned.runtime.pools": {3}}  # the scan's long-lived leaf pool
    pools.clear()
    assert ns.optimize().leaves_compacted == 4
    assert pools["lance_partitioned.maintenance.optimize"] == {3}
    assert pools["lance_partitioned.transaction"] == {3}
    pools.clear()
    ns.delete("v = 7")
    assert pools["lance_partitioned.transaction"] == {3}


def test_a_delete_across_leaves_prepares_them_on_the_pool(
    tmp_path: Path, pools: dict[str, set[int]]
) -> None:
    ns = _namespace(tmp_path / "ns", max_workers=3)
    pools.clear()
    assert ns.delete("v % 2 = 0").rows_deleted == LEAVES // 2 + 2
    assert pools["lance_partitioned.dml.delete"] == {3}
    assert ns.count_rows() == LEAVES // 2 + 2


def test_the_environment_variable_sizes_them_without_the_option(
    tmp_path: Path, pools: dict[str, set[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(runtime.MAX_WORKERS_ENV, "5")
    ns = _namespace(tmp_path / "ns")
    assert ns.max_workers == 5
    assert lp.WriteOptions().threads == 5
    assert pools["lance_partitioned.ingest"] == {5}
    pools.clear()
    assert verify(ns.uri).problems == []
    assert pools["lance_partitioned.verify"] == {5}
    pools.clear()
    ns.partitions()
    assert pools == {"lance_partitioned.sizes": {5}}
    pools.clear()
    ns.optimize()
    assert pools["lance_partitioned.maintenance.optimize"] == {5}
    assert pools["lance_partitioned.transaction"] == {5}
    # the option wins over the variable, and threads= over both
    assert lp.PartitionedNamespace.open(ns.uri, max_workers=2).max_workers == 2
    pools.clear()
    assert verify(ns.uri, threads=1).problems == []
    assert pools["lance_partitioned.verify"] == {1}


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_bad_setting_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    root = str(tmp_path / "ns")
    lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k")
    monkeypatch.setenv(runtime.MAX_WORKERS_ENV, value)
    with pytest.raises(errors.InvalidInputError, match=runtime.MAX_WORKERS_ENV):
        lp.PartitionedNamespace.open(root)
    monkeypatch.delenv(runtime.MAX_WORKERS_ENV)
    with pytest.raises(errors.InvalidInputError, match="max_workers"):
        lp.PartitionedNamespace.open(root, max_workers=0)
