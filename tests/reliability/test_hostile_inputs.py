"""Hostile partition values, literals and filters: each read equals the oracle's (the same rows
in one plain Lance table, read with the same filter) or is a typed error with nothing changed.
See :mod:`tests.reliability.hostile` for what "typed", "unchanged" and "oracle" mean.
"""

from __future__ import annotations

import builtins
import datetime as dt
import decimal
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from tests.reliability.hostile import (
    I64_MAX,
    I64_MIN,
    TS,
    U64_MAX,
    UTC,
    expect_same_as_oracle,
    expect_typed,
    plain_table,
    rows,
    sql_literal,
)

# ---------------------------------------------------------------- 1. partition values
# A hostile value is written beside an ordinary value and a NULL (three partitions), read back
# whole and with `k = <literal>` and `k IS NULL`, and its partition replaced with
# overwrite_partitions. The oracle filter writes int64's minimum as `-9223372036854775807 - 1`,
# which Lance parses; the filter given to us spells it as users do.
# month (of the year) or day (of the month) alone warns; these cases test their values
ALONE = pytest.mark.filterwarnings("ignore::lance_partitioned.AmbiguousPartitionWarning")


def _value(
    name: str,
    dtype: pa.DataType,
    partition_by: str,
    value: Any,
    ordinary: Any = None,
    marks: Any = (),
) -> Any:
    return pytest.param(dtype, partition_by, value, ordinary, id=name, marks=marks)


VALUE_CASES: list[Any] = [
    _value("null-int", pa.int64(), "k", None),
    _value("int64-min", pa.int64(), "k", I64_MIN),
    _value("int64-max", pa.int64(), "k", I64_MAX),
    _value("uint64-max", pa.uint64(), "k", U64_MAX),
    _value("uint64-2**63", pa.uint64(), "k", 2**63),
    _value("int8-min", pa.int8(), "k", -128),
    _value("int32-min", pa.int32(), "k", -(2**31)),
    _value("float-nan", pa.float64(), "k", math.nan),
    _value("float-neg-zero", pa.float64(), "k", -0.0),
    _value("float-pos-zero", pa.float64(), "k", 0.0),
    _value("float-inf", pa.float64(), "k", math.inf),
    _value("float-neg-inf", pa.float64(), "k", -math.inf),
    _value("float-max", pa.float64(), "k", 1.7976931348623157e308),
    _value("float-subnormal", pa.float64(), "k", 5e-324),
    _value("float32-nan", pa.float32(), "k", math.nan),
    _value("str-empty", pa.string(), "k", ""),
    _value("str-huge-100k", pa.string(), "k", "x" * 100_000),
    _value("str-emoji", pa.string(), "k", "🙂🇺🇸 zwj👩‍👩‍👧"),
    _value("str-unicode-nfd", pa.string(), "k", "e\u0301"),
    _value("str-dollar", pa.string(), "k", "$"),
    _value("str-dollar-dataset", pa.string(), "k", "a$dataset"),
    _value("str-slash", pa.string(), "k", "a/b"),
    _value("str-dotdot", pa.string(), "k", ".."),
    _value("str-dotdot-slash", pa.string(), "k", "../../etc"),
    _value("str-newline", pa.string(), "k", "line\nbreak\r\n"),
    _value("str-quote", pa.string(), "k", 'O\'Brien "x"'),
    _value("str-backslash", pa.string(), "k", "\\"),
    _value("str-nul-char", pa.string(), "k", "a\x00b"),
    _value("str-null-word", pa.string(), "k", "NULL"),
    _value("str-percent", pa.string(), "k", "%_"),
    _value("str-sql", pa.string(), "k", "'; DROP TABLE __manifest; --"),
    _value("large-string", pa.large_string(), "k", "large"),
    _value("bool-false", pa.bool_(), "k", False),
    _value("date-1900", pa.date32(), "k", dt.date(1900, 1, 1)),
    _value("date-0001", pa.date32(), "k", dt.date(1, 1, 1)),
    _value("date-9999", pa.date32(), "k", dt.date(9999, 12, 31)),
    _value("date-day-before-epoch", pa.date32(), "k", dt.date(1969, 12, 31)),
    _value("ts-epoch-minus-1us", TS, "k", dt.datetime(1969, 12, 31, 23, 59, 59, 999999, UTC)),
    _value("ts-year-1", TS, "k", dt.datetime(1, 1, 1, tzinfo=UTC)),
    _value(
        "ts-year-9999",
        TS,
        "k",
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999, UTC),
    ),
    _value("decimal-38", pa.decimal128(38, 10), "k", decimal.Decimal("-" + "9" * 28 + ".5")),
    _value("year-before-1970", TS, "year(k)", dt.datetime(1969, 12, 31, 23, 0, tzinfo=UTC)),
    _value("month-before-1970", pa.date32(), "month(k)", dt.date(1969, 2, 28), marks=ALONE),
    _value(
        "day-year-1",
        TS,
        "day(k)",
        dt.datetime(1, 1, 2, 0, 30, tzinfo=UTC),
        marks=ALONE,
    ),
    _value("date-year-1", TS, "date(k)", dt.datetime(1, 1, 2, 0, 30, tzinfo=UTC)),
    _value("months-year-1", TS, "months(k)", dt.datetime(1, 1, 2, 0, 30, tzinfo=UTC)),
    _value("hours-year-9999", TS, "hours(k)", dt.datetime(9999, 12, 31, 23, 30, tzinfo=UTC)),
    _value("date-before-1970", TS, "date(k)", dt.datetime(1969, 12, 31, 23, 59, tzinfo=UTC)),
    _value("hour-before-1970", TS, "hour(k)", dt.datetime(1969, 12, 31, 23, 59, tzinfo=UTC)),
    _value("bucket-int64-min", pa.int64(), "bucket(16, k)", I64_MIN),
    _value("bucket-uint64-max", pa.uint64(), "bucket(16, k)", U64_MAX),
    _value("bucket-emoji", pa.string(), "bucket(7, k)", "🙂"),
    _value("bucket-nan", pa.float64(), "bucket(4, k)", math.nan, ordinary=1.0),
    _value("truncate-emoji", pa.string(), "truncate(2, k)", "🙂🙃🙂"),
    _value("truncate-int64-min", pa.int64(), "truncate(10, k)", I64_MIN),
    _value("truncate-negative", pa.int64(), "truncate(10, k)", -11, ordinary=17),
]
_ORDINARY: dict[str, Any] = {
    "int": 7,
    "uint": 7,
    "double": 2.5,
    "float": 2.5,
    "string": "plain",
    "large_string": "plain",
    "bool": True,
    "date32[day]": dt.date(2025, 6, 7),
    "timestamp[us, tz=UTC]": dt.datetime(2025, 6, 7, 8, tzinfo=UTC),
    "decimal128(38, 10)": decimal.Decimal("1.5"),
}


