"""The ``date(ts)`` transform (``CAST(col AS DATE)``): values, literals, projection, preimage."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

from lance_partitioned.errors import PartitionByParseError, TransformError
from lance_partitioned.expressions.ranges import Interval
from lance_partitioned.expressions.tree import (
    And,
    EqualTo,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThanOrEqual,
)
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.shorthand import parse_partition_by
from lance_partitioned.spec.transforms import Date, Transform, parse_transform

UTC = datetime.timezone.utc
D = datetime.date


def _both(values: pa.Array) -> list[object]:
    """The fast path's values, after checking that DataFusion agrees (type and values)."""
    fast = Date().apply(values)
    reference = Date().apply_reference(values)
    assert fast.type == reference.type == pa.date32()
    assert fast.to_pylist() == reference.to_pylist()
    return fast.to_pylist()


def test_expression_type_and_parse() -> None:
    assert Date().expression == "CAST(col AS DATE)"
    assert parse_transform("cast( COL as date )") == Date()
    assert parse_transform("CAST(col AS DATE)", pa.date32()) == Date()
    assert Date().result_type(pa.timestamp("ns", "UTC")) == pa.date32()
    for source in (pa.date32(), pa.date64(), pa.timestamp("s"), pa.timestamp("us", "+05:30")):
        assert Date().can_apply(source)
    for source in (pa.int64(), pa.utf8(), pa.time64("us")):
        assert not Date().can_apply(source)
    with pytest.raises(TransformError, match=r"CAST\(col AS DATE\).*int64"):
        Date().apply(pa.array([1]))
    assert Date().preserves_order
    assert Date() == Date()
    assert hash(Date()) == hash(Date())


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_naive_timestamps_floor_to_their_day(unit: str) -> None:
    values = pa.array(
        [
            datetime.datetime(2025, 12, 10, 23, 59, 59),
            datetime.datetime(1969, 12, 31, 23, 59, 59),
            datetime.datetime(1970, 1, 1),
            None,
        ],
        pa.timestamp(unit),
    )
    assert _both(values) == [D(2025, 12, 10), D(1969, 12, 31), D(1970, 1, 1), None]
    assert _both(values.slice(1, 2)) == [D(1969, 12, 31), D(1970, 1, 1)]


@pytest.mark.parametrize(
    ("tz", "expected"),
    [
        ("UTC", D(2025, 1, 1)),
        ("+05:30", D(2025, 1, 2)),
        ("America/New_York", D(2025, 1, 1)),
        ("Asia/Tokyo", D(2025, 1, 2)),
        ("-09:45", D(2025, 1, 1)),
    ],
)
def test_zoned_timestamps_take_the_day_of_their_wall_clock(tz: str, expected: D) -> None:
    instant = datetime.datetime(2025, 1, 1, 23, 30, tzinfo=UTC)
    column = pa.array([instant] * 70 + [None], pa.timestamp("us", tz))  # past the per-row path
    assert _both(column) == [expected] * 70 + [None]
    assert Date().apply_literal(instant, column.type, pa.date32()) == expected


def test_dates_all_nulls_empty_and_out_of_range() -> None:
    assert _both(pa.array([D(2025, 3, 1), None])) == [D(2025, 3, 1), None]
    assert _both(pa.array([-1, -86_400_001, 86_400_001], pa.int64()).view(pa.date64())) == [
        D(1970, 1, 1),  # Arrow's cast of date64 truncates toward zero
        D(1969, 12, 31),
        D(1970, 1, 2),
    ]
    assert _both(pa.nulls(3, pa.timestamp("ms"))) == [None, None, None]
    assert _both(pa.array([], pa.timestamp("us", "UTC"))) == []
    past = pa.array([2**62], pa.int64()).view(pa.timestamp("s"))
    with pytest.raises(TransformError):
        Date().apply_reference(past)
    with pytest.raises(TransformError):  # the fast path defers to DataFusion there
        Date().apply(past)


def _range(t: Transform, low: object, high: object, source: pa.DataType) -> object:
    interval = Interval(low, low is not None, high, high is not None)
    return t.project_range("d", interval, source, pa.date32())


def test_ranges_project_monotonically() -> None:
    naive = pa.timestamp("us")
    march = datetime.datetime(2024, 3, 1)
    assert _range(Date(), march, None, naive) == GreaterThanOrEqual("d", D(2024, 3, 1))
    assert _range(Date(), None, march, naive) == LessThanOrEqual("d", D(2024, 3, 1))
    assert _range(Date(), march, datetime.datetime(2024, 3, 9, 12), naive) == And(
        GreaterThanOrEqual("d", D(2024, 3, 1)), LessThanOrEqual("d", D(2024, 3, 9))
    )
    assert _range(Date(), D(2024, 3, 1), D(2024, 3, 1), pa.date32()) == EqualTo("d", D(2024, 3, 1))
    # a zone with a fixed offset: the instant's wall clock, exactly
    instant = datetime.datetime(2024, 2, 29, 20, tzinfo=UTC)  # 2024-03-01 01:30 in +05:30
    assert _range(Date(), instant, None, pa.timestamp("us", "+05:30")) == GreaterThanOrEqual(
        "d", D(2024, 3, 1)
    )
    # a zone with DST rules: bounds widened by a day (still inclusive)
    new_york = _range(Date(), instant, None, pa.timestamp("us", "America/New_York"))
    assert new_york == GreaterThanOrEqual("d", D(2024, 2, 28))


def test_equality_and_in_project_to_the_day() -> None:
    source = pa.timestamp("us", "UTC")
    stamps = (
        datetime.datetime(2024, 3, 1, 10, tzinfo=UTC),
        datetime.datetime(2024, 3, 1, 20, tzinfo=UTC),
        datetime.datetime(2024, 3, 2, tzinfo=UTC),
    )
    leaf = EqualTo("ts", stamps[0])
    assert Date().project("d", leaf, source, pa.date32()) == In("d", (D(2024, 3, 1),))
    assert Date().project("d", In("ts", stamps), source, pa.date32()) == In(
        "d", (D(2024, 3, 1), D(2024, 3, 2))
    )
    assert Date().project("d", IsNull("ts"), source, pa.date32()) == IsNull("d")


def test_preimage_is_the_day() -> None:
    naive = Date().preimage(D(2024, 3, 1), pa.timestamp("us"), pa.date32())
    assert naive.null is False
    assert naive.interval == Interval(
        datetime.datetime(2024, 3, 1), True, datetime.datetime(2024, 3, 2), False
    )
    dates = Date().preimage(D(2024, 3, 1), pa.date32(), pa.date32())
    assert dates.interval == Interval(D(2024, 3, 1), True, D(2024, 3, 2), False)
    assert Date().preimage(None, pa.date32(), pa.date32()).null is True


def test_shorthand_date() -> None:
    schema = NamespaceSchema.from_arrow(
        pa.schema([("ts", pa.timestamp("us", "UTC")), ("date", pa.date32()), ("s", pa.utf8())])
    )
    (field,) = parse_partition_by("date(ts)", schema)
    assert (field.name, field.transform, field.result_type) == ("ts_date", Date(), pa.date32())
    assert field.expression == "CAST(col AS DATE)"
    (day, identity) = parse_partition_by("DATE(date) AS d, date", schema)
    assert (day.name, day.transform, identity.name) == ("d", Date(), "date")
    with pytest.raises(PartitionByParseError, match=r"date\(\) cannot be applied to column 's'"):
        parse_partition_by("date(s)", schema)
