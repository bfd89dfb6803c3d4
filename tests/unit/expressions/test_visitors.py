"""rewrite_not, bind (literal coercion), to_sql (checked on Lance and DataFusion), to_arrow."""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

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
    Not,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    Or,
    Predicate,
    StartsWith,
    Unknown,
    bind,
    col,
    parse_sql,
    rewrite_not,
    sql_literal,
    to_arrow,
    to_sql,
)

UTC = datetime.timezone.utc
D = decimal.Decimal

# ------------------------------------------------------------------ rewrite_not


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        (Not(EqualTo("x", 1)), NotEqualTo("x", 1)),
        (Not(LessThan("x", 1)), GreaterThanOrEqual("x", 1)),
        (Not(LessThanOrEqual("x", 1)), GreaterThan("x", 1)),
        (Not(GreaterThan("x", 1)), LessThanOrEqual("x", 1)),
        (Not(GreaterThanOrEqual("x", 1)), LessThan("x", 1)),
        (Not(NotEqualTo("x", 1)), EqualTo("x", 1)),
        (Not(IsNull("x")), NotNull("x")),
        (Not(NotNull("x")), IsNull("x")),
        (Not(In("x", (1, 2))), NotIn("x", (1, 2))),
        (Not(NotIn("x", (1, 2))), In("x", (1, 2))),
        (Not(StartsWith("s", "a")), NotStartsWith("s", "a")),
        (Not(NotStartsWith("s", "a")), StartsWith("s", "a")),
        (Not(AlwaysTrue()), AlwaysFalse()),
        (Not(Not(IsNull("x"))), IsNull("x")),
        (Not(And(IsNull("x"), IsNull("y"))), Or(NotNull("x"), NotNull("y"))),
        (Not(Or(IsNull("x"), AlwaysFalse())), NotNull("x")),
        (Not(Unknown("`x` % 2 = 0", ("x",))), Unknown("NOT (`x` % 2 = 0)", ("x",))),
        (And(Not(IsNull("x")), Not(Not(IsNull("y")))), And(NotNull("x"), IsNull("y"))),
    ],
)
def test_rewrite_not(predicate: Predicate, expected: Predicate) -> None:
    assert rewrite_not(predicate) == expected


# ------------------------------------------------------------------ bind

