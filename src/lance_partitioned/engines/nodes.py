"""An engine-neutral filter tree, and its translation into the predicate tree.

The pyarrow and Polars decoders (:mod:`.arrow_filter`, :mod:`.polars_filter`) turn an engine's
filter into these few nodes; :func:`translate` turns them into a
:class:`~lance_partitioned.expressions.Predicate` that plans and prunes our scan.

The translation is *sound*: the predicate holds on every row the engine's filter keeps (so
pruning and pushing it down never lose a row). It is *exact* when it keeps exactly those rows;
otherwise the engine's own filter must run again on the batches read (the post-filter), so
nothing is ever dropped. What cannot be translated becomes AlwaysTrue (inexact).

Each node is translated in a polarity: positive gives the rows where it is TRUE, negative
the rows where it is FALSE (NOT flips the polarity), as SQL's three-valued logic says.

>>> import pyarrow as pa
>>> schema = pa.schema([("country", pa.string()), ("amount", pa.float64())])
>>> node = Call("not", (Call("=", (Field("country"), Literal(pa.scalar("US")))),))
>>> translate(node, schema)
Translation(predicate=NotEqualTo(term='country', value='US'), exact=True, columns=...)
>>> translate(Call(">", (Field("amount"), Literal(pa.scalar(2.5)))), schema).exact
False
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_partitioned.errors import InvalidInputError
from lance_partitioned.expressions import (
    AlwaysFalse,
    AlwaysTrue,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    Predicate,
    StartsWith,
    and_,
    bind,
    or_,
)
from lance_partitioned.expressions.render import quote_identifier, to_sql
from lance_partitioned.expressions.sqltext import NotALiteral, python_value
from lance_partitioned.expressions.tree import Unknown
from lance_partitioned.expressions.visitor import map_leaves

__all__ = [
    "COMPARISONS",
    "Call",
    "Field",
    "FieldPath",
    "Literal",
    "Node",
    "Opaque",
    "Translation",
    "columns_of",
    "translate",
]


@dataclass(frozen=True)
class Field:
    """A top-level column."""

    name: str


@dataclass(frozen=True)
class FieldPath(Field):
    """A field of the struct column ``name``, below it by ``path`` (``device.os``: the column
    ``device``, the path ``("os",)``). Translated into SQL on the backtick-quoted path, which
    Lance and DataFusion evaluate (it prunes no leaf)."""

    path: tuple[str, ...]


@dataclass(frozen=True)
class Literal:
    """A constant: a scalar, or an array (the value set of ``is_in``)."""

    value: Any


@dataclass(frozen=True)
class Call:
    """A function of the neutral vocabulary over ``args``.

    Names: ``= != < <= > >=``; ``and``, ``or`` (Kleene), ``and_strict``, ``or_strict``
    (NULL if either side is NULL); ``not``; ``is_null``, ``is_null_or_nan``, ``is_valid``;
    ``is_in`` (``option``: how NULL is matched, ``match``, ``skip``, ``emit_null`` or
    ``inconclusive``, as pyarrow's ``SetLookupOptions``); ``if_else``; ``starts_with``.
    """

    name: str
    args: tuple[Node, ...]
    option: str | None = None


@dataclass(frozen=True)
class Opaque:
    """What a decoder does not know: never prunes. ``columns`` it reads (None: unknown)."""

    columns: frozenset[str] | None


Node = Field | Literal | Call | Opaque

COMPARISONS = {"=", "!=", "<", "<=", ">", ">="}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_NODES = {
    "=": EqualTo,
    "!=": NotEqualTo,
    "<": LessThan,
    "<=": LessThanOrEqual,
    ">": GreaterThan,
    ">=": GreaterThanOrEqual,
}


@dataclass(frozen=True)
class Translation:
    """An engine filter as a predicate.

    Attributes
    ----------
    predicate : Predicate
        Holds on every row the engine filter keeps (unbound literals of the column types).
    exact : bool
        The predicate keeps exactly those rows (no post-filter needed).
    columns : frozenset of str or None
        The columns the engine filter reads (None: not known, read every column).
    """

    predicate: Predicate
    exact: bool
    columns: frozenset[str] | None


EXACT_TRUE = Translation(AlwaysTrue(), True, frozenset())
"""No filter at all."""

_Result = tuple[Predicate, bool]
_UNKNOWN: _Result = (AlwaysTrue(), False)


def columns_of(node: Node) -> frozenset[str] | None:
    """The columns a node reads (None when an opaque part does not say).

    >>> sorted(columns_of(Call("and", (Field("a"), Opaque(frozenset({"b"}))))))
    ['a', 'b']
    """
    found: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Field):
            found.add(item.name)
        elif isinstance(item, Opaque):
            if item.columns is None:
                return None
            found |= item.columns
        elif isinstance(item, Call):
            stack += item.args
    return frozenset(found)


def translate(node: Node, schema: pa.Schema) -> Translation:
    """The predicate of ``node`` over the columns of ``schema`` (see the module docstring)."""
    columns = columns_of(node)
    try:
        predicate, exact = _Translator(schema).visit(node, True)
    except RecursionError:  # a filter nested deeper than Python recurses: the engine filters
        predicate, exact = _UNKNOWN
    return Translation(predicate, exact, columns)


def _family(column: pa.DataType, literal: pa.DataType) -> str | None:
    """``exact`` when the engine compares a column of type ``column`` with a literal of type
    ``literal`` as our predicates do, ``float`` for float columns (NaN and -0.0 are ordered
    otherwise), None when the types do not go together."""
    t = pa.types
    if t.is_dictionary(column):
        column = column.value_type

    def stringy(x: pa.DataType) -> bool:
        return bool(t.is_string(x) or t.is_large_string(x) or x == pa.string_view())

    def binary(x: pa.DataType) -> bool:
        return (
            bool(t.is_binary(x) or t.is_large_binary(x) or t.is_fixed_size_binary(x))
            or x == pa.binary_view()
        )

    if t.is_floating(column):
        return "float" if t.is_floating(literal) or t.is_integer(literal) else None
    same = (
        (t.is_boolean, t.is_boolean),
        (t.is_integer, t.is_integer),
        (t.is_decimal, t.is_decimal),
        (stringy, stringy),
        (binary, binary),
        (t.is_date, t.is_date),
        (t.is_time, t.is_time),
    )
    if any(a(column) and b(literal) for a, b in same):
        return "exact"
    if t.is_timestamp(column) and t.is_timestamp(literal):
        return "exact" if (column.tz is None) == (literal.tz is None) else None
    return None


class _Translator:
    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.paths: dict[str, tuple[str, str]] = {}  # stand-in column -> (column, quoted path)
        self.extended = schema  # with a stand-in column per struct field met

    def column(self, node: Node) -> pa.Field | None:
        if isinstance(node, FieldPath):
            return self.struct_field(node)
        if not isinstance(node, Field):
            return None
        index = self.schema.get_field_index(node.name)
        return None if index < 0 else self.schema.field(index)

    def struct_field(self, node: FieldPath) -> pa.Field | None:
        """A stand-in column for a struct field (its type), which :meth:`finish` turns into
        SQL on the field's path."""
        index = self.schema.get_field_index(node.name)
        if index < 0:
            return None
        field = self.schema.field(index)
        for segment in node.path:
            if not pa.types.is_struct(field.type) or field.type.get_field_index(segment) < 0:
                return None
            field = field.type.field(segment)
        try:
            quoted = ".".join(quote_identifier(s) for s in (node.name, *node.path))
        except InvalidInputError:
            return None
        stand_in = f"__lp_struct_field_{len(self.paths)}__"
        self.paths[stand_in] = (node.name, quoted)
        self.extended = self.extended.append(pa.field(stand_in, field.type))
        return pa.field(stand_in, field.type)

    def finish(self, predicate: Predicate) -> Predicate:
        """``predicate`` with its leaves on stand-in columns as SQL on the struct fields."""
        if not self.paths:
            return predicate

        def on_path(leaf: Predicate) -> Predicate:
            term = getattr(leaf, "term", None)
            if not isinstance(term, str) or term not in self.paths:
                return leaf
            column, quoted = self.paths[term]
            return Unknown(to_sql(leaf).replace(quote_identifier(term), quoted), (column,))

        return map_leaves(predicate, on_path)

    def bound(self, predicate: Predicate, exact: bool) -> _Result:
        try:
            return self.finish(bind(predicate, self.extended)), exact
        except InvalidInputError:  # the engine filters (and reports) what we cannot bind
            return _UNKNOWN

    def visit(self, node: Node, positive: bool) -> _Result:
        if isinstance(node, Literal):
            return self.constant(node, positive)
        if isinstance(node, Field):
            column = self.column(node)
            if column is None or not pa.types.is_boolean(column.type):
                return _UNKNOWN
            return self.finish(EqualTo(column.name, positive)), True
        if isinstance(node, Opaque):
            return _UNKNOWN
        name = node.name
        if name == "not" and len(node.args) == 1:
            return self.visit(node.args[0], not positive)
        if name in ("and", "or", "and_strict", "or_strict") and len(node.args) == 2:
            return self.connective(node, positive)
        if name in COMPARISONS and len(node.args) == 2:
            return self.comparison(name, node.args, positive)
        if name in ("is_null", "is_null_or_nan", "is_valid") and len(node.args) == 1:
            return self.null_test(node, positive)
        if name == "is_in" and len(node.args) == 2:
            return self.membership(node, positive)
        if name == "if_else" and len(node.args) == 3:
            return self.if_else(node, positive)
        if name == "starts_with" and len(node.args) == 2:
            return self.prefix(node, positive)
        return _UNKNOWN

    def constant(self, node: Literal, positive: bool) -> _Result:
        value = node.value
        if not isinstance(value, pa.Scalar):
            return _UNKNOWN
        if not value.is_valid:
            return AlwaysFalse(), True  # NULL is neither TRUE nor FALSE
        if not pa.types.is_boolean(value.type):
            return _UNKNOWN
        return (AlwaysTrue() if value.as_py() == positive else AlwaysFalse()), True

    def connective(self, node: Call, positive: bool) -> _Result:
        conjunction = node.name.startswith("and")
        left, left_exact = self.visit(node.args[0], positive)
        right, right_exact = self.visit(node.args[1], positive)
        exact = left_exact and right_exact
        # TRUE of AND / FALSE of OR: both sides; FALSE of AND / TRUE of OR: either side.
        if conjunction == positive:
            return and_(left, right), exact
        # A strict AND is FALSE only where neither side is NULL: a subset of "either FALSE".
        return or_(left, right), exact and not node.name.endswith("_strict")

    def comparison(self, op: str, args: tuple[Node, ...], positive: bool) -> _Result:
        left, right = args
        if isinstance(left, Literal) and isinstance(right, Field):
            left, right, op = right, left, _FLIP[op]
        column = self.column(left)
        if column is None or not isinstance(right, Literal):
            return _UNKNOWN
        scalar = right.value
        if not isinstance(scalar, pa.Scalar):
            return _UNKNOWN
        if not scalar.is_valid:
            return AlwaysFalse(), True  # a comparison with NULL is NULL
        family = _family(column.type, scalar.type)
        if family is None:
            return _UNKNOWN
        try:
            value = python_value(scalar)
        except NotALiteral:
            return _UNKNOWN
        if family == "float" and not (positive and _plain_number(value)):
            return _UNKNOWN
        kind = _NODES[op if positive else _NEGATE[op]]
        return self.bound(kind(column.name, value), family == "exact")

    def null_test(self, node: Call, positive: bool) -> _Result:
        column = self.column(node.args[0])
        if column is None:
            return _UNKNOWN
        if node.name == "is_null_or_nan" and pa.types.is_floating(column.type):
            return _UNKNOWN
        is_null = node.name != "is_valid"
        test = IsNull(column.name) if is_null == positive else NotNull(column.name)
        return self.finish(test), True

    def membership(self, node: Call, positive: bool) -> _Result:
        column = self.column(node.args[0])
        values = node.args[1]
        if column is None or not isinstance(values, Literal):
            return _UNKNOWN
        array = values.value
        if not isinstance(array, (pa.Array, pa.ChunkedArray)):
            return _UNKNOWN
        family = _family(column.type, array.type)
        if family is None:
            return _UNKNOWN
        try:
            members = tuple(python_value(v) for v in array if v.is_valid)
        except NotALiteral:
            return _UNKNOWN
        has_null = array.null_count > 0
        name = column.name
        if family == "float":
            if not positive or not all(_plain_number(v) for v in members):
                return _UNKNOWN
            return self.bound(In(name, members), False)
        mode = node.option or "match"
        if positive:
            found: Predicate = In(name, members)
            if mode == "match" and has_null:
                found = or_(found, IsNull(name))
            return self.bound(found, True)
        missing: Predicate = NotIn(name, members)
        if mode == "skip" or (mode == "match" and not has_null):
            missing = or_(missing, IsNull(name))  # NULL is not found: FALSE
        elif mode == "inconclusive" and has_null:
            missing = AlwaysFalse()  # a value not found is NULL, never FALSE
        elif mode not in ("match", "emit_null", "inconclusive"):
            return _UNKNOWN
        return self.bound(missing, True)

    def if_else(self, node: Call, positive: bool) -> _Result:
        condition, then, otherwise = node.args
        if not isinstance(otherwise, Literal) or not isinstance(otherwise.value, pa.Scalar):
            return _UNKNOWN
        if otherwise.value.is_valid and (positive is False or otherwise.value.as_py() is not False):
            return _UNKNOWN
        # if_else(c, a, NULL) is TRUE (FALSE) where c is TRUE and a is TRUE (FALSE);
        # if_else(c, a, false) is TRUE where c and a are.
        when, when_exact = self.visit(condition, True)
        value, value_exact = self.visit(then, positive)
        return and_(when, value), when_exact and value_exact

    def prefix(self, node: Call, positive: bool) -> _Result:
        column = self.column(node.args[0])
        pattern = node.args[1]
        if column is None or not isinstance(pattern, Literal):
            return _UNKNOWN
        scalar = pattern.value
        if not isinstance(scalar, pa.Scalar) or not scalar.is_valid:
            return _UNKNOWN
        prefix = scalar.as_py()
        if not isinstance(prefix, str):
            return _UNKNOWN
        kind = StartsWith if positive else NotStartsWith
        return self.bound(kind(column.name, prefix), True)


def _plain_number(value: Any) -> bool:
    """A float literal our predicates and IEEE comparisons agree on (not NaN, not zero)."""
    return isinstance(value, (int, float)) and not math.isnan(value) and value != 0
