"""Index lifecycle: create, list, stats, drop, replace, later leaves, text and hybrid search,
renames, and builds racing other writers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import lance_partitioned as lp
from lance_partitioned.search import RRF_K, IndexBuildProgress
from lance_partitioned.search.build import new_definition, prepare_leaf_index
from lance_partitioned.search.definitions import INDICES_KEY
from lance_partitioned.transaction import pause_at

from .helpers import DIM, namespace, rows


def test_create_list_stats_drop(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns", sizes={"a": 300, "b": 5, "c": 20})
    events: list[IndexBuildProgress] = []
    result = ns.create_index("v", "IVF_PQ", min_rows=256, metric="l2", progress=events.append)
    assert (result.name, result.leaves_indexed, result.leaves_flat) == ("v_idx", 1, 2)
    assert ns.version == result.version
    assert sorted(e.built for e in events) == [False, False, True]
    [listed] = ns.list_indices()
    assert listed["name"] == "v_idx"
    assert listed["index_type"] == "IVF_PQ"
    assert listed["column"] == "v"
    assert listed["min_rows"] == 256
    stats = ns.index_stats("v_idx")
    assert (stats.leaves_indexed, stats.leaves_flat, stats.leaves_missing) == (1, 2, 0)
    assert (stats.rows_indexed, stats.rows_unindexed) == (300, 25)
    # the definition is an unknown-key-safe root property
    raw = json.loads(ns.snapshot.table_metadata[INDICES_KEY])
    assert raw["v_idx"]["field_id"] == ns.namespace_schema.field_id("v")
    with pytest.raises(lp.errors.InvalidInputError, match="already exists"):
        ns.create_index("v", "IVF_PQ")
    ns.drop_index("v_idx")
    assert ns.list_indices() == []
    leaves = ns.plan_scan()
    assert all(not task.open().describe_indices() for task in leaves)
    with pytest.raises(lp.errors.InvalidInputError):
        ns.index_stats("v_idx")


def test_scalar_indexes_and_filter(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    ns.create_index("grp", "BTREE", filter="tenant = 'a'")
    ns.create_index("id", "ZONEMAP", name="id_zones")
    ns.create_index("tenant", "BITMAP")
    stats = ns.index_stats("grp_idx")
    assert (stats.leaves_indexed, stats.leaves_flat) == (1, 0)
    assert ns.index_stats("id_zones").leaves_indexed == 3
    got = ns.search(np.zeros(DIM), k=5, filter="grp = 3 AND tenant = 'a'", columns=["grp"])
    assert got.column("grp").to_pylist() == [3] * min(5, got.num_rows)
    assert got.num_rows > 0
    with pytest.raises(lp.errors.InvalidInputError, match="index type"):
        ns.create_index("grp", "HASH")
    with pytest.raises(lp.errors.InvalidInputError, match="no column"):
        ns.create_index("nope", "BTREE")


def test_text_and_hybrid_search(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    flat = ns.search(text="apple", column="txt", k=100, columns=["txt"])  # no index: flat
    assert flat.num_rows == ns.count_rows("txt LIKE '%apple%'")
    ns.create_index("txt", "INVERTED")
    got = ns.search(text="cherry", k=50, columns=["id", "txt"])
    assert got.num_rows > 0
    assert all("cherry" in t for t in got.column("txt").to_pylist())
    scores = got.column("_score").to_pylist()
    assert scores == sorted(scores, reverse=True)
    expected = ns.count_rows("txt LIKE '%cherry%'")
    assert got.num_rows == min(50, expected)
    pruned = ns.search(text="cherry", k=50, filter="tenant = 'c'", columns=["tenant"])
    assert set(pruned.column("tenant").to_pylist()) == {"c"}
    assert set(pruned.column("_partition").to_pylist()) == {"tenant=c"}
    hybrid = ns.search(np.zeros(DIM), text="cherry", k=7, columns=["id"])
    assert hybrid.column_names == ["id", "_distance", "_score", "_relevance_score", "_partition"]
    fused = hybrid.column("_relevance_score").to_pylist()
    assert fused == sorted(fused, reverse=True)
    assert hybrid.num_rows == 7
    assert fused[0] <= 2 / RRF_K


def test_later_leaves_are_indexed_by_optimize_indices(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    ns.create_index("grp", "BTREE")
    ns.write(rows({"a": 3, "d": 4}, first_id=1000, seed=2))
    stats = ns.index_stats("grp_idx")
    assert (stats.leaves_indexed, stats.leaves_missing, stats.rows_unindexed) == (3, 1, 7)
    [result] = ns.optimize_indices()
    assert result.leaves_indexed == 2  # the new leaf, and the leaf with new rows
    stats = ns.index_stats("grp_idx")
    assert (stats.leaves_indexed, stats.leaves_missing, stats.rows_unindexed) == (4, 0, 0)


def test_renamed_column_keeps_its_index(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    ns.create_index("txt", "INVERTED")
    ns.rename_column("txt", "body")
    assert ns.list_indices()[0]["column"] == "body"
    got = ns.search(text="lemon", k=3, columns=["body"])
    assert got.num_rows == 3
    assert all("lemon" in t for t in got.column("body").to_pylist())
    assert ns.index_stats("txt_idx").leaves_indexed == 3


def test_replace_rebuilds(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    ns.create_index("grp", "BTREE")
    ns.write(rows({"a": 3}, first_id=500, seed=3))
    ns.create_index("grp", "BITMAP", name="grp_idx", replace=True)
    stats = ns.index_stats("grp_idx")
    assert stats.index_type == "BITMAP"
    assert stats.rows_unindexed == 0
    [task] = ns.plan_scan("tenant = 'a'")
    assert [d.name for d in task.open().describe_indices()] == ["grp_idx"]


@pytest.mark.parametrize("point", ["leaf_commit", "leaves_committed"])
def test_create_index_racing_an_append(tmp_path: Path, point: str) -> None:
    ns = namespace(tmp_path / "ns")
    other = lp.PartitionedNamespace.open(ns.uri)
    extra = rows({"a": 4, "b": 2, "e": 3}, first_id=900, seed=4)
    with pause_at(point, lambda: other.write(extra)):
        ns.create_index("grp", "BTREE")
    assert ns.count_rows() == 60 + 9
    assert sorted(ns.to_table("id >= 900")["id"].to_pylist()) == list(range(900, 909))
    stats = ns.index_stats("grp_idx")
    assert stats.leaves_indexed + stats.leaves_missing == 4
    assert stats.leaves_indexed >= 3
    assert stats.rows_indexed + stats.rows_unindexed == 69
    near = ns.search(np.zeros(DIM), k=100, filter="id >= 900", columns=["id"])
    assert sorted(near.column("id").to_pylist()) == list(range(900, 909))


def test_index_build_racing_optimize(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    ns.write(rows({"a": 3, "b": 3}, first_id=700, seed=5))
    other = lp.PartitionedNamespace.open(ns.uri)
    with pause_at("leaves_committed", lambda: other.optimize(compact_manifest=False)):
        ns.create_index("grp", "BTREE")
    assert ns.count_rows() == 66
    assert ns.index_stats("grp_idx").leaves_missing == 0


def test_optimize_builds_missing_indexes_in_its_commit(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    ns.create_index("grp", "BTREE")
    ns.create_index("txt", "INVERTED")
    ns.write(rows({"a": 3, "d": 4}, first_id=1000, seed=2))
    before = ns.version
    result = ns.optimize(compact_manifest=False)
    assert ns.version == before + 1  # one commit
    assert result.leaves_indexed == 2  # leaf a (new rows) and the new leaf d
    assert result.leaves_compacted == 0
    for name in ("grp_idx", "txt_idx"):
        stats = ns.index_stats(name)
        assert (stats.leaves_missing, stats.rows_unindexed) == (0, 0)
    assert ns.optimize(compact_manifest=False).leaves_indexed == 0


@pytest.mark.slow  # integration: a child interpreter killed by SIGKILL mid-build
def test_sigkill_during_a_build_leaves_every_version_readable(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    script = (
        "import os, signal, sys\n"
        "import lance_partitioned as lp\n"
        "from lance_partitioned.transaction import pause_at\n"
        "ns = lp.PartitionedNamespace.open(sys.argv[1])\n"
        "with pause_at('leaves_committed', lambda: os.kill(os.getpid(), signal.SIGKILL)):\n"
        "    ns.create_index('grp', 'BTREE')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, ns.uri], check=False, timeout=120)
    assert done.returncode == -signal.SIGKILL
    for version in range(2, ns.refresh().version + 1):  # 1: create's first step
        assert lp.PartitionedNamespace.open(ns.uri, version=version).count_rows() in (0, 60)
    assert ns.list_indices() == []
    ns.create_index("grp", "BTREE")
    assert ns.index_stats("grp_idx").leaves_indexed == 3
    assert ns.count_rows("grp = 3") == ns.to_table("grp = 3").num_rows


@pytest.mark.parametrize("index_type", ["IVF_HNSW_SQ", "IVF_PQ"])
def test_vector_index_search_keeps_filter_and_order(tmp_path: Path, index_type: str) -> None:
    ns = namespace(tmp_path / "ns", sizes={"a": 300, "b": 40})
    ns.create_index("v", index_type, min_rows=256)
    assert ns.index_stats("v_idx").leaves_indexed == 1
    got = ns.search(np.ones(DIM), k=8, filter="grp < 3", columns=["grp", "tenant"], nprobes=4)
    assert got.num_rows == 8
    assert all(g < 3 for g in got.column("grp").to_pylist())
    distances = got.column("_distance").to_pylist()
    assert distances == sorted(distances)


def test_hybrid_column_goes_to_the_side_of_its_type(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    got = ns.search(np.zeros(DIM), text="grape", column="txt", k=4, columns=["id"])
    assert got.num_rows == 4
    assert got.column("_relevance_score").to_pylist()[0] >= 1 / RRF_K


def test_result_types_are_exported_from_the_package() -> None:
    from lance_partitioned import search

    for name in ("IndexBuildResult", "IndexBuildProgress", "IndexStats", "LeafIndexStats"):
        assert name in lp.__all__
        assert getattr(lp, name) is getattr(search, name)


@pytest.mark.parametrize("index_type", ["BTREE", "INVERTED"])
def test_a_leaf_build_does_not_hold_the_shared_leaf(tmp_path: Path, index_type: str) -> None:
    """pylance holds a dataset object exclusively while it builds an index on it: a build on
    the leaf cache's object failed a scan or a commit of the same leaf in another thread
    (``RuntimeError: Already mutably borrowed``; CI, a build racing an append)."""
    ns = namespace(tmp_path / "ns", sizes={"a": 2000})
    [task] = ns.plan_scan()
    shared = task.open()  # what every read and commit of this leaf version is handed
    assert task.open() is shared
    column = "grp" if index_type == "BTREE" else "txt"
    definition = new_definition(ns.snapshot, column, index_type, None, None, False, {})
    failures: list[BaseException] = []
    reads = 0
    done = threading.Event()

    def read() -> None:
        nonlocal reads
        while not done.is_set():
            try:
                assert shared.version == task.read_version
                reads += 1
            except RuntimeError as exc:
                failures.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(5):
            built = prepare_leaf_index(shared, definition, ns.namespace_schema)
            assert built is not None
            assert built.new_indices
    finally:
        done.set()
        reader.join()
    assert reads > 0
    assert failures == []
