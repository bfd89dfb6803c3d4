"""Joint projection of ranges through date parts (year, month, day, hour of one source).

Month, day and hour are cyclic (month-of-year, day-of-month, hour-of-day), so alone they
project a range only as the set of values it covers. With the coarser parts of the same
source in the spec, (year, month, day, hour) orders time lexicographically, and a range of
instants becomes a lexicographic range of tuples: ``ts >= 2025-06-01 AND ts < 2025-07-01``
is ``year = 2025 AND month = 6``.
"""

from __future__ import annotations

import datetime
from typing import Any

from lance_partitioned.expressions import ranges
from lance_partitioned.expressions.ranges import PARTS, Interval
from lance_partitioned.expressions.tree import (
    AlwaysTrue,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    NotNull,
    Predicate,
    and_,
    or_,
)
from lance_partitioned.spec.partitioning import PartitionField
from lance_partitioned.spec.transforms import Day, Month, Transform

__all__ = ["chain", "covered", "lexicographic"]

_SPAN_LIMIT = 64  # days/hours enumerated for the values a range covers


def chain(fields: list[PartitionField]) -> list[PartitionField]:
    """The fields for year, month, day, hour (a prefix of them, one field each).

    >>> import pyarrow as pa
    >>> from lance_partitioned.spec.partitioning import PartitionField
    >>> year = PartitionField(1, "y", 0, "date_part('year', col)", pa.int32())
    >>> day = PartitionField(2, "d", 0, "date_part('day', col)", pa.int32())
    >>> [f.name for f in chain([day, year])]  # no month: day does not follow year
    ['y']
    """
    chain: list[PartitionField] = []
    for part in PARTS:
        found = next((f for f in fields if type(f.transform) is part), None)
        if found is None:
            break
        chain.append(found)
    return chain


def lexicographic(chain: list[PartitionField], interval: Interval) -> Predicate:
    """(year, month, …) between the parts of the interval's bounds, lexicographically.

    >>> import datetime, pyarrow as pa
    >>> from lance_partitioned.spec.partitioning import PartitionField
    >>> from lance_partitioned.expressions.ranges import Interval
    >>> fields = [PartitionField(1, "y", 0, "date_part('year', col)", pa.int32()),
    ...           PartitionField(2, "m", 0, "date_part('month', col)", pa.int32())]
    >>> june = Interval(datetime.date(2025, 6, 1), True, datetime.date(2025, 6, 30), True)
    >>> lexicographic(fields, june)
    And(left=EqualTo(term='y', value=2025), right=EqualTo(term='m', value=6))
    """
    names = [f.name for f in chain]
    low = None if interval.low is None else ranges.date_parts(interval.low, len(chain))
    high = None if interval.high is None else ranges.date_parts(interval.high, len(chain))
    return _lex(names, low, high, 0)


def _lex(names: list[str], low: Any, high: Any, i: int) -> Predicate:
    if i == len(names):
        return AlwaysTrue()
    name = names[i]
    if low is not None and high is not None and low[i] == high[i]:
        return and_(EqualTo(name, low[i]), _lex(names, low, high, i + 1))
    whole_low = low is None or ranges.first_parts(low, i)
    if i > 0 and whole_low and (high is None or ranges.last_parts(high, i)):
        return AlwaysTrue()  # every cell within the enclosing prefix: no further constraint
    parts = []
    if low is not None:
        parts.append(_lex_bound(names, low, i, lower=True))
    if high is not None:
        parts.append(_lex_bound(names, high, i, lower=False))
    return and_(*parts)


def _lex_bound(names: list[str], parts: tuple[int, ...], i: int, lower: bool) -> Predicate:
    """(names[i:]) >= parts[i:] (or <=), given equal leading parts."""
    name = names[i]
    edge = ranges.first_parts if lower else ranges.last_parts
    if i + 1 == len(names) or edge(parts, i + 1):
        return GreaterThanOrEqual(name, parts[i]) if lower else LessThanOrEqual(name, parts[i])
    beyond = GreaterThan(name, parts[i]) if lower else LessThan(name, parts[i])
    return or_(beyond, and_(EqualTo(name, parts[i]), _lex_bound(names, parts, i + 1, lower)))


def covered(name: str, t: Transform, interval: Interval) -> Predicate:
    """The month-of-year (day-of-month, hour-of-day) values a bounded range covers.

    ``IS NOT NULL`` when the range is unbounded or covers every value.

    >>> import datetime
    >>> from lance_partitioned.spec.transforms import Month
    >>> from lance_partitioned.expressions.ranges import Interval
    >>> winter = Interval(datetime.date(2025, 12, 1), True, datetime.date(2026, 2, 28), True)
    >>> covered("m", Month(), winter)
    In(term='m', values=(1, 2, 12))
    """
    if interval.low is None or interval.high is None:
        return NotNull(name)
    low, high = ranges.utc_naive(interval.low), ranges.utc_naive(interval.high)
    values: set[int] = set()
    if isinstance(t, Month):
        first, last = low.year * 12 + low.month - 1, high.year * 12 + high.month - 1
        if last - first >= 11:
            return NotNull(name)
        values = {m % 12 + 1 for m in range(first, last + 1)}
    else:
        unit = datetime.timedelta(days=1) if isinstance(t, Day) else datetime.timedelta(hours=1)
        start = low.replace(hour=0) if isinstance(t, Day) else low
        start = start.replace(minute=0, second=0, microsecond=0)
        if (high - start) // unit >= _SPAN_LIMIT:
            return NotNull(name)
        moment = start
        while moment <= high:
            values.add(moment.day if isinstance(t, Day) else moment.hour)
            moment += unit
        if len(values) == (31 if isinstance(t, Day) else 24):
            return NotNull(name)
    return In(name, tuple(sorted(values)))
