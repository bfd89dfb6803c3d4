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


def and_(*predicates: Predicate) -> Predicate:
    """The conjunction, folding constants: ``and_()`` is AlwaysTrue.

    >>> from lance_partitioned.expressions.tree import AlwaysTrue, IsNull, and_
    >>> and_(AlwaysTrue(), IsNull("x"))
    IsNull(term='x')
    """
    result: Predicate = AlwaysTrue()
    for predicate in predicates:
        if isinstance(predicate, AlwaysFalse) or isinstance(result, AlwaysFalse):
            return AlwaysFalse()
        if isinstance(predicate, AlwaysTrue):
            continue
        result = predicate if isinstance(result, AlwaysTrue) else And(result, predicate)
    return result


def or_(*predicates: Predicate) -> Predicate:
    """The disjunction, folding constants: ``or_()`` is AlwaysFalse.

    >>> from lance_partitioned.expressions.tree import AlwaysFalse, AlwaysTrue, IsNull, or_
    >>> or_(AlwaysFalse(), IsNull("x"))
    IsNull(term='x')
    >>> or_(IsNull("x"), AlwaysTrue())
    AlwaysTrue()
    """
    result: Predicate = AlwaysFalse()
    for predicate in predicates:
        if isinstance(predicate, AlwaysTrue) or isinstance(result, AlwaysTrue):
            return AlwaysTrue()
        if isinstance(predicate, AlwaysFalse):
            continue
        result = predicate if isinstance(result, AlwaysFalse) else Or(result, predicate)
    return result
