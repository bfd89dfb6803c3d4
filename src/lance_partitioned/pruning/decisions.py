"""What a fact about a column decides about one leaf: True (every row matches), False (none
does) or None (undecided).

Each fact is a visitor over leaves (:class:`~lance_partitioned.expressions.visitor.
PredicateVisitor`): the column's one value (:func:`holds`), the interval its values lie in
(:class:`ByInterval`), a prefix every value starts with (:class:`ByPrefix`), the partition
value of a transform that rules out literals mapping elsewhere (:class:`ByImages`). A leaf
kind a fact does not know is undecided, which is always sound.

>>> from lance_partitioned.expressions.ranges import Interval
>>> from lance_partitioned.expressions.tree import GreaterThan, LessThan
>>> decide(LessThan("x", 10), ByInterval(Interval(1, True, 5, True)))
True
>>> decide(GreaterThan("x", 3), ByInterval(Interval(1, True, 5, True))) is None
True
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.ranges import FAILED, Interval
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.expressions.visitor import PredicateVisitor, visit
from lance_partitioned.spec.transforms import Transform

__all__ = ["ByImages", "ByInterval", "ByPrefix", "Decider", "decide", "holds"]


class Decider(PredicateVisitor[bool | None]):
    """A fact about one column, asked about leaves on it: undecided unless a method knows."""

    def visit_and(self, parts: list[bool | None]) -> bool | None:
        return None  # asked about leaves only

    def visit_or(self, parts: list[bool | None]) -> bool | None:
        return None

    def visit_leaf(self, p: Predicate) -> bool | None:
        return None


def decide(leaf: Predicate, fact: Decider) -> bool | None:
    """What ``fact`` decides about ``leaf`` (None too when the literals do not compare)."""
    try:
        return visit(leaf, fact)
    except TypeError:  # literals of another type: an unbound predicate
        return None


def holds(leaf: Predicate, value: Any) -> bool | None:
    """Evaluate a leaf on the one non-NULL value of the column (floats in total order);
    None when the leaf is not a comparison, set or prefix test, or the types do not compare.

    >>> from lance_partitioned.expressions.tree import EqualTo, GreaterThan, In
    >>> holds(GreaterThan("x", 5), 7), holds(In("x", (1, 2)), 3), holds(EqualTo("x", 1), "a")
    (True, False, None)
    """
    return decide(leaf, _Holds(value))


class _Holds(Decider):
    def __init__(self, value: Any) -> None:
        self.value = value

    def order(self, p: t.Comparison) -> int:
        return _compare(self.value, p.value)

    def visit_equal_to(self, p: t.EqualTo) -> bool | None:
        return self.order(p) == 0

    def visit_not_equal_to(self, p: t.NotEqualTo) -> bool | None:
        return self.order(p) != 0

    def visit_less_than(self, p: t.LessThan) -> bool | None:
        return self.order(p) < 0

    def visit_less_than_or_equal(self, p: t.LessThanOrEqual) -> bool | None:
        return self.order(p) <= 0

    def visit_greater_than(self, p: t.GreaterThan) -> bool | None:
        return self.order(p) > 0

    def visit_greater_than_or_equal(self, p: t.GreaterThanOrEqual) -> bool | None:
        return self.order(p) >= 0

    def found(self, p: t.SetPredicate) -> bool:
        return any(_compare(self.value, v) == 0 for v in p.values)

    def visit_in(self, p: t.In) -> bool | None:
        return self.found(p)

    def visit_not_in(self, p: t.NotIn) -> bool | None:
        return not self.found(p)

    def visit_starts_with(self, p: t.StartsWith) -> bool | None:
        return str(self.value).startswith(p.prefix)

    def visit_not_starts_with(self, p: t.NotStartsWith) -> bool | None:
        return not str(self.value).startswith(p.prefix)


def _compare(a: Any, b: Any) -> int:
    """-1, 0 or 1 in DataFusion's order (NaN equal to itself and above every number)."""
    a_nan = isinstance(a, float) and math.isnan(a)
    b_nan = isinstance(b, float) and math.isnan(b)
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)
    if a == b:
        return 0
    return -1 if a < b else 1


