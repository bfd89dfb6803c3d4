"""Joint projection of ranges through transforms that order their source together.

Month, day and hour are cyclic (month-of-year, day-of-month, hour-of-day), so alone they
project a range only as the set of values it covers. With the coarser parts of the same
source in the spec, (year, month, day, hour) orders time lexicographically, and a range of
instants becomes a lexicographic range of tuples: ``ts >= 2025-06-01 AND ts < 2025-07-01``
is ``year = 2025 AND month = 6``. Which transforms form such a key is their own declaration
(:attr:`~lance_partitioned.spec.transforms.Transform.joint`: a family and a rank); the family
does the arithmetic (:class:`~lance_partitioned.spec.transforms.Lexicographic`). Nothing here
knows a transform class.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.ranges import Interval
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.spec.calendar import wall_clock_bounds, widened
from lance_partitioned.spec.partitioning import PartitionField
from lance_partitioned.spec.transforms import Lexicographic

__all__ = ["chain", "family", "lexicographic"]


def chain(fields: list[PartitionField]) -> list[PartitionField]:
    """The fields of ranks 0, 1, … of one family (one field per rank, stopping at a gap).

    >>> import pyarrow as pa
    >>> from lance_partitioned.spec.partitioning import PartitionField
    >>> year = PartitionField(1, "y", 0, "date_part('year', col)", pa.int32())
    >>> day = PartitionField(2, "d", 0, "date_part('day', col)", pa.int32())
    >>> [f.name for f in chain([day, year])]  # no month: day does not follow year
    ['y']
    """
    for first in fields:
        joint = first.transform.joint
        if joint is None or joint[1] != 0:
            continue
        found = [first]
        while True:
            rank = (joint[0], len(found))
            step = next((f for f in fields if f.transform.joint == rank), None)
            if step is None:
                return found
            found.append(step)
    return []


def family(chain: list[PartitionField]) -> Lexicographic:
    """The family of a non-empty :func:`chain`."""
    joint = chain[0].transform.joint
    assert joint is not None
    return joint[0]


def lexicographic(
    chain: list[PartitionField], interval: Interval, source: pa.DataType | None = None
) -> Predicate:
    """The chain's values between the keys of the interval's bounds, lexicographically.

    Keys are of the wall clock: a zoned ``source``'s bounds are first translated
    (:func:`~lance_partitioned.spec.calendar.wall_clock_bounds`); aware bounds of an unknown
    source are widened by the largest UTC offset.

    >>> import datetime, pyarrow as pa
    >>> from lance_partitioned.spec.partitioning import PartitionField
    >>> fields = [PartitionField(1, "y", 0, "date_part('year', col)", pa.int32()),
    ...           PartitionField(2, "m", 0, "date_part('month', col)", pa.int32())]
    >>> june = Interval(datetime.date(2025, 6, 1), True, datetime.date(2025, 6, 30), True)
    >>> lexicographic(fields, june)
    And(left=EqualTo(term='y', value=2025), right=EqualTo(term='m', value=6))
    """
    keys = family(chain)
    names = [f.name for f in chain]
    interval = _wall_clock(interval, source)
    low = None if interval.low is None else keys.key(interval.low, len(chain))
    high = None if interval.high is None else keys.key(interval.high, len(chain))
    return _Lex(keys, names).between(low, high, 0)


def _wall_clock(interval: Interval, source: pa.DataType | None) -> Interval:
    if source is not None:
        return wall_clock_bounds(interval, source)
    aware = [getattr(b, "tzinfo", None) is not None for b in (interval.low, interval.high)]
    if not any(aware):
        return interval
    return widened(interval)  # any zone's wall clock


class _Lex:
    def __init__(self, keys: Lexicographic, names: list[str]) -> None:
        self.keys = keys
        self.names = names

    def between(self, low: Any, high: Any, i: int) -> Predicate:
        names = self.names
        if i == len(names):
            return t.AlwaysTrue()
        name = names[i]
        if low is not None and high is not None and low[i] == high[i]:
            return t.and_(t.EqualTo(name, low[i]), self.between(low, high, i + 1))
        whole_low = low is None or self.keys.is_first(low, i)
        if i > 0 and whole_low and (high is None or self.keys.is_last(high, i)):
            return t.AlwaysTrue()  # every cell within the enclosing prefix: no further constraint
        parts = []
        if low is not None:
            parts.append(self.bound(low, i, lower=True))
        if high is not None:
            parts.append(self.bound(high, i, lower=False))
        return t.and_(*parts)

    def bound(self, parts: tuple[Any, ...], i: int, lower: bool) -> Predicate:
        """(names[i:]) >= parts[i:] (or <=), given equal leading parts."""
        name = self.names[i]
        edge = self.keys.is_first if lower else self.keys.is_last
        if i + 1 == len(self.names) or edge(parts, i + 1):
            return (
                t.GreaterThanOrEqual(name, parts[i]) if lower else t.LessThanOrEqual(name, parts[i])
            )
        beyond = t.GreaterThan(name, parts[i]) if lower else t.LessThan(name, parts[i])
        return t.or_(beyond, t.and_(t.EqualTo(name, parts[i]), self.bound(parts, i + 1, lower)))
