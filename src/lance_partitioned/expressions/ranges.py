"""Transforms on single literals, and the source values a partition value stands for.

The arithmetic shared by :mod:`~lance_partitioned.expressions.projection` (literal → partition
value) and :mod:`~lance_partitioned.expressions.residual` (partition value → range of source
values). Literals are bound (:func:`~lance_partitioned.expressions.bind`): dates, naive
datetimes for naive timestamp columns, aware UTC datetimes for zoned ones, ints, Decimals, str.
Date parts are taken on the UTC instant, as :mod:`lance_partitioned.spec.transforms` does.

>>> import datetime
>>> from lance_partitioned.spec.transforms import Month, Truncate
>>> import pyarrow as pa
>>> transform_literal(Month(), datetime.date(2025, 6, 30), pa.date32(), pa.int32())
6
>>> truncate_range(-10, 10, pa.int64())
Interval(low=-19, low_inclusive=True, high=-10, high_inclusive=True)
"""

from __future__ import annotations

import calendar
import datetime
import decimal
import functools
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_partitioned.errors import LancePartitionedError
from lance_partitioned.spec.evaluate import evaluate
from lance_partitioned.spec.hashing import bucket_scalar
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
)

__all__ = [
    "FAILED",
    "Interval",
    "cell_range",
    "date_parts",
    "step",
    "transform_literal",
    "truncate_range",
    "utc_naive",
]

_UTC = datetime.timezone.utc
_TICK = {"s": 1_000_000, "ms": 1_000, "us": 1}
FAILED = object()
"""What :func:`transform_literal` returns when the transform fails on the literal."""

PARTS: tuple[type[Transform], ...] = (Year, Month, Day, Hour)
"""The date parts, coarsest first: a prefix of them orders time lexicographically."""


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


def date_parts(value: datetime.date, count: int) -> tuple[int, ...]:
    """The first ``count`` of (year, month, day, hour) of ``value`` in UTC.

    >>> import datetime
    >>> date_parts(datetime.datetime(2025, 6, 30, 23), 4)
    (2025, 6, 30, 23)
    """
    moment = utc_naive(value)
    return (moment.year, moment.month, moment.day, moment.hour)[:count]


def _truncate(value: Any, width: int) -> Any:
    if isinstance(value, str):
        return value[:width]
    if isinstance(value, decimal.Decimal):
        with decimal.localcontext() as ctx:
            ctx.prec = 200
            return (value - value % width).quantize(value)  # % keeps the dividend's sign
    magnitude = abs(value) // width * width
    return magnitude if value >= 0 else -magnitude


def transform_literal(
    transform: Transform, value: Any, source: pa.DataType, result: pa.DataType
) -> Any:
    """The partition value of one bound literal (None for NULL), or :data:`FAILED`.

    Results are cached: residuals ask for the same literals once per partition.

    >>> import pyarrow as pa
    >>> from lance_partitioned.spec.transforms import Bucket, Truncate
    >>> transform_literal(Bucket(16), 1, pa.int64(), pa.int64())
    11
    >>> transform_literal(Truncate(10), -13, pa.int64(), pa.int64())
    -10
    """
    if isinstance(transform, Identity):
        return value
    try:
        return _cached(transform, type(value).__qualname__, value, source, result)
    except TypeError:  # an unhashable literal
        return _transform_literal(transform, value, source, result)


@functools.lru_cache(maxsize=4096)
def _cached(
    transform: Transform, kind: str, value: Any, source: pa.DataType, result: pa.DataType
) -> Any:
    # ``kind`` keeps 1, 1.0 and True apart (they hash alike)
    return _transform_literal(transform, value, source, result)


def _transform_literal(
    transform: Transform, value: Any, source: pa.DataType, result: pa.DataType
) -> Any:
    try:
        if isinstance(transform, (Year, Month, Day, Hour)):
            return date_parts(value, PARTS.index(type(transform)) + 1)[-1]
        if isinstance(transform, Truncate):
            return _truncate(value, transform.width)
        if isinstance(transform, Bucket):
            return bucket_scalar(value, source, transform.num_buckets)
        if isinstance(transform, Opaque):
            return evaluate(transform.expression, pa.array([value], source), result)[0].as_py()
    except (LancePartitionedError, pa.ArrowException, TypeError, ValueError, OverflowError):
        return FAILED
    return FAILED


def step(source: pa.DataType) -> Any:
    """The distance between adjacent values of a discrete type, or None.

    Integers: 1; decimals: ``10^-scale``; dates: one day; timestamps in s, ms, us: one
    unit; nanoseconds are finer than a ``datetime`` (None), as are strings and floats.

    >>> import pyarrow as pa
    >>> step(pa.decimal128(5, 2)), step(pa.timestamp("ms"))
    (Decimal('0.01'), datetime.timedelta(microseconds=1000))
    """
    t = pa.types
    if t.is_integer(source):
        return 1
    if t.is_decimal(source):
        return decimal.Decimal(1).scaleb(-source.scale)
    if t.is_date(source):
        return datetime.timedelta(days=1)
    if t.is_timestamp(source) and source.unit in _TICK:
        return datetime.timedelta(microseconds=_TICK[source.unit])
    return None