def _ordinary(dtype: pa.DataType) -> Any:
    text = str(dtype)
    for prefix in ("int", "uint"):
        if text.startswith(prefix):
            return _ORDINARY[prefix]
    return _ORDINARY[text]


@pytest.mark.parametrize(("dtype", "partition_by", "value", "ordinary"), VALUE_CASES)
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
def test_hostile_partition_value(
    tmp_path: Path, dtype: pa.DataType, partition_by: str, value: Any, ordinary: Any
) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", dtype)])
    ordinary = _ordinary(dtype) if ordinary is None else ordinary
    data = pa.table({"id": [1, 2, 3], "k": pa.array([value, ordinary, None], dtype)})
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=schema, partition_by=partition_by
    )
    parts = 2 if value is None else 3
    assert ns.write(data).partitions_created == parts
    oracle = plain_table(tmp_path, data)
    reopened = lp.PartitionedNamespace.open(ns.uri)
    expect_same_as_oracle(reopened, oracle)
    expect_same_as_oracle(reopened, oracle, "k IS NULL")
    if value is not None:
        expect_same_as_oracle(
            reopened,
            oracle,
            f"k = {sql_literal(value, dtype)}",
            oracle_filter=f"k = {sql_literal(value, dtype, exact=True)}",
        )
    # replacing the hostile value's partition replaces only it
    replacement = pa.table({"id": [9], "k": pa.array([value], dtype)})
    ns.write(replacement, mode="overwrite_partitions")
    kept = data.slice(1, 1) if value is None else data.slice(1)  # NULL is the third row's too
    expected = pa.concat_tables([kept, replacement])
    assert rows(lp.PartitionedNamespace.open(ns.uri).to_table()) == rows(expected)


