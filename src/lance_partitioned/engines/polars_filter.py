"""A Polars predicate (what a Polars IO plugin receives) as a predicate.

The expression is read through Polars' own JSON serialization
(``Expr.meta.serialize(format="json")``): column references, comparisons, ``&``/``|``/``~``,
``is_in``, ``is_between``, ``is_null``/``is_not_null`` and ``str.starts_with`` become
:mod:`.nodes`. Literals (and casts of literals) are not decoded from the JSON: each such
sub-expression is evaluated by Polars itself and read back as an Arrow scalar, so every
literal has the value and type Polars gives it. Anything else is opaque, and the plugin
then applies the whole Polars predicate to the batches it read: nothing is dropped.

>>> import pyarrow as pa, polars as pl
>>> schema = pa.schema([("id", pa.int64()), ("country", pa.string())])
>>> t = translate_polars((pl.col("country") == "US") & pl.col("id").is_between(2, 5), schema)
>>> t.predicate
And(left=EqualTo(term='country', value='US'),
    right=And(left=GreaterThanOrEqual(term='id', value=2),
              right=LessThanOrEqual(term='id', value=5)))
>>> t.exact
True
>>> translate_polars(pl.col("country").str.len_chars() > 1, schema).exact
False
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_partitioned.engines.nodes import (
    Call,
    Field,
    FieldPath,
    Literal,
    Node,
    Opaque,
    Translation,
)
from lance_partitioned.engines.nodes import translate as translate_nodes

if TYPE_CHECKING:
    import polars as pl

__all__ = ["decode", "translate_polars"]

_OPERATORS = {
    "Eq": "=",
    "NotEq": "!=",
    "Lt": "<",
    "LtEq": "<=",
    "Gt": ">",
    "GtEq": ">=",
    "And": "and",
    "Or": "or",
    "LogicalAnd": "and",
    "LogicalOr": "or",
}
_BETWEEN = {"Both": (">=", "<="), "Left": (">=", "<"), "Right": (">", "<="), "None": (">", "<")}
_BOOLEAN = {"Not": "not", "IsNull": "is_null", "IsNotNull": "is_valid"}


def translate_polars(expression: pl.Expr, schema: pa.Schema) -> Translation:
    """``expression`` as a predicate over ``schema`` (see the module docstring)."""
    return translate_nodes(decode(expression), schema)


def decode(expression: pl.Expr) -> Node:
    """The neutral tree of a Polars expression (one opaque node when it cannot be read).

    >>> import polars as pl
    >>> decode(pl.col("x").is_null())
    Call(name='is_null', args=(Field(name='x'),), option=None)
    """
    try:
        tree = json.loads(expression.meta.serialize(format="json"))
        return _node(tree)
    except RecursionError:
        return Opaque(None)
    except Exception:  # a form of the JSON we do not know
        return Opaque(None)


def _node(tree: Any) -> Node:
    if not isinstance(tree, dict) or len(tree) != 1:
        return Opaque(None)
    ((kind, body),) = tree.items()
    if kind == "Column" and isinstance(body, str):
        return Field(body)
    if kind == "Literal" or (kind == "Cast" and _constant(body.get("expr"))):
        return _evaluate(tree)
    if kind == "Alias" and isinstance(body, list) and body:
        return _node(body[0])
    if kind == "BinaryExpr" and body.get("op") in _OPERATORS:
        args = (_node(body["left"]), _node(body["right"]))
        return Call(_OPERATORS[body["op"]], args)
    if kind == "Function":
        return _function(body)
    return Opaque(_columns(tree))


def _function(body: dict[str, Any]) -> Node:
    inputs = [_node(item) for item in body.get("input", [])]
    function = body.get("function")
    boolean = function.get("Boolean") if isinstance(function, dict) else None
    if isinstance(boolean, str) and boolean in _BOOLEAN and len(inputs) == 1:
        return Call(_BOOLEAN[boolean], tuple(inputs))
    if isinstance(boolean, dict) and "IsIn" in boolean and len(inputs) == 2:
        values = inputs[1]
        if isinstance(values, Literal) and isinstance(
            values.value, pa.ListScalar | pa.LargeListScalar
        ):
            mode = "match" if boolean["IsIn"].get("nulls_equal") else "emit_null"
            return Call("is_in", (inputs[0], Literal(values.value.values)), mode)
    if isinstance(boolean, dict) and "IsBetween" in boolean and len(inputs) == 3:
        closed = boolean["IsBetween"].get("closed")
        if closed in _BETWEEN:
            low, high = _BETWEEN[closed]
            value = inputs[0]
            return Call("and", (Call(low, (value, inputs[1])), Call(high, (value, inputs[2]))))
    struct = function.get("StructExpr") if isinstance(function, dict) else None
    by_name = struct.get("FieldByName") if isinstance(struct, dict) else None
    if isinstance(by_name, str) and len(inputs) == 1 and isinstance(inputs[0], Field):
        parent = inputs[0]  # pl.col("device").struct.field("os")
        above = parent.path if isinstance(parent, FieldPath) else ()
        return FieldPath(parent.name, (*above, by_name))
    starts_with = isinstance(function, dict) and function.get("StringExpr") == "StartsWith"
    if starts_with and len(inputs) == 2:
        return Call("starts_with", tuple(inputs))
    return Opaque(_columns(body))


def _constant(tree: Any) -> bool:
    """A literal, or a cast of one."""
    if not isinstance(tree, dict) or len(tree) != 1:
        return False
    ((kind, body),) = tree.items()
    return kind == "Literal" or (kind == "Cast" and _constant(body.get("expr")))


def _evaluate(tree: Any) -> Node:
    """A constant sub-expression, evaluated by Polars, as an Arrow scalar."""
    import polars as pl

    try:
        expression = pl.Expr.deserialize(io.StringIO(json.dumps(tree)), format="json")
        values = pl.select(expression.alias("value")).to_series().to_arrow()
    except Exception:  # Polars could not evaluate it: the predicate runs in Polars
        return Opaque(frozenset())
    if len(values) != 1:
        return Opaque(frozenset())
    return Literal(values[0])


def _columns(tree: Any) -> frozenset[str] | None:
    """The columns a JSON sub-tree names (None when it may select columns another way)."""
    found: set[str] = set()
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "Column" and isinstance(value, str):
                    found.add(value)
                elif key in ("Columns", "Nth", "Selector", "Wildcard", "DtypeColumn", "Field"):
                    return None
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack += item
    return frozenset(found)
