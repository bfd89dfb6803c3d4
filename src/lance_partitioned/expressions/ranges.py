"""Ranges of source values, and what one partition value proves about its rows.

The vocabulary shared by the transforms (:mod:`lance_partitioned.spec.transforms`, which map
a range of source values to partition values and back) and the predicate walkers of
:mod:`~lance_partitioned.expressions` (projection, residual). Pure: no transform is named here.

>>> import pyarrow as pa
>>> truncate_range(-10, 10, pa.int64())
Interval(low=-19, low_inclusive=True, high=-10, high_inclusive=True)
>>> Interval(1, True, 5, False).closed(pa.int32())
Interval(low=1, low_inclusive=True, high=4, high_inclusive=True)
"""

from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

__all__ = ["FAILED", "NOTHING", "Interval", "Preimage", "step", "truncate_range"]

_TICK = {"s": 1_000_000, "ms": 1_000, "us": 1}
FAILED = object()
"""What :meth:`~lance_partitioned.spec.transforms.Transform.apply_literal` returns when the
transform fails on the literal."""
NOTHING = object()
"""No exact value known (:attr:`Preimage.exact`)."""


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


@dataclass(frozen=True)
class Preimage:
    """What one partition value proves about the source value of every row of the partition.

    A transform answers it (:meth:`~lance_partitioned.spec.transforms.Transform.preimage`);
    the residual combines the answers of every field on one source.

    Attributes
    ----------
    null : bool or None
        True: every source value is NULL; False: none is; None: not known.
    exact : Any
        The one source value (:data:`NOTHING` if not known).
    interval : Interval or None
        The source values lie in this interval.
    prefix : str or None
        Every source value starts with this string.
    image : bool
        A literal whose image through the transform differs from the partition value matches
        no row (bucket, opaque, cyclic date parts).
    """

    null: bool | None = None
    exact: Any = NOTHING
    interval: Interval | None = None
    prefix: str | None = None
    image: bool = False
