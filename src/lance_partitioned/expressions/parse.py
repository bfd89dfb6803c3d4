"""Parse a SQL filter into the predicate tree, with DataFusion's own SQL parser.

The text is parsed by DataFusion (``DataFrame.parse_sql_expr`` over an empty table of the
schema), and the resulting logical ``Expr`` is walked through ``Expr.to_variant()``. Column
names are case-sensitive (identifier normalisation is off); quote names with backticks or
double quotes. Literal sub-expressions (``DATE '2025-12-10'``, ``CAST('1.5' AS DECIMAL(5, 2))``,
``-5``) are folded by DataFusion itself.

NOT is pushed down while walking, so the result never contains :class:`Not`: SQL's
three-valued logic makes ``NOT (x < 5)`` exactly ``x >= 5``, and a comparison with NULL
(``x = NULL``, ``x NOT IN (1, NULL)``) is never true, under NOT or not, so it becomes
:class:`AlwaysFalse`. What the tree cannot express (functions of columns, arithmetic,
column-to-column comparisons) becomes :class:`Unknown`, rendered back to SQL that DataFusion
and Lance both accept (backtick-quoted identifiers); when a part cannot be rendered faithfully
the whole filter becomes ``Unknown(text)``.

>>> import pyarrow as pa
>>> schema = pa.schema([("x", pa.int64()), ("s", pa.utf8())])
>>> parse_sql("5 < x AND s LIKE 'ab%'", schema)
And(left=GreaterThan(term='x', value=5), right=StartsWith(term='s', prefix='ab'))
>>> parse_sql("NOT (x BETWEEN 1 AND 3)", schema)
Or(left=LessThan(term='x', value=1), right=GreaterThan(term='x', value=3))
>>> parse_sql("upper(s) = 'AB' OR x IS NULL", schema)
Or(left=Unknown(sql="(upper(`s`) = 'AB')", columns=('s',)), right=IsNull(term='x'))
"""

from __future__ import annotations

import datetime
import functools
import re
import threading
from typing import Any

import datafusion
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
    deep,
    is_constant,
    is_ilike,
    is_volatile,
    like_shape,
    python_value,
    split_top_level,
    unwrap,
    wrap,
)
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.expressions.visitors import rewrite_not

__all__ = ["parse_sql"]

_TABLE = "__lp_filter__"
_SHORT = 32  # AND/OR chains up to this length keep the shape SQL gave them
_LONG = 32  # filters with more ANDs and ORs than this are cut into pieces (_parse_long)
_CONNECTIVES = re.compile(r"\b(?:and|or)\b", re.IGNORECASE)
_NOT = re.compile(r"\s*not\s*(\(.*\))\s*", re.IGNORECASE | re.DOTALL)
_CACHED = 64  # parsed filters kept (_parse_cached): one of 10,000 terms is a few MB
_local = threading.local()

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


