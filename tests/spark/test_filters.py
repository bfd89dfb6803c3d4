"""Spark filters to predicates (no JVM): what converts, what stays with Spark, and that a
converted filter selects the rows Spark's own filter selects, NULLs included."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import datasource as sds

from lance_partitioned.expressions import to_arrow
from lance_partitioned.expressions.tree import (
    And,
    EqualTo,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    Not,
    NotNull,
    StartsWith,
)
from lance_partitioned.scan import bound_filter
from lance_partitioned.spark.filters import pushable_columns, to_predicate

COLUMNS = {"s", "n", "d"}


@pytest.mark.parametrize(
    ("spark_filter", "expected"),
    [
        (sds.EqualTo(("s",), "x"), EqualTo("s", "x")),
        (sds.EqualNullSafe(("s",), None), IsNull("s")),
        (sds.EqualNullSafe(("s",), "x"), And(NotNull("s"), EqualTo("s", "x"))),
        (sds.LessThan(("n",), 3), LessThan("n", 3)),
        (
            sds.GreaterThanOrEqual(("d",), dt.date(2025, 1, 5)),
            GreaterThanOrEqual("d", dt.date(2025, 1, 5)),
        ),
        (sds.In(("n",), [1, 2]), In("n", (1, 2))),
        (sds.IsNull(("s",)), IsNull("s")),
        (sds.IsNotNull(("s",)), NotNull("s")),
        (sds.StringStartsWith(("s",), "ab"), StartsWith("s", "ab")),
        (sds.Not(sds.In(("s",), ["a"])), Not(In("s", ("a",)))),
        (sds.Not(sds.Not(sds.IsNull(("s",)))), Not(Not(IsNull("s")))),
    ],
)
def test_converted(spark_filter: sds.Filter, expected: Any) -> None:
    assert to_predicate(spark_filter, COLUMNS) == expected


@pytest.mark.parametrize(
    "spark_filter",
    [
        sds.StringEndsWith(("s",), "b"),
        sds.StringContains(("s",), "b"),
        sds.In(("n",), [1, None]),  # its negation is never true: Spark keeps it
        sds.EqualTo(("a", "b"), 1),  # a nested field
        sds.EqualTo(("other",), 1),  # not a pushable column
        sds.EqualTo(("n",), [1, 2]),  # an array literal
        sds.Not(sds.StringContains(("s",), "b")),
    ],
)
def test_left_to_spark(spark_filter: sds.Filter) -> None:
    assert to_predicate(spark_filter, COLUMNS) is None


def test_pushable_columns() -> None:
    schema = pa.schema(
        [
            ("i", pa.int32()),
            ("s", pa.string()),
            ("b", pa.binary()),
            ("d", pa.date32()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("dec", pa.decimal128(10, 2)),
            ("f", pa.float32()),  # Spark's NaN and -0.0 rules
            ("u", pa.uint64()),  # read as decimal(20, 0)
            ("ns", pa.timestamp("ns")),  # truncated to micros
            ("l", pa.list_(pa.int32())),
        ]
    )
    assert pushable_columns(schema) == {"i", "s", "b", "d", "ts", "dec"}


SCHEMA = pa.schema(
    [("s", pa.string()), ("n", pa.int64()), ("p", pa.decimal128(5, 2)), ("t", pa.timestamp("us"))]
)
TABLE = pa.table(
    {
        "s": ["x", "y", None, "xa"],
        "n": [1, 2, None, 3],
        "p": [decimal.Decimal("1.50"), None, decimal.Decimal("2.00"), decimal.Decimal("0.01")],
        "t": [dt.datetime(2025, 1, 1), None, dt.datetime(2025, 1, 2, 12), dt.datetime(2024, 1, 1)],
    },
    schema=SCHEMA,
)


def selected(spark_filter: sds.Filter) -> list[int]:
    predicate = to_predicate(spark_filter, {"s", "n", "p", "t"})
    assert predicate is not None
    bound = bound_filter(predicate, SCHEMA)
    numbered = TABLE.append_column("row", pa.array(range(TABLE.num_rows)))
    return numbered.filter(to_arrow(bound, SCHEMA)).column("row").to_pylist()


@pytest.mark.parametrize(
    ("spark_filter", "rows"),
    [  # rows Spark selects for the same filter (a NULL comparison is not true)
        (sds.EqualNullSafe(("s",), "x"), [0]),
        (sds.Not(sds.EqualNullSafe(("s",), "x")), [1, 2, 3]),
        (sds.Not(sds.EqualNullSafe(("s",), None)), [0, 1, 3]),
        (sds.Not(sds.EqualTo(("s",), "x")), [1, 3]),
        (sds.Not(sds.In(("n",), [1, 3])), [1]),
        (sds.Not(sds.StringStartsWith(("s",), "x")), [1]),
        (sds.In(("p",), [decimal.Decimal("1.5"), decimal.Decimal("0.01")]), [0, 3]),
        (sds.GreaterThanOrEqual(("t",), dt.datetime(2025, 1, 1)), [0, 2]),
        (sds.LessThan(("n",), 2.5), [0, 1]),
    ],
)
def test_converted_filters_select_what_spark_selects(
    spark_filter: sds.Filter, rows: list[int]
) -> None:
    assert sorted(selected(spark_filter)) == rows