@dataclass(frozen=True)
class Interval:
    """Source values between ``low`` and ``high`` (None: unbounded on that side)."""

    low: Any = None
    low_inclusive: bool = True
    high: Any = None
    high_inclusive: bool = True

    def intersect(self, other: Interval) -> Interval:
        """The values in both intervals."""
        low, low_inclusive = self.low, self.low_inclusive
        if other.low is not None and (
            low is None or other.low > low or (other.low == low and not other.low_inclusive)
        ):
            low, low_inclusive = other.low, other.low_inclusive
        high, high_inclusive = self.high, self.high_inclusive
        if other.high is not None and (
            high is None or other.high < high or (other.high == high and not other.high_inclusive)
        ):
            high, high_inclusive = other.high, other.high_inclusive
        return Interval(low, low_inclusive, high, high_inclusive)

    def is_empty(self) -> bool:
        """Whether no value lies in the interval."""
        if self.low is None or self.high is None:
            return False
        if self.low > self.high:
            return True
        return bool(self.low == self.high and not (self.low_inclusive and self.high_inclusive))

    def closed(self, source: pa.DataType) -> Interval:
        """Strict bounds made inclusive by one :func:`step` where the type is discrete."""
        unit = step(source)
        if unit is None:
            return self
        low, low_inclusive, high, high_inclusive = (
            self.low,
            self.low_inclusive,
            self.high,
            self.high_inclusive,
        )
        try:
            if low is not None and not low_inclusive:
                low, low_inclusive = low + unit, True
            if high is not None and not high_inclusive:
                high, high_inclusive = high - unit, True
        except OverflowError:
            return self
        return Interval(low, low_inclusive, high, high_inclusive)

    def below(self, value: Any, inclusive: bool) -> bool:
        """Whether every value of the interval is < ``value`` (<= when ``inclusive``)."""
        if self.high is None:
            return False
        if self.high < value:
            return True
        return bool(self.high == value and (inclusive or not self.high_inclusive))

    def above(self, value: Any, inclusive: bool) -> bool:
        """Whether every value of the interval is > ``value`` (>= when ``inclusive``)."""
        if self.low is None:
            return False
        if self.low > value:
            return True
        return bool(self.low == value and (inclusive or not self.low_inclusive))

    def excludes(self, value: Any) -> bool:
        """Whether ``value`` lies outside the interval."""
        return self.below(value, inclusive=False) or self.above(value, inclusive=False)


def truncate_range(value: Any, width: int, source: pa.DataType) -> Interval:
    """The source values whose ``col - (col % W)`` is ``value`` (truncation toward zero).

    >>> import pyarrow as pa
    >>> truncate_range(0, 10, pa.int64()), truncate_range(20, 10, pa.int64()).high
    (Interval(low=-9, low_inclusive=True, high=9, high_inclusive=True), 29)
    """
    unit = step(source)
    reach = width - unit  # the widest distance from the truncated value
    if value > 0:
        return Interval(value, True, value + reach, True)
    if value < 0:
        return Interval(value - reach, True, value, True)
    return Interval(-reach, True, reach, True)


def cell_range(parts: tuple[int, ...], source: pa.DataType) -> Interval | None:
    """The source instants whose leading date parts are ``parts``, or None if out of reach.

    ``parts`` is a prefix of (year, month, day, hour). The interval is half-open and has the
    Python type of the column's bound literals (date, naive or aware UTC datetime).

    >>> import pyarrow as pa
    >>> cell = cell_range((2025, 12), pa.date32())
    >>> cell.low, cell.high, cell.high_inclusive
    (datetime.date(2025, 12, 1), datetime.date(2026, 1, 1), False)
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
    if source.tz is not None:
        start = start.replace(tzinfo=_UTC)
        end = None if end is None else end.replace(tzinfo=_UTC)
    return Interval(start, True, end, False)


def last_parts(parts: tuple[int, ...], index: int) -> bool:
    """Whether ``parts[index:]`` are the last month/day/hour within ``parts[:index]``.

    >>> last_parts((2024, 2, 29, 23), 1), last_parts((2024, 2, 28), 2)
    (False, False)
    """
    for i in range(index, len(parts)):
        if i == 1 and parts[1] != 12:
            return False
        if i == 2 and parts[2] != calendar.monthrange(parts[0], parts[1])[1]:
            return False
        if i == 3 and parts[3] != 23:
            return False
    return True


def first_parts(parts: tuple[int, ...], index: int) -> bool:
    """Whether ``parts[index:]`` are the first month/day/hour within ``parts[:index]``.

    >>> first_parts((2025, 1, 1, 0), 1), first_parts((2025, 1, 2), 1)
    (True, False)
    """
    return all(parts[i] == (0 if i == 3 else 1) for i in range(max(index, 1), len(parts)))