def parse_sql(text: str, schema: pa.Schema) -> Predicate:
    """Parse a SQL boolean expression over the columns of ``schema``.

    Parameters
    ----------
    text : str
        A filter in DataFusion / Lance SQL: comparisons (``= != <> < <= > >=``),
        ``[NOT] IN``, ``[NOT] BETWEEN``, ``[NOT] LIKE``, ``IS [NOT] NULL``,
        ``IS [NOT] TRUE/FALSE``, ``AND``/``OR``/``NOT``, parentheses; literals of every
        scalar type (``DATE '…'``, ``TIMESTAMP '…'``, casts, ``X'…'``).
    schema : pyarrow.Schema
        The columns the filter may name (top-level names, case-sensitive).

    Returns
    -------
    Predicate
        An unbound, NOT-free predicate: literals are as SQL wrote them (bind them with
        :func:`~lance_partitioned.expressions.bind`).

    Raises
    ------
    InvalidInputError
        On a syntax error (quoting the filter), an unknown column (naming it), or an
        expression that is not a row filter (aggregates, subqueries, placeholders).

    Examples
    --------
    >>> import datetime, pyarrow as pa
    >>> schema = pa.schema([("d", pa.date32()), ("x", pa.int32())])
    >>> parse_sql("d = DATE '2025-12-10'", schema)
    EqualTo(term='d', value=datetime.date(2025, 12, 10))
    >>> parse_sql("x IN (1, 2, NULL) OR x = NULL", schema)
    In(term='x', values=(1, 2))
    >>> parse_sql("y = 1", schema)
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.InvalidInputError: filter 'y = 1': no column 'y' ...
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError(f"a filter must be a non-empty SQL string, got {text!r}")
    return _parse_cached(text, schema)


@functools.lru_cache(maxsize=_CACHED)
def _parse_cached(text: str, schema: pa.Schema) -> Predicate:
    """:func:`parse_sql` of a checked ``text``, remembered per ``(text, schema)``.

    A predicate is a tree of frozen dataclasses over immutable literals, so one parse can be
    shared: a scan asked twice for the same filter (``to_table`` then ``count_rows``, one
    query per partition of a Spark read) parses it once. A filter that does not parse raises
    every time (``lru_cache`` keeps no exceptions).
    """
    text = instant_literals(text)
    if len(_CONNECTIVES.findall(text)) > _LONG:
        return deep(lambda: _parse_long(text, schema))
    return deep(lambda: _parse(text, schema))  # DataFusion recurses as deep as the filter nests


def _parse_long(text: str, schema: pa.Schema) -> Predicate:
    """A filter of many terms, cut at its top-level ORs, then ANDs, then parentheses and NOT
    into pieces of at most ``_LONG`` connectives, each parsed by DataFusion alone.

    DataFusion hands back ``a OR b OR …`` as a left-deep tree, and every step down it copies
    the subtree below: quadratic in the number of terms. The cutting is iterative (an explicit
    stack, one entry per piece), so its depth does not follow the filter's length.
    """
    parser = _Parser(text, schema)
    try:
        results: dict[int, Predicate] = {}  # node id -> its predicate
        plan: dict[int, tuple[str, list[int]]] = {}  # node id -> how its pieces combine
        pending: list[tuple[int, str]] = [(0, text)]  # node id, its text
        counter = 1
        while pending:
            node, body = pending.pop()
            kind, parts = _cut(body)
            if kind == "leaf":
                results[node] = parser.run(body)
                continue
            ids = list(range(counter, counter + len(parts)))
            counter += len(parts)
            plan[node] = (kind, ids)
            pending += zip(ids, parts, strict=True)
    finally:
        parser.close()
    for node in sorted(plan, reverse=True):  # pieces have greater ids than their parent
        kind, ids = plan[node]
        done = [results.pop(i) for i in ids]
        if kind == "or":
            results[node] = t.or_(*done)
        elif kind == "and":
            results[node] = t.and_(*done)
        elif kind == "not":
            results[node] = rewrite_not(t.Not(done[0]))
        else:
            results[node] = done[0]
    return results[0]


def _connectives(text: str) -> int:
    return len(_CONNECTIVES.findall(text))


def _cut(text: str) -> tuple[str, list[str]]:
    """How a long filter's text splits: ``or``/``and`` into pieces of at most ``_LONG``
    connectives (a longer piece alone, to be cut again), ``not``/``paren`` inside, or ``leaf``
    (parsed whole)."""
    if _connectives(text) <= _LONG:
        return "leaf", [text]
    for keyword in ("OR", "AND"):
        pieces = split_top_level(text, keyword)
        if pieces is None or len(pieces) == 1:
            continue
        if any(not piece.strip() for piece in pieces):
            return "leaf", [text]  # a syntax error: DataFusion reports it
        groups: list[list[str]] = [[]]
        count = 0
        for piece in pieces:
            inside = _connectives(piece) + 1
            if groups[-1] and count + inside > _LONG:
                groups.append([])
                count = 0
            groups[-1].append(piece)
            count += inside
        joined = f" {keyword} "
        return keyword.lower(), [joined.join(group) for group in groups]
    inner = unwrap(text)
    if inner is not None:
        return "paren", [inner]
    negated = _NOT.fullmatch(text)
    if negated is not None and unwrap(negated.group(1)) is not None:
        return "not", [negated.group(1)]
    return "leaf", [text]


def _parse(text: str, schema: pa.Schema) -> Predicate:
    parser = _Parser(text, schema)
    try:
        return parser.run(text)
    finally:
        parser.close()


class _Parser:
    """One parse: the session, the table of ``schema`` and the walk."""

    def __init__(self, text: str, schema: pa.Schema) -> None:
        self.text = text
        self.schema = schema
        self.ctx = _session()
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
            table = _local.one.select(wrap(expr).alias("v")).to_arrow_table()
        except Exception as exc:
            wide = _in_microseconds(expr)
            if wide is None:
                raise InvalidInputError(
                    f"filter {self.text!r}: cannot evaluate the constant {expr}: {exc}"
                ) from exc
            table = wide
        try:
            value = python_value(table.column(0)[0])
        except NotALiteral:
            return None
        if isinstance(value, datetime.datetime) and value.tzinfo is None and _offset_text(expr):
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


_SUB_MICROSECOND = re.compile(r"\.[0-9]{6}[0-9]*[1-9]")
_TO_NANOSECONDS = re.compile(r" AS Timestamp\(ns\)\)+$")  # the display of the cast


def _in_microseconds(expr: Any) -> pa.Table | None:
    """A string cast to SQL's ``TIMESTAMP`` evaluated in microseconds, or None.

    DataFusion types ``TIMESTAMP '...'`` as nanoseconds, which end in 1677 and 2262: a literal
    of year 1 or 9999 fails although a ``timestamp[us]`` column holds it. The same cast to
    microseconds (DataFusion's own parsing of the text) reaches years -290308 to 294247; a
    text with digits finer than a microsecond is left to fail.
    """
    if expr.variant_name() != "Cast" or not _TO_NANOSECONDS.search(str(expr)):
        return None
    inner = expr.to_variant().expr()
    if inner.variant_name() != "Literal":
        return None
    text = wrap(inner).python_value()
    if not isinstance(text, pa.Scalar) or not pa.types.is_string(text.type):
        return None
    if _SUB_MICROSECOND.search(str(text.as_py())):
        return None
    try:
        cast = wrap(inner).cast(pa.timestamp("us"))
        table: pa.Table = _local.one.select(cast.alias("v")).to_arrow_table()
    except Exception:  # not a timestamp DataFusion reads: the first error stands
        return None
    return table


_EXPLICIT_OFFSET = re.compile(r"\d:\d{2}(?::\d{2}(?:\.\d*)?)?\s*(?:[Zz]|[+-]\d{2}(?::?\d{2})?)\s*$")
# a quoted date and time with an offset that DataFusion reads (to the microsecond)
_INSTANT_LITERAL = re.compile(
    r"'[^']*\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:[Zz]|[+-]\d{2}:?\d{2})\s*'"
)
_TIMESTAMP_KEYWORD = re.compile(r"(?<![\w.])TIMESTAMP\s*(?=')", re.IGNORECASE)
_UTC_MICROSECONDS = 'Timestamp(Microsecond, Some("UTC"))'


def instant_literals(text: str) -> str:
    """``text`` with each ``TIMESTAMP '...'`` literal that carries an explicit UTC offset
    (``Z``, ``+02:00``) written as the instant it names, a UTC-zoned timestamp: DataFusion
    (and Lance) would make it a naive value, which a column with a time zone reads on its
    own wall clock. Quoted strings and identifiers are left alone.

    >>> print(instant_literals("ts >= TIMESTAMP '2025-06-01 00:00:00+02:00' AND s = 'x'"))
    ts >= arrow_cast('2025-06-01 00:00:00+02:00', 'Timestamp(Microsecond, Some("UTC"))') AND s = 'x'
    >>> instant_literals("ts >= TIMESTAMP '2025-06-01 00:00:00'")
    "ts >= TIMESTAMP '2025-06-01 00:00:00'"
    """
    if "'" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c in "'\"`":
            end = _quote_end(text, i, c)
            out.append(text[i:end])
            i = end
            continue
        keyword = _TIMESTAMP_KEYWORD.match(text, i)
        if keyword is not None:
            start = keyword.end()
            end = _quote_end(text, start, "'")
            literal = text[start:end]
            if _INSTANT_LITERAL.fullmatch(literal):
                out.append(f"arrow_cast({literal}, '{_UTC_MICROSECONDS}')")
            else:
                out.append(text[i:end])
            i = end
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _quote_end(text: str, start: int, quote: str) -> int:
    """The index just past the quote closing the one at ``start`` (doubled quotes are
    escapes; an unterminated quote runs to the end: DataFusion reports it)."""
    i = start + 1
    while i < len(text):
        if text[i] == quote:
            if text.startswith(quote, i + 1):
                i += 2
                continue
            return i + 1
        i += 1
    return len(text)


def _offset_text(expr: Any) -> bool:
    """Whether ``expr`` casts a string with an explicit UTC offset (``Z``, ``+02:00``) to
    SQL's ``TIMESTAMP`` (``TIMESTAMP '2025-06-01 00:00:00+02:00'``): an instant.

    >>> _ = _session()
    >>> _offset_text(_local.one.parse_sql_expr("CAST('2025-06-01 00:00:00Z' AS TIMESTAMP)"))
    True
    >>> _offset_text(_local.one.parse_sql_expr("TIMESTAMP '2025-06-01 00:00:00'"))
    False
    """
    if expr.variant_name() != "Cast" or not _TO_NANOSECONDS.search(str(expr)):
        return False
    inner = expr.to_variant().expr()
    if inner.variant_name() != "Literal":
        return False
    text = wrap(inner).python_value()
    if not isinstance(text, pa.Scalar) or not pa.types.is_string(text.type):
        return False
    return bool(_EXPLICIT_OFFSET.search(str(text.as_py())))


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


def _session() -> datafusion.SessionContext:
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        config = datafusion.SessionConfig(
            {"datafusion.sql_parser.enable_ident_normalization": "false"}
        ).with_target_partitions(1)
        ctx = datafusion.SessionContext(config)
        _local.ctx = ctx
        _local.one = ctx.from_pydict({"__lp_one__": [0]})
    return ctx
