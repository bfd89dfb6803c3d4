"""SQL timestamp literals as DataFusion reads them, and the one DataFusion session per thread
that parsing uses.

DataFusion types ``TIMESTAMP '...'`` as nanoseconds and reads a literal with an explicit UTC
offset as a naive value: :func:`instant_literals` rewrites such a literal as the instant it
names before parsing, :func:`in_microseconds` evaluates a literal outside the nanosecond
range in microseconds, and :func:`offset_text` tells whether a cast names an instant.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import datafusion
import pyarrow as pa

from lance_partitioned.expressions.sqltext import wrap

__all__ = ["in_microseconds", "instant_literals", "offset_text", "one_row", "session"]

_local = threading.local()

_SUB_MICROSECOND = re.compile(r"\.[0-9]{6}[0-9]*[1-9]")
_TO_NANOSECONDS = re.compile(r" AS Timestamp\(ns\)\)+$")  # the display of the cast


def in_microseconds(expr: Any) -> pa.Table | None:
    """A string cast to SQL's ``TIMESTAMP`` evaluated in microseconds, or None.

    DataFusion types ``TIMESTAMP '...'`` as nanoseconds, which end in 1677 and 2262: a literal
    of year 1 or 9999 fails although a ``timestamp[us]`` column holds it. The same cast to
    microseconds (DataFusion's own parsing of the text) reaches years -290308 to 294247; a
    text with digits finer than a microsecond is left to fail.
    """
    found = _cast_text(expr)
    if found is None or _SUB_MICROSECOND.search(found[1]):
        return None
    inner = found[0]
    try:
        cast = wrap(inner).cast(pa.timestamp("us"))
        table: pa.Table = one_row().select(cast.alias("v")).to_arrow_table()
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


def offset_text(expr: Any) -> bool:
    """Whether ``expr`` casts a string with an explicit UTC offset (``Z``, ``+02:00``) to
    SQL's ``TIMESTAMP`` (``TIMESTAMP '2025-06-01 00:00:00+02:00'``): an instant.

    >>> _ = session()
    >>> offset_text(one_row().parse_sql_expr("CAST('2025-06-01 00:00:00Z' AS TIMESTAMP)"))
    True
    >>> offset_text(one_row().parse_sql_expr("TIMESTAMP '2025-06-01 00:00:00'"))
    False
    """
    found = _cast_text(expr)
    return found is not None and bool(_EXPLICIT_OFFSET.search(found[1]))


def _cast_text(expr: Any) -> tuple[Any, str] | None:
    """The string literal that ``expr`` casts to SQL's ``TIMESTAMP`` (nanoseconds) and its
    text, or None when ``expr`` is no such cast."""
    if expr.variant_name() != "Cast" or not _TO_NANOSECONDS.search(str(expr)):
        return None
    inner = expr.to_variant().expr()
    if inner.variant_name() != "Literal":
        return None
    text = wrap(inner).python_value()
    if not isinstance(text, pa.Scalar) or not pa.types.is_string(text.type):
        return None
    return inner, str(text.as_py())


def session() -> datafusion.SessionContext:
    """This thread's DataFusion session for parsing (identifiers not normalised)."""
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        config = datafusion.SessionConfig(
            {"datafusion.sql_parser.enable_ident_normalization": "false"}
        ).with_target_partitions(1)
        ctx = datafusion.SessionContext(config)
        _local.ctx = ctx
        _local.one = ctx.from_pydict({"__lp_one__": [0]})
    return ctx


def one_row() -> Any:
    """This thread's one-row DataFrame: literals are evaluated by selecting them from it."""
    session()
    return _local.one
