"""A Spark merge caches its source only when Spark could compute it again differently
(:mod:`lance_partitioned.spark.merge_source`): a source of a ``range`` or of local rows is
read as it is, and still merges exactly as the Python merge, through the paths that read it
again (a row a leaf key joined that matched nothing there; a leaf changed before the
commit)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import lance_partitioned as lp
from lance_partitioned import transaction
from lance_partitioned.spark import PartitionedTable
from lance_partitioned.spark.merge_source import MATERIALIZE_CONF, materialized

from ._conf import conf_set
from .test_merge_one_pass import WIDE, _namespaces
from .test_merge_one_pass import _rows as _day_rows
from .test_table import SCHEMA, _counts, _data_files, _pair, _referenced, _rows

pytestmark = pytest.mark.spark

ROWS = [(1, "DE", 100), (14, "US", 140), (2, None, 200), (20, None, 2000), (50, "FR", 500)]


def _local(spark: SparkSession, rows: list[tuple[object, ...]], ddl: str) -> DataFrame:
    """``rows`` as local rows in the plan (a ``VALUES`` list: a ``LocalRelation``)."""
    names = [part.split()[0] for part in ddl.split(",")]
    values = ", ".join(
        "(" + ", ".join("NULL" if v is None else repr(v) for v in row) + ")" for row in rows
    )
    frame = spark.sql(f"SELECT * FROM VALUES {values} AS s({', '.join(names)})")
    return frame.select(*[F.col(n).cast(t) for n, t in (p.split() for p in ddl.split(","))])


@contextmanager
def _conf(spark: SparkSession, key: str, value: str) -> Iterator[SparkSession]:
    """The Spark conf ``key`` set to ``value`` in the block."""
    yield from conf_set(spark, key, value)


@pytest.fixture
def auto(spark: SparkSession) -> Iterator[SparkSession]:
    """The session deciding by the rule."""
    yield from conf_set(spark, MATERIALIZE_CONF, "auto")


@pytest.mark.slow  # a few plans analysed, one tiny Parquet write: 5-15 s on 2 shared cores
def test_only_a_source_computed_again_the_same_is_cached_not(
    auto: SparkSession, tmp_path: Path
) -> None:
    spark = auto
    ranged = spark.range(10).select((F.col("id") * 2).alias("id")).where("id > 2")
    local = _local(spark, ROWS, "id long, country string, amount long")
    assert not materialized(spark, ranged)
    assert not materialized(spark, local)
    assert materialized(spark, ranged.withColumn("r", F.rand()))  # not deterministic
    assert materialized(spark, ranged.repartition(3))  # rows' order after a shuffle
    assert materialized(spark, spark.createDataFrame([(1,)], "id long"))  # an RDD
    ranged.write.parquet(str(tmp_path / "p"))
    files = spark.read.parquet(str(tmp_path / "p"))
    assert materialized(spark, files)  # files may change between two reads
    cached = files.cache()
    try:
        assert not materialized(spark, cached.where("id > 4"))  # the user's cache
    finally:
        cached.unpersist()


@pytest.mark.slow  # two plans analysed: a few seconds
def test_the_conf_forces_either_way_and_rejects_other_values(spark: SparkSession) -> None:
    ranged = spark.range(3)
    rdd = spark.createDataFrame([(1,)], "id long")
    for value, want in (("true", True), ("false", False)):
        with _conf(spark, MATERIALIZE_CONF, value):
            assert materialized(spark, ranged) is want
            assert materialized(spark, rdd) is want
    with (
        _conf(spark, MATERIALIZE_CONF, "sometimes"),
        pytest.raises(lp.errors.InvalidInputError, match="auto, true or false"),
    ):
        materialized(spark, ranged)


@pytest.mark.slow  # two merges (three Spark jobs each): 15-40 s on 2 shared cores
@pytest.mark.parametrize("local", ["true", "false"])
def test_an_uncached_source_merges_as_the_python_merge(
    auto: SparkSession, tmp_path: Path, local: str
) -> None:
    spark = auto
    spark_root, python_root = _pair(tmp_path)
    source = _local(spark, ROWS, "id long, country string, amount long")
    with _conf(spark, "spark.lance_partitioned.merge.localMatch", local):
        merge = PartitionedTable.for_path(spark, str(spark_root)).merge(source, on="id")
        got = merge.when_matched_update_all().when_not_matched_insert_all().execute()
    assert not merge.materialized
    assert merge.local_match is (local == "true")
    arrow = pa.Table.from_pylist([r.asDict() for r in source.collect()], schema=SCHEMA)
    want = (
        lp.PartitionedNamespace.open(str(python_root))
        .merge(arrow, on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert _counts(got) == _counts(want)
    assert (got.rows_updated, got.rows_inserted) == (4, 1)
    assert _rows(spark_root) == _rows(python_root)
    assert _data_files(spark_root) == _referenced(spark_root)


@pytest.mark.slow  # two merges (three Spark jobs): 10-25 s on 2 shared cores
def test_an_uncached_source_read_again_for_a_key_that_matched_nothing_inserts_it(
    auto: SparkSession, tmp_path: Path
) -> None:
    # the leaf keys are cast to the source's int32: WIDE meets the source's 25 in the local
    # match, the leaf's search (in int64) does not match it: the source is read again for
    # that row's id (an anti-join of the ids), which must name the same row
    spark = auto
    spark_root, python_root = _namespaces(tmp_path, [*range(20), WIDE])
    source = _local(spark, [(1, 1, -1), (25, 5, -2), (30, 3, -3)], "id int, day int, amount long")
    with _conf(spark, "spark.lance_partitioned.merge.localMatch", "true"):
        merge = PartitionedTable.for_path(spark, str(spark_root)).merge(source, on="id")
        got = merge.when_matched_update_all().when_not_matched_insert_all().execute()
    assert not merge.materialized
    want = (
        lp.PartitionedNamespace.open(str(python_root))
        .merge(source.toArrow(), on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert (got.rows_updated, got.rows_inserted) == (2, 2)
    assert _counts(got) == _counts(want)
    assert _day_rows(spark_root) == _day_rows(python_root)


@pytest.mark.slow  # a merge, a leaf merged again on the driver: 10-25 s on 2 shared cores
def test_an_uncached_source_read_again_for_a_leaf_changed_before_the_commit(
    auto: SparkSession, tmp_path: Path
) -> None:
    spark = auto
    spark_root, python_root = _pair(tmp_path)
    source = _local(spark, ROWS, "id long, country string, amount long")

    def append(ns: lp.PartitionedNamespace) -> None:
        ns.write(pa.table({"id": [100], "country": ["US"], "amount": [7]}, schema=SCHEMA))

    merge = (
        PartitionedTable.for_path(spark, str(spark_root))
        .merge(source, on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
    )
    with transaction.pause_at(
        "staged", lambda: append(lp.PartitionedNamespace.open(str(spark_root)))
    ):
        got = merge.execute()
    assert not merge.materialized
    assert merge.replanned  # the leaf that moved, merged again from the source read again
    python = lp.PartitionedNamespace.open(str(python_root))
    append(python)
    arrow = pa.Table.from_pylist([r.asDict() for r in source.collect()], schema=SCHEMA)
    want = (
        python.merge(arrow, on="id").when_matched_update_all().when_not_matched_insert_all()
    ).execute()
    assert _counts(got) == _counts(want)
    assert _rows(spark_root) == _rows(python_root)
