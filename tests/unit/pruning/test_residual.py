"""Residuals: what a partition's values decide, and what they leave to filter."""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
import pytest

from lance_partitioned.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    IsNull,
    Predicate,
    Unknown,
    and_,
    bind,
    parse_sql,
)
from lance_partitioned.pruning import residual
from lance_partitioned.spec.hashing import bucket_scalar
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema

UTC = datetime.timezone.utc
ARROW = pa.schema(
    [
        ("i", pa.int64()),
        ("s", pa.utf8()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("f", pa.float64()),
    ]
)
SCHEMA = NamespaceSchema.from_arrow(ARROW)


def spec(*fields: tuple[str, str, str, pa.DataType]) -> PartitionSpec:
    return PartitionSpec(
        1,
        tuple(
            PartitionField(k + 1, name, SCHEMA.field_id(source), expression, result)
            for k, (name, source, expression, result) in enumerate(fields)
        ),
    )


IDENTITY = spec(("i_p", "i", "col", pa.int64()), ("s_p", "s", "col", pa.utf8()))
FLOAT = spec(("f_p", "f", "col", pa.float64()))
YEAR = spec(("y", "d", "date_part('year', col)", pa.int32()))
MONTH = spec(("m", "d", "date_part('month', col)", pa.int32()))
YM = spec(
    ("y", "ts", "date_part('year', col)", pa.int32()),
    ("m", "ts", "date_part('month', col)", pa.int32()),
)
TRUNC = spec(("t", "i", "col - (col % 10)", pa.int64()))
TRUNC_S = spec(("t", "s", "left(col, 3)", pa.utf8()))
BUCKET = spec(("b", "i", "abs(hash(col)) % 16", pa.int64()))
OPAQUE = spec(("o", "s", "upper(col)", pa.utf8()))


def res(text: str, partition_spec: PartitionSpec, values: dict[str, Any]) -> Predicate:
    return residual(bind(parse_sql(text, ARROW), ARROW), partition_spec, SCHEMA, values)


def same(text: str) -> Predicate:
    return bind(parse_sql(text, ARROW), ARROW)


T, F = AlwaysTrue(), AlwaysFalse()


@pytest.mark.parametrize(
    ("text", "partition_spec", "values", "expected"),
    [
        # identity: the partition value is the column's value
        ("i = 5 AND i > 1", IDENTITY, {"i_p": 5}, T),
        ("i = 5", IDENTITY, {"i_p": 6}, F),
        ("i IN (1, 2)", IDENTITY, {"i_p": 2}, T),
        ("i NOT IN (1, 2)", IDENTITY, {"i_p": 2}, F),
        ("s LIKE 'ab%' AND i > 3", IDENTITY, {"s_p": "abc"}, same("i > 3")),
        ("s NOT LIKE 'ab%'", IDENTITY, {"s_p": "abc"}, F),
        ("i IS NULL", IDENTITY, {"i_p": None}, T),
        ("i IS NOT NULL", IDENTITY, {"i_p": None}, F),
        ("i != 5", IDENTITY, {"i_p": None}, F),  # NULL != 5 is NULL
        ("i NOT IN (5)", IDENTITY, {"i_p": None}, F),
        ("i = 5 OR s = 'a'", IDENTITY, {"i_p": 4}, same("s = 'a'")),
        ("i = 5", IDENTITY, {}, same("i = 5")),  # no value: nothing proven
        ("f = CAST('NaN' AS DOUBLE)", FLOAT, {"f_p": float("nan")}, T),
        ("f > 1", FLOAT, {"f_p": float("nan")}, T),  # NaN sorts above every number
        ("f < 1", FLOAT, {"f_p": float("nan")}, F),
        # year: ranges inside, outside, across the partition's year
        ("d >= DATE '2025-03-01'", YEAR, {"y": 2026}, T),
        ("d >= DATE '2025-03-01'", YEAR, {"y": 2024}, F),
        ("d >= DATE '2025-03-01'", YEAR, {"y": 2025}, same("d >= DATE '2025-03-01'")),
        ("d >= DATE '2025-01-01'", YEAR, {"y": 2025}, T),
        ("d < DATE '2025-01-01'", YEAR, {"y": 2025}, F),
        ("d <= DATE '2024-12-31'", YEAR, {"y": 2024}, T),
        ("d > DATE '2024-12-31'", YEAR, {"y": 2024}, F),
        ("d = DATE '2025-06-01'", YEAR, {"y": 2024}, F),
        ("d != DATE '2025-06-01'", YEAR, {"y": 2024}, T),
        ("d IN (DATE '2025-06-01', DATE '2023-01-01')", YEAR, {"y": 2024}, F),
        ("d NOT IN (DATE '2025-06-01')", YEAR, {"y": 2024}, T),
        ("d IS NULL", YEAR, {"y": 2024}, F),
        ("d IS NOT NULL", YEAR, {"y": 2024}, T),
        # a NULL date part proves nothing (dates beyond DataFusion's calendar map to NULL)
        ("d IS NULL", YEAR, {"y": None}, IsNull("d")),
        # month alone: decides equality and IN, never ranges
        ("d = DATE '2025-06-01'", MONTH, {"m": 7}, F),
        ("d = DATE '2025-06-01'", MONTH, {"m": 6}, same("d = DATE '2025-06-01'")),
        ("d != DATE '2025-06-01'", MONTH, {"m": 7}, T),
        ("d > DATE '2025-06-01'", MONTH, {"m": 7}, same("d > DATE '2025-06-01'")),
        # year and month: the month of that year
        (
            "ts >= TIMESTAMP '2025-06-01 00:00:00' AND ts < TIMESTAMP '2025-07-01 00:00:00'",
            YM,
            {"y": 2025, "m": 6},
            T,
        ),
        (
            "ts >= TIMESTAMP '2025-06-15 00:00:00'",
            YM,
            {"y": 2025, "m": 6},
            same("ts >= TIMESTAMP '2025-06-15 00:00:00'"),
        ),
        ("ts >= TIMESTAMP '2025-06-15 00:00:00'", YM, {"y": 2025, "m": 5}, F),
        ("ts < TIMESTAMP '2026-01-01 00:00:00'", YM, {"y": 2025, "m": 12}, T),
        # truncate: the width of values each partition holds, negative numbers toward zero
        ("i < 30", TRUNC, {"t": 20}, T),
        ("i >= 30", TRUNC, {"t": 20}, F),
        ("i < 25", TRUNC, {"t": 20}, same("i < 25")),
        ("i >= 20 AND i <= 29", TRUNC, {"t": 20}, T),
        ("i <= -10", TRUNC, {"t": -10}, T),
        ("i > -10", TRUNC, {"t": -10}, F),
        ("i >= -19", TRUNC, {"t": -10}, T),
        ("i < -19", TRUNC, {"t": -10}, F),
        ("i BETWEEN -9 AND 9", TRUNC, {"t": 0}, T),
        ("i = 10", TRUNC, {"t": 0}, F),
        ("i IS NULL", TRUNC, {"t": None}, T),
        ("i = 3", TRUNC, {"t": None}, F),
        # truncated strings: a full-width value is a prefix; a shorter one the whole value
        ("s LIKE 'ab%'", TRUNC_S, {"t": "abc"}, T),
        ("s LIKE 'abd%'", TRUNC_S, {"t": "abc"}, F),
        ("s LIKE 'abcd%'", TRUNC_S, {"t": "abc"}, same("s LIKE 'abcd%'")),
        ("s NOT LIKE 'ab%'", TRUNC_S, {"t": "abc"}, F),
        ("s = 'abd'", TRUNC_S, {"t": "abc"}, F),
        ("s != 'abd'", TRUNC_S, {"t": "abc"}, T),
        ("s < 'abd'", TRUNC_S, {"t": "abc"}, T),
        ("s < 'abc'", TRUNC_S, {"t": "abc"}, F),
        ("s >= 'abc'", TRUNC_S, {"t": "abc"}, T),
        ("s <= 'abc'", TRUNC_S, {"t": "abc"}, same("s <= 'abc'")),
        ("s > 'ab'", TRUNC_S, {"t": "abc"}, T),
        ("s < 'abcd'", TRUNC_S, {"t": "abc"}, same("s < 'abcd'")),
        ("s IN ('x', 'abd')", TRUNC_S, {"t": "abc"}, F),
        ("s = 'ab'", TRUNC_S, {"t": "ab"}, T),
        ("s LIKE 'ab%'", TRUNC_S, {"t": "ab"}, T),
        ("s > 'a'", TRUNC_S, {"t": "ab"}, T),
        # bucket and opaque: literals that map elsewhere are ruled out
        ("i = 1", BUCKET, {"b": bucket_scalar(1, pa.int64(), 16)}, same("i = 1")),
        ("i = 1", BUCKET, {"b": (bucket_scalar(1, pa.int64(), 16) or 0) + 1}, F),
        ("i != 1", BUCKET, {"b": (bucket_scalar(1, pa.int64(), 16) or 0) + 1}, T),
        ("i > 1", BUCKET, {"b": 3}, same("i > 1")),
        ("i IS NULL", BUCKET, {"b": None}, T),
        ("s = 'cd'", OPAQUE, {"o": "AB"}, F),
        ("s = 'ab'", OPAQUE, {"o": "AB"}, same("s = 'ab'")),
        ("s IN ('ab', 'cd')", OPAQUE, {"o": "XY"}, F),
        ("s != 'cd'", OPAQUE, {"o": "AB"}, T),
        ("s IS NULL", OPAQUE, {"o": None}, IsNull("s")),  # opaque may map values to NULL
    ],
)
def test_residual(
    text: str, partition_spec: PartitionSpec, values: dict[str, Any], expected: Predicate
) -> None:
    assert res(text, partition_spec, values) == expected


def test_unknown_is_kept_and_not_pushed() -> None:
    unknown = Unknown("(`i` % 2 = 0)", ("i",))
    p = and_(unknown, bind(parse_sql("i = 5", ARROW), ARROW))
    assert residual(p, IDENTITY, SCHEMA, {"i_p": 5}) == unknown
    assert residual(p, IDENTITY, SCHEMA, {"i_p": 4}) == AlwaysFalse()


def test_not_is_pushed_down_first() -> None:
    p = parse_sql("NOT (i = 5 OR s = 'a')", ARROW)
    assert residual(p, IDENTITY, SCHEMA, {"i_p": 5, "s_p": "b"}) == AlwaysFalse()
    assert residual(p, IDENTITY, SCHEMA, {"i_p": 4, "s_p": "b"}) == AlwaysTrue()
