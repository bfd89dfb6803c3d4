"""Comparing DataFrames.

``pyspark.testing.assertDataFrameEqual`` imports ``pyspark.pandas`` whenever pandas is
installed, and ``pyspark.pandas`` 4.3 fails to import with pandas 3: this is its check
(schema up to nullability, then the rows in any order) without pandas.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Row
from pyspark.sql.types import StructType


def _plain(schema: StructType) -> str:
    return StructType.fromJson(
        _nullable(schema.jsonValue())  # nullability is not compared
    ).simpleString()


def _nullable(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (True if k in ("nullable", "containsNull", "valueContainsNull") else _nullable(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_nullable(v) for v in value]
    return value


def _key(row: Row) -> str:
    return repr(tuple(row))


def assert_same_rows(actual: DataFrame, expected: DataFrame) -> None:
    """Same column names and types (nullability aside) and the same multiset of rows."""
    assert _plain(actual.schema) == _plain(expected.schema), (actual.schema, expected.schema)
    got = sorted(actual.collect(), key=_key)
    want = sorted(expected.collect(), key=_key)
    assert len(got) == len(want), f"{len(got)} rows, expected {len(want)}"
    for a, b in zip(got, want, strict=True):
        assert a == b, f"row {a} != expected {b}"