SCHEMA = pa.schema(
    [
        ("i8", pa.int8()),
        ("u8", pa.uint8()),
        ("i", pa.int64()),
        ("f", pa.float64()),
        ("f32", pa.float32()),
        ("dec", pa.decimal128(5, 2)),
        ("d", pa.date32()),
        ("ts", pa.timestamp("us")),
        ("ts_s", pa.timestamp("s", tz="UTC")),
        ("ts_tokyo", pa.timestamp("us", tz="Asia/Tokyo")),
        ("ts_ny", pa.timestamp("ns", tz="America/New_York")),
        ("ts_ns", pa.timestamp("ns")),
        ("s", pa.utf8()),
        ("b", pa.bool_()),
        ("bin", pa.binary()),
        ("fixed", pa.binary(2)),
        ("n", pa.null()),
        ("dict", pa.dictionary(pa.int32(), pa.utf8())),
    ]
)


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        # integers out of range: NULL rows still never match
        (LessThan("i8", 1000), NotNull("i8")),
        (GreaterThan("i8", 1000), AlwaysFalse()),
        (EqualTo("i8", 1000), AlwaysFalse()),
        (NotEqualTo("i8", 1000), NotNull("i8")),
        (GreaterThanOrEqual("i8", -1000), NotNull("i8")),
        (LessThan("i8", -1000), AlwaysFalse()),
        (Not(LessThan("i8", 1000)), AlwaysFalse()),
        (LessThanOrEqual("i8", 127), NotNull("i8")),
        (GreaterThan("i8", 127), AlwaysFalse()),
        (LessThan("i8", -128), AlwaysFalse()),
        (GreaterThanOrEqual("i8", -128), NotNull("i8")),
        (LessThan("i8", 127), LessThan("i8", 127)),
        (GreaterThan("u8", -1), NotNull("u8")),
        (LessThan("u8", 0), AlwaysFalse()),
        (EqualTo("i", 2**63), AlwaysFalse()),
        # fractions against integers
        (LessThan("i", 2.5), LessThanOrEqual("i", 2)),
        (LessThanOrEqual("i", 2.5), LessThanOrEqual("i", 2)),
        (GreaterThan("i", 2.5), GreaterThan("i", 2)),
        (GreaterThanOrEqual("i", 2.5), GreaterThan("i", 2)),
        (GreaterThanOrEqual("i", -0.5), GreaterThan("i", -1)),
        (EqualTo("i", 2.5), AlwaysFalse()),
        (NotEqualTo("i", 2.5), NotNull("i")),
        (EqualTo("i", 2.0), EqualTo("i", 2)),
        (LessThan("i", D("2.5")), LessThanOrEqual("i", 2)),
        (EqualTo("i", "7"), EqualTo("i", 7)),
        (LessThan("i", math.nan), NotNull("i")),  # NaN sorts above every number
        (GreaterThan("i", math.inf), AlwaysFalse()),
        (GreaterThan("i", -math.inf), NotNull("i")),
        # floats
        (EqualTo("f", 2), EqualTo("f", 2.0)),
        (EqualTo("f", math.nan), EqualTo("f", math.nan)),
        (EqualTo("f32", 0.1), AlwaysFalse()),  # 0.1 is no float32: exact comparison
        (LessThan("f32", 0.1), LessThanOrEqual("f32", 0.09999999403953552)),
        (EqualTo("f32", 0.5), EqualTo("f32", 0.5)),
        # decimals
        (EqualTo("dec", 1.5), EqualTo("dec", D("1.50"))),
        (LessThan("dec", D("1.005")), LessThanOrEqual("dec", D("1.00"))),
        (GreaterThan("dec", "1.005"), GreaterThan("dec", D("1.00"))),
        (EqualTo("dec", D("1.005")), AlwaysFalse()),
        (LessThan("dec", 1000), NotNull("dec")),
        (GreaterThan("dec", -1000), NotNull("dec")),
        (EqualTo("dec", 3), EqualTo("dec", D("3.00"))),
        # dates
        (EqualTo("d", "2025-01-01"), EqualTo("d", datetime.date(2025, 1, 1))),
        (
            LessThan("d", datetime.datetime(2025, 1, 1, 10)),
            LessThanOrEqual("d", datetime.date(2025, 1, 1)),
        ),
        (
            GreaterThanOrEqual("d", "2025-01-01 10:00:00"),
            GreaterThan("d", datetime.date(2025, 1, 1)),
        ),
        (
            EqualTo("d", datetime.datetime(2025, 1, 1)),
            EqualTo("d", datetime.date(2025, 1, 1)),
        ),
        (EqualTo("d", datetime.datetime(2025, 1, 1, 1)), AlwaysFalse()),
        # timestamps
        (
            EqualTo("ts", datetime.date(2025, 1, 1)),
            EqualTo("ts", datetime.datetime(2025, 1, 1)),
        ),
        (
            EqualTo("ts", datetime.datetime(2025, 1, 1, 10, tzinfo=UTC)),
            EqualTo("ts", datetime.datetime(2025, 1, 1, 10)),
        ),
        (
            GreaterThanOrEqual("ts_s", datetime.datetime(2025, 1, 1, 10, 0, 0, 500)),
            GreaterThan("ts_s", datetime.datetime(2025, 1, 1, 10, tzinfo=UTC)),
        ),
        (EqualTo("ts_s", datetime.datetime(2025, 1, 1, 10, 0, 0, 500)), AlwaysFalse()),
        (  # a date is its midnight UTC, as DataFusion casts it
            EqualTo("ts_tokyo", datetime.date(2025, 1, 1)),
            EqualTo("ts_tokyo", datetime.datetime(2025, 1, 1, tzinfo=UTC)),
        ),
        (  # a naive timestamp is wall-clock time in the column's zone, as DataFusion reads it
            EqualTo("ts_tokyo", datetime.datetime(2025, 1, 1, 9)),
            EqualTo("ts_tokyo", datetime.datetime(2025, 1, 1, tzinfo=UTC)),
        ),
        (
            EqualTo("ts_ny", "2025-01-01T05:00:00"),
            EqualTo("ts_ny", datetime.datetime(2025, 1, 1, 10, tzinfo=UTC)),
        ),
        (
            EqualTo("ts_ny", "2025-01-01T10:00:00Z"),
            EqualTo("ts_ny", datetime.datetime(2025, 1, 1, 10, tzinfo=UTC)),
        ),
        (LessThan("ts_ns", datetime.datetime(2300, 1, 1)), NotNull("ts_ns")),
        (GreaterThan("ts_ns", datetime.datetime(1600, 1, 1)), NotNull("ts_ns")),
        # strings, booleans, binary, dictionaries
        (EqualTo("b", "TRUE"), EqualTo("b", True)),
        (EqualTo("bin", "ab"), EqualTo("bin", b"ab")),
        (EqualTo("fixed", b"ab"), EqualTo("fixed", b"ab")),
        (EqualTo("dict", "a"), EqualTo("dict", "a")),
        (EqualTo("n", 1), AlwaysFalse()),
        # sets
        (In("i8", (1, 1000, 2.5, 1.0)), EqualTo("i8", 1)),
        (In("i8", (1, 2, 2)), In("i8", (1, 2))),
        (In("i8", (1000,)), AlwaysFalse()),
        (In("i8", ()), AlwaysFalse()),
        (Not(In("i8", ())), NotNull("i8")),
        (NotIn("i8", (1000, 2.5)), NotNull("i8")),
        (NotIn("i8", (1, 1000)), NotEqualTo("i8", 1)),
        (NotIn("i8", (1, 2)), NotIn("i8", (1, 2))),
        (In("f", (math.nan, math.nan, 1)), In("f", (math.nan, 1.0))),
        # prefixes
        (StartsWith("s", ""), NotNull("s")),
        (NotStartsWith("s", ""), AlwaysFalse()),
        (StartsWith("s", "ab"), StartsWith("s", "ab")),
        (Unknown("(`i` % 2 = 0)", ("i",)), Unknown("(`i` % 2 = 0)", ("i",))),
        (And(EqualTo("i8", 1000), Unknown("x", ())), AlwaysFalse()),
        (Or(LessThan("i8", 1000), Unknown("x", ())), Or(NotNull("i8"), Unknown("x", ()))),
    ],
)
def test_bind(predicate: Predicate, expected: Predicate) -> None:
    bound = bind(predicate, SCHEMA)
    assert repr(bound) == repr(expected)  # repr: NaN compares unequal to itself


