"""Spark's replace-where (``.mode("overwrite").option("replace_where", ...)``) and
``overwrite_partitions`` across partition spec versions: one commit by the driver."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.spark.options import SourceOptions
from tests.spark.test_writer import SPARK_SCHEMA, batch, plan


def _rows(ns: lp.PartitionedNamespace) -> list[tuple[int, str]]:
    table = ns.refresh().to_table(columns=["id", "country"])
    ids, countries = table.column("id").to_pylist(), table.column("country").to_pylist()
    return sorted(zip(ids, countries, strict=True))


def _namespace(root: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(
        str(root), schema=pa.schema(SPARK_SCHEMA_ARROW), partition_by="country"
    )
    ns.write(pa.Table.from_batches([batch(range(10))]))
    return ns


SPARK_SCHEMA_ARROW = [("id", pa.int64()), ("event_date", pa.date32()), ("country", pa.string())]


def test_the_option_is_parsed_and_an_empty_one_refused() -> None:
    assert SourceOptions.parse({"path": "/x", "replace_where": "id > 1"}).replace_where == "id > 1"
    with pytest.raises(errors.InvalidInputError, match="replace_where is empty"):
        SourceOptions.parse({"path": "/x", "replace_where": " "})


def test_replace_where_replaces_the_matching_rows_in_one_commit(tmp_path: Path) -> None:
    ns = _namespace(tmp_path / "ns")
    writer = plan(str(tmp_path / "ns"), mode="overwrite", replace_where="country = 'US'")
    messages = [writer.write(iter([batch(range(100, 104), countries=("US",))]))]
    version = ns.refresh().version
    writer.commit(messages)
    assert ns.refresh().version == version + 1
    fr = [(i, "FR") for i in range(1, 10, 2)]
    assert _rows(ns) == sorted([*fr, *((i, "US") for i in range(100, 104))])


def test_rows_outside_the_predicate_fail_the_task_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    ns = _namespace(tmp_path / "ns")
    before = _rows(ns)
    writer = plan(str(tmp_path / "ns"), mode="overwrite", replace_where="country = 'US'")
    with pytest.raises(errors.PredicateViolationError, match="do not satisfy"):
        writer.write(iter([batch(range(100, 104))]))
    assert _rows(ns) == before


@pytest.mark.parametrize(
    ("mode", "options", "match"),
    [
        ("append", {}, "needs .mode"),
        ("overwrite", {"overwrite": "partitions"}, "needs .mode"),
        ("overwrite", {}, "no_such"),
    ],
)
def test_bad_combinations_fail_when_the_job_is_planned(
    tmp_path: Path, mode: str, options: dict[str, str], match: str
) -> None:
    _namespace(tmp_path / "ns")
    where = "no_such = 1" if match == "no_such" else "country = 'US'"
    with pytest.raises(errors.InvalidInputError, match=match):
        plan(str(tmp_path / "ns"), mode=mode, replace_where=where, **options)


def test_dynamic_overwrite_replaces_rows_of_older_spec_versions(tmp_path: Path) -> None:
    """The January case through Spark: a dynamic overwrite under the new spec replaces the
    rows of the written partitions that leaves of the old spec hold."""
    root = str(tmp_path / "ns")
    ns = lp.PartitionedNamespace.create(
        root, schema=pa.schema(SPARK_SCHEMA_ARROW), partition_by="year(event_date), country"
    )
    ns.write(pa.Table.from_batches([batch(range(12))]))  # 2025-01-01..03, US and FR
    ns.update_partition_spec("year(event_date), month(event_date), country")
    writer = plan(root, mode="overwrite", overwrite="partitions")
    writer.commit([writer.write(iter([batch(range(100, 106), countries=("US",))]))])
    assert _rows(ns) == sorted(
        [*((i, "FR") for i in range(1, 12, 2)), *((i, "US") for i in range(100, 106))]
    )


def test_a_spark_job_with_replace_where(spark: SparkSession, tmp_path: Path) -> None:
    ns = _namespace(tmp_path / "ns")
    frame = spark.createDataFrame(
        [(200 + i, dt.date(2025, 2, 1), "US") for i in range(5)], SPARK_SCHEMA
    )
    (
        frame.write.format("lance_partitioned")
        .mode("overwrite")
        .option("replace_where", "country = 'US' OR id = 1")
        .save(str(tmp_path / "ns"))
    )
    fr = [(i, "FR") for i in range(3, 10, 2)]
    assert _rows(ns) == sorted([*fr, *((200 + i, "US") for i in range(5))])


def test_a_merge_from_a_spark_dataframe_runs_on_the_driver(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The pattern of docs/spark.md: collect the source as Arrow, merge on the namespace."""
    ns = _namespace(tmp_path / "ns")
    frame = spark.createDataFrame(
        [(1, dt.date(2025, 3, 1), "DE"), (50, dt.date(2025, 3, 1), "DE")], SPARK_SCHEMA
    )
    result = (
        lp.PartitionedNamespace.open(str(tmp_path / "ns"))
        .merge(frame.toArrow(), on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.rows_updated, result.rows_inserted) == (1, 1)
    assert (1, "DE") in _rows(ns)
    assert (50, "DE") in _rows(ns)
    assert (1, "FR") not in _rows(ns)
