"""``PartitionedTable``: delete and update run their per-leaf work on executors and commit
once; the result equals the Python API's on a copy of the same namespace."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from lance_partitioned.spark import PartitionedTable

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.string()), ("amount", pa.int64())])


def _rows(root: Path) -> list[tuple[Any, ...]]:
    table = lp.PartitionedNamespace.open(str(root)).to_table(columns=["id", "country", "amount"])
    return sorted(tuple(r.values()) for r in table.to_pylist())


def _namespace(root: Path) -> lp.PartitionedNamespace:
    """Two spec versions (country; then country and bucket(2, id)), NULL countries in both."""
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="country")
    countries = ["FR", "US", None]
    ns.write(
        pa.table(
            {
                "id": list(range(12)),
                "country": [countries[i % 3] for i in range(12)],
                "amount": list(range(12)),
            },
            schema=SCHEMA,
        )
    )
    ns.update_partition_spec("country, bucket(2, id)")
    ns.write(
        pa.table(
            {
                "id": list(range(12, 24)),
                "country": [countries[i % 3] for i in range(12)],
                "amount": list(range(12, 24)),
            },
            schema=SCHEMA,
        )
    )
    return ns


def _pair(tmp_path: Path) -> tuple[Path, Path]:
    _namespace(tmp_path / "spark")
    shutil.copytree(tmp_path / "spark", tmp_path / "python")
    return tmp_path / "spark", tmp_path / "python"


def _counts(result: Any) -> tuple[int, int, int]:
    """A merge result's rows updated, inserted and deleted (to compare two merges')."""
    return (result.rows_updated, result.rows_inserted, result.rows_deleted)


def _data_files(root: Path) -> set[str]:
    found = {str(p.relative_to(root)) for p in root.rglob("data/*.lance")}
    return {name for name in found if not name.startswith("__manifest/")}


def _referenced(root: Path) -> set[str]:
    import lance

    ns = lp.PartitionedNamespace.open(str(root))
    found = set()
    for task in ns.plan_scan(None):
        ds = lance.dataset(task.uri)
        leaf = Path(task.uri).relative_to(root)
        for version in ds.versions():
            at = ds.checkout_version(version["version"])
            found |= {
                str(leaf / "data" / f.path) for fr in at.get_fragments() for f in fr.metadata.files
            }
    return found


def test_for_path_reads_history_and_restores(spark: SparkSession, tmp_path: Path) -> None:
    ns = _namespace(tmp_path / "ns")
    table = PartitionedTable.forPath(spark, str(tmp_path / "ns"))
    assert table.to_df().count() == 24
    history = table.history()
    assert history.count() == len(ns.versions())
    first_write = min(r["version"] for r in ns.versions().to_pylist() if r["rows_added"])
    table.restore(first_write)
    assert table.to_df().count() == 12


def test_delete_equals_the_python_delete_in_one_commit(spark: SparkSession, tmp_path: Path) -> None:
    spark_root, python_root = _pair(tmp_path)
    where = "amount % 4 = 1 OR country IS NULL AND id > 20 OR country = 'US' AND id < 12"
    before = lp.PartitionedNamespace.open(str(spark_root)).version
    result = PartitionedTable.for_path(spark, str(spark_root)).delete(where)
    expected = lp.PartitionedNamespace.open(str(python_root)).delete(where)
    assert result.version == before + 1
    assert result.rows_deleted == expected.rows_deleted
    assert _rows(spark_root) == _rows(python_root)
    last = lp.PartitionedNamespace.open(str(spark_root)).versions().to_pylist()[-1]
    assert last["operation"] == "delete"


def test_update_moving_rows_equals_the_python_update(spark: SparkSession, tmp_path: Path) -> None:
    spark_root, python_root = _pair(tmp_path)
    where = "id % 3 <> 1"  # FR and NULL rows of both spec versions
    assignments = {
        "country": "CASE WHEN country IS NULL THEN 'DE' ELSE NULL END",
        "amount": "amount * 10",
    }
    before = lp.PartitionedNamespace.open(str(spark_root)).version
    result = PartitionedTable.for_path(spark, str(spark_root)).update(where, assignments)
    expected = lp.PartitionedNamespace.open(str(python_root)).update(where, assignments)
    assert result.version == before + 1
    assert (result.rows_updated, result.rows_moved) == (expected.rows_updated, expected.rows_moved)
    assert _rows(spark_root) == _rows(python_root)


def test_a_task_failing_once_commits_once_and_keeps_no_staged_file(
    spark: SparkSession, tmp_path: Path
) -> None:
    spark_root, python_root = _pair(tmp_path)

    def fail_first_attempt(index: int, attempt: int) -> None:
        if attempt == 0 and index == 0:
            raise RuntimeError("injected failure of attempt 0")

    table = PartitionedTable.for_path(spark, str(spark_root))
    table._task_hook = fail_first_attempt
    before = lp.PartitionedNamespace.open(str(spark_root)).version
    result = table.update("true", {"amount": "amount + 1"})
    lp.PartitionedNamespace.open(str(python_root)).update("true", {"amount": "amount + 1"})
    assert result.version == before + 1
    assert lp.PartitionedNamespace.open(str(spark_root)).version == before + 1
    assert _rows(spark_root) == _rows(python_root)
    assert _data_files(spark_root) == _referenced(spark_root)


def _source(spark: SparkSession) -> Any:
    """Matches in both spec versions (one row moves partition), a NULL-partition match, new
    rows (one with a NULL country)."""
    rows = [
        (1, "DE", 100),
        (14, "US", 140),
        (2, None, 200),
        (20, None, 2000),
        (50, "FR", 500),
        (51, None, 510),
    ]
    return spark.createDataFrame(rows, "id long, country string, amount long")


@pytest.mark.slow  # three Spark jobs with two shuffles: 10-25 s on 2 shared cores
def test_merge_equals_the_python_merge(spark: SparkSession, tmp_path: Path) -> None:
    spark_root, python_root = _pair(tmp_path)
    source = _source(spark)
    before = lp.PartitionedNamespace.open(str(spark_root)).version
    result = (
        PartitionedTable.forPath(spark, str(spark_root))
        .merge(source, condition="t.id = s.id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute()
    )
    arrow = pa.Table.from_pylist([r.asDict() for r in source.collect()], schema=SCHEMA)
    expected = (
        lp.PartitionedNamespace.open(str(python_root))
        .merge(arrow, on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert result.version == before + 1
    assert (result.rows_updated, result.rows_inserted) == (
        expected.rows_updated,
        expected.rows_inserted,
    )
    assert _rows(spark_root) == _rows(python_root)


def test_merge_by_source_delete_equals_the_python_merge(
    spark: SparkSession, tmp_path: Path
) -> None:
    spark_root, python_root = _pair(tmp_path)
    source = _source(spark)
    result = (
        PartitionedTable.for_path(spark, str(spark_root))
        .merge(source, on=["id", "country"])
        .when_matched_update_all()
        .when_not_matched_by_source_delete("amount < 10")
        .execute()
    )
    arrow = pa.Table.from_pylist([r.asDict() for r in source.collect()], schema=SCHEMA)
    expected = (
        lp.PartitionedNamespace.open(str(python_root))
        .merge(arrow, on=["id", "country"])
        .when_matched_update_all()
        .when_not_matched_by_source_delete("amount < 10")
        .execute()
    )
    assert (result.rows_updated, result.rows_deleted) == (
        expected.rows_updated,
        expected.rows_deleted,
    )
    assert _rows(spark_root) == _rows(python_root)


def test_merge_with_set_expressions_equals_the_python_merge(
    spark: SparkSession, tmp_path: Path
) -> None:
    """``whenMatchedUpdate(set=...)``: an expression of both sides and a partition source
    assigned (rows move), across two spec versions and NULL partitions, as in Python."""
    spark_root, python_root = _pair(tmp_path)
    source = _source(spark)
    assign = {"amount": "target.amount * 10 + source.amount", "country": "source.country"}
    result = (
        PartitionedTable.forPath(spark, str(spark_root))
        .merge(source, on="id")
        .whenMatchedUpdate(set=assign, condition="source.id <> 2")
        .whenNotMatchedInsertAll()
        .execute()
    )
    arrow = pa.Table.from_pylist([r.asDict() for r in source.collect()], schema=SCHEMA)
    expected = (
        lp.PartitionedNamespace.open(str(python_root))
        .merge(arrow, on="id")
        .when_matched_update(set=assign, condition="source.id <> 2")
        .when_not_matched_insert_all()
        .execute()
    )
    # 1, 14 and 20 updated (1: US -> DE, 14: NULL -> US, in the second spec), 2 matched
    # but not updated (the condition), 50 and 51 inserted
    assert _counts(result) == _counts(expected) == (3, 2, 0)
    rows = _rows(spark_root)
    assert rows == _rows(python_root)
    assert {(1, "DE", 110), (14, "US", 280), (20, None, 2200), (2, None, 2)} <= set(rows)
    assert len(rows) == 26
    with pytest.raises(lp.errors.InvalidInputError, match="cannot evaluate"):
        PartitionedTable.forPath(spark, str(spark_root)).merge(source, on="id").whenMatchedUpdate(
            set={"amount": "target.nope"}
        ).execute()


def test_merge_with_duplicate_source_keys_is_a_typed_error(
    spark: SparkSession, tmp_path: Path
) -> None:
    _namespace(tmp_path / "ns")
    before = lp.PartitionedNamespace.open(str(tmp_path / "ns")).version
    source = spark.createDataFrame(
        [(3, "FR", 1), (3, "FR", 2)], "id long, country string, amount long"
    )
    table = PartitionedTable.for_path(spark, str(tmp_path / "ns"))
    with pytest.raises(lp.errors.DuplicateKeyError, match="several source rows"):
        table.merge(source, on="id").when_matched_update_all().execute()
    assert lp.PartitionedNamespace.open(str(tmp_path / "ns")).version == before


@pytest.mark.slow  # three Spark jobs with two shuffles: 10-25 s on 2 shared cores
def test_a_merge_task_failing_once_commits_once_and_keeps_no_staged_file(
    spark: SparkSession, tmp_path: Path
) -> None:
    spark_root, python_root = _pair(tmp_path)

    def fail_first_attempt(index: int, attempt: int) -> None:
        if attempt == 0 and index == 0:
            raise RuntimeError("injected failure of attempt 0")

    table = PartitionedTable.for_path(spark, str(spark_root))
    table._task_hook = fail_first_attempt
    before = lp.PartitionedNamespace.open(str(spark_root)).version
    source = _source(spark)
    result = table.merge(source, on="id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute()
    arrow = pa.Table.from_pylist([r.asDict() for r in source.collect()], schema=SCHEMA)
    python = lp.PartitionedNamespace.open(str(python_root))
    python.merge(arrow, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert result.version == before + 1
    assert lp.PartitionedNamespace.open(str(spark_root)).version == before + 1
    assert _rows(spark_root) == _rows(python_root)
    assert _data_files(spark_root) == _referenced(spark_root)


def test_optimize_compacts_leaves_on_executors_in_one_commit(
    spark: SparkSession, tmp_path: Path
) -> None:
    spark_root, python_root = _pair(tmp_path)
    for root in (spark_root, python_root):  # a second fragment in every v2 leaf
        ns = lp.PartitionedNamespace.open(str(root))
        ns.write(
            pa.table(
                {
                    "id": list(range(30, 42)),
                    "country": ["FR", "US", None] * 4,
                    "amount": list(range(12)),
                },
                schema=SCHEMA,
            )
        )
    before = lp.PartitionedNamespace.open(str(spark_root)).version
    result = PartitionedTable.for_path(spark, str(spark_root)).optimize(
        "country = 'FR' OR country IS NULL", target_rows_per_fragment=1000
    )
    expected = lp.PartitionedNamespace.open(str(python_root)).optimize(
        "country = 'FR' OR country IS NULL", target_rows_per_fragment=1000
    )
    assert result.leaves_compacted == expected.leaves_compacted > 0
    after = lp.PartitionedNamespace.open(str(spark_root))
    operations = [v["operation"] for v in after.versions().to_pylist() if v["version"] > before]
    assert operations.count("optimize") == 1
    fragments = {t.object_id: len(lance_fragments(t.uri)) for t in after.plan_scan(None)}
    assert fragments == {
        t.object_id: len(lance_fragments(t.uri))
        for t in lp.PartitionedNamespace.open(str(python_root)).plan_scan(None)
    }
    assert _rows(spark_root) == _rows(python_root)


def lance_fragments(uri: str) -> list[Any]:
    import lance

    return list(lance.dataset(uri).get_fragments())
