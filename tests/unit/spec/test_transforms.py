"""Partition transforms: Appendix D forms, their fast paths and parse_transform."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from lance_partitioned.errors import PartitionSpecError, TransformError
from lance_partitioned.spec import fastpath
from lance_partitioned.spec.transforms import (
    Bucket,
    Day,
    Hour,
    Identity,
    Month,
    Opaque,
    Transform,
    Truncate,
    Year,
    parse_transform,
)

UTC = datetime.timezone.utc


def _both(transform: Transform, values: pa.Array) -> list[object]:
    """The fast path's values, after checking that DataFusion agrees (type and values)."""
    fast = transform.apply(values)
    reference = transform.apply_reference(values)
    assert fast.type == reference.type == transform.result_type(values.type)
    assert fast.to_pylist() == reference.to_pylist()
    return fast.to_pylist()


# ----------------------------------------------------------------- expression, type, apply


@pytest.mark.parametrize(
    ("transform", "expression"),
    [
        (Identity(), "col"),
        (Year(), "date_part('year', col)"),
        (Month(), "date_part('month', col)"),
        (Day(), "date_part('day', col)"),
        (Hour(), "date_part('hour', col)"),
        (Bucket(16), "abs(hash(col)) % 16"),
        (Truncate(3, string=True), "left(col, 3)"),
        (Truncate(10), "col - (col % 10)"),
        (Opaque("upper(col)"), "upper(col)"),
    ],
)
def test_expression_text_is_appendix_d(transform: Transform, expression: str) -> None:
    assert transform.expression == expression
    assert parse_transform(expression) == transform


@pytest.mark.parametrize(
    ("transform", "source", "result"),
    [
        (Identity(), pa.date32(), pa.date32()),
        (Identity(), pa.timestamp("ns", tz="UTC"), pa.timestamp("ns", tz="UTC")),
        (Year(), pa.date32(), pa.int32()),
        (Month(), pa.timestamp("ms"), pa.int32()),
        (Day(), pa.date64(), pa.int32()),
        (Hour(), pa.timestamp("us", tz="Europe/Paris"), pa.int32()),
        (Bucket(8), pa.utf8(), pa.int64()),
        (Truncate(2, string=True), pa.large_utf8(), pa.utf8()),
        (Truncate(2, string=True), pa.string_view(), pa.utf8()),
        (Truncate(10), pa.int16(), pa.int16()),
        (Truncate(10), pa.decimal128(10, 2), pa.decimal128(10, 2)),
    ],
)
def test_result_type(transform: Transform, source: pa.DataType, result: pa.DataType) -> None:
    assert transform.result_type(source) == result


@pytest.mark.parametrize(
    ("transform", "source", "expected"),
    [
        (Identity(), pa.list_(pa.int64()), True),
        (Year(), pa.date32(), True),
        (Year(), pa.timestamp("s"), True),
        (Year(), pa.utf8(), False),
        (Year(), pa.int64(), False),
        (Hour(), pa.date32(), False),
        (Hour(), pa.date64(), False),
        (Hour(), pa.timestamp("ns", tz="UTC"), True),
        (Bucket(4), pa.decimal256(40, 2), True),
        (Bucket(4), pa.list_(pa.int64()), False),
        (Bucket(4), pa.time32("s"), False),
        (Truncate(3, string=True), pa.utf8(), True),
        (Truncate(3, string=True), pa.int64(), False),
        (Truncate(3, string=True), pa.binary(), False),
        (Truncate(3), pa.uint64(), True),
        (Truncate(3), pa.float64(), False),
        (Truncate(3), pa.utf8(), False),
        (Opaque("upper(col)"), pa.utf8(), True),
        (Opaque("upper(col)"), pa.int64(), False),
    ],
)
def test_can_apply(transform: Transform, source: pa.DataType, expected: bool) -> None:
    assert transform.can_apply(source) is expected


def test_apply_on_a_type_it_cannot_apply_to_names_expression_and_type() -> None:
    with pytest.raises(TransformError, match=r"date_part\('hour', col\).*date32"):
        Hour().apply(pa.array([datetime.date(2025, 1, 1)]))
    with pytest.raises(TransformError, match=r"left\(col, 2\).*int64"):
        Truncate(2, string=True).apply_reference(pa.array([1]))