# ---------------------------------------------------------------- 2. literals and filters
# One namespace, partitioned by an int64, a string and a float64 column, holds the hostile
# values; each filter's result must equal the plain Lance table's, or be InvalidInputError.
_F = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("k", pa.int64()),
        ("s", pa.string()),
        ("f", pa.float64()),
        ("d", pa.date32()),
        ("ts", TS),
        ("v", pa.int64()),
        ("u", pa.uint64()),
        ("t", pa.string()),
    ]
)
_FILTER_ROWS = [
    # id, k, s, f, d, ts, v, u, t
    (1, I64_MIN, "$", -0.0, dt.date(1969, 7, 20), dt.datetime(1900, 1, 1, tzinfo=UTC)),
    (
        2,
        I64_MAX,
        "..",
        math.nan,
        dt.date(1, 1, 1),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999, UTC),
    ),
    (3, None, "a/b", math.inf, dt.date(9999, 12, 31), dt.datetime(2262, 1, 1, tzinfo=UTC)),
    (4, 0, None, None, None, None),
    (5, 1, "", 0.0, dt.date(1970, 1, 1), dt.datetime(1970, 1, 1, tzinfo=UTC)),
    (6, -1, "🙂emoji", -math.inf, dt.date(2000, 2, 29), dt.datetime(2000, 2, 29, 12, tzinfo=UTC)),
    (7, 1, "line\nbreak", 1.0, dt.date(2025, 1, 1), dt.datetime(2025, 1, 1, tzinfo=UTC)),
    (8, 2, "O'Brien", 2.5, dt.date(2025, 1, 2), dt.datetime(2025, 1, 2, tzinfo=UTC)),
    (9, 3, "x" * 5000, 1e-300, dt.date(2025, 1, 3), dt.datetime(2025, 1, 3, tzinfo=UTC)),
    (10, 4, "'; DROP TABLE __manifest; --", -1.5, None, None),
    (11, 5, "NULL", 3.0, dt.date(1600, 1, 1), None),
    (12, 6, "\\", 4.0, None, None),
]


def _filter_table() -> pa.Table:
    columns = list(zip(*_FILTER_ROWS, strict=False))
    ids = list(columns[0])
    return pa.table(
        {
            "id": ids,
            "k": columns[1],
            "s": columns[2],
            "f": columns[3],
            "d": columns[4],
            "ts": columns[5],
            "v": [I64_MIN, I64_MAX, None, 0, *range(1, len(ids) - 3)],
            "u": [U64_MAX, 2**63, None, *range(len(ids) - 3)],
            "t": ["a'b", "%_", None, "", "🙂", "line\nbreak", *(f"t{i}" for i in range(6))],
        },
        schema=_F,
    )


@pytest.fixture(scope="module")
def filter_ns(tmp_path_factory: pytest.TempPathFactory) -> tuple[lp.PartitionedNamespace, Any]:
    tmp = tmp_path_factory.mktemp("filters")
    data = _filter_table()
    ns = lp.PartitionedNamespace.create(str(tmp / "ns"), schema=_F, partition_by="k, s, f")
    ns.write(data)
    return lp.PartitionedNamespace.open(ns.uri), plain_table(tmp, data)


def _ors(n: int) -> str:
    return " OR ".join(f"v = {i}" for i in range(n))


