"""Render a predicate as SQL (for DataFusion and Lance) or as a pyarrow compute expression.

:func:`to_sql` writes a dialect that DataFusion 55 and pylance 14's ``scanner(filter=...)``
read the same way. Identifiers are quoted with backticks (Lance reads ``"x"`` as the string
``'x'``, DataFusion as a column: backticks are a column for both). Literals:

================  =====================================================================
Python value      SQL
================  =====================================================================
bool, int         ``true``, ``-5``; the int64 minimum as ``CAST('-9223372036854775808' AS
                  BIGINT)`` (Lance reads the bare number as minus a float)
float             ``2.5``, ``1e+20``; NaN and infinities as ``CAST('NaN' AS DOUBLE)``
Decimal           ``CAST('1.50' AS DECIMAL(3, 2))`` (Lance rejects a float for a decimal)
str, bytes        ``'it''s'``, ``X'0102'``
date              ``DATE '2025-12-10'``
naive datetime    ``TIMESTAMP '2025-12-10 10:30:00.000000'``
aware datetime    ``arrow_cast('2025-12-10T10:30:00.000000Z', 'Timestamp(Microsecond,
                  Some("UTC"))')``: the instant (a TIMESTAMP literal against a zoned column
                  would be read as wall-clock time in the column's zone)
time              ``arrow_cast('10:30:00.000000', 'Time64(Microsecond)')``
================  =====================================================================

>>> from lance_partitioned.expressions.tree import EqualTo, In, StartsWith
>>> to_sql(EqualTo("my col", "it's") & StartsWith("s", "ab") | In("x", (1, 2)))
"((`my col` = 'it''s') AND (starts_with(`s`, 'ab'))) OR (`x` IN (1, 2))"
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from lance_partitioned.errors import InvalidInputError
from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.expressions.visitor import PredicateVisitor, visit
from lance_partitioned.expressions.visitors import rewrite_not

__all__ = ["filter_arrow", "quote_identifier", "sql_literal", "to_arrow", "to_sql"]

_INT64_MIN = -(1 << 63)


def quote_identifier(name: str) -> str:
    """A column name quoted for DataFusion and Lance: ```name```.

    Raises
    ------
    InvalidInputError
        If the name contains a backtick (Lance cannot read such a name in a filter).

    Examples
    --------
    >>> quote_identifier("select")
    '`select`'
    """
    if "`" in name:
        raise InvalidInputError(
            f"column {name!r} contains a backtick, which a Lance filter cannot quote"
        )
    return f"`{name}`"


def sql_literal(value: Any) -> str:
    """The SQL text of a Python literal (see the module table).

    Raises
    ------
    InvalidInputError
        For a value of a type with no SQL literal here (None included).

    Examples
    --------
    >>> import datetime, decimal
    >>> sql_literal(decimal.Decimal("-1.50")), sql_literal(datetime.date(2025, 12, 10))
    ("CAST('-1.50' AS DECIMAL(3, 2))", "DATE '2025-12-10'")
    >>> sql_literal(float("nan")), sql_literal(b"\\x01'")
    ("CAST('NaN' AS DOUBLE)", "X'0127'")
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if value == _INT64_MIN:  # "-9223372036854775808" is minus 2^63: a float in Lance
            return f"CAST('{value}' AS BIGINT)"
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return "CAST('inf' AS DOUBLE)" if value > 0 else "CAST('-inf' AS DOUBLE)"
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return _decimal_literal(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"X'{bytes(value).hex().upper()}'"
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            return f"TIMESTAMP '{value.isoformat(sep=' ', timespec='microseconds')}'"
        utc = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        text = utc.isoformat(timespec="microseconds") + "Z"
        return f"arrow_cast('{text}', 'Timestamp(Microsecond, Some(\"UTC\"))')"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, datetime.time) and value.tzinfo is None:
        return f"arrow_cast('{value.isoformat(timespec='microseconds')}', 'Time64(Microsecond)')"
    raise InvalidInputError(f"no SQL literal for {value!r} ({type(value).__name__})")


def _decimal_literal(value: decimal.Decimal) -> str:
    if not value.is_finite():
        raise InvalidInputError(f"no SQL literal for the decimal {value}")
    text = format(value, "f")
    exponent = value.as_tuple().exponent
    scale = max(0, -int(exponent))
    precision = max(len(text.lstrip("-").replace(".", "").lstrip("0")), scale, 1)
    if precision > 76:
        raise InvalidInputError(f"the decimal {value} has more than 76 digits")
    return f"CAST('{text}' AS DECIMAL({precision}, {scale}))"


