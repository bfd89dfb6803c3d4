"""parse_sql: DataFusion's parser, walked into the predicate tree; Unknown renders for Lance."""

from __future__ import annotations

import datetime
import decimal

import datafusion
import lance
import pyarrow as pa
import pytest

from lance_partitioned.errors import InvalidInputError
from lance_partitioned.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    Or,
    StartsWith,
    Unknown,
    parse_sql,
)

SCHEMA = pa.schema(
    [
        ("x", pa.int32()),
        ("s", pa.utf8()),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("my col", pa.int64()),
        ("select", pa.int64()),
        ("Big", pa.int8()),
        ("b", pa.bool_()),
        ("dec", pa.decimal128(10, 2)),
        ("bin", pa.binary()),
    ]
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x = 5", EqualTo("x", 5)),
        ("x != 5", NotEqualTo("x", 5)),
        ("x <> 5", NotEqualTo("x", 5)),
        ("5 < x", GreaterThan("x", 5)),
        ("5 >= x", LessThanOrEqual("x", 5)),
        ("x = -5", EqualTo("x", -5)),
        ("x IN (1, 2, 2)", In("x", (1, 2))),
        ("x NOT IN (1, 2)", NotIn("x", (1, 2))),
        ("x BETWEEN 1 AND 3", And(GreaterThanOrEqual("x", 1), LessThanOrEqual("x", 3))),
        ("x NOT BETWEEN 1 AND 3", Or(LessThan("x", 1), GreaterThan("x", 3))),
        ("s LIKE 'ab%'", StartsWith("s", "ab")),
        ("s LIKE 'ab%%'", StartsWith("s", "ab")),
        ("s NOT LIKE 'ab%'", NotStartsWith("s", "ab")),
        ("s LIKE 'a\\%b%'", StartsWith("s", "a%b")),
        ("s LIKE 'abc'", EqualTo("s", "abc")),
        ("s NOT LIKE 'a\\_c'", NotEqualTo("s", "a_c")),
        ("x IS NULL", IsNull("x")),
        ("x IS NOT NULL", NotNull("x")),
        ("b", EqualTo("b", True)),
        ("NOT b", EqualTo("b", False)),
        ("b IS TRUE", EqualTo("b", True)),
        ("b IS NOT TRUE", Or(EqualTo("b", False), IsNull("b"))),
        ("b IS FALSE", EqualTo("b", False)),
        ("b IS UNKNOWN", IsNull("b")),
        ("NOT (b IS TRUE)", Or(EqualTo("b", False), IsNull("b"))),
        ("d = DATE '2025-12-10'", EqualTo("d", datetime.date(2025, 12, 10))),
        ("d = '2025-12-10'", EqualTo("d", "2025-12-10")),
        ("d > DATE '2025-01-01' + INTERVAL '1 day'", GreaterThan("d", datetime.date(2025, 1, 2))),
        (
            "ts >= TIMESTAMP '2025-01-01 10:30:00'",
            GreaterThanOrEqual("ts", datetime.datetime(2025, 1, 1, 10, 30)),
        ),
        (  # a literal with an offset is the instant it names (issue 33)
            "ts < TIMESTAMP '2025-01-01T12:00:00+02:00'",
            LessThan("ts", datetime.datetime(2025, 1, 1, 10, tzinfo=datetime.timezone.utc)),
        ),
        ("dec < 1.5", LessThan("dec", 1.5)),
        (
            "dec = CAST('1.50' AS DECIMAL(5, 2))",
            EqualTo("dec", decimal.Decimal("1.50")),
        ),
        ("x = CAST('7' AS INT)", EqualTo("x", 7)),
        ("bin = X'0102'", EqualTo("bin", b"\x01\x02")),
        ("s = 'it''s'", EqualTo("s", "it's")),
        ('"my col" > 3', GreaterThan("my col", 3)),
        ("`my col` > 3", GreaterThan("my col", 3)),
        ("`select` = 1", EqualTo("select", 1)),
        ("Big = 1", EqualTo("Big", 1)),
        (
            "(x = 1 OR x = 2) AND s = 'a'",
            And(Or(EqualTo("x", 1), EqualTo("x", 2)), EqualTo("s", "a")),
        ),
        ("NOT (x > 1 OR s = 'a')", And(LessThanOrEqual("x", 1), NotEqualTo("s", "a"))),
        ("NOT NOT x > 1", GreaterThan("x", 1)),
        ("1 = 1", AlwaysTrue()),
        ("1 = 2 OR x = 1", EqualTo("x", 1)),
        ("true", AlwaysTrue()),
        ("NOT true", AlwaysFalse()),
    ],
)
def test_parse(text: str, expected: object) -> None:
    assert parse_sql(text, SCHEMA) == expected