# (id, filter, oracle filter or None, marks): the result must be the oracle's
DATA_FILTERS: list[Any] = [
    ("k-int64-min", "k = -9223372036854775808", "k = -9223372036854775807 - 1", ()),
    ("k-int64-max", "k = 9223372036854775807", None, ()),
    ("k-gt-max-minus-1", "k > 9223372036854775806", None, ()),
    ("k-lt-min-plus-1", "k < -9223372036854775807", None, ()),
    ("k-ge-min", "k >= -9223372036854775807 - 1", None, ()),
    ("v-int64-min", "v = -9223372036854775808", "v = -9223372036854775807 - 1", ()),
    ("v-int64-max", "v = 9223372036854775807", None, ()),
    ("u-uint64-max", "u = 18446744073709551615", None, ()),
    ("u-2**63", "u >= 9223372036854775808", None, ()),
    ("k-is-null", "k IS NULL", None, ()),
    ("k-is-not-null", "k IS NOT NULL", None, ()),
    ("k-eq-null", "k = NULL", None, ()),
    ("k-in-with-null", "k IN (0, 1, NULL)", None, ()),
    ("k-not-in", "k NOT IN (0, 1)", None, ()),
    ("not-k", "NOT (k = 1)", None, ()),
    ("k-between-empty", "k BETWEEN 5 AND 1", None, ()),
    ("k-between", "k BETWEEN -1 AND 1", None, ()),
    ("s-dollar", "s = '$'", None, ()),
    ("s-dotdot", "s = '..'", None, ()),
    ("s-slash", "s = 'a/b'", None, ()),
    ("s-empty", "s = ''", None, ()),
    ("s-emoji", "s = '🙂emoji'", None, ()),
    ("s-newline", "s = 'line\nbreak'", None, ()),
    ("s-quote", "s = 'O''Brien'", None, ()),
    ("s-injection-or", "s = 'x'' OR ''1''=''1'", None, ()),
    ("s-injection-drop", "s = '''; DROP TABLE __manifest; --'", None, ()),
    ("s-null-word", "s = 'NULL'", None, ()),
    ("s-backslash", "s = '\\'", None, ()),
    ("s-is-null", "s IS NULL", None, ()),
    ("s-like-dollar", "s LIKE '%$%'", None, ()),
    ("s-like-prefix", "s LIKE '..%'", None, ()),
    ("s-gt-empty", "s > ''", None, ()),
    ("s-in", "s IN ('$', '..', '', 'a/b')", None, ()),
    ("s-huge-length", "length(s) > 1000", None, ()),
    ("f-eq-zero", "f = 0.0", None, ()),
    ("f-eq-neg-zero", "f = -0.0", None, ()),
    ("f-in-zero", "f IN (0.0, 1.0)", None, ()),
    ("f-in-neg-zero", "f IN (-0.0, 2.5)", None, ()),
    ("f-gt-zero", "f > 0", None, ()),
    ("f-lt-zero", "f < 0", None, ()),
    ("f-le-neg-zero", "f <= -0.0", None, ()),
    ("f-nan", "f = CAST('NaN' AS DOUBLE)", None, ()),
    ("f-isnan", "isnan(f)", None, ()),
    ("f-inf", "f = CAST('inf' AS DOUBLE)", None, ()),
    ("f-neg-inf", "f = CAST('-inf' AS DOUBLE)", None, ()),
    ("f-gt-huge", "f > 1e308", None, ()),
    ("f-is-null", "f IS NULL", None, ()),
    ("d-before-1970", "d < DATE '1970-01-01'", None, ()),
    ("d-year-1", "d = DATE '0001-01-01'", None, ()),
    ("d-year-9999", "d = DATE '9999-12-31'", None, ()),
    ("ts-before-epoch", "ts < TIMESTAMP '1970-01-01 00:00:00+00:00'", None, ()),
    ("ts-year-1700", "ts > TIMESTAMP '1700-01-01 00:00:00+00:00'", None, ()),
    ("ts-year-1", "ts > TIMESTAMP '0001-01-01 00:00:00+00:00'", None, ()),
    ("ts-year-9999", "ts < TIMESTAMP '9999-12-31 23:59:59.999999'", None, ()),
    ("and-partition-and-data", "k = 1 AND s = 'line\nbreak' AND v > 0", None, ()),
    ("or-across-columns", "s = '$' OR f = 2.5 OR v = 0", None, ()),
    ("or-50", _ors(50), None, ()),
    ("in-10000", f"k IN ({', '.join(map(str, range(10_000)))})", None, ()),
    ("parens-30-deep", "(" * 30 + "k = 1" + ")" * 30, None, ()),
    ("not-not-30", "NOT " * 30 + "k = 1", None, ()),
    ("comment-dash", "k = 1 -- AND s = 'x'", None, ()),
    ("comment-block", "/* hi */ k = 1", None, ()),
    ("backtick-ident", "`k` = 1", None, ()),
    ("k-out-of-range", "k = 9223372036854775808", "k IS NULL AND k IS NOT NULL", ()),
    ("blank-filter", "   ", "id IS NOT NULL", ()),  # no filter (Lance refuses a blank one)
]

