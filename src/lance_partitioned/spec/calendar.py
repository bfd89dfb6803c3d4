"""Calendar arithmetic of the date-part transforms (year, month, day, hour) on single values.

Date parts are taken on the wall clock: a zoned timestamp's in its zone, as DataFusion computes
them (:func:`wall_clock`); keys and cells are of naive wall-clock time, and
:func:`wall_clock_bounds` / :meth:`Calendar.cell` translate between instants of a zoned column
and its wall clock. (year, month, day, hour), coarsest first, orders time lexicographically: the
:data:`CALENDAR` family is what :class:`~lance_partitioned.spec.transforms.Year`,
:class:`~lance_partitioned.spec.transforms.Month`, ``Day`` and ``Hour`` declare as their joint
capability (:class:`~lance_partitioned.spec.transforms.Lexicographic`), and what the
projection of ranges through several date parts of one source asks.

Bound literals are dates, naive datetimes (naive timestamp columns) or aware UTC datetimes
(zoned columns).

>>> import datetime
>>> CALENDAR.key(datetime.datetime(2025, 6, 30, 23), 4)
(2025, 6, 30, 23)
>>> cell = CALENDAR.cell((2025, 12), pa.date32())
>>> cell.low, cell.high, cell.high_inclusive
(datetime.date(2025, 12, 1), datetime.date(2026, 1, 1), False)
"""

from __future__ import annotations

import calendar
import datetime

import pyarrow as pa

from lance_partitioned.expressions.ranges import Interval
from lance_partitioned.spec.fastpath import fixed_offset, local_time

__all__ = [
    "CALENDAR",
    "MAX_OFFSET",
    "Calendar",
    "cyclic_values",
    "utc_naive",
    "wall_clock",
    "wall_clock_bounds",
    "widened",
]

MAX_OFFSET = datetime.timedelta(days=1)
"""Every UTC offset is smaller than a day (chrono's, so DataFusion's, bound)."""

_UTC = datetime.timezone.utc
_SPAN_LIMIT = 64  # days/hours enumerated for the values a range covers
_PARTS = ("year", "month", "day", "hour")


def utc_naive(value: datetime.date) -> datetime.datetime:
    """The naive UTC datetime of a date (its midnight) or a datetime.

    >>> import datetime
    >>> tz = datetime.timezone(datetime.timedelta(hours=2))
    >>> utc_naive(datetime.datetime(2025, 1, 1, 1, tzinfo=tz))
    datetime.datetime(2024, 12, 31, 23, 0)
    """
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            return value.astimezone(_UTC).replace(tzinfo=None)
        return value
    return datetime.datetime.combine(value, datetime.time())


def is_zoned(source: pa.DataType) -> bool:
    return bool(pa.types.is_timestamp(source) and source.tz is not None)


def wall_clock(value: datetime.date, source: pa.DataType) -> datetime.date:
    """The naive wall-clock time of a bound literal of a column of type ``source``.

    A zoned column's instants read in its zone, as DataFusion reads them; any other value is
    itself (an aware datetime on a naive column: its UTC time).

    >>> import datetime
    >>> noon = datetime.datetime(2025, 7, 1, 12, tzinfo=datetime.timezone.utc)
    >>> wall_clock(noon, pa.timestamp("us", tz="Europe/London"))
    datetime.datetime(2025, 7, 1, 13, 0)
    """
    if not is_zoned(source) or not isinstance(value, datetime.datetime):
        return utc_naive(value) if isinstance(value, datetime.datetime) else value
    moment: datetime.datetime = local_time(pa.array([value], source))[0].as_py()
    return moment


def _shift(value: datetime.date | None, by: datetime.timedelta) -> datetime.datetime | None:
    if value is None:
        return None
    try:
        return utc_naive(value) + by
    except OverflowError:
        return None  # past datetime's range: unbounded


def wall_clock_bounds(interval: Interval, source: pa.DataType) -> Interval:
    """A naive interval that holds the wall clock of every instant of ``interval``.

    Exact for naive columns and fixed offsets (``+05:30``, ``UTC``); for a zone with rules,
    the UTC bounds widened by :data:`MAX_OFFSET` (the wall clock is not monotonic across a
    fall back, and the offset varies).

    >>> import datetime
    >>> utc = datetime.timezone.utc
    >>> day = Interval(datetime.datetime(2025, 1, 1, tzinfo=utc), True, None, False)
    >>> wall_clock_bounds(day, pa.timestamp("s", tz="+05:30")).low
    datetime.datetime(2025, 1, 1, 5, 30)
    """
    if not is_zoned(source):
        return interval
    offset = fixed_offset(source.tz)
    if offset is not None:
        by = datetime.timedelta(seconds=offset)
        low, high = _shift(interval.low, by), _shift(interval.high, by)
        return Interval(low, interval.low_inclusive, high, interval.high_inclusive)
    return widened(interval)


def naive_range(interval: Interval, source: pa.DataType) -> tuple[Interval, pa.DataType]:
    """``interval`` of a ``source`` column as the range of a naive column to project.

    A zoned column's range becomes the wall clocks of its instants
    (:func:`wall_clock_bounds`) on a naive timestamp of the same unit; any other range and
    type are returned as they are.

    >>> import datetime
    >>> day = Interval(datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc), True,
    ...                None, False)
    >>> naive, kind = naive_range(day, pa.timestamp("ms", tz="+01:00"))
    >>> naive.low, kind
    (datetime.datetime(2025, 1, 1, 1, 0), TimestampType(timestamp[ms]))
    """
    if not is_zoned(source):
        return interval, source
    return wall_clock_bounds(interval, source), pa.timestamp(source.unit)


