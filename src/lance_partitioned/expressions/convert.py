"""The walk of one DataFusion logical ``Expr`` into the predicate tree (see
:mod:`lance_partitioned.expressions.parse`): NOT pushed down, comparisons with NULL folded to
:class:`AlwaysFalse`, literals folded by DataFusion, and what the tree cannot express rendered
back to SQL as :class:`Unknown`."""

from __future__ import annotations

import datetime
import re
from typing import Any

import pyarrow as pa
from datafusion.unparser import Dialect, Unparser

from lance_partitioned.errors import InvalidInputError
from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.sqltext import (
    REJECTED,
    SQL_NULL,
    NotALiteral,
    Unrenderable,
    backtick_identifiers,
    children,
    column_name,
    columns_of,
    is_constant,
    is_ilike,
    is_volatile,
    like_shape,
    python_value,
    wrap,
)
from lance_partitioned.expressions.sqltime import in_microseconds, offset_text, one_row, session
from lance_partitioned.expressions.tree import Predicate

__all__ = ["Parser"]

_TABLE = "__lp_filter__"
_SHORT = 32  # AND/OR chains up to this length keep the shape SQL gave them

# op -> (op with the operands swapped, op of the negation)
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
_COMPARISONS: dict[str, type[t.Comparison]] = {
    "=": t.EqualTo,
    "!=": t.NotEqualTo,
    "<": t.LessThan,
    "<=": t.LessThanOrEqual,
    ">": t.GreaterThan,
    ">=": t.GreaterThanOrEqual,
}