# (id, filter): InvalidInputError, nothing changed
BAD_FILTERS: list[Any] = [
    ("unbalanced-open", "(k = 1"),
    ("unbalanced-close", "k = 1)"),
    ("dangling-and", "k = 1 AND"),
    ("unknown-column", "nope = 1"),
    ("unknown-column-in-or", "k = 1 OR nope = 2"),
    ("manifest-column-object-id", "object_id = 'v1'"),
    ("manifest-column-read-version", "read_version = 1"),
    ("int-vs-string", "k = 'abc'"),
    ("string-vs-int", "s = 1"),
    ("statement-injection", "k = 1; DROP TABLE __manifest"),
    ("select-statement", "SELECT * FROM __manifest"),
    ("empty-in", "k IN ()"),
    ("unknown-function", "no_such_function(k) = 1"),
    ("unterminated-string", "s = 'abc"),
    ("assignment", "k := 1"),
    ("subquery", "k IN (SELECT 1)"),
    ("parens-200-deep", "(" * 200 + "k = 1" + ")" * 200),  # Lance's parser refuses 50
    ("not-100-deep", "NOT " * 100 + "k = 1"),
]


@pytest.mark.parametrize(
    ("filter", "oracle_filter"),
    [pytest.param(f, o, id=i, marks=m) for i, f, o, m in DATA_FILTERS],
)
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
def test_hostile_filter_reads_the_right_rows(
    filter_ns: tuple[lp.PartitionedNamespace, Any], filter: str, oracle_filter: str | None
) -> None:
    ns, oracle = filter_ns
    expect_same_as_oracle(ns, oracle, filter, oracle_filter=oracle_filter)


@pytest.mark.parametrize("filter", [pytest.param(f, id=i) for i, f in BAD_FILTERS])
def test_hostile_filter_is_a_typed_error(
    filter_ns: tuple[lp.PartitionedNamespace, Any], filter: str
) -> None:
    ns, _ = filter_ns
    error = expect_typed(Path(ns.uri), errors.InvalidInputError, lambda: ns.to_table(filter))
    expect_typed(Path(ns.uri), errors.InvalidInputError, lambda: ns.count_rows(filter))
    assert filter.strip()[:5] in str(error) or "column" in str(error)


_CHILD_READ = """
import json, sys
import lance_partitioned as lp
ns = lp.PartitionedNamespace.open(sys.argv[1])
try:
    ids = sorted(ns.to_table(sys.stdin.read(), columns=["id"]).column("id").to_pylist())
except BaseException as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)[:500]}))
else:
    print(json.dumps({"ids": ids}))
"""


@pytest.mark.parametrize(
    "terms",
    [
        # slow: a child interpreter importing the library (in the inner loop, long filters
        # are read in process by test_hostile_filter_reads_the_right_rows: or-50, in-10000)
        pytest.param(1000, id="or-1000", marks=pytest.mark.slow),
        pytest.param(10_000, id="or-10000", marks=pytest.mark.slow),  # ~17 s, loaded
    ],
)
def test_very_long_filter_in_a_child_process(
    filter_ns: tuple[lp.PartitionedNamespace, Any], terms: int
) -> None:
    """Read with an OR of ``terms`` terms in a child process, since a crash in native code
    would take pytest down with it."""
    ns, oracle = filter_ns
    filter = _ors(terms)
    child = subprocess.run(
        [sys.executable, "-c", _CHILD_READ, ns.uri],
        input=filter,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if child.returncode != 0:
        raise ChildProcessError(f"exit status {child.returncode}: {child.stderr[-2000:]}")
    outcome = json.loads(child.stdout.strip().splitlines()[-1])
    if "error" in outcome:
        raised = getattr(builtins, outcome["error"], None)
        if isinstance(raised, type) and issubclass(raised, BaseException):
            raise raised(outcome["message"])
        raise AssertionError(f"{outcome['error']}: {outcome['message']}")
    expected = sorted(oracle.to_table(filter=filter).column("id").to_pylist())
    assert outcome["ids"] == expected
