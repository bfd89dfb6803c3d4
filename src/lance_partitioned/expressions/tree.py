"""The predicate tree: what a filter says, independent of SQL, Spark or Lance.

Nodes are frozen dataclasses, so a predicate is hashable, comparable and picklable (Spark
ships it to executors). Terms are top-level column names; literals are plain Python values
(``int``, ``float``, ``str``, ``bytes``, ``bool``, ``datetime.date``, ``datetime.datetime``,
``decimal.Decimal``) until :func:`~lance_partitioned.expressions.bind` coerces them to the
column's type. Anything a parser does not understand becomes :class:`Unknown`, which keeps
its SQL for the residual filter and never prunes.

>>> from lance_partitioned.expressions.tree import AlwaysFalse, EqualTo, In, and_
>>> p = and_(EqualTo("country", "US"), In("year", (2024, 2025)))
>>> p
And(left=EqualTo(term='country', value='US'), right=In(term='year', values=(2024, 2025)))
>>> and_(p, AlwaysFalse())
AlwaysFalse()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "Comparison",
    "EqualTo",
    "GreaterThan",
    "GreaterThanOrEqual",
    "In",
    "IsNull",
    "LessThan",
    "LessThanOrEqual",
    "Not",
    "NotEqualTo",
    "NotIn",
    "NotNull",
    "NotStartsWith",
    "Or",
    "Predicate",
    "SetPredicate",
    "StartsWith",
    "UnaryPredicate",
    "Unknown",
    "and_",
    "operands",
    "or_",
]


class Predicate:
    """Base of every node. ``a & b``, ``a | b`` and ``~a`` build And, Or and Not."""

    __slots__ = ()

    def __and__(self, other: Predicate) -> Predicate:
        return and_(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        return or_(self, other)

    def __invert__(self) -> Predicate:
        return Not(self)


@dataclass(frozen=True)
class AlwaysTrue(Predicate):
    """Matches every row."""


@dataclass(frozen=True)
class AlwaysFalse(Predicate):
    """Matches no row."""


@dataclass(frozen=True)
class And(Predicate):
    """Both sides hold."""

    left: Predicate
    right: Predicate


@dataclass(frozen=True)
class Or(Predicate):
    """Either side holds."""

    left: Predicate
    right: Predicate


@dataclass(frozen=True)
class Not(Predicate):
    """The child does not hold (SQL: NULL stays NULL)."""

    child: Predicate


@dataclass(frozen=True)
class UnaryPredicate(Predicate):
    """A test on one column with no literal."""

    term: str


@dataclass(frozen=True)
class IsNull(UnaryPredicate):
    """``term IS NULL``."""


@dataclass(frozen=True)
class NotNull(UnaryPredicate):
    """``term IS NOT NULL``."""


@dataclass(frozen=True)
class Comparison(Predicate):
    """``term <op> value``; ``value`` is never None (comparing with NULL is never true)."""

    op: ClassVar[str] = "?"
    term: str
    value: Any


@dataclass(frozen=True)
class EqualTo(Comparison):
    """``term = value``."""

    op: ClassVar[str] = "="


@dataclass(frozen=True)
class NotEqualTo(Comparison):
    """``term != value``."""

    op: ClassVar[str] = "!="


@dataclass(frozen=True)
class LessThan(Comparison):
    """``term < value``."""

    op: ClassVar[str] = "<"


@dataclass(frozen=True)
class LessThanOrEqual(Comparison):
    """``term <= value``."""

    op: ClassVar[str] = "<="


@dataclass(frozen=True)
class GreaterThan(Comparison):
    """``term > value``."""

    op: ClassVar[str] = ">"


@dataclass(frozen=True)
class GreaterThanOrEqual(Comparison):
    """``term >= value``."""

    op: ClassVar[str] = ">="


@dataclass(frozen=True)
class SetPredicate(Predicate):
    """``term [NOT] IN (values)``; ``values`` holds no None."""

    term: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class In(SetPredicate):
    """``term IN (values)``; an empty set matches nothing."""


@dataclass(frozen=True)
class NotIn(SetPredicate):
    """``term NOT IN (values)``; NULL rows never match."""


@dataclass(frozen=True)
class StartsWith(Predicate):
    """``term LIKE 'prefix%'`` (prefix without wildcards)."""

    term: str
    prefix: str


@dataclass(frozen=True)
class NotStartsWith(Predicate):
    """``term NOT LIKE 'prefix%'``."""

    term: str
    prefix: str


@dataclass(frozen=True)
class Unknown(Predicate):
    """A condition the tree cannot express: kept as SQL for the residual, never prunes.

    ``columns`` names the columns it reads (empty when unknown).
    """

    sql: str
    columns: tuple[str, ...] = ()


_BALANCED = 32
"""Chains of more operands than this are built as balanced trees (depth log2 n), so that the
recursive visitors stay shallow whatever the length of a filter."""


def operands(predicate: Predicate, kind: type[And] | type[Or]) -> list[Predicate]:
    """The operands of a chain of ``kind`` nodes, left to right (iterative: any depth).

    >>> from lance_partitioned.expressions.tree import IsNull, Or, operands
    >>> operands(IsNull("a") | (IsNull("b") | IsNull("c")), Or)
    [IsNull(term='a'), IsNull(term='b'), IsNull(term='c')]
    """
    found: list[Predicate] = []
    stack = [predicate]
    while stack:
        node = stack.pop()
        if type(node) is kind:
            stack.append(node.right)
            stack.append(node.left)
        else:
            found.append(node)
    return found


def _chain(kind: type[And] | type[Or], parts: list[Predicate]) -> Predicate:
    if len(parts) <= _BALANCED:
        result = parts[0]
        for part in parts[1:]:
            result = kind(result, part)
        return result
    middle = len(parts) // 2
    return kind(_chain(kind, parts[:middle]), _chain(kind, parts[middle:]))


def and_(*predicates: Predicate) -> Predicate:
    """The conjunction, folding constants: ``and_()`` is AlwaysTrue.

    A few operands chain to the left; many form a balanced tree.

    >>> from lance_partitioned.expressions.tree import AlwaysTrue, IsNull, and_
    >>> and_(AlwaysTrue(), IsNull("x"))
    IsNull(term='x')
    """
    kept: list[Predicate] = []
    for predicate in predicates:
        if isinstance(predicate, AlwaysFalse):
            return AlwaysFalse()
        if not isinstance(predicate, AlwaysTrue):
            kept.append(predicate)
    return _chain(And, kept) if kept else AlwaysTrue()


def or_(*predicates: Predicate) -> Predicate:
    """The disjunction, folding constants: ``or_()`` is AlwaysFalse.

    A few operands chain to the left; many form a balanced tree.

    >>> from lance_partitioned.expressions.tree import AlwaysFalse, AlwaysTrue, IsNull, or_
    >>> or_(AlwaysFalse(), IsNull("x"))
    IsNull(term='x')
    >>> or_(IsNull("x"), AlwaysTrue())
    AlwaysTrue()
    """
    kept: list[Predicate] = []
    for predicate in predicates:
        if isinstance(predicate, AlwaysTrue):
            return AlwaysTrue()
        if not isinstance(predicate, AlwaysFalse):
            kept.append(predicate)
    return _chain(Or, kept) if kept else AlwaysFalse()
