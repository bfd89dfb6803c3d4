"""The one walk over the predicate tree: :class:`PredicateVisitor` and :func:`visit`.

PyIceberg's ``BooleanExpressionVisitor``: a visitor says what each kind of node becomes,
given what its children became; :func:`visit` holds the traversal. It is iterative, so a
tree of any depth is walked without recursion, and it hands long chains of ANDs (ORs) to
the visitor flat (``visit_and`` gets every operand's result at once), so that a tree a
visitor rebuilds with :func:`~lance_partitioned.expressions.tree.and_` comes out balanced.

Each leaf kind has its method (``visit_equal_to``, ``visit_in``, …) that falls back to the
method of its group (``visit_comparison``, ``visit_set``, ``visit_prefix``,
``visit_unary``), then to :meth:`PredicateVisitor.visit_leaf`. A new predicate node is
registered once here (in ``_METHODS``, with its method); visitors that must know it override
its method, the others keep their fallback.

>>> from lance_partitioned.expressions.tree import EqualTo, IsNull
>>> class Count(PredicateVisitor[int]):
...     def visit_and(self, parts: list[int]) -> int:
...         return sum(parts)
...     visit_or = visit_and
...     def visit_leaf(self, p: Predicate) -> int:
...         return 1
>>> visit(EqualTo("a", 1) & (IsNull("b") | IsNull("c")), Count())
3
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Generic, TypeVar

from lance_partitioned.errors import InvalidInputError
from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.tree import Predicate

__all__ = ["LeafMapper", "PredicateVisitor", "leaves", "map_leaves", "visit"]

T = TypeVar("T")
P = TypeVar("P", bound=Predicate)

SHORT_CHAIN = 32
"""Chains of up to this many operands reach a visitor node by node (their shape kept);
longer ones flat, all operands at once."""


class PredicateVisitor(Generic[T]):
    """What each node becomes, given the results of its children (see :func:`visit`).

    Subclasses define :meth:`visit_and` and :meth:`visit_or`, and the leaves they handle:
    one kind (``visit_less_than``), a group (``visit_comparison``) or every leaf
    (:meth:`visit_leaf`). A leaf kind nobody handles raises InvalidInputError.
    """

    flat: ClassVar[bool] = False
    """True: every chain of ANDs (ORs) comes flat, short ones too (for a visitor to which
    the nesting of a chain makes no difference, such as SQL text written flat)."""

    def visit_and(self, parts: list[T]) -> T:
        """An AND of operands that became ``parts`` (two, or a whole long chain)."""
        raise NotImplementedError

    def visit_or(self, parts: list[T]) -> T:
        """An OR of operands that became ``parts`` (two, or a whole long chain)."""
        raise NotImplementedError

    def visit_not(self, child: T) -> T:
        """A NOT whose child became ``child``; by default refused (bind first: NOT-free)."""
        raise InvalidInputError("a NOT-free predicate is expected here: call rewrite_not first")

    def visit_leaf(self, p: Predicate) -> T:
        """Every leaf (constants included) that no more precise method handles."""
        raise InvalidInputError(f"not a predicate node: {p!r}")

    def _not_a_node(self, p: object) -> T:
        raise InvalidInputError(f"not a predicate node: {p!r}")

    def visit_true(self, p: t.AlwaysTrue) -> T:
        return self.visit_leaf(p)

    def visit_false(self, p: t.AlwaysFalse) -> T:
        return self.visit_leaf(p)

    def visit_unary(self, p: t.UnaryPredicate) -> T:
        """IS NULL and IS NOT NULL."""
        return self.visit_leaf(p)

    def visit_is_null(self, p: t.IsNull) -> T:
        return self.visit_unary(p)

    def visit_not_null(self, p: t.NotNull) -> T:
        return self.visit_unary(p)

    def visit_comparison(self, p: t.Comparison) -> T:
        """``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``."""
        return self.visit_leaf(p)

    def visit_equal_to(self, p: t.EqualTo) -> T:
        return self.visit_comparison(p)

    def visit_not_equal_to(self, p: t.NotEqualTo) -> T:
        return self.visit_comparison(p)

    def visit_less_than(self, p: t.LessThan) -> T:
        return self.visit_comparison(p)

    def visit_less_than_or_equal(self, p: t.LessThanOrEqual) -> T:
        return self.visit_comparison(p)

    def visit_greater_than(self, p: t.GreaterThan) -> T:
        return self.visit_comparison(p)

    def visit_greater_than_or_equal(self, p: t.GreaterThanOrEqual) -> T:
        return self.visit_comparison(p)

    def visit_set(self, p: t.SetPredicate) -> T:
        """IN and NOT IN."""
        return self.visit_leaf(p)

    def visit_in(self, p: t.In) -> T:
        return self.visit_set(p)

    def visit_not_in(self, p: t.NotIn) -> T:
        return self.visit_set(p)

    def visit_prefix(self, p: t.StartsWith | t.NotStartsWith) -> T:
        """LIKE 'prefix%' and NOT LIKE 'prefix%'."""
        return self.visit_leaf(p)

    def visit_starts_with(self, p: t.StartsWith) -> T:
        return self.visit_prefix(p)

    def visit_not_starts_with(self, p: t.NotStartsWith) -> T:
        return self.visit_prefix(p)

    def visit_unknown(self, p: t.Unknown) -> T:
        """SQL the tree cannot express (subclasses too)."""
        return self.visit_leaf(p)


_METHODS: dict[type[Predicate], str] = {
    t.AlwaysTrue: "visit_true",
    t.AlwaysFalse: "visit_false",
    t.IsNull: "visit_is_null",
    t.NotNull: "visit_not_null",
    t.EqualTo: "visit_equal_to",
    t.NotEqualTo: "visit_not_equal_to",
    t.LessThan: "visit_less_than",
    t.LessThanOrEqual: "visit_less_than_or_equal",
    t.GreaterThan: "visit_greater_than",
    t.GreaterThanOrEqual: "visit_greater_than_or_equal",
    t.In: "visit_in",
    t.NotIn: "visit_not_in",
    t.StartsWith: "visit_starts_with",
    t.NotStartsWith: "visit_not_starts_with",
    t.Unknown: "visit_unknown",
}
"""The method of each leaf kind; a subclass of a kind (such as the field conditions of
:mod:`lance_partitioned.pruning.fieldnames`) takes its base's."""


