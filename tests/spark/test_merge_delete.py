"""``PartitionedTable.merge(...).when_matched_delete``: the result equals the Python
merge's on a copy of the same namespace (two spec versions, NULL partition values)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from lance_partitioned.spark import PartitionedTable

from .test_table import SCHEMA, _counts, _pair, _rows, _source

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    ("on", "delete_first", "condition"),
    [
        # ids 2 and 20 (NULL country, one per spec version) deleted, 1 and 14 updated
        ("id", True, "source.amount > 150"),
        # the NULL-country sources update (the update comes first), 1 and 14 are deleted
        ("id", False, None),
    ],
)
def test_matched_delete_equals_the_python_merge(
    spark: SparkSession, tmp_path: Path, on: str, delete_first: bool, condition: str
) -> None:
    spark_root, python_root = _pair(tmp_path)
    source = _source(spark)
    arrow = pa.Table.from_pylist([r.asDict() for r in source.collect()], schema=SCHEMA)
    update = None if delete_first else "source.country IS NULL"
    builders = [
        PartitionedTable.for_path(spark, str(spark_root)).merge(source, on=on),
        lp.PartitionedNamespace.open(str(python_root)).merge(arrow, on=on),
    ]
    results = []
    for i, builder in enumerate(builders):
        delete = builder.whenMatchedDelete if i == 0 else builder.when_matched_delete
        if delete_first:
            builder = delete(condition)
        builder = builder.when_matched_update_all(update)
        if not delete_first:
            builder = builder.when_matched_delete(condition)
        results.append(builder.when_not_matched_insert_all().execute())
    got, want = results
    assert _counts(got) == _counts(want)
    assert got.rows_deleted == 2
    assert _rows(spark_root) == _rows(python_root)
