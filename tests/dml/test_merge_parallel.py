"""The merge searches its leaves on the per-leaf pool (issue 31), with the same result."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.dml import merge_leaf

SCHEMA = pa.schema([("id", pa.int64()), ("c", pa.string()), ("n", pa.int64())])


def test_leaves_are_searched_in_parallel_off_the_deep_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path), schema=SCHEMA, partition_by="c", max_workers=4
    )
    countries = [f"c{i}" for i in range(8)]
    ns.write(
        pa.table(
            {"id": range(32), "c": [countries[i % 8] for i in range(32)], "n": [0] * 32},
            schema=SCHEMA,
        )
    )
    threads: set[str] = set()
    search = merge_leaf.Clauses.search

    def recorded(self: merge_leaf.Clauses, *args: Any) -> Any:
        threads.add(threading.current_thread().name)
        return search(self, *args)

    def no_deep(call: Any) -> Any:
        raise AssertionError("a short merge query went through deep()'s single thread")

    monkeypatch.setattr(merge_leaf.Clauses, "search", recorded)
    monkeypatch.setattr(merge_leaf, "deep", no_deep)
    source = pa.table({"id": [1, 9, 17, 100], "n": [5, 6, 7, 8]})
    result = ns.merge(source, on="id").when_matched_update_all().execute()
    assert result.rows_updated == 3
    assert len(threads) > 1
    assert threading.main_thread().name not in threads
    got = {r["id"]: r["n"] for r in ns.to_table().to_pylist()}
    assert [got[i] for i in (1, 9, 17)] == [5, 6, 7]
    assert sum(got.values()) == 18
    assert len(got) == 32
