"""``lance_partitioned.spark.create_index``: leaf indexes built in Spark tasks, one commit by
the driver; the result equals ``ns.create_index`` on a copy of the same namespace."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import numpy as np
import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
import lance_partitioned.spark
from lance_partitioned import errors
from lance_partitioned.spark.index import distributed_create_index
from tests.search import training_helpers
from tests.search.helpers import namespace

pytestmark = pytest.mark.spark

SIZES = {"a": 300, "b": 40, "c": 150}


def _pair(tmp_path: Path) -> tuple[lp.PartitionedNamespace, lp.PartitionedNamespace]:
    spark_ns = namespace(tmp_path / "spark", sizes=SIZES)
    shutil.copytree(tmp_path / "spark", tmp_path / "python")
    return spark_ns, lp.PartitionedNamespace.open(str(tmp_path / "python"))


def test_btree_built_on_executors_equals_the_python_build(
    spark: SparkSession, tmp_path: Path
) -> None:
    spark_ns, python_ns = _pair(tmp_path)
    before = spark_ns.version
    result = lance_partitioned.spark.create_index(spark, spark_ns.uri, "grp", "BTREE")
    python_ns.create_index("grp", "BTREE")
    spark_ns = lp.PartitionedNamespace.open(spark_ns.uri)
    # one __manifest commit for every leaf index, one for the definition
    assert spark_ns.version == before + 2 == result.version
    assert (result.leaves_indexed, result.leaves_flat) == (3, 0)
    assert spark_ns.list_indices() == python_ns.list_indices()
    assert spark_ns.index_stats("grp_idx") == python_ns.index_stats("grp_idx")
    where = "grp = 3"
    assert sorted(spark_ns.to_table(where).column("id").to_pylist()) == sorted(
        python_ns.to_table(where).column("id").to_pylist()
    )
    # the definition is recorded: a second build needs replace
    with pytest.raises(errors.InvalidInputError, match="already exists"):
        lance_partitioned.spark.create_index(spark, spark_ns.uri, "grp", "BTREE")


def test_ivf_flat_on_executors_search_equals_the_python_build(
    spark: SparkSession, tmp_path: Path
) -> None:
    spark_ns, python_ns = _pair(tmp_path)
    result = lance_partitioned.spark.create_index(
        spark, spark_ns.uri, "v", "IVF_FLAT", min_rows=100, metric="l2"
    )
    python_ns.create_index("v", "IVF_FLAT", min_rows=100, metric="l2")
    spark_ns = lp.PartitionedNamespace.open(spark_ns.uri)
    assert (result.leaves_indexed, result.leaves_flat) == (2, 1)  # b: 40 rows, flat
    stats = spark_ns.index_stats("v_idx")
    assert stats == python_ns.index_stats("v_idx")
    assert stats.rows_indexed == 450
    query = np.asarray([1.0, -1.0, 2.0, 0.0], np.float32)
    for where in (None, "tenant != 'c'"):
        got = spark_ns.search(query, column="v", k=7, filter=where, columns=["id"])
        want = python_ns.search(query, column="v", k=7, filter=where, columns=["id"])
        assert got.column("_distance").to_pylist() == want.column("_distance").to_pylist()
        assert sorted(got.column("id").to_pylist()) == sorted(want.column("id").to_pylist())


def test_a_task_failing_on_attempt_zero_still_commits_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    spark_ns, python_ns = _pair(tmp_path)

    def fail_first_attempt(index: int, attempt: int) -> None:
        if attempt == 0 and index == 0:
            raise RuntimeError("injected failure of attempt 0")

    before = spark_ns.version
    manifest = spark_ns._manifest
    result = distributed_create_index(
        spark, manifest, "grp", "BTREE", filter="tenant != 'b'", hook=fail_first_attempt
    )
    python_ns.create_index("grp", "BTREE", filter="tenant != 'b'")
    spark_ns = lp.PartitionedNamespace.open(spark_ns.uri)
    assert spark_ns.version == before + 2 == result.version
    assert result.leaves_indexed == 2
    assert spark_ns.index_stats("grp_idx") == python_ns.index_stats("grp_idx")
    # attempt 0 built its leaf's index too: unreferenced, left to cleanup, which removes it
    directories = _index_directories(tmp_path / "spark")
    assert len(directories) == 3
    spark_ns.cleanup(dt.timedelta(0))
    kept = _index_directories(tmp_path / "spark")
    assert len(kept) == 2
    assert kept < directories
    assert spark_ns.refresh().index_stats("grp_idx").leaves_indexed == 2


def _index_directories(root: Path) -> set[str]:
    """Every non-empty index directory of every leaf under ``root``."""
    return {
        str(d.relative_to(root))
        for d in root.glob("**/_indices/*")
        if d.is_dir() and any(d.iterdir())
    }


def test_executors_build_with_the_model_trained_once_on_the_driver(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANCE_INCLUDE_VECTOR_CENTROIDS", "true")  # centroids in index stats
    ns = training_helpers.namespace(tmp_path / "ns")
    result = lance_partitioned.spark.create_index(spark, ns.uri, "v", "IVF_PQ", min_rows=400)
    assert (result.leaves_indexed, result.leaves_flat) == (3, 1)
    ns = lp.PartitionedNamespace.open(ns.uri)
    model = training_helpers.model_file(ns, tmp_path / "ns")
    assert len(list((tmp_path / "ns" / "_index_models").iterdir())) == 1  # trained once
    by_leaf = training_helpers.leaf_centroids(ns)
    assert sorted(by_leaf) == ["a", "b", "c"]
    for centroids in by_leaf.values():
        np.testing.assert_array_equal(centroids, model["ivf_centroids"])