def widened(interval: Interval) -> Interval:
    """The naive interval of ``interval``'s UTC bounds widened by :data:`MAX_OFFSET`.

    It holds the wall clock of every instant of ``interval`` in any zone.
    """
    low, high = _shift(interval.low, -MAX_OFFSET), _shift(interval.high, MAX_OFFSET)
    return Interval(low, True, high, True)


class Calendar:
    """(year, month, day, hour) of an instant in UTC: a lexicographic key of time.

    The methods implement :class:`~lance_partitioned.spec.transforms.Lexicographic`.
    """

    def key(self, value: datetime.date, count: int) -> tuple[int, ...]:
        """The first ``count`` of (year, month, day, hour) of ``value`` in UTC.

        >>> import datetime
        >>> CALENDAR.key(datetime.date(2025, 6, 30), 2)
        (2025, 6)
        """
        moment = utc_naive(value)
        return (moment.year, moment.month, moment.day, moment.hour)[:count]

    def is_last(self, parts: tuple[int, ...], index: int) -> bool:
        """Whether ``parts[index:]`` are the last month/day/hour within ``parts[:index]``.

        >>> CALENDAR.is_last((2024, 2, 29, 23), 1), CALENDAR.is_last((2024, 2, 28), 2)
        (False, False)
        >>> CALENDAR.is_last((2024, 12, 31, 23), 1)
        True
        """
        for i in range(index, len(parts)):
            if i == 1 and parts[1] != 12:
                return False
            if i == 2 and parts[2] != calendar.monthrange(parts[0], parts[1])[1]:
                return False
            if i == 3 and parts[3] != 23:
                return False
        return True

    def is_first(self, parts: tuple[int, ...], index: int) -> bool:
        """Whether ``parts[index:]`` are the first month/day/hour within ``parts[:index]``.

        >>> CALENDAR.is_first((2025, 1, 1, 0), 1), CALENDAR.is_first((2025, 1, 2), 1)
        (True, False)
        """
        return all(parts[i] == (0 if i == 3 else 1) for i in range(max(index, 1), len(parts)))

    def cell(self, parts: tuple[int, ...], source: pa.DataType) -> Interval | None:
        """The source instants whose leading date parts are ``parts``, or None if out of reach.

        ``parts`` is a prefix of (year, month, day, hour) of the wall clock. The interval is
        half-open and has the Python type of the column's bound literals (date, naive or aware
        UTC datetime). For a zoned column it holds every instant whose wall clock is in the
        cell: shifted by a fixed offset, or widened by :data:`MAX_OFFSET` in a zone with rules.

        >>> CALENDAR.cell((2025, 2, 30), pa.date32()) is None
        True
        """
        year = parts[0]
        month = parts[1] if len(parts) > 1 else 1
        day = parts[2] if len(parts) > 2 else 1
        hour = parts[3] if len(parts) > 3 else 0
        try:
            start = datetime.datetime(year, month, day, hour)
        except (ValueError, TypeError):
            return None
        end: datetime.datetime | None
        try:
            if len(parts) == 1:
                end = datetime.datetime(year + 1, 1, 1)
            elif len(parts) == 2:
                end = datetime.datetime(year + month // 12, month % 12 + 1, 1)
            elif len(parts) == 3:
                end = start + datetime.timedelta(days=1)
            else:
                end = start + datetime.timedelta(hours=1)
        except (ValueError, OverflowError):
            end = None  # past datetime.max: unbounded above
        if pa.types.is_date(source):
            return Interval(start.date(), True, None if end is None else end.date(), False)
        if source.tz is None:
            return Interval(start, True, end, False)
        offset = fixed_offset(source.tz)
        by = MAX_OFFSET if offset is None else datetime.timedelta(seconds=offset)
        low = _shift(start, -by)
        high = _shift(end, by if offset is None else -by)
        return Interval(
            None if low is None else low.replace(tzinfo=_UTC),
            low is not None,
            None if high is None else high.replace(tzinfo=_UTC),
            False,
        )

    def __repr__(self) -> str:
        return "CALENDAR"


CALENDAR = Calendar()
"""The one calendar family: year (rank 0), month (1), day (2), hour (3)."""


def cyclic_values(part: str, interval: Interval) -> tuple[int, ...] | None:
    """The month-of-year (day-of-month, hour-of-day) values a bounded range covers.

    None when the range is unbounded or covers every value of the part.

    >>> import datetime
    >>> winter = Interval(datetime.date(2025, 12, 1), True, datetime.date(2026, 2, 28), True)
    >>> cyclic_values("month", winter)
    (1, 2, 12)
    """
    if interval.low is None or interval.high is None:
        return None
    low, high = utc_naive(interval.low), utc_naive(interval.high)
    values: set[int] = set()
    if part == "month":
        first, last = low.year * 12 + low.month - 1, high.year * 12 + high.month - 1
        if last - first >= 11:
            return None
        return tuple(sorted({m % 12 + 1 for m in range(first, last + 1)}))
    day = part == "day"
    unit = datetime.timedelta(days=1) if day else datetime.timedelta(hours=1)
    start = low.replace(hour=0) if day else low
    start = start.replace(minute=0, second=0, microsecond=0)
    if (high - start) // unit >= _SPAN_LIMIT:
        return None
    moment = start
    while moment <= high:
        values.add(moment.day if day else moment.hour)
        moment += unit
    if len(values) == (31 if day else 24):
        return None
    return tuple(sorted(values))