def _method(kind: type) -> str:
    """The visitor method for a leaf class (by its nearest registered base, cached)."""
    name = _METHODS.get(kind)
    if name is None:
        base = next((b for b in kind.__mro__ if b in _METHODS), None)
        if base is None:
            return "_not_a_node"
        name = _METHODS[kind] = _METHODS[base]
    return name


def _leaf(p: Predicate, v: PredicateVisitor[T]) -> T:
    name = _METHODS.get(type(p)) or _method(type(p))
    return getattr(v, name)(p)  # type: ignore[no-any-return]


_INNER = (t.And, t.Or, t.Not)


def _children(node: Predicate, flat: bool) -> list[Predicate]:
    """The operands to visit before ``node`` (an And, Or or Not)."""
    kind = type(node)
    if kind is t.And or kind is t.Or:
        parts = t.operands(node, kind)
        if flat or len(parts) > SHORT_CHAIN:
            return parts
        return [node.left, node.right]  # type: ignore[attr-defined]
    return [node.child]  # type: ignore[attr-defined]


def visit(predicate: Predicate, visitor: PredicateVisitor[T]) -> T:
    """What ``visitor`` makes of ``predicate``: its children first, then the node.

    Iterative (any depth); a chain of more than :data:`SHORT_CHAIN` ANDs (ORs), or any
    chain for a ``flat`` visitor, reaches ``visit_and`` (``visit_or``) with all its operands.
    """
    if type(predicate) not in _INNER:
        return _leaf(predicate, visitor)
    flat = visitor.flat
    # frames: a node, an iterator over its children, the results of those visited
    stack: list[tuple[Predicate, Iterator[Predicate], list[Any]]] = [
        (predicate, iter(_children(predicate, flat)), [])
    ]
    while True:
        node, children, parts = stack[-1]
        for child in children:
            if type(child) in _INNER:
                stack.append((child, iter(_children(child, flat)), []))
                break
            parts.append(_leaf(child, visitor))
        else:  # every child visited: combine their results
            stack.pop()
            kind = type(node)
            if kind is t.And:
                result = visitor.visit_and(parts)
            elif kind is t.Or:
                result = visitor.visit_or(parts)
            else:
                result = visitor.visit_not(parts[0])
            if not stack:
                return result
            stack[-1][2].append(result)


class LeafMapper(PredicateVisitor[Predicate]):
    """Rebuilds ANDs and ORs with :func:`~lance_partitioned.expressions.tree.and_` and
    :func:`~lance_partitioned.expressions.tree.or_` (constants fold); a subclass says what
    the leaves become."""

    def visit_and(self, parts: list[Predicate]) -> Predicate:
        return t.and_(*parts)

    def visit_or(self, parts: list[Predicate]) -> Predicate:
        return t.or_(*parts)


class _Mapped(LeafMapper):
    def __init__(self, leaf: Callable[[Predicate], Predicate]) -> None:
        self.leaf = leaf

    def visit_leaf(self, p: Predicate) -> Predicate:
        return self.leaf(p)


def map_leaves(predicate: Predicate, leaf: Callable[[Predicate], Predicate]) -> Predicate:
    """A NOT-free ``predicate`` with each leaf (constants included) replaced by ``leaf(it)``.

    >>> from lance_partitioned.expressions.tree import AlwaysTrue, IsNull
    >>> map_leaves(IsNull("a") & IsNull("b"), lambda p: AlwaysTrue() if p == IsNull("a") else p)
    IsNull(term='b')
    """
    return visit(predicate, _Mapped(leaf))


class _Leaves(PredicateVisitor[list[Any]]):
    flat = True

    def __init__(self, kind: type[Predicate]) -> None:
        self.kind = kind

    def visit_and(self, parts: list[list[Any]]) -> list[Any]:
        return [leaf for part in parts for leaf in part]

    def visit_or(self, parts: list[list[Any]]) -> list[Any]:
        return [leaf for part in parts for leaf in part]

    def visit_not(self, child: list[Any]) -> list[Any]:
        return child

    def visit_leaf(self, p: Predicate) -> list[Any]:
        return [p] if isinstance(p, self.kind) else []


def leaves(predicate: Predicate, kind: type[P]) -> list[P]:
    """The leaves of ``predicate`` of class ``kind`` (subclasses too), left to right.

    >>> from lance_partitioned.expressions.tree import IsNull, Unknown
    >>> leaves(IsNull("a") | Unknown("b % 2 = 0", ("b",)), Unknown)
    [Unknown(sql='b % 2 = 0', columns=('b',))]
    """
    return visit(predicate, _Leaves(kind))
