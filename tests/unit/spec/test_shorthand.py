"""The ``partition_by`` shorthand: every form, names, quoting, and every error with its position."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lance_partitioned import errors
from lance_partitioned.spec.partitioning import UnboundPartitionField
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.shorthand import AmbiguousPartitionWarning, parse_partition_by
from lance_partitioned.spec.transforms import (
    Bucket,
    Date,
    Day,
    Hour,
    Identity,
    Month,
    Opaque,
    Truncate,
    Year,
)


def _field(name: str, dtype: pa.DataType, field_id: int, *, deprecated: bool = False) -> pa.Field:
    metadata = {"lance:field_id": str(field_id)}
    if deprecated:
        metadata["lance:deprecated"] = "true"
    return pa.field(name, dtype, metadata=metadata)


SCHEMA = NamespaceSchema(
    pa.schema(
        [
            _field("id", pa.int64(), 0),
            _field("event_date", pa.date32(), 1),
            _field("ts", pa.timestamp("us", "UTC"), 2),
            _field("country", pa.utf8(), 3),
            _field("My Col", pa.int32(), 4),
            _field('say "hi"', pa.utf8(), 5),
            _field("Country", pa.utf8(), 6),
            _field("legacy", pa.utf8(), 7, deprecated=True),
        ]
    )
)


def parse(text: str) -> list[UnboundPartitionField]:
    return parse_partition_by(text, SCHEMA)


def summary(text: str) -> list[tuple[str, int, str, pa.DataType]]:
    return [(f.name, f.source_id, f.expression, f.result_type) for f in parse(text)]


def parse_error(text: str) -> errors.PartitionByParseError:
    with pytest.raises(errors.PartitionByParseError) as info:
        parse(text)
    assert info.value.text == text
    return info.value


def assert_error_at(text: str, token: str, *fragments: str, occurrence: int = 1) -> None:
    """The error points at the ``occurrence``-th ``token`` in ``text`` and quotes it."""
    pos = -1
    for _ in range(occurrence):
        pos = text.index(token, pos + 1)
    exc = parse_error(text)
    assert exc.position == pos, str(exc)
    message = str(exc)
    assert repr(token) in message or f"'{token}'" in message, message
    for fragment in fragments:
        assert fragment in message, message
    lines = message.splitlines()
    assert lines[-2] == f"  {text}"
    assert lines[-1] == "  " + " " * pos + "^"


# ---------------------------------------------------------------------------- forms


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("country", ("country", 3, Identity(), pa.utf8())),
        ("event_date", ("event_date", 1, Identity(), pa.date32())),
        ("year(event_date)", ("event_date_year", 1, Year(), pa.int32())),
        pytest.param(
            "month(ts)",
            ("ts_month", 2, Month(), pa.int32()),
            marks=pytest.mark.filterwarnings("ignore::lance_partitioned.AmbiguousPartitionWarning"),
        ),
        pytest.param(
            "day(event_date)",
            ("event_date_day", 1, Day(), pa.int32()),
            marks=pytest.mark.filterwarnings("ignore::lance_partitioned.AmbiguousPartitionWarning"),
        ),
        ("hour(ts)", ("ts_hour", 2, Hour(), pa.int32())),
        ("date(ts)", ("ts_date", 2, Date(), pa.date32())),
        ("bucket(16, id)", ("id_bucket", 0, Bucket(16), pa.int64())),
        ("truncate(3, country)", ("country_trunc", 3, Truncate(3, string=True), pa.utf8())),
        ("truncate(10, id)", ("id_trunc", 0, Truncate(10), pa.int64())),
    ],
)
def test_each_form_with_its_default_name(
    text: str, expected: tuple[str, int, object, pa.DataType]
) -> None:
    (field,) = parse(text)
    assert (field.name, field.source_id, field.transform, field.result_type) == expected
    assert field.expression == field.transform.expression  # type: ignore[attr-defined]


def test_appendix_d_expressions() -> None:
    fields = parse("year(ts), bucket(16, id), truncate(3, country), truncate(10, id)")
    assert [f.expression for f in fields] == [
        "date_part('year', col)",
        "abs(hash(col)) % 16",
        "left(col, 3)",
        "col - (col % 10)",
    ]


def test_expr_form() -> None:
    (field,) = parse("expr('date_part(''year'', col) + 1', event_date, 'int64')")
    assert field.name == "event_date_expr"
    assert field.expression == "date_part('year', col) + 1"
    assert field.result_type == pa.int64()
    assert field.source_id == 1
    assert isinstance(field.transform, Opaque)


def test_expr_form_recognises_appendix_d_and_keeps_the_declared_type() -> None:
    (year,) = parse("expr('date_part(''year'', col)', event_date, 'int32') AS y")
    assert (year.name, year.transform, year.result_type) == ("y", Year(), pa.int32())
    (wide,) = parse("expr('date_part(''year'', col)', event_date, 'int64')")
    assert wide.result_type == pa.int64()


def test_expr_result_type_as_json_object() -> None:
    (field,) = parse(
        """expr('col * 2', id, '{"type": "decimal128", "precision": 20, "scale": 0}')"""
    )
    assert field.result_type == pa.decimal128(20, 0)


def test_several_fields_keep_their_order() -> None:
    assert summary("year(event_date) AS event_year, country") == [
        ("event_year", 1, "date_part('year', col)", pa.int32()),
        ("country", 3, "col", pa.utf8()),
    ]


@pytest.mark.parametrize("text", ["", " ", "\t\n  "])
def test_blank_is_unpartitioned(text: str) -> None:
    assert parse(text) == []


# ---------------------------------------------------------------------------- names, case, quoting


def test_as_names_and_case_insensitive_keywords() -> None:
    assert [f.name for f in parse("YEAR(ts) as y, Bucket(4, id) As b, country aS c")] == [
        "y",
        "b",
        "c",
    ]
    assert parse("YEAR(ts)")[0].transform == Year()
    assert parse("TrUnCaTe(2, country)")[0].transform == Truncate(2, string=True)


def test_whitespace_is_free() -> None:
    assert summary("  bucket (  16 ,id )AS  b ,\n\tcountry  ") == [
        ("b", 0, "abs(hash(col)) % 16", pa.int64()),
        ("country", 3, "col", pa.utf8()),
    ]
    assert summary("bucket(16,id),country") == summary("bucket( 16 , id ) , country")


def test_column_names_are_case_sensitive() -> None:
    assert summary("Country, country") == [
        ("Country", 6, "col", pa.utf8()),
        ("country", 3, "col", pa.utf8()),
    ]


def test_quoted_identifiers() -> None:
    assert summary('"My Col" AS "Part Name", bucket(2, "say ""hi""") AS "a,b"') == [
        ("Part Name", 4, "col", pa.int32()),
        ("a,b", 5, "abs(hash(col)) % 2", pa.int64()),
    ]
    # a quoted name is always a column, even when it spells a function
    assert parse('"country" AS year')[0].name == "year"
    assert parse('truncate(1, "My Col")')[0].name == "My Col_trunc"


