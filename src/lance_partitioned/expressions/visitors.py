"""Rewrites of the predicate tree: NOT push-down and binding to a schema.

The pipeline is PyIceberg's: :func:`rewrite_not` pushes every NOT down to the leaves (exact
under SQL's three-valued logic: ``NOT (x < 5)`` is ``x >= 5``, NULL staying NULL), then
:func:`bind` checks the columns and coerces every literal to its column's type, folding what
the type decides (``int8_col < 1000`` is ``int8_col IS NOT NULL``). Bound predicates are
NOT-free and their literals have the column's Python type, which is what
:mod:`~lance_partitioned.expressions.projection` and the renderers expect.

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
from lance_partitioned.expressions.literals import (
    AboveAll,
    BelowAll,
    Between,
    Exact,
    coerce,
    int_domain,
)
from lance_partitioned.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Comparison,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    Or,
    Predicate,
    StartsWith,
    Unknown,
    and_,
    operands,
    or_,
)

__all__ = ["bind", "rewrite_not", "terms"]

_SHORT = 32  # chains up to this length keep their shape through rewrite_not

_NEGATED: dict[type[Predicate], type[Predicate]] = {
    EqualTo: NotEqualTo,
    NotEqualTo: EqualTo,
    LessThan: GreaterThanOrEqual,
    GreaterThanOrEqual: LessThan,
    LessThanOrEqual: GreaterThan,
    GreaterThan: LessThanOrEqual,
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
    return _push(predicate, negate=False)


def _push(p: Predicate, negate: bool) -> Predicate:
    if isinstance(p, Not):
        return _push(p.child, not negate)
    if isinstance(p, (And, Or)):
        combine = and_ if isinstance(p, And) != negate else or_
        parts = operands(p, type(p))
        if len(parts) > _SHORT:  # a long chain: iterate over it, rebuild it balanced
            return combine(*(_push(part, negate) for part in parts))
        return combine(_push(p.left, negate), _push(p.right, negate))
    if not negate:
        return p
    if isinstance(p, AlwaysTrue):
        return AlwaysFalse()
    if isinstance(p, AlwaysFalse):
        return AlwaysTrue()
    if isinstance(p, IsNull):
        return NotNull(p.term)
    if isinstance(p, NotNull):
        return IsNull(p.term)
    if isinstance(p, Comparison):
        return _NEGATED[type(p)](p.term, p.value)  # type: ignore[call-arg]
    if isinstance(p, In):
        return NotIn(p.term, p.values)
    if isinstance(p, NotIn):
        return In(p.term, p.values)
    if isinstance(p, StartsWith):
        return NotStartsWith(p.term, p.prefix)
    if isinstance(p, NotStartsWith):
        return StartsWith(p.term, p.prefix)
    if isinstance(p, Unknown):
        return Unknown(f"NOT ({p.sql})", p.columns)
    raise InvalidInputError(f"not a predicate node: {p!r}")


def terms(predicate: Predicate) -> set[str]:
    """The columns a predicate reads (an Unknown contributes its ``columns``).

    >>> from lance_partitioned.expressions.tree import EqualTo, IsNull, Unknown
    >>> sorted(terms(EqualTo("a", 1) | IsNull("b") | Unknown("c > 1", ("c",))))
    ['a', 'b', 'c']
    """
    found: set[str] = set()
    stack = [predicate]
    while stack:  # iterative: any depth
        node = stack.pop()
        if isinstance(node, (And, Or)):
            stack += (node.left, node.right)
        elif isinstance(node, Not):
            stack.append(node.child)
        elif isinstance(node, Unknown):
            found.update(node.columns)
        else:
            term = getattr(node, "term", None)
            if isinstance(term, str):
                found.add(term)
    return found


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
    return _Binder(schema).bind(rewrite_not(predicate))


class _Binder:
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

    def bind(self, p: Predicate) -> Predicate:
        if isinstance(p, (AlwaysTrue, AlwaysFalse)):
            return p
        if isinstance(p, And):
            return and_(self.bind(p.left), self.bind(p.right))
        if isinstance(p, Or):
            return or_(self.bind(p.left), self.bind(p.right))
        if isinstance(p, (IsNull, NotNull)):
            self.field(p.term)
            return p
        if isinstance(p, Comparison):
            return self.comparison(p)
        if isinstance(p, (In, NotIn)):
            return self.set_predicate(p)
        if isinstance(p, (StartsWith, NotStartsWith)):
            return self.prefix(p)
        if isinstance(p, Unknown):
            for name in p.columns:
                self.field(name)
            return p
        raise InvalidInputError(f"not a predicate node: {p!r}")

    def comparison(self, p: Comparison) -> Predicate:
        field = self.field(p.term)
        if pa.types.is_null(field.type):
            return AlwaysFalse()  # every value is NULL
        if p.value is None:
            raise InvalidInputError(
                f"column {p.term!r}: comparing with NULL is never true; use IS NULL"
            )
        placement = coerce(p.value, field.type, p.term)
        less = isinstance(p, (LessThan, LessThanOrEqual))
        greater = isinstance(p, (GreaterThan, GreaterThanOrEqual))
        if isinstance(placement, Exact):
            return _at_domain_edge(type(p), p.term, placement.value, field.type)
        if isinstance(p, EqualTo):
            return AlwaysFalse()
        if isinstance(p, NotEqualTo):
            return NotNull(p.term)
        if isinstance(placement, Between):
            if less:
                return LessThanOrEqual(p.term, placement.below)
            return GreaterThan(p.term, placement.below)
        below_all = isinstance(placement, BelowAll)
        assert isinstance(placement, (BelowAll, AboveAll))
        if less:
            return AlwaysFalse() if below_all else NotNull(p.term)
        assert greater
        return NotNull(p.term) if below_all else AlwaysFalse()

    def set_predicate(self, p: In | NotIn) -> Predicate:
        field = self.field(p.term)
        if pa.types.is_null(field.type):
            return AlwaysFalse()
        values = _members(p.values, field.type, p.term)
        if isinstance(p, In):
            if not values:
                return AlwaysFalse()
            return EqualTo(p.term, values[0]) if len(values) == 1 else In(p.term, values)
        if not values:
            return NotNull(p.term)
        return NotEqualTo(p.term, values[0]) if len(values) == 1 else NotIn(p.term, values)

    def prefix(self, p: StartsWith | NotStartsWith) -> Predicate:
        field = self.field(p.term)
        t = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_null(t):
            return AlwaysFalse()
        if not (pa.types.is_string(t) or pa.types.is_large_string(t) or t == pa.string_view()):
            raise InvalidInputError(
                f"column {p.term!r} ({field.type}): a prefix test needs a string column"
            )
        if not isinstance(p.prefix, str):
            raise InvalidInputError(
                f"column {p.term!r}: the prefix must be a string, got {p.prefix!r}"
            )
        if p.prefix == "":
            return NotNull(p.term) if isinstance(p, StartsWith) else AlwaysFalse()
        return p


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


def _at_domain_edge(kind: type[Comparison], term: str, value: Any, dtype: pa.DataType) -> Predicate:
    """``term <kind> value``, folded when ``value`` is the least or greatest integer."""
    domain = int_domain(dtype)
    if domain is not None:
        low, high = domain
        if value == low and kind in (LessThan, GreaterThanOrEqual):
            return AlwaysFalse() if kind is LessThan else NotNull(term)
        if value == high and kind in (GreaterThan, LessThanOrEqual):
            return AlwaysFalse() if kind is GreaterThan else NotNull(term)
    return kind(term, value)