def to_sql(predicate: Predicate) -> str:
    """SQL for a (bound) predicate, read alike by DataFusion and Lance's ``filter=``.

    NOT is pushed down first; an :class:`Unknown` is inserted verbatim, in parentheses. A chain
    of ANDs (ORs) is written flat, ``(a) OR (b) OR (c)``, however it nests in the tree.

    Raises
    ------
    InvalidInputError
        A literal has no SQL form, or a column name contains a backtick.

    Examples
    --------
    >>> import datetime
    >>> from lance_partitioned.expressions.tree import GreaterThanOrEqual, NotIn, IsNull
    >>> ts = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    >>> print(to_sql(GreaterThanOrEqual("ts", ts)))
    `ts` >= arrow_cast('2025-01-01T00:00:00.000000Z', 'Timestamp(Microsecond, Some("UTC"))')
    >>> to_sql(NotIn("x", ()) | IsNull("y"))
    '(`x` IS NOT NULL) OR (`y` IS NULL)'
    >>> to_sql(IsNull("a") & (IsNull("b") & IsNull("c")))
    '(`a` IS NULL) AND (`b` IS NULL) AND (`c` IS NULL)'
    """
    return visit(rewrite_not(predicate), _Sql())


class _Sql(PredicateVisitor[str]):
    flat = True  # a chain is written flat: Lance's parser nests no deeper than ~50

    def visit_and(self, parts: list[str]) -> str:
        return " AND ".join(f"({part})" for part in parts)

    def visit_or(self, parts: list[str]) -> str:
        return " OR ".join(f"({part})" for part in parts)

    def visit_true(self, p: t.AlwaysTrue) -> str:
        return "true"

    def visit_false(self, p: t.AlwaysFalse) -> str:
        return "false"

    def visit_is_null(self, p: t.IsNull) -> str:
        return f"{quote_identifier(p.term)} IS NULL"

    def visit_not_null(self, p: t.NotNull) -> str:
        return f"{quote_identifier(p.term)} IS NOT NULL"

    def visit_comparison(self, p: t.Comparison) -> str:
        return f"{quote_identifier(p.term)} {p.op} {sql_literal(p.value)}"

    def visit_in(self, p: t.In) -> str:
        if not p.values:
            return "false"
        return f"{quote_identifier(p.term)} IN ({_items(p.values)})"

    def visit_not_in(self, p: t.NotIn) -> str:
        if not p.values:
            return f"{quote_identifier(p.term)} IS NOT NULL"
        return f"{quote_identifier(p.term)} NOT IN ({_items(p.values)})"

    def visit_starts_with(self, p: t.StartsWith) -> str:
        return f"starts_with({quote_identifier(p.term)}, {sql_literal(p.prefix)})"

    def visit_not_starts_with(self, p: t.NotStartsWith) -> str:
        return f"NOT starts_with({quote_identifier(p.term)}, {sql_literal(p.prefix)})"

    def visit_unknown(self, p: t.Unknown) -> str:
        return f"({p.sql})"


def _items(values: tuple[Any, ...]) -> str:
    return ", ".join(sql_literal(v) for v in values)


def to_arrow(
    predicate: Predicate,
    schema: pa.Schema | None = None,
    *,
    unknown: bool | None = None,
) -> pc.Expression:
    """A ``pyarrow.compute.Expression`` for a (bound) predicate, to filter Arrow data.

    NOT is pushed down first, so SQL's three-valued logic holds (a NULL row never matches
    ``x NOT IN (...)``). With ``schema``, literals are cast to the column types and float
    columns compare as DataFusion does (NaN equal to itself and above every number).

    Parameters
    ----------
    predicate : Predicate
        Over the column names of the data.
    schema : pyarrow.Schema, optional
        The data's schema.
    unknown : bool, optional
        What an :class:`Unknown` evaluates to. By default an Unknown raises, since pyarrow
        cannot run its SQL; pass True for pruning (keep what might match).

    Raises
    ------
    InvalidInputError
        On an Unknown without ``unknown``, or a literal pyarrow cannot represent.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lance_partitioned.expressions.tree import NotIn, Unknown
    >>> table = pa.table({"x": [1, 2, None]})
    >>> table.filter(to_arrow(NotIn("x", (1,)))).to_pydict()
    {'x': [2]}
    >>> table.filter(to_arrow(Unknown("x % 2 = 0", ("x",)), unknown=True)).num_rows
    3
    """
    return visit(rewrite_not(predicate), _Arrow(schema, unknown))