class ByInterval(Decider):
    """The column's values lie in ``interval``."""

    def __init__(self, interval: Interval) -> None:
        self.interval = interval

    def visit_less_than(self, p: t.LessThan) -> bool | None:
        i = self.interval
        return True if i.below(p.value, False) else (False if i.above(p.value, True) else None)

    def visit_less_than_or_equal(self, p: t.LessThanOrEqual) -> bool | None:
        i = self.interval
        return True if i.below(p.value, True) else (False if i.above(p.value, False) else None)

    def visit_greater_than(self, p: t.GreaterThan) -> bool | None:
        i = self.interval
        return True if i.above(p.value, False) else (False if i.below(p.value, True) else None)

    def visit_greater_than_or_equal(self, p: t.GreaterThanOrEqual) -> bool | None:
        i = self.interval
        return True if i.above(p.value, True) else (False if i.below(p.value, False) else None)

    def visit_equal_to(self, p: t.EqualTo) -> bool | None:
        return False if self.interval.excludes(p.value) else None

    def visit_not_equal_to(self, p: t.NotEqualTo) -> bool | None:
        return True if self.interval.excludes(p.value) else None

    def visit_in(self, p: t.In) -> bool | None:
        return False if all(self.interval.excludes(v) for v in p.values) else None

    def visit_not_in(self, p: t.NotIn) -> bool | None:
        return True if all(self.interval.excludes(v) for v in p.values) else None


class ByPrefix(Decider):
    """Every value starts with ``prefix``: they lie in [prefix, prefix + anything)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def visit_starts_with(self, p: t.StartsWith) -> bool | None:
        if self.prefix.startswith(p.prefix):
            return True  # every value starts with p.prefix
        return False if not p.prefix.startswith(self.prefix) else None

    def visit_not_starts_with(self, p: t.NotStartsWith) -> bool | None:
        if self.prefix.startswith(p.prefix):
            return False
        return True if not p.prefix.startswith(self.prefix) else None

    def outside(self, p: t.SetPredicate) -> bool:
        return all(isinstance(v, str) and not v.startswith(self.prefix) for v in p.values)

    def visit_in(self, p: t.In) -> bool | None:
        return False if self.outside(p) else None

    def visit_not_in(self, p: t.NotIn) -> bool | None:
        return True if self.outside(p) else None

    def rows_below(self, p: t.Comparison) -> bool | None:
        """Whether every row is below the literal (None: a literal the prefix starts, or
        not a string); they differ within the prefix, or the literal is shorter."""
        if not isinstance(p.value, str) or p.value.startswith(self.prefix):
            return None
        return p.value > self.prefix

    def at_prefix(self, p: t.Comparison) -> bool:
        return isinstance(p.value, str) and p.value == self.prefix

    def visit_equal_to(self, p: t.EqualTo) -> bool | None:
        return None if self.rows_below(p) is None else False

    def visit_not_equal_to(self, p: t.NotEqualTo) -> bool | None:
        return None if self.rows_below(p) is None else True

    def visit_less_than(self, p: t.LessThan) -> bool | None:
        return False if self.at_prefix(p) else self.rows_below(p)

    def visit_less_than_or_equal(self, p: t.LessThanOrEqual) -> bool | None:
        return self.rows_below(p)

    def visit_greater_than(self, p: t.GreaterThan) -> bool | None:
        below = self.rows_below(p)
        return None if below is None else not below

    def visit_greater_than_or_equal(self, p: t.GreaterThanOrEqual) -> bool | None:
        if self.at_prefix(p):
            return True
        below = self.rows_below(p)
        return None if below is None else not below


class ByImages(Decider):
    """Partition values of transforms (bucket, opaque, cyclic date part) that rule out the
    literals mapping elsewhere: ``images`` holds (transform, result type, value)."""

    def __init__(self, source: pa.DataType, images: list[tuple[Transform, pa.DataType, Any]]):
        self.source = source
        self.images = images

    def rule_out(self, values: tuple[Any, ...], positive: bool) -> bool | None:
        for transform, result, value in self.images:
            images = [transform.apply_literal(v, self.source, result) for v in values]
            if FAILED in images:
                continue
            if all(i is not None and i != value for i in images):
                if positive:
                    return False
                if value is not None:  # a non-NULL image: the rows are not NULL
                    return True
        return None

    def visit_equal_to(self, p: t.EqualTo) -> bool | None:
        return self.rule_out((p.value,), positive=True)

    def visit_not_equal_to(self, p: t.NotEqualTo) -> bool | None:
        return self.rule_out((p.value,), positive=False)

    def visit_in(self, p: t.In) -> bool | None:
        return self.rule_out(p.values, positive=True)

    def visit_not_in(self, p: t.NotIn) -> bool | None:
        return self.rule_out(p.values, positive=False)
