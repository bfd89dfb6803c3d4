"""Rewrites of the predicate tree: NOT push-down and binding to a schema.

The pipeline is PyIceberg's: :func:`rewrite_not` pushes every NOT down to the leaves (exact
under SQL's three-valued logic: ``NOT (x < 5)`` is ``x >= 5``, NULL staying NULL), then
:func:`bind` checks the columns and coerces every literal to its column's type, folding what
the type decides (``int8_col < 1000`` is ``int8_col IS NOT NULL``). Bound predicates are
NOT-free and their literals have the column's Python type, which is what
:mod:`~lance_partitioned.pruning.projection` and the renderers expect.

>>> import pyarrow as pa
>>> from lance_partitioned.expressions.tree import LessThan, Not, Or, EqualTo
>>> rewrite_not(Not(Or(LessThan("x", 5), EqualTo("y", 1))))
And(left=GreaterThanOrEqual(term='x', value=5), right=NotEqualTo(term='y', value=1))
>>> bind(LessThan("x", 2.5), pa.schema([("x", pa.int32())]))
LessThanOrEqual(term='x', value=2)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from lance_partitioned.errors import InvalidInputError
from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.literals import (
    AboveAll,
    BelowAll,
    Between,
    Exact,
    coerce,
    int_domain,
)
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.expressions.visitor import LeafMapper, PredicateVisitor, visit

__all__ = ["bind", "rewrite_not", "terms"]

_NEGATED: dict[type[Predicate], type[Predicate]] = {
    t.EqualTo: t.NotEqualTo,
    t.NotEqualTo: t.EqualTo,
    t.LessThan: t.GreaterThanOrEqual,
    t.GreaterThanOrEqual: t.LessThan,
    t.LessThanOrEqual: t.GreaterThan,
    t.GreaterThan: t.LessThanOrEqual,
}


def rewrite_not(predicate: Predicate) -> Predicate:
    """Push every NOT down to the leaves, so the result contains no :class:`Not`.

    ``Not(Unknown(sql))`` becomes ``Unknown("NOT (sql)")``. Constants are folded. A long chain
    of ANDs (ORs) is walked iteratively and rebuilt balanced, so that every visitor after this
    one recurses about log2(n) deep, whatever the length of the filter.

    Examples
    --------
    >>> from lance_partitioned.expressions.tree import In, IsNull, Not, Unknown, And
    >>> rewrite_not(Not(And(In("x", (1, 2)), Not(IsNull("y")))))
    Or(left=NotIn(term='x', values=(1, 2)), right=IsNull(term='y'))
    >>> rewrite_not(Not(Unknown("(`x` % 2 = 0)", ("x",))))
    Unknown(sql='NOT ((`x` % 2 = 0))', columns=('x',))
    """
    if not _has_not(predicate):
        return visit(predicate, _Fold())  # the common case: fold constants, balance chains
    return visit(predicate, _PushNot())[0]


def _has_not(predicate: Predicate) -> bool:
    stack = [predicate]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is t.Not:
            return True
        if kind is t.And or kind is t.Or:
            stack.append(node.left)  # type: ignore[attr-defined]
            stack.append(node.right)  # type: ignore[attr-defined]
    return False


class _Fold(LeafMapper):
    """A NOT-free tree rebuilt: constants folded, long chains balanced."""

    def visit_leaf(self, p: Predicate) -> Predicate:
        return p


class _PushNot(PredicateVisitor[tuple[Predicate, Predicate]]):
    """Each node and its negation, both NOT-free (De Morgan at AND and OR)."""

    def visit_and(self, parts: list[tuple[Predicate, Predicate]]) -> tuple[Predicate, Predicate]:
        return t.and_(*(p for p, _ in parts)), t.or_(*(n for _, n in parts))

    def visit_or(self, parts: list[tuple[Predicate, Predicate]]) -> tuple[Predicate, Predicate]:
        return t.or_(*(p for p, _ in parts)), t.and_(*(n for _, n in parts))

    def visit_not(self, child: tuple[Predicate, Predicate]) -> tuple[Predicate, Predicate]:
        return child[1], child[0]

    def visit_true(self, p: t.AlwaysTrue) -> tuple[Predicate, Predicate]:
        return p, t.AlwaysFalse()

    def visit_false(self, p: t.AlwaysFalse) -> tuple[Predicate, Predicate]:
        return p, t.AlwaysTrue()

    def visit_is_null(self, p: t.IsNull) -> tuple[Predicate, Predicate]:
        return p, t.NotNull(p.term)

    def visit_not_null(self, p: t.NotNull) -> tuple[Predicate, Predicate]:
        return p, t.IsNull(p.term)

    def visit_comparison(self, p: t.Comparison) -> tuple[Predicate, Predicate]:
        return p, _NEGATED[type(p)](p.term, p.value)  # type: ignore[call-arg]

    def visit_in(self, p: t.In) -> tuple[Predicate, Predicate]:
        return p, t.NotIn(p.term, p.values)

    def visit_not_in(self, p: t.NotIn) -> tuple[Predicate, Predicate]:
        return p, t.In(p.term, p.values)

    def visit_starts_with(self, p: t.StartsWith) -> tuple[Predicate, Predicate]:
        return p, t.NotStartsWith(p.term, p.prefix)

    def visit_not_starts_with(self, p: t.NotStartsWith) -> tuple[Predicate, Predicate]:
        return p, t.StartsWith(p.term, p.prefix)

    def visit_unknown(self, p: t.Unknown) -> tuple[Predicate, Predicate]:
        return p, t.Unknown(f"NOT ({p.sql})", p.columns)


def terms(predicate: Predicate) -> set[str]:
    """The columns a predicate reads (an Unknown contributes its ``columns``).

    >>> from lance_partitioned.expressions.tree import EqualTo, IsNull, Unknown
    >>> sorted(terms(EqualTo("a", 1) | IsNull("b") | Unknown("c > 1", ("c",))))
    ['a', 'b', 'c']
    """
    return visit(predicate, _Terms())


class _Terms(PredicateVisitor[set[str]]):
    flat = True

    def visit_and(self, parts: list[set[str]]) -> set[str]:
        return set().union(*parts)

    def visit_or(self, parts: list[set[str]]) -> set[str]:
        return set().union(*parts)

    def visit_not(self, child: set[str]) -> set[str]:
        return child

    def visit_unknown(self, p: t.Unknown) -> set[str]:
        return set(p.columns)

    def visit_leaf(self, p: Predicate) -> set[str]:
        term = getattr(p, "term", None)
        return {term} if isinstance(term, str) else set()


def bind(predicate: Predicate, schema: pa.Schema) -> Predicate:
    """Check the columns of ``predicate`` and coerce its literals to their column types.

    NOT is pushed down first. Each literal becomes a value of the column's own type,
    exactly: ``x < 2.5`` on an integer column is ``x <= 2``, ``x = 2.5`` is AlwaysFalse,
    ``int8_col < 1000`` is ``int8_col IS NOT NULL`` (NULL rows still do not match), a date
    against a timestamp column is its midnight (UTC, as DataFusion casts it), a string
    against a date column is parsed. IN lists drop values the column cannot hold; an IN
    of one value becomes ``=``, an empty IN is AlwaysFalse and an empty NOT IN is
    ``IS NOT NULL``. ``LIKE 'prefix%'`` with an empty prefix is ``IS NOT NULL``.

    Parameters
    ----------
    predicate : Predicate
        Over top-level column names.
    schema : pyarrow.Schema
        The columns and their types.

    Returns
    -------
    Predicate
        A NOT-free predicate whose literals have the column's Python type.

    Raises
    ------
    InvalidInputError
        A column is not in ``schema``, or a literal cannot be compared with its column.

    Examples
    --------
    >>> import datetime, pyarrow as pa
    >>> from lance_partitioned.expressions.tree import EqualTo, GreaterThan, In
    >>> schema = pa.schema([("b", pa.int8()), ("ts", pa.timestamp("us", tz="UTC"))])
    >>> bind(GreaterThan("b", 1000) | In("b", (1, 1.5, 300)), schema)
    EqualTo(term='b', value=1)
    >>> bind(EqualTo("ts", datetime.date(2025, 1, 1)), schema).value
    datetime.datetime(2025, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
    >>> bind(EqualTo("z", 1), schema)
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.InvalidInputError: column 'z' is not in the schema ...
    """
    return visit(rewrite_not(predicate), _Binder(schema))


class _Binder(LeafMapper):
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema

    def field(self, name: str) -> pa.Field:
        index = self.schema.get_field_index(name)
        if index < 0:
            if name in self.schema.names:
                raise InvalidInputError(f"column {name!r} appears more than once in the schema")
            raise InvalidInputError(
                f"column {name!r} is not in the schema (columns: {', '.join(self.schema.names)})"
            )
        return self.schema.field(index)

    def visit_true(self, p: t.AlwaysTrue) -> Predicate:
        return p

    def visit_false(self, p: t.AlwaysFalse) -> Predicate:
        return p

    def visit_unary(self, p: t.UnaryPredicate) -> Predicate:
        self.field(p.term)
        return p

    def visit_unknown(self, p: t.Unknown) -> Predicate:
        for name in p.columns:
            self.field(name)
        return p

    def place(self, p: t.Comparison) -> Predicate | Between | BelowAll | AboveAll:
        """The bound leaf when the column holds the literal exactly (folded at the edges of
        an integer domain), else where the literal falls among the column's values."""
        field = self.field(p.term)
        if pa.types.is_null(field.type):
            return t.AlwaysFalse()  # every value is NULL
        if p.value is None:
            raise InvalidInputError(
                f"column {p.term!r}: comparing with NULL is never true; use IS NULL"
            )
        placement = coerce(p.value, field.type, p.term)
        if isinstance(placement, Exact):
            return _at_domain_edge(type(p), p.term, placement.value, field.type)
        return placement

    def visit_equal_to(self, p: t.EqualTo) -> Predicate:
        placed = self.place(p)
        return placed if isinstance(placed, Predicate) else t.AlwaysFalse()

    def visit_not_equal_to(self, p: t.NotEqualTo) -> Predicate:
        placed = self.place(p)
        return placed if isinstance(placed, Predicate) else t.NotNull(p.term)

    def less(self, p: t.LessThan | t.LessThanOrEqual) -> Predicate:
        placed = self.place(p)
        if isinstance(placed, Predicate):
            return placed
        if isinstance(placed, Between):
            return t.LessThanOrEqual(p.term, placed.below)
        return t.AlwaysFalse() if isinstance(placed, BelowAll) else t.NotNull(p.term)

    def greater(self, p: t.GreaterThan | t.GreaterThanOrEqual) -> Predicate:
        placed = self.place(p)
        if isinstance(placed, Predicate):
            return placed
        if isinstance(placed, Between):
            return t.GreaterThan(p.term, placed.below)
        return t.NotNull(p.term) if isinstance(placed, BelowAll) else t.AlwaysFalse()

    def visit_less_than(self, p: t.LessThan) -> Predicate:
        return self.less(p)

    def visit_less_than_or_equal(self, p: t.LessThanOrEqual) -> Predicate:
        return self.less(p)

    def visit_greater_than(self, p: t.GreaterThan) -> Predicate:
        return self.greater(p)

    def visit_greater_than_or_equal(self, p: t.GreaterThanOrEqual) -> Predicate:
        return self.greater(p)

    def values(self, p: t.SetPredicate) -> tuple[Any, ...] | None:
        """The IN list the column can hold, coerced (None: the column is all NULL)."""
        field = self.field(p.term)
        if pa.types.is_null(field.type):
            return None
        return _members(p.values, field.type, p.term)

    def visit_in(self, p: t.In) -> Predicate:
        values = self.values(p)
        if not values:
            return t.AlwaysFalse()
        return t.EqualTo(p.term, values[0]) if len(values) == 1 else t.In(p.term, values)

    def visit_not_in(self, p: t.NotIn) -> Predicate:
        values = self.values(p)
        if values is None:
            return t.AlwaysFalse()
        if not values:
            return t.NotNull(p.term)
        return t.NotEqualTo(p.term, values[0]) if len(values) == 1 else t.NotIn(p.term, values)

    def prefix(self, p: t.StartsWith | t.NotStartsWith) -> bool:
        """Whether the prefix is not empty (False: the column is all NULL or it is empty)."""
        field = self.field(p.term)
        dtype = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_null(dtype):
            return False
        if not (
            pa.types.is_string(dtype)
            or pa.types.is_large_string(dtype)
            or dtype == pa.string_view()
        ):
            raise InvalidInputError(
                f"column {p.term!r} ({field.type}): a prefix test needs a string column"
            )
        if not isinstance(p.prefix, str):
            raise InvalidInputError(
                f"column {p.term!r}: the prefix must be a string, got {p.prefix!r}"
            )
        return True

    def visit_starts_with(self, p: t.StartsWith) -> Predicate:
        if not self.prefix(p):
            return t.AlwaysFalse()
        return t.NotNull(p.term) if p.prefix == "" else p

    def visit_not_starts_with(self, p: t.NotStartsWith) -> Predicate:
        return p if self.prefix(p) and p.prefix != "" else t.AlwaysFalse()


def _members(values: Iterable[Any], dtype: pa.DataType, term: str) -> tuple[Any, ...]:
    """The values of an IN list that the column can hold, coerced, without repeats."""
    kept: dict[Any, None] = {}
    for value in values:
        if value is None:
            raise InvalidInputError(f"column {term!r}: an IN list holds no NULL (use IS NULL)")
        placement = coerce(value, dtype, term)
        if isinstance(placement, Exact):
            kept[_key(placement.value)] = placement.value
    return tuple(kept.values())


def _key(value: Any) -> Any:
    """A dict key under which NaN equals NaN (NaN is one value in DataFusion's order)."""
    return ("nan",) if isinstance(value, float) and value != value else value


def _at_domain_edge(
    kind: type[t.Comparison], term: str, value: Any, dtype: pa.DataType
) -> Predicate:
    """``term <kind> value``, folded when ``value`` is the least or greatest integer."""
    domain = int_domain(dtype)
    if domain is not None:
        low, high = domain
        if value == low and kind in (t.LessThan, t.GreaterThanOrEqual):
            return t.AlwaysFalse() if kind is t.LessThan else t.NotNull(term)
        if value == high and kind in (t.GreaterThan, t.LessThanOrEqual):
            return t.AlwaysFalse() if kind is t.GreaterThan else t.NotNull(term)
    return kind(term, value)