def test_identity_returns_the_values() -> None:
    values = pa.array(["a", None, "b"])
    assert _both(Identity(), values) == ["a", None, "b"]
    chunked = pa.chunked_array([[1, 2], [None]])
    assert Identity().apply(chunked).to_pylist() == [1, 2, None]


def test_date_parts_of_dates() -> None:
    values = pa.array([datetime.date(2025, 12, 10), datetime.date(1969, 12, 31), None])
    assert _both(Year(), values) == [2025, 1969, None]
    assert _both(Month(), values) == [12, 12, None]
    assert _both(Day(), values) == [10, 31, None]
    assert _both(Year(), values.cast(pa.date64())) == [2025, 1969, None]


def test_date_parts_of_timestamps_in_the_columns_zone() -> None:
    # 2025-12-31T23:30Z is already 2026-01-01 08:30 in Tokyo and still 18:30 in New York: date
    # parts are DataFusion's, of the wall clock (issue 15 item 6; before, always UTC's).
    instant = datetime.datetime(2025, 12, 31, 23, 30, tzinfo=UTC)
    expected = {
        None: (2025, 12, 31, 23),
        "UTC": (2025, 12, 31, 23),
        "Asia/Tokyo": (2026, 1, 1, 8),
        "America/New_York": (2025, 12, 31, 18),
    }
    for tz, (year, month, day, hour) in expected.items():
        for unit in ("s", "ms", "us", "ns"):
            value = instant if tz else instant.replace(tzinfo=None)
            values = pa.array([value, None], pa.timestamp(unit, tz=tz))
            assert _both(Year(), values) == [year, None]
            assert _both(Month(), values) == [month, None]
            assert _both(Day(), values) == [day, None]
            assert _both(Hour(), values) == [hour, None]


def test_date_parts_before_the_epoch_floor() -> None:
    values = pa.array([-1], pa.timestamp("us"))  # 1969-12-31T23:59:59.999999
    assert _both(Year(), values) == [1969]
    assert _both(Day(), values) == [31]
    assert _both(Hour(), values) == [23]


def test_date_parts_of_all_nulls_and_empty() -> None:
    assert _both(Year(), pa.array([None, None], pa.date32())) == [None, None]
    assert _both(Hour(), pa.array([], pa.timestamp("s"))) == []


def test_date_parts_over_a_wide_span_skip_the_lookup_table() -> None:
    days = [-3_000_000, 0, 3_000_000, None]  # span > _MAX_TABLE
    spans = (6_000_000, 500 * 365 * 24)  # days, then hours
    assert all(span > fastpath.MAX_TABLE for span in spans)
    assert _both(Year(), pa.array(days, pa.date32())) == [-6244, 1970, 10183, None]
    seconds = [-1, 0, 500 * 365 * 86_400 + 5 * 3600 + 7, None]  # span > _MAX_TABLE hours
    assert _both(Hour(), pa.array(seconds, pa.timestamp("s"))) == [23, 0, 5, None]


def test_date_parts_beyond_the_fast_range_are_datafusion_s() -> None:
    # Past chrono's range DataFusion answers NULL; the fast path defers to it there.
    extreme = pa.array([0, 2**63 - 1], pa.timestamp("us"))  # year 294247
    assert _both(Year(), extreme) == [1970, None]
    assert _both(Hour(), extreme) == [0, None]


def test_date_parts_of_sliced_arrays() -> None:
    values = pa.array([datetime.date(2000 + i, 1 + i, 1 + i) for i in range(10)])
    sliced = values.slice(4, 3)
    assert _both(Year(), sliced) == [2004, 2005, 2006]
    assert _both(Month(), sliced) == [5, 6, 7]


def test_bucket_golden_value_and_nulls() -> None:
    assert _both(Bucket(16), pa.array([1, None], pa.int64())) == [11, None]
    assert _both(Bucket(16), pa.array([1], pa.int32())) == [11]


