"""The period transforms ``years(ts)``, ``months(ts)``, ``hours(ts)``: values at the boundaries
of periods, units, dates, zones; literals; projection of ranges (strict and inclusive bounds at
the boundaries), ``=`` and IN; preimage; the shorthand."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pyarrow as pa
import pytest

from lance_partitioned.errors import PartitionByParseError, TransformError
from lance_partitioned.expressions import bind, parse_sql
from lance_partitioned.expressions.ranges import Interval
from lance_partitioned.expressions.tree import (
    And,
    EqualTo,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThanOrEqual,
    Predicate,
)
from lance_partitioned.pruning import project
from lance_partitioned.spec.partitioning import UnboundPartitionField, bind_spec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.shorthand import parse_partition_by
from lance_partitioned.spec.transforms import (
    Date,
    Hours,
    Months,
    Transform,
    Years,
    parse_transform,
)

UTC = dt.timezone.utc
PERIODS: list[Transform] = [Years(), Months(), Hours()]
UNITS = ["s", "ms", "us", "ns"]


def _months(moment: dt.date) -> int:
    return (moment.year - 1970) * 12 + moment.month - 1


def _hours(moment: dt.datetime) -> int:
    return (moment.date() - dt.date(1970, 1, 1)).days * 24 + moment.hour


def _both(t: Transform, values: pa.Array) -> list[object]:
    """The fast path's values, after checking that DataFusion agrees (type and values), also
    past the per-row path of the zone conversion."""
    fast = t.apply(values)
    reference = t.apply_reference(values)
    assert fast.type == reference.type == pa.int32()
    assert fast.to_pylist() == reference.to_pylist(), (t, values.type)
    long = pa.concat_arrays([values] * 70)
    assert t.apply(long).equals(t.apply_reference(long)), (t, values.type)
    return fast.to_pylist()


def test_expressions_parse_back_to_their_classes() -> None:
    for t in PERIODS:
        assert parse_transform(t.expression) == t
        assert parse_transform(t.expression.upper().replace(" ", "")) == t
        assert t.result_type(pa.timestamp("ns", "UTC")) == pa.int32()
        assert t.preserves_order
        assert t.joint is None  # ordered alone, not with year/month/day/hour
        assert t == type(t)()
        assert hash(t) == hash(type(t)())
        assert t.can_apply(pa.timestamp("s", "+05:30"))
        assert not t.can_apply(pa.int64())
        assert not t.can_apply(pa.utf8())
    assert Years().can_apply(pa.date32())
    assert Months().can_apply(pa.date64())
    assert not Hours().can_apply(pa.date32())
    assert len({Years(), Months(), Hours(), Date()}) == 4
    with pytest.raises(TransformError, match=r"cannot apply to a column of type date32"):
        Hours().apply(pa.array([dt.date(2025, 1, 1)]))


@pytest.mark.parametrize("unit", UNITS)
def test_naive_timestamps_at_period_boundaries(unit: str) -> None:
    moments = [
        dt.datetime(1969, 12, 31, 23, 59, 59),
        dt.datetime(1970, 1, 1),
        dt.datetime(1970, 1, 31, 23, 59, 59),
        dt.datetime(1970, 2, 1),
        dt.datetime(2024, 2, 29, 23, 59, 59),
        dt.datetime(2024, 3, 1),
        dt.datetime(1900, 3, 1, 0, 30),
        dt.datetime(2025, 12, 31, 23, 59, 59),
        dt.datetime(2026, 1, 1),
    ]
    if unit != "ns":
        moments += [dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59)]
    column = pa.array([*moments, None], pa.timestamp(unit))
    assert _both(Years(), column) == [m.year - 1970 for m in moments] + [None]
    assert _both(Months(), column) == [_months(m) for m in moments] + [None]
    assert _both(Hours(), column) == [_hours(m) for m in moments] + [None]
    for t in PERIODS:  # the literal of each value is its partition value
        literals = [t.apply_literal(m, column.type, pa.int32()) for m in moments]
        assert literals == t.apply(column).to_pylist()[:-1], (t, unit)
    # one unit before the epoch is period -1 (floor, not truncation toward zero)
    before = pa.array([-1, 0], pa.int64()).view(pa.timestamp(unit))
    for t in PERIODS:
        assert _both(t, before) == [-1, 0]


def test_dates() -> None:
    dates = [dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(9999, 12, 31)]
    column = pa.array([*dates, None], pa.date32())
    assert _both(Months(), column) == [_months(d) for d in dates] + [None]
    assert _both(Years(), column) == [d.year - 1970 for d in dates] + [None]
    assert _both(Months(), column.cast(pa.date64())) == [_months(d) for d in dates] + [None]
    # date64 that is not a whole day: date_part floors it (1 ms before the epoch is 1969-12)
    odd = pa.array([-1, -86_400_001, 86_400_001], pa.int64()).view(pa.date64())
    assert _both(Months(), odd) == [-1, -1, 0]
    assert Months().apply_literal(dt.date(1969, 12, 31), pa.date32(), pa.int32()) == -1


def test_nulls_empty_and_past_datafusions_calendar() -> None:
    for t in PERIODS:
        assert _both(t, pa.nulls(3, pa.timestamp("ms"))) == [None, None, None]
        assert _both(t, pa.array([], pa.timestamp("us", "UTC"))) == []
    past = pa.array([2**62, 0], pa.int64()).view(pa.timestamp("s"))
    assert _both(Months(), past) == [None, 0]  # date_part answers NULL past year 262142
    assert _both(Years(), past) == [None, 0]
    with pytest.raises(TransformError):
        Hours().apply_reference(past)
    with pytest.raises(TransformError):  # the fast path defers to DataFusion there
        Hours().apply(past)
    far = pa.array([2**40], pa.int64()).view(pa.timestamp("s"))  # year 36812
    (years,) = _both(Years(), far)
    (months,) = _both(Months(), far)
    assert years == 36812 - 1970
    assert months // 12 == years
    assert _both(Hours(), far) == [2**40 // 3600]
    # year 253_000: in DataFusion's calendar, but its hours do not fit int32
    farther = pa.array([8 * 10**12], pa.int64()).view(pa.timestamp("s"))
    for apply in (Hours().apply, Hours().apply_reference):
        with pytest.raises(TransformError, match=r"int32|overflow|lossy"):
            apply(farther)
    assert _both(Months(), farther)[0] // 12 == _both(Years(), farther)[0]


@pytest.mark.parametrize(
    ("tz", "months", "hours"),
    [
        ("UTC", 659, _hours(dt.datetime(2024, 12, 31, 23))),
        ("+05:30", 660, _hours(dt.datetime(2025, 1, 1, 5))),
        ("-09:45", 659, _hours(dt.datetime(2024, 12, 31, 13))),
        ("America/New_York", 659, _hours(dt.datetime(2024, 12, 31, 18))),
        ("Asia/Tokyo", 660, _hours(dt.datetime(2025, 1, 1, 8))),
    ],
)
@pytest.mark.parametrize("unit", UNITS)
def test_zoned_timestamps_count_periods_of_their_wall_clock(
    tz: str, months: int, hours: int, unit: str
) -> None:
    instant = dt.datetime(2024, 12, 31, 23, 30, tzinfo=UTC)
    column = pa.array([instant, None], pa.timestamp(unit, tz))
    assert _both(Months(), column) == [months, None]
    assert _both(Years(), column) == [months // 12, None]
    assert _both(Hours(), column) == [hours, None]
    assert Months().apply_literal(instant, column.type, pa.int32()) == months
    assert Hours().apply_literal(instant, column.type, pa.int32()) == hours


@pytest.mark.parametrize("unit", UNITS)
def test_dst_days(unit: str) -> None:
    tz = "America/New_York"
    # the clocks go back at 06:00Z on 2025-11-02: 01:00-02:00 local happens twice, one hour
    fall = [dt.datetime(2025, 11, 2, h, m, tzinfo=UTC) for h in (4, 5, 6, 7) for m in (0, 59)]
    column = pa.array(fall, pa.timestamp(unit, tz))
    expected = [_hours(f.astimezone(zoneinfo.ZoneInfo(tz)).replace(tzinfo=None)) for f in fall]
    assert _both(Hours(), column) == expected
    assert expected[2] == expected[4]  # 01:00 EDT and 01:00 EST: one partition
    # the clocks go forward at 07:00Z on 2025-03-09: 02:00-03:00 local does not happen
    spring = [dt.datetime(2025, 3, 9, 6, 59, tzinfo=UTC), dt.datetime(2025, 3, 9, 7, tzinfo=UTC)]
    got = _both(Hours(), pa.array(spring, pa.timestamp(unit, tz)))
    assert got == [_hours(dt.datetime(2025, 3, 9, 1)), _hours(dt.datetime(2025, 3, 9, 3))]
    # Lord Howe goes back half an hour: 01:30-02:00 twice
    howe = [
        dt.datetime(2025, 4, 5, 14, 45, tzinfo=UTC),
        dt.datetime(2025, 4, 5, 15, 15, tzinfo=UTC),
    ]
    got = _both(Hours(), pa.array(howe, pa.timestamp(unit, "Australia/Lord_Howe")))
    assert got == [_hours(dt.datetime(2025, 4, 6, 1))] * 2


# ---------------------------------------------------------------- projection


def _projected(partition_by: str, condition: str, source: pa.DataType) -> Predicate:
    arrow = pa.schema([("ts", source)])
    schema = NamespaceSchema.from_arrow(arrow)
    spec = bind_spec(parse_partition_by(partition_by, schema), existing=[], schema=schema)
    return project(bind(parse_sql(condition, arrow), arrow), spec, schema)


NAIVE = pa.timestamp("us")
MARCH = _months(dt.date(2024, 3, 1))


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("ts >= TIMESTAMP '2024-03-01 00:00:00'", GreaterThanOrEqual("ts_months", MARCH)),
        # strictly after the first instant of March: still March
        ("ts > TIMESTAMP '2024-03-01 00:00:00'", GreaterThanOrEqual("ts_months", MARCH)),
        # strictly after the last instant of February: March
        ("ts > TIMESTAMP '2024-02-29 23:59:59.999999'", GreaterThanOrEqual("ts_months", MARCH)),
        (
            "ts >= TIMESTAMP '2024-02-29 23:59:59.999999'",
            GreaterThanOrEqual("ts_months", MARCH - 1),
        ),
        # strictly before March: February at most
        ("ts < TIMESTAMP '2024-03-01 00:00:00'", LessThanOrEqual("ts_months", MARCH - 1)),
        ("ts <= TIMESTAMP '2024-03-01 00:00:00'", LessThanOrEqual("ts_months", MARCH)),
        ("ts = TIMESTAMP '2024-03-31 23:59:59'", EqualTo("ts_months", MARCH)),
        (
            "ts IN (TIMESTAMP '2024-03-31 23:59:59', TIMESTAMP '2024-04-01 00:00:00',"
            " TIMESTAMP '2024-03-02 00:00:00')",
            In("ts_months", (MARCH, MARCH + 1)),
        ),
        (
            "ts BETWEEN TIMESTAMP '1969-12-31 00:00:00' AND TIMESTAMP '1970-01-01 00:00:00'",
            And(GreaterThanOrEqual("ts_months", -1), LessThanOrEqual("ts_months", 0)),
        ),
        ("ts IS NULL", IsNull("ts_months")),
    ],
)
def test_months_project_ranges_with_the_right_boundaries(
    condition: str, expected: Predicate
) -> None:
    assert _projected("months(ts)", condition, NAIVE) == expected


def test_hours_and_years_project_ranges() -> None:
    hour = _hours(dt.datetime(2024, 3, 1, 10))
    got = _projected("hours(ts)", "ts < TIMESTAMP '2024-03-01 10:00:00'", NAIVE)
    assert got == LessThanOrEqual("ts_hours", hour - 1)
    got = _projected("hours(ts)", "ts > TIMESTAMP '2024-03-01 09:59:59.999999'", NAIVE)
    assert got == GreaterThanOrEqual("ts_hours", hour)
    got = _projected("years(ts)", "ts >= TIMESTAMP '2024-12-31 23:00:00'", NAIVE)
    assert got == GreaterThanOrEqual("ts_years", 54)
    got = _projected("years(ts)", "ts < TIMESTAMP '0001-01-01 00:00:01'", pa.timestamp("s"))
    assert got == LessThanOrEqual("ts_years", -1969)
    got = _projected("months(ts)", "ts >= TIMESTAMP '9999-12-01 00:00:00'", pa.timestamp("ms"))
    assert got == GreaterThanOrEqual("ts_months", _months(dt.date(9999, 12, 1)))
    got = _projected("months(ts)", "ts > DATE '2024-02-29'", pa.date32())
    assert got == GreaterThanOrEqual("ts_months", MARCH)


def test_zoned_ranges_project_through_the_wall_clock() -> None:
    # fixed offset: exact; 2024-02-29T20:00Z is 2024-03-01T01:30 in +05:30 (DataFusion reads
    # a TIMESTAMP literal against a zoned column as a wall clock in its zone, +00:00 or not)
    instant = "(TIMESTAMP '2024-02-29 20:00:00' AT TIME ZONE 'UTC')"
    got = _projected("months(ts)", f"ts >= {instant}", pa.timestamp("us", "+05:30"))
    assert got == GreaterThanOrEqual("ts_months", MARCH)
    got = _projected("hours(ts)", f"ts >= {instant}", pa.timestamp("us", "+05:30"))
    assert got == GreaterThanOrEqual("ts_hours", _hours(dt.datetime(2024, 3, 1, 1)))
    # a zone with DST rules: bounds widened by a day (still sound)
    got = _projected("months(ts)", f"ts >= {instant}", pa.timestamp("us", "America/New_York"))
    assert got == GreaterThanOrEqual("ts_months", MARCH - 1)


def test_preimage_is_the_period() -> None:
    months = Months().preimage(MARCH, NAIVE, pa.int32())
    assert months.null is False
    assert months.interval == Interval(
        dt.datetime(2024, 3, 1), True, dt.datetime(2024, 4, 1), False
    )
    december = Months().preimage(-1, pa.date32(), pa.int32())
    assert december.interval == Interval(dt.date(1969, 12, 1), True, dt.date(1970, 1, 1), False)
    hour = Hours().preimage(-1, pa.timestamp("s"), pa.int32())
    assert hour.interval == Interval(
        dt.datetime(1969, 12, 31, 23), True, dt.datetime(1970, 1, 1), False
    )
    assert Hours().preimage(None, NAIVE, pa.int32()).null is True
    years = Years().preimage(55, pa.timestamp("us", "+01:00"), pa.int32())
    assert years.interval == Interval(
        dt.datetime(2024, 12, 31, 23, tzinfo=UTC),
        True,
        dt.datetime(2025, 12, 31, 23, tzinfo=UTC),
        False,
    )
    # past Python's calendar: nothing but "not NULL"
    assert Years().preimage(9000, NAIVE, pa.int32()).interval is None
    assert Hours().preimage(2**31 - 1, pa.timestamp("s"), pa.int32()).interval is None
    # date_part is NULL past DataFusion's calendar: a NULL partition proves nothing
    assert Months().preimage(None, NAIVE, pa.int32()).null is None


def test_shorthand() -> None:
    schema = NamespaceSchema.from_arrow(
        pa.schema([("ts", pa.timestamp("us", "UTC")), ("d", pa.date32()), ("s", pa.utf8())])
    )
    fields = parse_partition_by("months(ts), HOURS(ts) AS h, years(d), days(ts)", schema)
    assert [(f.name, f.transform, f.result_type) for f in fields] == [
        ("ts_months", Months(), pa.int32()),
        ("h", Hours(), pa.int32()),
        ("d_years", Years(), pa.int32()),
        ("ts_date", Date(), pa.date32()),
    ]
    assert fields[0].expression == Months().expression
    with pytest.raises(PartitionByParseError, match=r"hours\(\) cannot be applied to column 'd'"):
        parse_partition_by("hours(d)", schema)
    with pytest.raises(PartitionByParseError, match=r"months\(\) cannot be applied to column 's'"):
        parse_partition_by("months(s)", schema)


def test_bound_field_keeps_the_expression() -> None:
    schema = NamespaceSchema.from_arrow(pa.schema([("ts", pa.timestamp("us"))]))
    unbound = UnboundPartitionField("m", 0, Months(), pa.int32())
    (field,) = bind_spec([unbound], existing=[], schema=schema).fields
    assert field.expression == "(date_part('year', col) - 1970) * 12 + date_part('month', col) - 1"
    assert field.transform == Months()