class Parser:
    """One parse: the session, the table of ``schema`` and the walk."""

    def __init__(self, text: str, schema: pa.Schema) -> None:
        self.text = text
        self.schema = schema
        self.ctx = session()
        try:
            batch = pa.RecordBatch.from_pylist([], schema=schema)
            self.ctx.register_record_batches(_TABLE, [[batch]])
        except Exception as exc:  # DataFusion raises plain Exception subclasses
            raise InvalidInputError(f"filter {text!r}: cannot use the schema: {exc}") from exc
        self.df = self.ctx.table(_TABLE)

    def close(self) -> None:
        self.ctx.deregister_table(_TABLE)

    def run(self, text: str) -> Predicate:
        """Parse ``text`` (the filter, or a piece of it: errors quote the piece)."""
        self.text = text
        expr = self._parse(text)
        self._reject(expr)
        try:
            return self._convert(expr, negate=False)
        except Unrenderable:
            return t.Unknown(text, tuple(sorted(columns_of(expr))))

    def _parse(self, text: str) -> Any:
        try:
            return self.df.parse_sql_expr(text)
        except Exception as exc:
            message = str(exc)
            missing = re.search(r"No field named (.+?)\.(?:\s|$)", message)
            if missing:
                name = missing.group(1).strip('"`')
                raise InvalidInputError(
                    f"filter {self.text!r}: no column {name!r} in the schema "
                    f"(columns: {', '.join(self.schema.names)})"
                ) from exc
            raise InvalidInputError(f"filter {self.text!r} is not valid SQL: {message}") from exc

    def _reject(self, expr: Any) -> None:
        stack = [expr]
        while stack:  # iterative: a long filter nests as deep as it has terms
            node = stack.pop()
            kind = node.variant_name()
            if kind in REJECTED:
                raise InvalidInputError(
                    f"filter {self.text!r}: {kind} is not allowed in a row filter ({node})"
                )
            stack += children(node)

    # ------------------------------------------------------------------ the walk

    def _convert(self, expr: Any, negate: bool) -> Predicate:
        kind = expr.variant_name()
        if kind == "Alias":
            return self._convert(expr.to_variant().expr(), negate)
        if kind == "Not":
            return self._convert(expr.to_variant().expr(), not negate)
        if kind == "BinaryExpr":
            node = expr.to_variant()
            op = node.op()
            if op in ("AND", "OR"):
                combine = t.and_ if (op == "AND") != negate else t.or_
                parts = _chain(expr, op)
                if len(parts) > _SHORT:  # a long chain: iterate over it (built balanced)
                    return combine(*(self._convert(part, negate) for part in parts))
                left = self._convert(node.left(), negate)
                right = self._convert(node.right(), negate)
                return combine(left, right)
            if op in _COMPARISONS:
                return self._comparison(expr, node.left(), op, node.right(), negate)
        elif kind in ("IsNull", "IsNotNull"):
            return self._is_null(expr, kind == "IsNull", negate)
        elif kind in _TRUTH_TESTS:
            return self._truth_test(expr, kind, negate)
        elif kind == "InList":
            return self._in_list(expr, negate)
        elif kind == "Between":
            return self._between(expr, negate)
        elif kind == "Like":
            return self._like(expr, negate)
        elif kind == "Column":
            return self._bare_column(expr, negate)
        if not columns_of(expr) and not is_volatile(expr):
            return self._constant_truth(expr, negate)
        return self._unknown(expr, negate)

    def _comparison(self, expr: Any, left: Any, op: str, right: Any, negate: bool) -> Predicate:
        if negate:
            op = _NEGATE[op]
        if left.variant_name() != "Column" and right.variant_name() == "Column":
            left, right, op = right, left, _FLIP[op]
        if left.variant_name() == "Column" and is_constant(right):
            value = self._constant(right)
            if value is SQL_NULL:
                return t.AlwaysFalse()
            if value is not None:
                return _COMPARISONS[op](column_name(left), value)
        elif is_constant(left) and is_constant(right):
            return self._constant_truth(expr, negate)
        return self._unknown(expr, negate)

    def _is_null(self, expr: Any, is_null: bool, negate: bool) -> Predicate:
        child = expr.to_variant().expr()
        if child.variant_name() == "Column":
            positive = is_null != negate
            return t.IsNull(column_name(child)) if positive else t.NotNull(column_name(child))
        if is_constant(child):
            return self._constant_truth(expr, negate)
        return self._unknown(expr, negate)

    def _truth_test(self, expr: Any, kind: str, negate: bool) -> Predicate:
        child = expr.to_variant().expr()
        if child.variant_name() != "Column" or not self._is_bool(child):
            return self._unknown(expr, negate)
        name = column_name(child)
        target, positive = _TRUTH_TESTS[kind]
        if negate:
            positive = not positive
        # IS TRUE / IS FALSE / IS UNKNOWN are never NULL, so their negations are plain sets.
        if target is None:
            return t.IsNull(name) if positive else t.NotNull(name)
        if positive:
            return t.EqualTo(name, target)
        return t.or_(t.EqualTo(name, not target), t.IsNull(name))

    def _in_list(self, expr: Any, negate: bool) -> Predicate:
        node = expr.to_variant()
        column = node.expr()
        items = node.list()
        if column.variant_name() != "Column" or not all(is_constant(i) for i in items):
            return self._unknown(expr, negate)
        values = [self._constant(item) for item in items]
        if any(v is None for v in values):
            return self._unknown(expr, negate)
        has_null = any(v is SQL_NULL for v in values)
        kept = tuple(dict.fromkeys(v for v in values if v is not SQL_NULL))
        if node.negated() == negate:  # IN: a NULL item only adds "OR NULL"
            return t.In(column_name(column), kept)
        # NOT IN: "AND NOT NULL" is never true
        return t.AlwaysFalse() if has_null else t.NotIn(column_name(column), kept)

    def _between(self, expr: Any, negate: bool) -> Predicate:
        node = expr.to_variant()
        column, low, high = node.expr(), node.low(), node.high()
        if column.variant_name() != "Column" or not (is_constant(low) and is_constant(high)):
            return self._unknown(expr, negate)
        bounds = (self._constant(low), self._constant(high))
        if any(b is None for b in bounds):
            return self._unknown(expr, negate)
        name = column_name(column)
        parts = [
            t.AlwaysFalse() if bound is SQL_NULL else _COMPARISONS[op](name, bound)
            for bound, op in zip(bounds, (">=", "<="), strict=True)
        ]
        if node.negated() == negate:  # x >= low AND x <= high
            return t.and_(*parts)
        # NOT: x < low OR x > high
        negated = [
            t.AlwaysFalse() if bound is SQL_NULL else _COMPARISONS[op](name, bound)
            for bound, op in zip(bounds, ("<", ">"), strict=True)
        ]
        return t.or_(*negated)

    def _like(self, expr: Any, negate: bool) -> Predicate:
        node = expr.to_variant()
        column, pattern = node.expr(), node.pattern()
        if (
            column.variant_name() != "Column"
            or not self._is_string(column)
            or not is_constant(pattern)
            or node.escape_char() not in (None, "\\")
            or is_ilike(expr, column)
        ):
            return self._unknown(expr, negate)
        value = self._constant(pattern)
        if value is SQL_NULL:
            return t.AlwaysFalse()
        if not isinstance(value, str):
            return self._unknown(expr, negate)
        shape = like_shape(value)
        if shape is None:
            return self._unknown(expr, negate)
        literal, is_prefix = shape
        name = column_name(column)
        positive = node.negated() == negate
        if is_prefix:
            return t.StartsWith(name, literal) if positive else t.NotStartsWith(name, literal)
        return t.EqualTo(name, literal) if positive else t.NotEqualTo(name, literal)

    def _bare_column(self, expr: Any, negate: bool) -> Predicate:
        if not self._is_bool(expr):
            raise InvalidInputError(
                f"filter {self.text!r}: column {column_name(expr)!r} is not boolean and cannot be "
                "used as a condition"
            )
        return t.EqualTo(column_name(expr), not negate)

    # ------------------------------------------------------------------ leaves

    def _constant_truth(self, expr: Any, negate: bool) -> Predicate:
        value = self._constant(expr)
        if value is SQL_NULL:
            return t.AlwaysFalse()
        if not isinstance(value, bool):
            raise InvalidInputError(
                f"filter {self.text!r}: {expr} is not a boolean condition (it is {value!r})"
            )
        return t.AlwaysTrue() if value != negate else t.AlwaysFalse()

    def _constant(self, expr: Any) -> Any:
        """The Python value of a column-free expression; SQL_NULL for NULL, None if unusable."""
        if expr.variant_name() == "Literal":  # no query needed
            scalar = wrap(expr).python_value()
            if isinstance(scalar, pa.Scalar):
                try:
                    return python_value(scalar)
                except NotALiteral:
                    return None
        try:
            table = one_row().select(wrap(expr).alias("v")).to_arrow_table()
        except Exception as exc:
            wide = in_microseconds(expr)
            if wide is None:
                raise InvalidInputError(
                    f"filter {self.text!r}: cannot evaluate the constant {expr}: {exc}"
                ) from exc
            table = wide
        try:
            value = python_value(table.column(0)[0])
        except NotALiteral:
            return None
        if isinstance(value, datetime.datetime) and value.tzinfo is None and offset_text(expr):
            # DataFusion turns the text's offset into a naive UTC value, which a zoned column
            # would read on its wall clock: keep it the instant the text names
            value = value.replace(tzinfo=datetime.timezone.utc)
        return value

    def _unknown(self, expr: Any, negate: bool) -> t.Unknown:
        sql, columns = self._render(expr)
        return t.Unknown(f"NOT {sql}" if negate else sql, columns)

    def _render(self, expr: Any) -> tuple[str, tuple[str, ...]]:
        """SQL for ``expr`` that DataFusion and Lance read alike, and the columns it reads."""
        try:
            plan = self.df.filter(wrap(expr)).logical_plan()
            sql = Unparser(Dialect.postgres()).plan_to_sql(plan)
        except Exception as exc:
            raise Unrenderable(str(exc)) from exc
        head = f'SELECT * FROM "{_TABLE}" WHERE '
        if not sql.startswith(head):
            raise Unrenderable(sql)
        body, columns = backtick_identifiers(sql[len(head) :], _TABLE)
        if not body.startswith("("):
            body = f"({body})"
        try:
            same = self.df.parse_sql_expr(body).canonical_name() == expr.canonical_name()
        except Exception as exc:
            raise Unrenderable(body) from exc
        if not same:
            raise Unrenderable(body)
        return body, columns

    def _field_type(self, column: Any) -> pa.DataType:
        return self.schema.field(column_name(column)).type

    def _is_bool(self, column: Any) -> bool:
        return bool(pa.types.is_boolean(self._field_type(column)))

    def _is_string(self, column: Any) -> bool:
        dtype = self._field_type(column)
        return bool(
            pa.types.is_string(dtype)
            or pa.types.is_large_string(dtype)
            or dtype == pa.string_view()
        )


# (value compared with, whether the test is positive) per IS [NOT] TRUE/FALSE/UNKNOWN
_TRUTH_TESTS: dict[str, tuple[bool | None, bool]] = {
    "IsTrue": (True, True),
    "IsNotTrue": (True, False),
    "IsFalse": (False, True),
    "IsNotFalse": (False, False),
    "IsUnknown": (None, True),
    "IsNotUnknown": (None, False),
}


def _chain(expr: Any, op: str) -> list[Any]:
    """The operands of a chain of ``op`` (AND or OR) binary expressions, left to right."""
    found: list[Any] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        if node.variant_name() == "BinaryExpr" and node.to_variant().op() == op:
            binary = node.to_variant()
            stack += (binary.right(), binary.left())
        else:
            found.append(node)
    return found