def test_bucket_on_strings_and_timestamps() -> None:
    strings = pa.array(["US", "FR", None, "日本"])
    assert all(b is None or 0 <= b < 7 for b in _both(Bucket(7), strings))
    instant = datetime.datetime(2025, 1, 1, tzinfo=UTC)
    zoned = pa.array([instant], pa.timestamp("us", tz="America/New_York"))
    naive = pa.array([instant.replace(tzinfo=None)], pa.timestamp("ns"))
    assert _both(Bucket(1000), zoned) == _both(Bucket(1000), naive)


def test_bucket_one_puts_everything_in_bucket_zero() -> None:
    assert _both(Bucket(1), pa.array([1, 2, None, 3])) == [0, 0, None, 0]


@pytest.mark.parametrize("bad", [0, -1, 2**63])
def test_bucket_count_out_of_range(bad: int) -> None:
    with pytest.raises(PartitionSpecError, match="bucket: number of buckets"):
        Bucket(bad)


def test_bucket_count_must_be_an_int() -> None:
    with pytest.raises(PartitionSpecError, match="must be an int"):
        Bucket(True)


def test_truncate_negative_numbers_toward_zero_as_sql_does() -> None:
    values = pa.array([-13, -10, -3, 0, 3, 10, 27, None], pa.int64())
    assert _both(Truncate(10), values) == [-10, -10, 0, 0, 0, 10, 20, None]


@pytest.mark.parametrize(
    "dtype",
    [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64()],
)
def test_truncate_keeps_the_integer_type(dtype: pa.DataType) -> None:
    signed = pa.types.is_signed_integer(dtype)
    values = pa.array([-128, -7, 0, 7, 127, None] if signed else [0, 7, 127, 255, None], dtype)
    expected = [-120, 0, 0, 0, 120, None] if signed else [0, 0, 120, 250, None]
    assert _both(Truncate(10), values) == expected


def test_truncate_extremes_do_not_overflow() -> None:
    int64 = pa.array([-(2**63), 2**63 - 1], pa.int64())
    assert _both(Truncate(10), int64) == [-(2**63) + 8, 2**63 - 8]
    uint64 = pa.array([2**64 - 1], pa.uint64())
    assert _both(Truncate(10), uint64) == [2**64 - 6]


def test_truncate_wider_than_the_type_gives_zero() -> None:
    assert _both(Truncate(1000), pa.array([-128, 127, None], pa.int8())) == [0, 0, None]
    assert _both(Truncate(128), pa.array([-128, 127], pa.int8())) == [-128, 0]
    assert _both(Truncate(2**63 - 1), pa.array([2**64 - 1], pa.uint64())) == [2**64 - 2]


def test_truncate_decimals() -> None:
    d = decimal.Decimal
    values = pa.array([d("-12.34"), d("12.34"), d("999.99"), None], pa.decimal128(5, 2))
    assert _both(Truncate(10), values) == [d("-10.00"), d("10.00"), d("990.00"), None]
    assert _both(Truncate(10**6), values) == [d("0.00"), d("0.00"), d("0.00"), None]
    wide = pa.array([d("-123456789012345678901234567890.5")], pa.decimal256(50, 1))
    assert _both(Truncate(7), wide) == [d("-123456789012345678901234567890.0")]


def test_truncate_strings_counts_characters() -> None:
    values = pa.array(["héllo wörld", "日本語テキスト", "ab", "", "🎉🎉🎉🎉", None])
    expected = ["hél", "日本語", "ab", "", "🎉🎉🎉", None]
    for dtype in (pa.utf8(), pa.large_utf8(), pa.string_view()):
        assert _both(Truncate(3, string=True), values.cast(dtype)) == expected


def test_truncate_ascii_strings_take_the_byte_path() -> None:
    values = pa.array(["abcdef", None, "", "xy", "0123456789"])
    assert fastpath.is_ascii(values)
    assert not fastpath.is_ascii(pa.array(["abc", "é"]))
    assert fastpath.is_ascii(pa.array(["é", "abc"]).slice(1))
    assert fastpath.is_ascii(pa.array([None, ""]))
    for dtype in (pa.utf8(), pa.large_utf8(), pa.string_view()):
        column = values.cast(dtype).slice(1)
        assert _both(Truncate(3, string=True), column) == [None, "", "xy", "012"]


