"""Indexes under schema evolution and DML: a dropped column takes its indexes with it, and
updates and overwrites leave every index searchable and rebuilt by ``optimize_indices``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .helpers import DIM, exact_top_k, namespace, rows


def test_dml_then_drop_column_keeps_indexes_consistent(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns", sizes={"a": 260, "b": 5, "c": 20})
    ns.create_index("v", "IVF_FLAT", min_rows=256)
    ns.create_index("grp", "BTREE")
    ns.update("tenant = 'a' AND id < 50", values={"grp": 99})
    ns.write(rows({"b": 6}, first_id=5000, seed=9), mode="overwrite_partitions")
    query = np.zeros(DIM, np.float32)
    got = ns.search(query, k=30, columns=["id"])  # unindexed rows are searched too
    assert got.column("_distance").to_pylist() == exact_top_k(ns.to_table(), query, 30).tolist()
    assert ns.search(query, k=100, filter="grp = 99").num_rows == 50
    assert ns.index_stats("grp_idx").rows_unindexed == 50 + 6
    ns.optimize_indices()
    for name in ("v_idx", "grp_idx"):
        stats = ns.index_stats(name)
        assert (stats.leaves_missing, stats.rows_indexed) == (0, 260 if name == "v_idx" else 286)

    ns.drop_columns(["grp"])
    assert [d["name"] for d in ns.list_indices()] == ["v_idx"]
    for task in ns.plan_scan():
        assert [d.name for d in task.open().describe_indices()] in (["v_idx"], [])
    assert ns.index_stats("v_idx").leaves_indexed == 1
    assert ns.optimize_indices()[0].leaves_indexed == 0
    ns.drop_columns(["txt"])  # no index on it: the drop alone
    assert [d["name"] for d in ns.list_indices()] == ["v_idx"]