# ---------------------------------------------------------------------------- errors


def test_error_is_a_partition_spec_error() -> None:
    exc = parse_error("bucket(0, id)")
    assert isinstance(exc, errors.PartitionSpecError)
    assert isinstance(exc, errors.InvalidInputError)


def test_bucket_zero() -> None:
    assert_error_at("bucket(0, id)", "0", ">= 1")


def test_truncate_negative() -> None:
    assert_error_at("truncate(-1, country)", "-1", ">= 1")


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("bucket(1.5, id)", "1.5"),
        ("bucket(16x, id)", "16x"),
        ("truncate(w, country)", "w"),
        ("bucket('16', id)", "'16'"),
    ],
)
def test_non_integer_count(text: str, token: str) -> None:
    assert_error_at(text, token, "integer")


def test_unknown_function() -> None:
    assert_error_at("country, weeks(ts)", "weeks", "unknown partition function")


def test_unknown_column() -> None:
    assert_error_at("year(event_date), bucket(4, ID)", "ID", "unknown column", "columns: id")


def test_unknown_identity_column() -> None:
    assert_error_at("country, nope", "nope", "unknown column")


def test_deprecated_column_is_unknown() -> None:
    assert_error_at("bucket(2, legacy)", "legacy", "unknown column", "dropped")


def test_year_on_a_string_column() -> None:
    assert_error_at("year(country)", "country", "year()", "string")


def test_hour_on_a_date() -> None:
    assert_error_at("hour(event_date)", "event_date", "hour()", "date32")


def test_duplicate_default_names() -> None:
    assert_error_at("country, year(ts), country", "country", "duplicate", occurrence=2)


def test_duplicate_as_name() -> None:
    assert_error_at("year(ts) AS y, month(ts) AS y", "y", "duplicate", occurrence=3)


@pytest.mark.parametrize("name", ["location", "read_version", "object_id"])
def test_reserved_name(name: str) -> None:
    assert_error_at(f"country AS {name}", name, "reserved")


def test_missing_close_paren() -> None:
    exc = parse_error("year(ts")
    assert exc.position == len("year(ts")
    assert "')'" in str(exc)
    assert "end of text" in str(exc)
    assert str(exc).splitlines()[-1] == "  " + " " * 7 + "^"


def test_missing_close_paren_before_next_field() -> None:
    assert_error_at("bucket(4, id country", "country", "')'")