@pytest.mark.parametrize("bad", [0, -1])
def test_truncate_width_out_of_range(bad: int) -> None:
    with pytest.raises(PartitionSpecError, match="truncate: width"):
        Truncate(bad)


def test_truncate_for_type_picks_the_form() -> None:
    assert Truncate.for_type(4, pa.utf8()) == Truncate(4, string=True)
    assert Truncate.for_type(4, pa.string_view()) == Truncate(4, string=True)
    assert Truncate.for_type(4, pa.int32()) == Truncate(4)


def test_opaque_infers_or_declares_its_type() -> None:
    inferred = Opaque("date_trunc('month', col)")
    values = pa.array([datetime.datetime(2025, 12, 10, 10, 30)], pa.timestamp("us"))
    assert inferred.apply(values).to_pylist() == [datetime.datetime(2025, 12, 1)]
    declared = Opaque("col + 1", pa.int16())
    assert declared.result_type(pa.int8()) == pa.int16()
    assert declared.apply(pa.array([1, None], pa.int8())).to_pylist() == [2, None]
    assert declared.apply(pa.array([1], pa.int8())).type == pa.int16()


def test_opaque_that_cannot_apply() -> None:
    with pytest.raises(TransformError, match=r"'upper\(col\)'.*int64"):
        Opaque("upper(col)").result_type(pa.int64())
    with pytest.raises(TransformError, match="upper"):
        Opaque("upper(col)").apply(pa.array([1]))


# ----------------------------------------------------------------- equality and repr


def test_equality_hash_and_repr_by_class_and_parameters() -> None:
    assert Bucket(16) == Bucket(16)
    assert Bucket(16) != Bucket(8)
    assert Truncate(3) != Truncate(3, string=True)
    assert Year() != Month()
    assert Identity() != Opaque("col")
    assert Opaque("x(col)", pa.int32()) != Opaque("x(col)")
    assert len({Bucket(16), Bucket(16), Year(), Year(), Truncate(3), Truncate(3, string=True)}) == 4
    assert [repr(t) for t in (Identity(), Year(), Bucket(16), Truncate(3))] == [
        "Identity()",
        "Year()",
        "Bucket(16)",
        "Truncate(3)",
    ]
    assert repr(Truncate(3, string=True)) == "Truncate(3, string=True)"
    assert repr(Opaque("upper(col)", pa.utf8())) == "Opaque('upper(col)', string)"


# ----------------------------------------------------------------- parse_transform


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("col", Identity()),
        ("  COL ", Identity()),
        ("DATE_PART( 'Year' ,col )", Year()),
        ("date_part('MONTH',\tcol)", Month()),
        ("Date_Part ( 'day' , COL )", Day()),
        ("date_part('hour',col)", Hour()),
        ("abs(hash(col))%16", Bucket(16)),
        ("ABS( HASH( col ) ) % 1024", Bucket(1024)),
        ("left(col,3)", Truncate(3, string=True)),
        ("LEFT( col , 10 )", Truncate(10, string=True)),
        ("col - (col % 10)", Truncate(10)),
        ("col-(col%7)", Truncate(7)),
    ],
)
def test_parse_recognises_appendix_d_forms(text: str, expected: Transform) -> None:
    assert parse_transform(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "date_part('week', col)",
        'date_part("year", col)',
        "hash(col) % 16",
        "abs(hash(col)) % -16",
        "abs(hash(col)) % \u0661\u0666",  # Arabic-Indic digits: int() takes them, SQL does not
        "left(col, x)",
        "col - col % 10",
        "upper(col)",
        "colx",
    ],
)
def test_parse_falls_back_to_opaque(text: str) -> None:
    result = parse_transform(text, pa.int64())
    assert result == Opaque(text, pa.int64())
    assert result.expression == text


def test_parse_rejects_out_of_range_parameters() -> None:
    with pytest.raises(PartitionSpecError, match="bucket"):
        parse_transform("abs(hash(col)) % 0")
    with pytest.raises(PartitionSpecError, match="truncate"):
        parse_transform("left(col, 0)")