@pytest.mark.parametrize(
    ("predicate", "message"),
    [
        (EqualTo("zz", 1), "column 'zz' is not in the schema"),
        (Unknown("(`zz` = 1)", ("zz",)), "column 'zz' is not in the schema"),
        (EqualTo("i", "abc"), "column 'i' \\(int64\\): cannot compare with 'abc'"),
        (EqualTo("d", 5), "column 'd'"),
        (EqualTo("ts", 5), "column 'ts'"),
        (EqualTo("s", 5), "column 's'"),
        (EqualTo("b", 1), "column 'b'"),
        (EqualTo("fixed", b"abc"), "3 bytes, the column holds 2"),
        (EqualTo("i", None), "use IS NULL"),
        (In("i", (1, None)), "holds no NULL"),
        (StartsWith("i", "1"), "needs a string column"),
        (EqualTo("ts_ny", datetime.datetime(2025, 11, 2, 1, 30)), "ambiguous or does not exist"),
        (EqualTo("ts_ny", datetime.datetime(2025, 3, 9, 2, 30)), "ambiguous or does not exist"),
    ],
)
def test_bind_errors(predicate: Predicate, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        bind(predicate, SCHEMA)


def test_bind_list_column_refuses_comparisons() -> None:
    schema = pa.schema([("tags", pa.list_(pa.utf8()))])
    assert bind(IsNull("tags"), schema) == IsNull("tags")
    with pytest.raises(InvalidInputError, match="column 'tags' has type list"):
        bind(EqualTo("tags", "a"), schema)


def test_bind_output_is_not_free() -> None:
    bound = bind(Not(And(GreaterThan("i", 1), Not(EqualTo("s", "a")))), SCHEMA)
    assert bound == Or(LessThanOrEqual("i", 1), EqualTo("s", "a"))


def test_builder_builds_tree_nodes() -> None:
    p = (col("i") >= 1) & ~col("s").isin(["a", "b"]) | col("s").startswith("x")
    assert p == Or(And(GreaterThanOrEqual("i", 1), Not(In("s", ("a", "b")))), StartsWith("s", "x"))
    assert (col("i") != 2) == NotEqualTo("i", 2)
    assert col("i").notin([1]) == NotIn("i", (1,))
    assert col("i").is_not_null() == NotNull("i")
    with pytest.raises(InvalidInputError, match="comparing two columns"):
        col("i") == col("j")  # noqa: B015


# ------------------------------------------------------------------ to_sql on Lance and DataFusion

NY = "America/New_York"
DATA_SCHEMA = pa.schema(
    [
        ("row", pa.int64()),
        ("i8", pa.int8()),
        ("u64", pa.uint64()),
        ("f32", pa.float32()),
        ("f64", pa.float64()),
        ("dec", pa.decimal128(10, 2)),
        ("s", pa.utf8()),
        ("ls", pa.large_utf8()),
        ("bin", pa.binary()),
        ("d", pa.date32()),
        ("d64", pa.date64()),
        ("ts_s", pa.timestamp("s")),
        ("ts_ms", pa.timestamp("ms")),
        ("ts_ns", pa.timestamp("ns")),
        ("ts_utc", pa.timestamp("us", tz="UTC")),
        ("ts_ny", pa.timestamp("ns", tz=NY)),
        ("b", pa.bool_()),
        ("my col", pa.int64()),
        ("select", pa.int64()),
        ("Upper", pa.int64()),
    ]
)
DATA = {
    "row": [0, 1, 2, 3],
    "i8": [-128, 5, None, 127],
    "u64": [0, 2**64 - 1, None, 2**63],
    "f32": [1.5, math.nan, None, -math.inf],
    "f64": [0.1, math.nan, None, math.inf],
    "dec": [D("-1.50"), D("2.25"), None, D("12345678.99")],
    "s": ["it's", "a%b_c", None, "ab"],
    "ls": ["x", "", None, "y'"],
    "bin": [b"\x00'", b"ab", None, b""],
    "d": [datetime.date(1, 1, 1), datetime.date(2025, 12, 10), None, datetime.date(9999, 12, 31)],
    "d64": [
        datetime.date(1970, 1, 1),
        datetime.date(2025, 12, 10),
        None,
        datetime.date(2000, 2, 29),
    ],
    "ts_s": [datetime.datetime(2025, 1, 1), datetime.datetime(2025, 1, 1, 0, 0, 1), None, None],
    "ts_ms": [
        datetime.datetime(2025, 1, 1, 0, 0, 0, 1000),
        datetime.datetime(1969, 12, 31, 23, 59, 59, 999000),
        None,
        datetime.datetime(2025, 1, 1),
    ],
    "ts_ns": [datetime.datetime(2025, 1, 1, 0, 0, 0, 1), datetime.datetime(2025, 1, 1), None, None],
    "ts_utc": [
        datetime.datetime(2025, 1, 1, tzinfo=UTC),
        datetime.datetime(2025, 1, 1, 10, tzinfo=UTC),
        None,
        datetime.datetime(2024, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    ],
    "ts_ny": [
        datetime.datetime(2025, 1, 1, tzinfo=UTC),
        datetime.datetime(2025, 1, 1, 10, tzinfo=UTC),
        None,
        datetime.datetime(2025, 11, 2, 5, 30, tzinfo=UTC),  # 01:30 EST, after the fall-back
    ],
    "b": [True, False, None, True],
    "my col": [1, 2, None, 4],
    "select": [1, 2, None, 4],
    "Upper": [1, 2, None, 4],
}


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> tuple[pa.Table, Any, Any]:
    table = pa.table(DATA, schema=DATA_SCHEMA)
    dataset = lance.write_dataset(table, str(tmp_path_factory.mktemp("lance") / "t"))
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [table.to_batches()])
    return table, dataset, ctx


def _cases() -> list[Predicate]:
    cases: list[Predicate] = []
    for name in DATA_SCHEMA.names[1:]:
        value = DATA[name][1]
        cases += [
            EqualTo(name, value),
            NotEqualTo(name, value),
            LessThan(name, value),
            LessThanOrEqual(name, value),
            GreaterThan(name, value),
            GreaterThanOrEqual(name, value),
            In(name, (DATA[name][0], value)),
            NotIn(name, (DATA[name][0], value)),
            IsNull(name),
            NotNull(name),
        ]
    cases += [
        StartsWith("s", "a%"),
        NotStartsWith("s", "a%"),
        StartsWith("s", "it'"),
        StartsWith("ls", "y'"),
        EqualTo(
            "ts_utc",
            datetime.datetime(
                2025, 1, 1, 19, tzinfo=datetime.timezone(datetime.timedelta(hours=9))
            ),
        ),
        EqualTo("ts_ny", datetime.datetime(2025, 11, 2, 5, 30, tzinfo=UTC)),
        GreaterThan("f64", 0.1) | IsNull("b"),
        Unknown("(`my col` % 2 = 0)", ("my col",)) & NotNull("Upper"),
        In("i8", ()),
        NotIn("i8", ()),
        AlwaysTrue(),
        AlwaysFalse(),
    ]
    return cases


# about 200 predicates, each read by Lance and by DataFusion
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("predicate", _cases(), ids=repr)
def test_to_sql_reads_alike_in_lance_and_datafusion(
    engines: tuple[pa.Table, Any, Any], predicate: Predicate
) -> None:
    table, dataset, ctx = engines
    bound = bind(predicate, DATA_SCHEMA)
    sql = to_sql(bound)
    in_lance = sorted(dataset.to_table(filter=sql, columns=["row"]).column(0).to_pylist())
    in_datafusion = sorted(ctx.sql(f"SELECT row FROM t WHERE {sql}").to_pydict()["row"])
    assert in_lance == in_datafusion, sql
    if not isinstance(bound, (Unknown, And)):
        by_arrow = table.filter(to_arrow(bound, DATA_SCHEMA)).column("row").to_pylist()
        assert sorted(by_arrow) == in_datafusion, sql


@pytest.mark.parametrize(
    ("predicate", "rows"),
    [
        (EqualTo("s", "it's"), [0]),
        (StartsWith("s", "a%"), [1]),
        (EqualTo("u64", 2**64 - 1), [1]),
        (EqualTo("f64", math.nan), [1]),
        (GreaterThan("f64", 0.1), [1, 3]),  # NaN sorts above every number
        (LessThan("f32", math.nan), [0, 3]),
        (EqualTo("dec", D("2.25")), [1]),
        (EqualTo("bin", b"\x00'"), [0]),
        (EqualTo("d", datetime.date(1, 1, 1)), [0]),
        (EqualTo("ts_s", datetime.datetime(2025, 1, 1, 0, 0, 1)), [1]),
        (LessThan("ts_ms", datetime.datetime(1970, 1, 1)), [1]),
        (GreaterThan("ts_ns", datetime.datetime(2025, 1, 1)), [0]),
        (EqualTo("ts_ny", datetime.datetime(2025, 1, 1, 10, tzinfo=UTC)), [1]),
        (EqualTo("ts_utc", datetime.datetime(2025, 1, 1)), [0]),
        (NotIn("i8", (5,)), [0, 3]),
        (NotEqualTo("b", True), [1]),
        (EqualTo("my col", 2) | EqualTo("select", 4) | EqualTo("Upper", 1), [0, 1, 3]),
    ],
)
def test_to_sql_known_rows(
    engines: tuple[pa.Table, Any, Any], predicate: Predicate, rows: list[int]
) -> None:
    table, dataset, _ = engines
    sql = to_sql(bind(predicate, DATA_SCHEMA))
    assert sorted(dataset.to_table(filter=sql, columns=["row"]).column(0).to_pylist()) == rows
    assert (
        sorted(table.filter(to_arrow(bind(predicate, DATA_SCHEMA), DATA_SCHEMA))["row"].to_pylist())
        == rows
    )


def test_parsed_filters_round_trip_through_lance(engines: tuple[pa.Table, Any, Any]) -> None:
    _, dataset, ctx = engines
    for text in [
        "`my col` >= 2 AND NOT (s LIKE 'a%')",
        "ts_ny = TIMESTAMP '2025-01-01 05:00:00'",  # wall-clock time in New York
        "d64 BETWEEN DATE '2000-01-01' AND '2025-12-10'",
        "dec < 2.5 OR i8 IN (127, 1000)",
        "upper(s) = 'AB' OR `select` IS NULL",
    ]:
        sql = to_sql(bind(parse_sql(text, DATA_SCHEMA), DATA_SCHEMA))
        in_lance = sorted(dataset.to_table(filter=sql, columns=["row"]).column(0).to_pylist())
        expected = sorted(ctx.sql(f"SELECT row FROM t WHERE {text}").to_pydict()["row"])
        assert in_lance == expected, (text, sql)


@pytest.mark.parametrize(
    ("value", "sql"),
    [
        (True, "true"),
        (-5, "-5"),
        (2.5, "2.5"),
        (1e20, "1e+20"),
        (-math.inf, "CAST('-inf' AS DOUBLE)"),
        (D("0.001"), "CAST('0.001' AS DECIMAL(3, 3))"),
        (D("1E+3"), "CAST('1000' AS DECIMAL(4, 0))"),
        (D("-12.50"), "CAST('-12.50' AS DECIMAL(4, 2))"),
        ("a'b", "'a''b'"),
        (b"\x01\xff", "X'01FF'"),
        (datetime.date(1, 1, 1), "DATE '0001-01-01'"),
        (datetime.datetime(2025, 1, 1, 10), "TIMESTAMP '2025-01-01 10:00:00.000000'"),
        (datetime.time(10, 30), "arrow_cast('10:30:00.000000', 'Time64(Microsecond)')"),
    ],
)
def test_sql_literal(value: Any, sql: str) -> None:
    assert sql_literal(value) == sql


def test_sql_literal_rejects_what_has_no_literal() -> None:
    with pytest.raises(InvalidInputError, match="no SQL literal for None"):
        sql_literal(None)
    with pytest.raises(InvalidInputError, match="contains a backtick"):
        to_sql(IsNull("a`b"))


def test_to_arrow_unknown_needs_an_answer() -> None:
    table = pa.table({"x": [1, 2]})
    p = Unknown("(`x` = 1)", ("x",)) | EqualTo("x", 2)
    with pytest.raises(InvalidInputError, match="pass unknown=True"):
        to_arrow(p)
    assert table.filter(to_arrow(p, unknown=True)).num_rows == 2
    assert table.filter(to_arrow(p, unknown=False))["x"].to_pylist() == [2]
    # NOT is pushed down first, so an Unknown under NOT still keeps every candidate
    assert table.filter(to_arrow(Not(p), unknown=True))["x"].to_pylist() == [1]