class _Arrow(PredicateVisitor[pc.Expression]):
    def __init__(self, schema: pa.Schema | None, unknown: bool | None) -> None:
        self.schema = schema
        self.unknown = unknown

    def dtype(self, name: str) -> pa.DataType | None:
        if self.schema is None or self.schema.get_field_index(name) < 0:
            return None
        return self.schema.field(name).type

    def scalar(self, name: str, value: Any) -> pa.Scalar:
        dtype = self.dtype(name)
        try:
            if dtype is not None:
                return pa.scalar(value, dtype)
            return pa.scalar(value)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
            raise InvalidInputError(
                f"column {name!r}: the literal {value!r} has no Arrow form: {exc}"
            ) from exc

    def is_float(self, name: str) -> bool:
        dtype = self.dtype(name)
        return dtype is not None and bool(pa.types.is_floating(dtype))

    def visit_and(self, parts: list[pc.Expression]) -> pc.Expression:
        return _balanced(parts, lambda a, b: a & b)

    def visit_or(self, parts: list[pc.Expression]) -> pc.Expression:
        return _balanced(parts, lambda a, b: a | b)

    def visit_true(self, p: t.AlwaysTrue) -> pc.Expression:
        return pc.scalar(True)

    def visit_false(self, p: t.AlwaysFalse) -> pc.Expression:
        return pc.scalar(False)

    def visit_is_null(self, p: t.IsNull) -> pc.Expression:
        return pc.field(p.term).is_null()

    def visit_not_null(self, p: t.NotNull) -> pc.Expression:
        return pc.field(p.term).is_valid()

    def visit_starts_with(self, p: t.StartsWith) -> pc.Expression:
        return pc.starts_with(pc.field(p.term), pattern=p.prefix)

    def visit_not_starts_with(self, p: t.NotStartsWith) -> pc.Expression:
        return ~pc.starts_with(pc.field(p.term), pattern=p.prefix)

    def visit_unknown(self, p: t.Unknown) -> pc.Expression:
        if self.unknown is None:
            raise InvalidInputError(
                f"cannot evaluate the SQL condition {p.sql!r} with pyarrow; pass "
                "unknown=True to keep every row it might match"
            )
        return pc.scalar(self.unknown)

    def visit_comparison(self, p: t.Comparison) -> pc.Expression:
        field = pc.field(p.term)
        value = self.scalar(p.term, p.value)
        if self.is_float(p.term):
            return _float_comparison(p, field, value)
        return cast(pc.Expression, _OPERATORS[type(p)](field, value))

    def members(self, p: t.SetPredicate) -> pc.Expression:
        """Whether the column's value is in the set: false (not NULL) on NULL."""
        field = pc.field(p.term)
        dtype = self.dtype(p.term)
        members = list(p.values)
        if self.is_float(p.term) and any(v == 0 for v in members):
            # is_in hashes bits: -0.0 and 0.0 differ there, while SQL finds them equal
            members += [0.0, -0.0]
        try:
            values = pa.array(members, dtype)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as exc:
            raise InvalidInputError(
                f"column {p.term!r}: the IN list {p.values!r} has no Arrow form: {exc}"
            ) from exc
        return pc.is_in(field, value_set=values, skip_nulls=True)

    def visit_in(self, p: t.In) -> pc.Expression:
        return self.members(p)

    def visit_not_in(self, p: t.NotIn) -> pc.Expression:
        return ~self.members(p) & pc.field(p.term).is_valid()


def _balanced(
    parts: list[pc.Expression], combine: Callable[[pc.Expression, pc.Expression], pc.Expression]
) -> pc.Expression:
    """``parts`` combined pairwise as a balanced tree (pyarrow recurses into expressions)."""
    while len(parts) > 1:
        pairs = [combine(a, b) for a, b in zip(parts[::2], parts[1::2], strict=False)]
        parts = pairs + parts[len(pairs) * 2 :]
    return parts[0]


