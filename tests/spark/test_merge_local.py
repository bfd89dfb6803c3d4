"""A merge whose source is a large part of the target (``on="id"`` into ``country``
partitions, the keys naming no partition) finds the leaves holding its keys in the source's
own tasks, not by a Spark join of the leaves' keys (:mod:`lance_partitioned.spark.merge_local`),
and its result equals the Python merge's on a copy of the same namespace (two spec
versions, NULL partition values, a row changing partition)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

import lance_partitioned as lp
from lance_partitioned.spark import PartitionedTable, merge_local

from ._conf import conf_set
from .test_merge_one_pass import WIDE, _executions, _namespaces, _plans
from .test_merge_one_pass import _merge as _merge_both
from .test_table import (
    SCHEMA,
    _counts,
    _data_files,
    _namespace,
    _pair,
    _referenced,
    _rows,
    _source,
)

pytestmark = pytest.mark.spark

CONF = "spark.lance_partitioned.merge.localMatch"


def _with(spark: SparkSession, value: str) -> Iterator[SparkSession]:
    """``spark`` with the conf set to ``value`` (restored after the test)."""
    yield from conf_set(spark, CONF, value)


@pytest.fixture
def forced(spark: SparkSession) -> Iterator[SparkSession]:
    """The session with the local match forced on."""
    yield from _with(spark, "true")


@pytest.fixture
def by_rule(spark: SparkSession) -> Iterator[SparkSession]:
    """The session choosing by the rule (whatever conf it was started with)."""
    yield from _with(spark, "auto")


def _merged(spark_root: Path, python_root: Path, source: DataFrame, delete: bool) -> bool:
    """Merge ``source`` both ways (``delete``: with when_not_matched_by_source_delete), check
    the results are equal; whether the Spark merge matched locally."""
    arrow = pa.Table.from_pylist([r.asDict() for r in source.collect()], schema=SCHEMA)
    spark_merge = PartitionedTable.for_path(source.sparkSession, str(spark_root)).merge(
        source, on="id"
    )
    python_merge = lp.PartitionedNamespace.open(str(python_root)).merge(arrow, on="id")
    results = []
    for builder in (spark_merge, python_merge):
        builder = builder.when_matched_update_all().when_not_matched_insert_all()
        if delete:
            builder = builder.when_not_matched_by_source_delete("amount < 10")
        results.append(builder.execute())
    got, want = results
    assert _counts(got) == _counts(want)
    assert got.rows_updated == 4
    assert _rows(spark_root) == _rows(python_root)
    assert _data_files(spark_root) == _referenced(spark_root)  # no staged file left
    return bool(spark_merge.local_match)


@pytest.mark.slow  # two merges (three Spark jobs each): 15-40 s on 2 shared cores
@pytest.mark.parametrize("delete", [False, True])
def test_a_source_that_is_a_large_part_of_the_target_is_matched_in_its_own_tasks(
    by_rule: SparkSession, tmp_path: Path, delete: bool
) -> None:
    # 6 source rows, 12 rows in the leaves routed by a join (the first spec's): by the rule
    spark_root, python_root = _pair(tmp_path)
    since = _executions(by_rule)
    assert _merged(spark_root, python_root, _source(by_rule), delete)
    plans = _plans(by_rule, since)
    # no routing join (Inner or LeftOuter); the insert's LeftAnti join of the row ids stays
    # (the second spec version is routed by partition values)
    joins = [line for p in plans for line in p.splitlines() if line.startswith("Join type:")]
    assert "Join type: LeftAnti" in joins, joins
    assert not {"Join type: Inner", "Join type: LeftOuter"} & set(joins), joins


@pytest.mark.slow  # a merge (three Spark jobs): 10-25 s on 2 shared cores
def test_a_small_source_is_still_routed_by_the_join(by_rule: SparkSession, tmp_path: Path) -> None:
    spark = by_rule
    spark_root, python_root = tmp_path / "spark", tmp_path / "python"
    ids = list(range(100))
    ns = lp.PartitionedNamespace.create(str(spark_root), schema=SCHEMA, partition_by="country")
    countries = ["FR", "US", None]
    rows = {"id": ids, "country": [countries[i % 3] for i in ids], "amount": ids}
    ns.write(pa.table(rows, schema=SCHEMA))
    shutil.copytree(spark_root, python_root)
    # 2 source rows, 100 target rows: under a tenth, the join with the Bloom filter
    source = spark.createDataFrame(
        [(1, "DE", 100), (14, "US", 140)], "id long, country string, amount long"
    )
    spark_merge = PartitionedTable.for_path(spark, str(spark_root)).merge(source, on="id")
    spark_merge.when_matched_update_all().execute()
    assert not spark_merge.local_match
    assert spark_merge.key_pairs >= 2
    arrow = pa.Table.from_pylist([r.asDict() for r in source.collect()], schema=SCHEMA)
    lp.PartitionedNamespace.open(str(python_root)).merge(
        arrow, on="id"
    ).when_matched_update_all().execute()
    assert _null_rows(spark_root) == _null_rows(python_root)


@pytest.mark.slow  # two merges (three Spark jobs each): 15-40 s on 2 shared cores
def test_a_large_source_into_more_leaf_rows_than_the_cap_keeps_the_join(
    by_rule: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the source of the first test (6 rows against the 12 of the join-routed leaves: local
    # by the share), but those leaves hold more rows than the cap: each task would read them
    # all however many executors there are, so the join is kept
    monkeypatch.setattr(merge_local, "MAX_LOCAL_KEYS", 11)
    spark_root, python_root = _pair(tmp_path)
    assert not _merged(spark_root, python_root, _source(by_rule), False)


@pytest.mark.slow  # a merge (two Spark jobs) that fails: 5-20 s on 2 shared cores
def test_duplicate_source_keys_in_different_source_partitions_are_an_error(
    forced: SparkSession, tmp_path: Path
) -> None:
    spark_root, _ = _pair(tmp_path)
    before = lp.PartitionedNamespace.open(str(spark_root)).version
    rows = [(3, "FR", 1), (50, "FR", 5), (3, "US", 2)]  # id 3 twice, one per partition
    source = forced.createDataFrame(forced.sparkContext.parallelize(rows, 2), SCHEMA_DDL)
    merge = PartitionedTable.for_path(forced, str(spark_root)).merge(source, on="id")
    with pytest.raises(lp.errors.DuplicateKeyError, match="several source rows"):
        merge.when_matched_update_all().when_not_matched_insert_all().execute()
    assert merge.local_match
    assert lp.PartitionedNamespace.open(str(spark_root)).version == before
    assert _data_files(spark_root) == _referenced(spark_root)


@pytest.mark.slow  # a merge (three Spark jobs): 10-25 s on 2 shared cores
def test_a_forced_local_match_with_null_safe_keys_matches_the_null_keys(
    forced: SparkSession, tmp_path: Path
) -> None:
    spark_root, python_root = tmp_path / "spark", tmp_path / "python"
    _namespace(spark_root).write(
        pa.table({"id": [None], "country": ["US"], "amount": [5]}, schema=SCHEMA)
    )
    shutil.copytree(spark_root, python_root)
    # the NULL key matches the NULL id (which moves to FR), 1 matches, 60 is new
    rows = [(1, "DE", 100), (None, "FR", 7), (60, None, 600)]
    source = forced.createDataFrame(forced.sparkContext.parallelize(rows, 1), SCHEMA_DDL)
    spark_merge = PartitionedTable.for_path(forced, str(spark_root)).merge(
        source, on="id", null_safe=True
    )
    got = spark_merge.when_matched_update_all().when_not_matched_insert_all().execute()
    assert spark_merge.local_match
    arrow = pa.Table.from_pylist([r.asDict() for r in source.collect()], schema=SCHEMA)
    want = (
        lp.PartitionedNamespace.open(str(python_root))
        .merge(arrow, on="id", null_safe=True)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert (got.rows_updated, got.rows_inserted) == (2, 1)
    assert (got.rows_updated, got.rows_inserted) == (want.rows_updated, want.rows_inserted)
    assert _null_rows(spark_root) == _null_rows(python_root)


@pytest.mark.slow  # a merge (three Spark jobs): 10-25 s on 2 shared cores
def test_a_key_matched_locally_only_once_wrapped_to_the_source_type_is_still_inserted(
    forced: SparkSession, tmp_path: Path
) -> None:
    # the leaf keys are cast to the source's int32: WIDE meets the source's 25 in the task,
    # the leaf's search (in int64) does not match it: the merge still inserts it
    spark_root, python_root = _namespaces(tmp_path, [*range(20), WIDE])
    rows = [(1, 1, -1), (25, 5, -2), (30, 3, -3)]
    source = forced.createDataFrame(rows, "id int, day int, amount long")
    since = _executions(forced)
    assert _merge_both(forced, spark_root, python_root, source) == (2, 2)
    joins = [line for p in _plans(forced, since) for line in p.splitlines()]
    assert not {"Join type: Inner", "Join type: LeftOuter"} & set(joins)  # no routing join


def _null_rows(root: Path) -> list[tuple[Any, ...]]:
    """The rows, sorted with NULLs among them."""
    table = lp.PartitionedNamespace.open(str(root)).to_table(columns=SCHEMA.names)
    return sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)


SCHEMA_DDL = "id long, country string, amount long"