@pytest.mark.parametrize(
    "text",
    [
        "x = NULL",
        "NOT (x = NULL)",  # NULL stays NULL under NOT: never true
        "x != NULL",
        "NULL",
        "NOT NULL",
        "x NOT IN (1, NULL)",  # x != 1 AND NULL: never true
        "x BETWEEN 1 AND NULL",
        "s LIKE NULL",
    ],
)
def test_comparisons_with_null_are_never_true(text: str) -> None:
    assert parse_sql(text, SCHEMA) == AlwaysFalse()


def test_null_in_lists_and_bounds() -> None:
    assert parse_sql("x IN (1, NULL)", SCHEMA) == In("x", (1,))
    assert parse_sql("NOT (x IN (1, NULL))", SCHEMA) == AlwaysFalse()
    assert parse_sql("NOT (x BETWEEN 1 AND NULL)", SCHEMA) == LessThan("x", 1)
    assert parse_sql("x = 1 OR x = NULL", SCHEMA) == EqualTo("x", 1)


@pytest.mark.parametrize(
    ("text", "sql", "columns"),
    [
        ("upper(s) = 'AB'", "(upper(`s`) = 'AB')", ("s",)),
        ("x + 1 > 2", "((`x` + 1) > 2)", ("x",)),
        ("NOT (x + 1 > 2)", "NOT ((`x` + 1) > 2)", ("x",)),
        ("x = `my col`", "(`x` = `my col`)", ("x", "my col")),
        ("s LIKE '%a'", "(`s` LIKE '%a')", ("s",)),
        ("s LIKE 'a_c'", "(`s` LIKE 'a_c')", ("s",)),
        ("s ILIKE 'a%'", "(`s` ILIKE 'a%')", ("s",)),
        ("date_part('year', d) = 2025", "(date_part('year', `d`) = 2025)", ("d",)),
        ("x IN (1, x)", "(`x` IN (1, `x`))", ("x",)),
        ("upper(s) = 'IT''S'", "(upper(`s`) = 'IT''S')", ("s",)),
        ("`select` % 2 = 1", "((`select` % 2) = 1)", ("select",)),
    ],
)
def test_unknown_renders_for_datafusion_and_lance(
    text: str, sql: str, columns: tuple[str, ...], tmp_path: object
) -> None:
    parsed = parse_sql(text, SCHEMA)
    assert parsed == Unknown(sql, columns)
    table = _sample()
    assert _lance_rows(table, sql, tmp_path) == _datafusion_rows(table, text)


def test_unknown_inside_a_tree() -> None:
    parsed = parse_sql("x > 1 AND (upper(s) = 'A' OR d IS NULL)", SCHEMA)
    assert parsed == And(
        GreaterThan("x", 1), Or(Unknown("(upper(`s`) = 'A')", ("s",)), IsNull("d"))
    )


def test_literal_finer_than_microseconds_stays_unknown() -> None:
    parsed = parse_sql("ts >= TIMESTAMP '2025-01-01 00:00:00.123456789'", SCHEMA)
    assert isinstance(parsed, Unknown)
    assert parsed.columns == ("ts",)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # (an offset makes the literal an instant: aware)
        (
            "ts > TIMESTAMP '0001-01-01 00:00:00+00:00'",
            datetime.datetime(1, 1, 1, tzinfo=datetime.timezone.utc),
        ),
        (
            "ts > TIMESTAMP '0001-01-01T05:00:00+05:00'",
            datetime.datetime(1, 1, 1, tzinfo=datetime.timezone.utc),
        ),
        ("ts > TIMESTAMP '1600-06-01 12:00:00.5'", datetime.datetime(1600, 6, 1, 12, 0, 0, 500000)),
        (
            "ts > TIMESTAMP '9999-12-31 23:59:59.999999000'",
            datetime.datetime(9999, 12, 31, 23, 59, 59, 999999),
        ),
    ],
)
def test_timestamp_literals_outside_the_nanosecond_range(
    text: str, value: datetime.datetime
) -> None:
    # SQL's TIMESTAMP is nanoseconds in DataFusion (years 1677 to 2262); the text is read by
    # DataFusion in microseconds instead, as the same value
    assert parse_sql(text, SCHEMA) == GreaterThan("ts", value)