@pytest.mark.parametrize(
    ("text", "token", "occurrence"),
    [
        ("year(ts) y", "y", 2),
        ("country)", ")", 1),
        ("bucket(4, id) AS b c", "c", 2),
    ],
)
def test_trailing_garbage(text: str, token: str, occurrence: int) -> None:
    assert_error_at(text, token, "expected ','", occurrence=occurrence)


@pytest.mark.parametrize(("text", "position"), [("country,", 8), ("country,,id", 8), (",id", 0)])
def test_empty_item(text: str, position: int) -> None:
    exc = parse_error(text)
    assert exc.position == position
    assert "expected a column or a partition function" in str(exc)


def test_missing_name_after_as() -> None:
    exc = parse_error("country AS")
    assert exc.position == len("country AS")
    assert "AS" in str(exc)


@pytest.mark.parametrize(("text", "token"), [("country$", "$"), ("year(ts) + 1", "+")])
def test_unexpected_character(text: str, token: str) -> None:
    assert_error_at(text, token, "unexpected character")


@pytest.mark.parametrize(("text", "token"), [('"country', '"'), ("expr('col, id, 'int32')", "'")])
def test_unterminated_quotes(text: str, token: str) -> None:
    assert_error_at(text, token, "unterminated", occurrence=text.count(token))


def test_expr_unknown_result_type() -> None:
    assert_error_at("expr('col', id, 'int99')", "'int99'", "result type", "int99")


def test_expr_needs_a_result_type() -> None:
    assert_error_at("expr('col', id)", ")", "','")


def test_expr_needs_quoted_sql() -> None:
    assert_error_at("expr(col, id, 'int64')", "col", "single-quoted")


def test_caret_line_survives_newlines() -> None:
    text = "country,\n  hour(event_date)"
    exc = parse_error(text)
    lines = str(exc).splitlines()
    assert lines[-2] == "  country,   hour(event_date)"
    assert lines[-1].index("^") - 2 == text.index("event_date")


def test_truncate_on_a_date() -> None:
    assert_error_at("truncate(3, event_date)", "event_date", "truncate()", "date32")


def test_expr_that_does_not_apply() -> None:
    assert_error_at("expr('upper(col)', id, 'utf8')", "id", "expr()", "int64")


def test_expr_opaque_sql() -> None:
    (field,) = parse("expr('upper(col)', country, 'utf8') AS up")
    assert (field.name, field.expression, field.result_type) == ("up", "upper(col)", pa.utf8())
    assert field.transform.apply(pa.array(["us", None])).to_pylist() == ["US", None]


# ---------------------------------------------------------------- day / month warnings


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("day(ts)", ["ts_day"]),
        ("month(ts), day(ts)", ["ts_month", "ts_day"]),
        ("year(ts), day(ts)", ["ts_day"]),
        ("month(ts)", ["ts_month"]),
        ("country, month(event_date) AS m", ["m"]),
        ("year(event_date), month(ts)", ["ts_month"]),  # the year of another column
        ("years(ts), day(ts)", ["ts_day"]),  # no month above the day
        ("day(ts), months(ts)", ["ts_day"]),  # the months come after it
        ("expr('date_part(''day'', col)', ts, 'int32')", ["ts_expr"]),
    ],
)
def test_day_or_month_without_the_coarser_parts_warns(text: str, fields: list[str]) -> None:
    with pytest.warns(AmbiguousPartitionWarning, match=r"date\(") as caught:
        parse(text)
    assert [str(w.message).split("'")[1] for w in caught] == fields
    assert {w.filename for w in caught} == {__file__}  # points at the caller, not at our code


@pytest.mark.parametrize(
    "text",
    [
        "year(ts), month(ts), day(ts), hour(ts)",
        "year(ts), month(ts)",
        "year(ts)",
        "date(ts), hour(ts)",
        "hour(ts)",
        "date(ts), day(ts)",
        "years(ts), month(ts)",
        "months(ts), day(ts)",
        "years(ts), month(ts), day(ts)",
        "hours(ts), day(ts)",
        "months(ts)",
    ],
)
def test_ordered_date_parts_do_not_warn(text: str) -> None:
    parse(text)  # filterwarnings = error: any warning fails


def test_the_messages_say_what_day_and_month_mean() -> None:
    with pytest.warns(AmbiguousPartitionWarning) as caught:
        parse("day(ts), month(event_date)")
    day, month = (str(w.message) for w in caught)
    assert "day of the MONTH (1-31)" in day
    assert "date(ts)" in day
    assert "month of the YEAR (1-12)" in month
    assert "year(event_date), month(event_date)" not in day
    assert "use months(event_date) (or year(event_date), month(event_date)" in month
    assert "months(ts)" in day
