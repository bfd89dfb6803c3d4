"""A Spark merge whose searched leaf another writer changes between the executors' work and
the driver's commit merges that leaf again, alone, and commits: the result equals the
Python merge's run after that change."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from lance_partitioned import transaction
from lance_partitioned.spark import PartitionedTable

from .test_table import SCHEMA, _data_files, _pair, _referenced, _rows, _source

pytestmark = pytest.mark.spark


def _leaves(ns: lp.PartitionedNamespace, version: int) -> dict[str, int | None]:
    """Leaf object id to its ``read_version`` at ``__manifest`` ``version``."""
    snapshot = ns._manifest.snapshot(version)
    ids = snapshot.tables.column("object_id").to_pylist()
    return {o: snapshot.read_version(o) for o in ids}


def _delete(ns: lp.PartitionedNamespace) -> None:
    ns.delete("id = 4")  # a row of the (US) leaf of the first spec version


def _append(ns: lp.PartitionedNamespace) -> None:
    ns.write(pa.table({"id": [100], "country": ["US"], "amount": [7]}, schema=SCHEMA))


@pytest.mark.parametrize("change", [_delete, _append], ids=["delete", "append"])
def test_a_leaf_changed_before_the_commit_is_merged_again_alone(
    spark: SparkSession, tmp_path: Path, change: Callable[[lp.PartitionedNamespace], None]
) -> None:
    spark_root, python_root = _pair(tmp_path)
    source = _source(spark)
    target = lp.PartitionedNamespace.open(str(spark_root))
    before = target.version
    leaves_before = _leaves(target, before)
    merge = (
        PartitionedTable.for_path(spark, str(spark_root))
        .merge(source, on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
    )
    with transaction.pause_at(
        "staged", lambda: change(lp.PartitionedNamespace.open(str(spark_root)))
    ):
        result = merge.execute()
    python = lp.PartitionedNamespace.open(str(python_root))
    change(python)
    arrow = pa.Table.from_pylist([r.asDict() for r in source.collect()], schema=SCHEMA)
    expected = python.merge(arrow, on="id").when_matched_update_all().when_not_matched_insert_all()
    want = expected.execute()
    assert result.version == before + 2  # the concurrent change, then the merge
    assert (result.rows_updated, result.rows_inserted) == (want.rows_updated, want.rows_inserted)
    assert _rows(spark_root) == _rows(python_root)
    changed = _leaves(target, before + 1)
    moved = [o for o, v in leaves_before.items() if changed.get(o) != v]
    assert len(moved) == 1
    assert merge.replanned == moved  # only the leaf that moved was merged again


def test_a_moved_leaf_matching_other_source_rows_fails_an_inserting_merge_cleanly(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The concurrent delete removes a matched row: its source row should now be inserted,
    but the inserts were staged before: a typed error, nothing changed, nothing left."""
    spark_root, _ = _pair(tmp_path)
    before = lp.PartitionedNamespace.open(str(spark_root)).version
    merge = (
        PartitionedTable.for_path(spark, str(spark_root))
        .merge(_source(spark), on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
    )

    def delete_a_match() -> None:
        lp.PartitionedNamespace.open(str(spark_root)).delete("id = 1")

    with (
        transaction.pause_at("staged", delete_a_match),
        pytest.raises(lp.errors.ConcurrentModificationError, match="other source rows"),
    ):
        merge.execute()
    assert lp.PartitionedNamespace.open(str(spark_root)).version == before + 1
    assert _data_files(spark_root) == _referenced(spark_root)