_OPERATORS: dict[type[t.Comparison], Callable[[Any, Any], Any]] = {
    t.EqualTo: lambda a, b: a == b,
    t.NotEqualTo: lambda a, b: a != b,
    t.LessThan: lambda a, b: a < b,
    t.LessThanOrEqual: lambda a, b: a <= b,
    t.GreaterThan: lambda a, b: a > b,
    t.GreaterThanOrEqual: lambda a, b: a >= b,
}


def _float_comparison(p: t.Comparison, field: pc.Expression, value: pa.Scalar) -> pc.Expression:
    """Compare floats in DataFusion's total order: NaN equals NaN and sorts above all."""
    nan = pc.is_nan(field)
    kind = type(p)
    if math.isnan(value.as_py()):
        if kind is t.EqualTo or kind is t.GreaterThanOrEqual:
            return nan
        if kind is t.NotEqualTo or kind is t.LessThan:
            return ~nan
        return field.is_valid() if kind is t.LessThanOrEqual else nan & ~nan
    plain = _OPERATORS[kind](field, value)
    if kind in (t.GreaterThan, t.GreaterThanOrEqual):
        return cast(pc.Expression, plain | nan)
    if kind in (t.LessThan, t.LessThanOrEqual, t.EqualTo):
        return cast(pc.Expression, plain & ~nan)
    return cast(pc.Expression, plain)  # NaN != x is true, as IEEE says


_EXPRESSION_LIMIT = 256
"""Predicates of more nodes than this are not handed to pyarrow as one expression: it crashes
(a stack overflow) on an OR of about 10,000 comparisons, balanced or not."""
_ROW = "__lp_row__"


def filter_arrow(
    data: pa.Table | pa.RecordBatch, predicate: Predicate, *, unknown: bool | None = None
) -> pa.Table | pa.RecordBatch:
    """The rows of ``data`` where ``predicate`` is TRUE, as :func:`to_arrow` evaluates it.

    A large predicate is evaluated by pieces: the rows where a chain of ORs (ANDs) is TRUE are
    the union (intersection) of the rows where its operands are, each piece a pyarrow
    expression of at most a few hundred nodes.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lance_partitioned.expressions.tree import EqualTo, or_
    >>> table = pa.table({"x": list(range(1000))})
    >>> wide = or_(*(EqualTo("x", v) for v in range(0, 1000, 3)))
    >>> filter_arrow(table, wide).num_rows
    334
    """
    predicate = rewrite_not(predicate)
    if _size(predicate) <= _EXPRESSION_LIMIT:
        return data.filter(to_arrow(predicate, data.schema, unknown=unknown))
    name = _ROW
    while name in data.schema.names:
        name += "_"
    numbered = data.append_column(name, pa.array(np.arange(data.num_rows, dtype=np.int64)))
    rows = _true_rows(numbered, name, predicate, unknown)
    return data.take(pa.array(rows, pa.int64()))


def _size(predicate: Predicate) -> int:
    count, stack = 0, [predicate]
    while stack and count <= _EXPRESSION_LIMIT:
        node = stack.pop()
        count += 1
        if isinstance(node, (t.And, t.Or)):
            stack += (node.left, node.right)
    return count


def _true_rows(
    data: pa.Table | pa.RecordBatch, row: str, p: Predicate, unknown: bool | None
) -> NDArray[np.int64]:
    """The sorted row numbers where ``p`` (NOT-free) is TRUE."""
    if _size(p) <= _EXPRESSION_LIMIT or not isinstance(p, (t.And, t.Or)):
        kept = data.filter(to_arrow(p, data.schema, unknown=unknown))
        return np.asarray(kept.column(row).to_numpy(zero_copy_only=False), dtype=np.int64)
    combine = t.and_ if isinstance(p, t.And) else t.or_
    chunks: list[list[Predicate]] = [[]]
    total = 0
    for part in t.operands(p, type(p)):  # pieces of at most _EXPRESSION_LIMIT nodes
        size = _size(part) + 1  # with its connective
        if chunks[-1] and total + size > _EXPRESSION_LIMIT:
            chunks.append([])
            total = 0
        chunks[-1].append(part)
        total += size
    found: NDArray[np.int64] | None = None
    for chunk in chunks:  # a single part is not a chain of p's kind: the recursion ends
        rows = _true_rows(data, row, combine(*chunk), unknown)
        if found is None:
            found = rows
        elif isinstance(p, t.And):
            found = np.intersect1d(found, rows, assume_unique=True)
        else:
            found = np.union1d(found, rows)
    assert found is not None
    return found
