"""Predicates: parse SQL, bind to a schema, project through partition transforms, render.

The pipeline of a scan (PyIceberg's): :func:`parse_sql` (or Python nodes, or :func:`col`)
→ :func:`bind` (NOT pushed down, literals coerced to the column types) → :func:`project`
per spec version (a predicate on the ``__manifest`` partition columns) → :func:`residual`
per leaf → :func:`to_sql` for Lance, or :func:`to_arrow` for Arrow data.

>>> import pyarrow as pa
>>> schema = pa.schema([("country", pa.utf8()), ("n", pa.int32())])
>>> p = bind(parse_sql("country = 'US' AND NOT (n < 2.5)", schema), schema)
>>> p
And(left=EqualTo(term='country', value='US'), right=GreaterThan(term='n', value=2))
>>> to_sql(p)
"(`country` = 'US') AND (`n` > 2)"

:func:`project` and :func:`residual` are loaded on first use: they ask the partition
transforms (:mod:`lance_partitioned.spec.transforms`), which build predicates of this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
from lance_partitioned.expressions.visitors import bind, rewrite_not, terms

if TYPE_CHECKING:
    from lance_partitioned.expressions.projection import project
    from lance_partitioned.expressions.residuals import residual

_LAZY = {
    "project": "lance_partitioned.expressions.projection",
    "residual": "lance_partitioned.expressions.residuals",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "SetPredicate",
    "StartsWith",
    "UnaryPredicate",
    "Unknown",
    "and_",
    "bind",
    "col",
    "filter_arrow",
    "or_",
    "parse_sql",
    "project",
    "quote_identifier",
    "residual",
    "rewrite_not",
    "sql_literal",
    "terms",
    "to_arrow",
    "to_sql",
]
