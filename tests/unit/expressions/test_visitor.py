"""The one walk over the predicate tree: dispatch by node kind, and any depth."""

from __future__ import annotations

import pyarrow as pa

from lance_partitioned.expressions import (
    PredicateVisitor,
    bind,
    map_leaves,
    rewrite_not,
    terms,
    to_sql,
    visit,
)
from lance_partitioned.expressions import tree as t
from lance_partitioned.pruning import project, residual
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema

ARROW = pa.schema([("a", pa.int64()), ("b", pa.utf8())])
DEPTH = 3000  # well past Python's default recursion limit of 1000


def _alternating(depth: int) -> t.Predicate:
    """``a = 0 AND (b = 'x' OR (a = 1 AND (b = 'x' OR ...)))``: nested ``depth`` deep, so
    that no chain of one kind is long (a walk cannot flatten it)."""
    p: t.Predicate = t.EqualTo("a", depth)
    for i in range(depth):
        p = t.And(t.EqualTo("a", i), p) if i % 2 else t.Or(t.EqualTo("b", "x"), p)
    return p


class _Kinds(PredicateVisitor[list[str]]):
    def visit_and(self, parts: list[list[str]]) -> list[str]:
        return [kind for part in parts for kind in part]

    visit_or = visit_and

    def visit_not(self, child: list[str]) -> list[str]:
        return ["not", *child]

    def visit_comparison(self, p: t.Comparison) -> list[str]:
        return [f"comparison {p.op}"]

    def visit_in(self, p: t.In) -> list[str]:
        return ["in"]

    def visit_unknown(self, p: t.Unknown) -> list[str]:
        return [f"unknown {type(p).__name__}"]

    def visit_leaf(self, p: t.Predicate) -> list[str]:
        return [f"leaf {type(p).__name__}"]


class _Subclass(t.Unknown):
    pass


def test_each_node_kind_reaches_its_method_or_its_group() -> None:
    p = t.and_(
        t.EqualTo("a", 1),
        t.GreaterThanOrEqual("a", 2),
        t.Not(t.In("a", (1, 2))),
        t.NotIn("a", (3,)),
        t.IsNull("b"),
        t.StartsWith("b", "x"),
        _Subclass("a % 2 = 0", ("a",)),
        t.AlwaysTrue(),
    )
    assert visit(p, _Kinds()) == [
        "comparison =",
        "comparison >=",
        "not",
        "in",
        "leaf NotIn",
        "leaf IsNull",
        "leaf StartsWith",
        "unknown _Subclass",
    ]  # and_ folded AlwaysTrue away


def test_short_chains_keep_their_shape_long_ones_come_back_balanced() -> None:
    right_nested = t.IsNull("a") & (t.IsNull("b") & t.NotNull("a"))
    assert map_leaves(right_nested, lambda p: p) == right_nested
    long = t.IsNull("a")
    for i in range(1000):
        long = long | t.EqualTo("a", i)  # left-deep, 1000 levels
    rebuilt = map_leaves(long, lambda p: p)
    depth, stack = 0, [(rebuilt, 1)]
    while stack:
        node, level = stack.pop()
        depth = max(depth, level)
        if isinstance(node, t.Or):
            stack += [(node.left, level + 1), (node.right, level + 1)]
    assert depth < 50
    assert t.operands(rebuilt, t.Or) == t.operands(long, t.Or)


def test_a_tree_nested_deeper_than_the_recursion_limit_is_walked() -> None:
    p = _alternating(DEPTH)
    assert terms(p) == {"a", "b"}
    negated = rewrite_not(t.Not(p))
    assert type(negated) is t.Or  # NOT (x AND y) is (NOT x) OR (NOT y)
    bound = bind(p, ARROW)
    assert to_sql(bound).count("(") > DEPTH
    schema = NamespaceSchema.from_arrow(ARROW)
    spec = PartitionSpec(1, (PartitionField(1, "b", 1, "col", pa.utf8()),))
    assert project(bound, spec, schema) == t.AlwaysTrue()  # b = 'x' OR ...: any partition
    assert residual(bound, spec, schema, {"b": "x"}) == t.EqualTo("a", DEPTH - 1)