def test_timestamp_literal_outside_both_ranges_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"(?s)cannot evaluate the constant.*Nanosecond"):
        parse_sql("ts > TIMESTAMP '1600-01-01 00:00:00.0000001'", SCHEMA)  # finer than 1 us
    with pytest.raises(InvalidInputError, match=r"cannot evaluate the constant"):
        parse_sql("ts > TIMESTAMP '1600-13-01 00:00:00'", SCHEMA)  # not a date


def test_volatile_functions_are_not_folded() -> None:
    assert isinstance(parse_sql("x < random()", SCHEMA), Unknown)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("y = 1", "no column 'y'"),
        ('"X" = 1', "no column 'X'"),
        ("x = = 1", "is not valid SQL"),
        ("x", "'x' is not boolean"),
        ("count(x) > 1", "AggregateFunction is not allowed"),
        ("x IN (SELECT 1)", "InSubquery is not allowed"),
        ("x = $1", "Placeholder is not allowed"),
        ("x = CAST('abc' AS INT)", "cannot evaluate the constant"),
        ("", "non-empty"),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message) as info:
        parse_sql(text, SCHEMA)
    if text:
        assert repr(text) in str(info.value)


def test_identifiers_are_case_sensitive() -> None:
    schema = pa.schema([("Big", pa.int64()), ("big", pa.int64())])
    assert parse_sql("Big = 1 AND big = 2", schema) == And(EqualTo("Big", 1), EqualTo("big", 2))


# ------------------------------------------------------------------ helpers


def _sample() -> pa.Table:
    return pa.table(
        {
            "x": pa.array([1, 2, None, 4], pa.int32()),
            "s": ["ab", "it's", None, "ba"],
            "d": [datetime.date(2025, 1, 1), None, datetime.date(2024, 5, 5), None],
            "ts": pa.array([None] * 4, pa.timestamp("us", tz="UTC")),
            "my col": [1, 2, 3, 4],
            "select": [1, 2, 3, 4],
            "Big": pa.array([1, 2, 3, 4], pa.int8()),
            "b": [True, False, None, True],
            "dec": pa.array([decimal.Decimal("1.50")] * 4, pa.decimal128(10, 2)),
            "bin": [b"a", b"b", None, b""],
        },
        schema=SCHEMA,
    )


def _datafusion_rows(table: pa.Table, sql: str) -> list[int]:
    ctx = datafusion.SessionContext(
        datafusion.SessionConfig({"datafusion.sql_parser.enable_ident_normalization": "false"})
    )
    ctx.register_record_batches("t", [table.to_batches()])
    return sorted(ctx.sql(f'SELECT "my col" FROM t WHERE {sql}').to_pydict()["my col"])


def _lance_rows(table: pa.Table, sql: str, tmp_path: object) -> list[int]:
    dataset = lance.write_dataset(table, f"{tmp_path}/t")
    return sorted(dataset.to_table(filter=sql, columns=["my col"]).column(0).to_pylist())


def test_a_filter_parsed_again_is_the_same_predicate() -> None:
    """One parse per (text, schema): a scan's second use of a filter (``to_table`` then
    ``count_rows``) reuses the immutable predicate; another schema, or a filter that does
    not parse, is parsed again."""
    schema = pa.schema([("x", pa.int64()), ("s", pa.string())])
    text = " OR ".join(f"x = {i}" for i in range(40))  # a long filter (_parse_long)
    first = parse_sql(text, schema)
    assert parse_sql(text, schema) is first
    assert parse_sql("x = 1", schema) is parse_sql("x = 1", schema)
    other = parse_sql("x = 1", pa.schema([("x", pa.int32())]))
    assert other == EqualTo("x", 1)
    assert other is not parse_sql("x = 1", schema)
    for _ in range(2):
        with pytest.raises(InvalidInputError, match="no column 'y'"):
            parse_sql("y = 1", schema)
    hash(first)  # frozen nodes: hashable, so safe to share
