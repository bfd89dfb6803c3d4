"""Inclusive projection through each transform: exact results at the boundaries."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from lance_partitioned.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    Predicate,
    StartsWith,
    Unknown,
    and_,
    bind,
    or_,
    parse_sql,
    to_arrow,
)
from lance_partitioned.pruning import project
from lance_partitioned.spec.hashing import bucket_scalar
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema

UTC = datetime.timezone.utc
D = decimal.Decimal
ARROW = pa.schema(
    [
        ("i", pa.int64()),
        ("n", pa.int32()),
        ("dec", pa.decimal128(6, 2)),
        ("s", pa.utf8()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("other", pa.int64()),
    ]
)
SCHEMA = NamespaceSchema.from_arrow(ARROW)


def spec(*fields: tuple[str, str, str, pa.DataType]) -> PartitionSpec:
    """A spec of (partition name, source column, expression, result type)."""
    return PartitionSpec(
        1,
        tuple(
            PartitionField(k + 1, name, SCHEMA.field_id(source), expression, result)
            for k, (name, source, expression, result) in enumerate(fields)
        ),
    )


def proj(text: str, partition_spec: PartitionSpec) -> Predicate:
    return project(bind(parse_sql(text, ARROW), ARROW), partition_spec, SCHEMA)


IDENTITY = spec(("i_p", "i", "col", pa.int64()), ("s_p", "s", "col", pa.utf8()))
NARROW = spec(("n_p", "n", "col", pa.int16()))  # an identity written when n was int16
YEAR_D = spec(("y", "d", "date_part('year', col)", pa.int32()))
YEAR_TS = spec(("y", "ts", "date_part('year', col)", pa.int32()))
MONTH = spec(("m", "ts", "date_part('month', col)", pa.int32()))
DAY = spec(("dd", "d", "date_part('day', col)", pa.int32()))
HOUR = spec(("h", "ts", "date_part('hour', col)", pa.int32()))
YM = spec(
    ("y", "ts", "date_part('year', col)", pa.int32()),
    ("m", "ts", "date_part('month', col)", pa.int32()),
)
YMDH = spec(
    ("y", "ts", "date_part('year', col)", pa.int32()),
    ("m", "ts", "date_part('month', col)", pa.int32()),
    ("dd", "ts", "date_part('day', col)", pa.int32()),
    ("h", "ts", "date_part('hour', col)", pa.int32()),
)
BUCKET = spec(("b", "i", "abs(hash(col)) % 16", pa.int64()))
TRUNC = spec(("t", "i", "col - (col % 10)", pa.int64()))
TRUNC_DEC = spec(("t", "dec", "col - (col % 10)", pa.decimal128(6, 2)))
TRUNC_S = spec(("t", "s", "left(col, 3)", pa.utf8()))
OPAQUE = spec(("o", "s", "upper(col)", pa.utf8()))
OPAQUE_NULLS = spec(("o", "s", "nullif(col, 'x')", pa.utf8()))


@pytest.mark.parametrize(
    ("text", "partition_spec", "expected"),
    [
        # identity: every test, renamed; literals fit the partition column's type
        ("i = 5", IDENTITY, EqualTo("i_p", 5)),
        ("i IN (1, 2) AND s LIKE 'ab%'", IDENTITY, In("i_p", (1, 2)) & StartsWith("s_p", "ab")),
        ("NOT (s LIKE 'ab%')", IDENTITY, NotStartsWith("s_p", "ab")),
        ("i NOT IN (1, 2) OR s != 'x'", IDENTITY, NotIn("i_p", (1, 2)) | NotEqualTo("s_p", "x")),
        ("i IS NULL", IDENTITY, IsNull("i_p")),
        ("i = 5 AND i = 6", IDENTITY, AlwaysFalse()),
        ("i > 5 AND i <= 5", IDENTITY, AlwaysFalse()),
        ("n = 40000", NARROW, AlwaysFalse()),  # no int16 partition holds 40000
        ("n < 40000", NARROW, NotNull("n_p")),
        ("other = 1", IDENTITY, AlwaysTrue()),
        ("upper(s) = 'A'", IDENTITY, AlwaysTrue()),
        ("upper(s) = 'A' AND i = 1", IDENTITY, EqualTo("i_p", 1)),
        ("upper(s) = 'A' OR i = 1", IDENTITY, AlwaysTrue()),
        ("i = NULL", IDENTITY, AlwaysFalse()),
        # year: boundaries exactly at the start of a year
        ("d < DATE '2025-01-01'", YEAR_D, LessThanOrEqual("y", 2024)),
        ("d <= DATE '2025-01-01'", YEAR_D, LessThanOrEqual("y", 2025)),
        ("d > DATE '2024-12-31'", YEAR_D, GreaterThanOrEqual("y", 2025)),
        ("d >= DATE '2024-12-31'", YEAR_D, GreaterThanOrEqual("y", 2024)),
        ("d > DATE '2025-06-01'", YEAR_D, GreaterThanOrEqual("y", 2025)),
        ("d = DATE '2025-06-01'", YEAR_D, EqualTo("y", 2025)),
        ("d != DATE '2025-06-01'", YEAR_D, NotNull("y")),
        ("d IN (DATE '2025-06-01', DATE '2023-01-01')", YEAR_D, In("y", (2025, 2023))),
        ("d NOT IN (DATE '2025-06-01')", YEAR_D, NotNull("y")),
        ("d IS NULL", YEAR_D, IsNull("y")),
        ("d IS NOT NULL", YEAR_D, NotNull("y")),
        (
            "d BETWEEN DATE '2024-03-01' AND DATE '2026-01-01'",
            YEAR_D,
            GreaterThanOrEqual("y", 2024) & LessThanOrEqual("y", 2026),
        ),
        ("ts < TIMESTAMP '2025-01-01 00:00:00'", YEAR_TS, LessThanOrEqual("y", 2024)),
        ("ts < TIMESTAMP '2025-01-01 00:00:00.000001'", YEAR_TS, LessThanOrEqual("y", 2025)),
        ("ts > TIMESTAMP '2024-12-31 23:59:59.999999'", YEAR_TS, GreaterThanOrEqual("y", 2025)),
        ("ts >= TIMESTAMP '2024-12-31 23:59:59.999999'", YEAR_TS, GreaterThanOrEqual("y", 2024)),
        # month alone: equality, IN, and the values a bounded range covers
        ("ts = TIMESTAMP '2025-03-04 05:00:00'", MONTH, EqualTo("m", 3)),
        ("ts > DATE '2025-03-01'", MONTH, NotNull("m")),
        (
            "ts >= DATE '2025-11-15' AND ts < DATE '2026-02-01'",
            MONTH,
            In("m", (1, 11, 12)),
        ),
        ("ts >= DATE '2025-01-01' AND ts < DATE '2025-12-31'", MONTH, NotNull("m")),
        ("ts >= DATE '2025-01-01' AND ts < DATE '2026-01-01'", MONTH, NotNull("m")),
        ("ts >= DATE '2025-01-15' AND ts < DATE '2026-01-01'", MONTH, NotNull("m")),
        ("ts >= DATE '2025-01-15' AND ts < DATE '2025-12-02'", MONTH, NotNull("m")),
        ("ts >= DATE '2025-02-15' AND ts < DATE '2026-01-01'", MONTH, In("m", tuple(range(2, 13)))),
        # day-of-month and hour-of-day: not monotonic either
        ("d BETWEEN DATE '2025-01-30' AND DATE '2025-02-02'", DAY, In("dd", (1, 2, 30, 31))),
        ("d BETWEEN DATE '2025-02-01' AND DATE '2025-03-31'", DAY, NotNull("dd")),
        ("d > DATE '2025-01-30'", DAY, NotNull("dd")),
        (
            "ts >= TIMESTAMP '2025-01-01 22:30:00' AND ts < TIMESTAMP '2025-01-02 01:00:00'",
            HOUR,
            In("h", (0, 22, 23)),
        ),
        (
            "ts >= TIMESTAMP '2025-01-01 00:00:00' AND ts < TIMESTAMP '2025-01-02 00:00:00'",
            HOUR,
            NotNull("h"),
        ),
        # bucket: equality and IN by hash; nothing for ranges and negations
        ("i = 1", BUCKET, EqualTo("b", bucket_scalar(1, pa.int64(), 16))),
        ("i IN (1, 1.5)", BUCKET, EqualTo("b", 11)),
        ("i > 5", BUCKET, NotNull("b")),
        ("i != 1", BUCKET, NotNull("b")),
        ("i NOT IN (1, 2)", BUCKET, NotNull("b")),
        ("i IS NULL", BUCKET, IsNull("b")),
        ("i IN (1000000000000000000000)", BUCKET, AlwaysFalse()),
        # truncate (numbers truncate toward zero): boundaries and negative numbers
        ("i = -13", TRUNC, EqualTo("t", -10)),
        ("i = -3", TRUNC, EqualTo("t", 0)),
        ("i < 10", TRUNC, LessThanOrEqual("t", 0)),
        ("i <= 10", TRUNC, LessThanOrEqual("t", 10)),
        ("i < 11", TRUNC, LessThanOrEqual("t", 10)),
        ("i > 9", TRUNC, GreaterThanOrEqual("t", 10)),
        ("i > -10", TRUNC, GreaterThanOrEqual("t", 0)),
        ("i >= -10", TRUNC, GreaterThanOrEqual("t", -10)),
        ("i < -10", TRUNC, LessThanOrEqual("t", -10)),
        ("i <= -11", TRUNC, LessThanOrEqual("t", -10)),
        ("i >= -20 AND i < 0", TRUNC, GreaterThanOrEqual("t", -20) & LessThanOrEqual("t", 0)),
        ("i IN (1, 15, -3)", TRUNC, In("t", (0, 10))),
        ("i != 3", TRUNC, NotNull("t")),
        ("dec < 10", TRUNC_DEC, LessThanOrEqual("t", D("0.00"))),
        ("dec <= -10.01", TRUNC_DEC, LessThanOrEqual("t", D("-10.00"))),
        ("dec = -10.01", TRUNC_DEC, EqualTo("t", D("-10.00"))),
        # truncate strings: equality, prefixes, ranges
        ("s = 'abcdef'", TRUNC_S, EqualTo("t", "abc")),
        ("s = 'ab'", TRUNC_S, EqualTo("t", "ab")),
        ("s LIKE 'abcd%'", TRUNC_S, EqualTo("t", "abc")),
        ("s LIKE 'abc%'", TRUNC_S, EqualTo("t", "abc")),
        ("s LIKE 'ab%'", TRUNC_S, StartsWith("t", "ab")),
        ("s NOT LIKE 'ab%'", TRUNC_S, NotStartsWith("t", "ab")),
        ("s NOT LIKE 'abcd%'", TRUNC_S, NotNull("t")),
        ("s != 'ab'", TRUNC_S, NotEqualTo("t", "ab")),
        ("s != 'abc'", TRUNC_S, NotNull("t")),
        ("s NOT IN ('ab', 'abcd')", TRUNC_S, NotEqualTo("t", "ab")),
        ("s IN ('abcd', 'abce', 'x')", TRUNC_S, In("t", ("abc", "x"))),
        (
            "s > 'abcz' AND s <= 'abd'",
            TRUNC_S,
            GreaterThanOrEqual("t", "abc") & LessThanOrEqual("t", "abd"),
        ),
        ("s < 'ab'", TRUNC_S, LessThan("t", "ab")),
        ("s < 'abc'", TRUNC_S, LessThan("t", "abc")),
        ("s < 'abcd'", TRUNC_S, LessThanOrEqual("t", "abc")),
        ("s > 'ab'", TRUNC_S, GreaterThan("t", "ab")),
        ("s > 'abc'", TRUNC_S, GreaterThanOrEqual("t", "abc")),
        # opaque: = and IN through DataFusion; nothing else; NULL images kept
        ("s = 'ab'", OPAQUE, EqualTo("o", "AB")),
        ("s IN ('ab', 'AB', 'cd')", OPAQUE, In("o", ("AB", "CD"))),
        ("s > 'a'", OPAQUE, AlwaysTrue()),
        ("s != 'a'", OPAQUE, AlwaysTrue()),
        ("s IS NOT NULL", OPAQUE, AlwaysTrue()),
        ("s IS NULL", OPAQUE, IsNull("o")),
        ("s = 'x'", OPAQUE_NULLS, IsNull("o")),
        ("s IN ('x', 'y')", OPAQUE_NULLS, or_(EqualTo("o", "y"), IsNull("o"))),
    ],
)
def test_project(text: str, partition_spec: PartitionSpec, expected: Predicate) -> None:
    assert proj(text, partition_spec) == expected


def test_empty_in_projects_to_always_false() -> None:
    p = bind(In("i", ()), ARROW)
    assert project(p, IDENTITY, SCHEMA) == AlwaysFalse()
    assert project(bind(Not(In("i", ())), ARROW), BUCKET, SCHEMA) == NotNull("b")


def test_unknown_projects_to_always_true() -> None:
    p = Unknown("(`i` % 2 = 0)", ("i",))
    assert project(p, IDENTITY, SCHEMA) == AlwaysTrue()
    assert project(and_(p, EqualTo("i", 2)), IDENTITY, SCHEMA) == EqualTo("i_p", 2)
    assert project(Not(p), IDENTITY, SCHEMA) == AlwaysTrue()


def test_joint_year_month() -> None:
    june = "ts >= DATE '2025-06-01' AND ts < DATE '2025-07-01'"
    assert proj(june, YM) == and_(EqualTo("y", 2025), EqualTo("m", 6))
    assert proj("ts >= DATE '2025-01-01' AND ts < DATE '2026-01-01'", YM) == and_(
        EqualTo("y", 2025), NotNull("m")
    )
    assert proj("ts >= DATE '2025-06-15'", YM) == and_(
        or_(GreaterThan("y", 2025), and_(EqualTo("y", 2025), GreaterThanOrEqual("m", 6))),
        NotNull("y"),
        NotNull("m"),
    )
    assert proj("ts < DATE '2025-06-01'", YM) == and_(
        or_(LessThan("y", 2025), and_(EqualTo("y", 2025), LessThanOrEqual("m", 5))),
        NotNull("y"),
        NotNull("m"),
    )
    assert proj("ts >= DATE '2025-01-01'", YM) == and_(GreaterThanOrEqual("y", 2025), NotNull("m"))


def test_joint_year_month_selects_exactly_the_covered_partitions() -> None:
    """Over every (year, month) of 2023-2027: the projection keeps just the months touched."""
    partitions = pa.table(
        {
            "y": pa.array([y for y in range(2023, 2028) for _ in range(12)] + [None], pa.int32()),
            "m": pa.array(
                [m for _ in range(2023, 2028) for m in range(1, 13)] + [None], pa.int32()
            ),
        }
    )
    for text, expected in [
        (
            "ts >= TIMESTAMP '2024-11-15 00:00:00' AND ts < DATE '2025-03-01'",
            [(2024, 11), (2024, 12), (2025, 1), (2025, 2)],
        ),
        ("ts >= DATE '2025-06-01' AND ts < DATE '2025-07-01'", [(2025, 6)]),
        ("ts = TIMESTAMP '2025-07-01 00:00:00'", [(2025, 7)]),
        ("ts > TIMESTAMP '2027-12-31 00:00:00'", [(2027, 12)]),
        ("ts IS NULL", [(None, None)]),
    ]:
        kept = partitions.filter(to_arrow(proj(text, YM), partitions.schema))
        assert list(zip(kept["y"].to_pylist(), kept["m"].to_pylist(), strict=True)) == expected


def test_joint_four_levels() -> None:
    p = proj(
        "ts >= TIMESTAMP '2025-06-15 10:30:00' AND ts <= TIMESTAMP '2025-06-15 12:00:00'", YMDH
    )
    assert p == and_(
        EqualTo("y", 2025),
        EqualTo("m", 6),
        EqualTo("dd", 15),
        GreaterThanOrEqual("h", 10),
        LessThanOrEqual("h", 12),
    )
    assert proj("ts >= DATE '2025-06-01' AND ts < DATE '2025-07-01'", YMDH) == and_(
        EqualTo("y", 2025), EqualTo("m", 6), NotNull("dd"), NotNull("h")
    )


def test_time_zone_aware_literals_project_on_the_utc_instant() -> None:
    tokyo = datetime.timezone(datetime.timedelta(hours=9))
    p = bind(EqualTo("ts", datetime.datetime(2025, 1, 1, 8, tzinfo=tokyo)), ARROW)
    assert project(p, YM, SCHEMA) == and_(EqualTo("y", 2024), EqualTo("m", 12))


def test_fields_on_other_sources_and_missing_columns_prune_nothing() -> None:
    assert proj("other = 1 AND i = 1", YEAR_D) == AlwaysTrue()
    schema = NamespaceSchema.from_arrow(pa.schema([("j", pa.int64())]))
    assert project(EqualTo("i", 1), IDENTITY, schema) == AlwaysTrue()


def test_opaque_that_fails_on_a_literal_prunes_nothing() -> None:
    failing = spec(("o", "s", "CAST(col AS INT)", pa.int32()))
    assert proj("s = 'abc'", failing) == AlwaysTrue()
    assert proj("s = '12'", failing) == EqualTo("o", 12)
