"""Predicates: parse SQL, bind to a schema, project through partition transforms, render.

The pipeline of a scan (PyIceberg's): :func:`parse_sql` (or Python nodes, or :func:`col`)
→ :func:`bind` (NOT pushed down, literals coerced to the column types) →
:func:`~lance_partitioned.pruning.project` per spec version (a predicate on the
``__manifest`` partition columns) → :func:`~lance_partitioned.pruning.residual` per leaf →
:func:`to_sql` for Lance, or :func:`to_arrow` for Arrow data. Every walk over the tree is a
:class:`~lance_partitioned.expressions.visitor.PredicateVisitor`.

>>> import pyarrow as pa
>>> schema = pa.schema([("country", pa.utf8()), ("n", pa.int32())])
>>> p = bind(parse_sql("country = 'US' AND NOT (n < 2.5)", schema), schema)
>>> p
And(left=EqualTo(term='country', value='US'), right=GreaterThan(term='n', value=2))
>>> to_sql(p)
"(`country` = 'US') AND (`n` > 2)"

This package imports nothing of :mod:`lance_partitioned.spec`: the partition transforms
build its predicates, and the pruning passes that ask the transforms are
:mod:`lance_partitioned.pruning`.
"""

from __future__ import annotations

from lance_partitioned.expressions.builder import Column, col
from lance_partitioned.expressions.parse import parse_sql
from lance_partitioned.expressions.render import (
    filter_arrow,
    quote_identifier,
    sql_literal,
    to_arrow,
    to_sql,
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
    SetPredicate,
    StartsWith,
    UnaryPredicate,
    Unknown,
    and_,
    or_,
)
from lance_partitioned.expressions.visitor import PredicateVisitor, map_leaves, visit
from lance_partitioned.expressions.visitors import bind, rewrite_not, terms

__all__ = [
    "AlwaysFalse",
    "AlwaysTrue",
    "And",
    "Column",
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
    "PredicateVisitor",
    "SetPredicate",
    "StartsWith",
    "UnaryPredicate",
    "Unknown",
    "and_",
    "bind",
    "col",
    "filter_arrow",
    "map_leaves",
    "or_",
    "parse_sql",
    "quote_identifier",
    "rewrite_not",
    "sql_literal",
    "terms",
    "to_arrow",
    "to_sql",
    "visit",
]
