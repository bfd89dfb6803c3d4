"""Helpers of the parser: DataFusion ``Expr`` inspection, folded literals, LIKE, quoting.

Used by :mod:`~lance_partitioned.expressions.parse`; no parsing happens here (DataFusion
parses), only the inspection and conversion of what DataFusion hands back.

>>> like_shape("2025-%")
('2025-', True)
"""

from __future__ import annotations

import datetime
import os
import queue
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

import datafusion
import pyarrow as pa

__all__ = [
    "REJECTED",
    "SQL_NULL",
    "NotALiteral",
    "Unrenderable",
    "backtick_identifiers",
    "children",
    "column_name",
    "columns_of",
    "deep",
    "is_constant",
    "is_ilike",
    "is_volatile",
    "like_shape",
    "python_value",
    "split_top_level",
    "unwrap",
    "wrap",
]

_EPOCH = datetime.datetime(1970, 1, 1)
_STACK_BYTES = 256 << 20  # DataFusion recurses once per level of an expression
_T = TypeVar("_T")
# Functions whose value changes from row to row although they read no column.
_VOLATILE = frozenset({"random", "uuid"})
# Expressions that are not row filters at all.
REJECTED: frozenset[str] = frozenset(
    {
        "AggregateFunction",
        "WindowFunction",
        "ScalarSubquery",
        "InSubquery",
        "Exists",
        "Placeholder",
        "OuterReferenceColumn",
        "GroupingSet",
        "Wildcard",
    }
)


class Unrenderable(Exception):
    """A sub-expression that cannot be rendered back to SQL faithfully."""


class NotALiteral(Exception):
    """A folded constant whose type the tree has no Python value for."""


@dataclass(frozen=True)
class _Null:
    """The SQL NULL constant."""


SQL_NULL = _Null()
"""The value of a NULL constant (None means "not a usable literal" in the parser)."""


def python_value(scalar: pa.Scalar) -> Any:
    """The tree's Python value of a folded constant: SQL_NULL for NULL.

    Raises
    ------
    NotALiteral
        For a type the tree has no literal of, or a time finer than microseconds.

    Examples
    --------
    >>> import pyarrow as pa
    >>> python_value(pa.scalar(1_500_000, pa.timestamp("us", tz="UTC")))
    datetime.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=datetime.timezone.utc)
    >>> python_value(pa.scalar(None, pa.int64())) is SQL_NULL
    True
    """
    t = scalar.type
    if not scalar.is_valid:
        return SQL_NULL
    if pa.types.is_timestamp(t):
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
        raw = scalar.cast(pa.int64()).as_py()
        micros, rest = divmod(raw * 1_000_000, per_second)
        if rest:
            raise NotALiteral(f"{scalar} has more precision than microseconds")
        value = _EPOCH + datetime.timedelta(microseconds=micros)
        return value.replace(tzinfo=datetime.timezone.utc) if t.tz is not None else value
    if pa.types.is_time(t):
        per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[t.unit]
        width = pa.int32() if pa.types.is_time32(t) else pa.int64()
        micros, rest = divmod(scalar.cast(width).as_py() * 1_000_000, per_second)
        if rest:
            raise NotALiteral(f"{scalar} has more precision than microseconds")
        return (_EPOCH + datetime.timedelta(microseconds=micros)).time()
    simple = (
        pa.types.is_boolean(t)
        or pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or pa.types.is_date(t)
    )
    if not simple:
        raise NotALiteral(f"no literal of type {t}")
    value = scalar.as_py()
    if pa.types.is_floating(t):
        return float(value)
    return value


def like_shape(pattern: str) -> tuple[str, bool] | None:
    """``(literal, is_prefix)`` for ``'literal'`` or ``'literal%'``; None for other patterns.

    A backslash escapes the next character, as in DataFusion and Lance.

    >>> like_shape("ab%"), like_shape("a" + chr(92) + "%b"), like_shape("a_b%")
    (('ab', True), ('a%b', False), None)
    """
    chars: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 == len(pattern):
                return None
            chars.append(pattern[i + 1])
            i += 2
            continue
        if c == "_":
            return None
        if c == "%":
            rest = pattern[i:]
            return ("".join(chars), True) if rest == "%" * len(rest) else None
        chars.append(c)
        i += 1
    return "".join(chars), False


def backtick_identifiers(sql: str, table: str) -> tuple[str, tuple[str, ...]]:
    """Rewrite the unparser's ``"t"."col"`` to ```col```, skipping string literals.

    Lance reads double quotes as a string, DataFusion as an identifier; both read backticks
    as an identifier. Returns the new text and the columns named, in order of appearance: an
    identifier right after ``"col".`` is a struct field of that column (``"t"."device"."os"``,
    DataFusion's ``device.os``), not a column.

    Raises
    ------
    Unrenderable
        For a name with a backtick, or an unterminated quote.

    Examples
    --------
    >>> sql = '"t"."my col" = ' + "'x'"
    >>> backtick_identifiers(sql, "t")
    ("`my col` = 'x'", ('my col',))
    >>> backtick_identifiers('"t"."device"."os" IS NULL', "t")
    ('`device`.`os` IS NULL', ('device',))
    """
    out: list[str] = []
    columns: dict[str, None] = {}
    i = 0
    while i < len(sql):
        c = sql[i]
        if c == "'":
            end = _closing(sql, i, "'")
            out.append(sql[i:end])
            i = end
        elif c == '"':
            end = _closing(sql, i, '"')
            name = sql[i + 1 : end - 1].replace('""', '"')
            i = end
            if name == table and sql.startswith('."', i):
                i += 1  # the qualifier and its dot
                continue
            if "`" in name:
                raise Unrenderable(f"identifier {name!r} contains a backtick")
            if not (len(out) >= 2 and out[-1] == "." and out[-2].endswith("`")):
                columns[name] = None  # else a field of the struct just named
            out.append(f"`{name}`")
        else:
            out.append(c)
            i += 1
    return "".join(out), tuple(columns)


def _closing(sql: str, start: int, quote: str) -> int:
    """The index just past the quote closing the quoted token opened at ``start``."""
    i = start + 1
    while i < len(sql):
        if sql[i] == quote:
            if sql.startswith(quote, i + 1):
                i += 2
                continue
            return i + 1
        i += 1
    raise Unrenderable(f"unterminated quote in {sql!r}")


def wrap(expr: Any) -> datafusion.Expr:
    """The public ``Expr`` of a raw expression (variants hand out raw ones).

    >>> import datafusion
    >>> wrap(datafusion.col("a")) is not None
    True
    """
    return expr if isinstance(expr, datafusion.Expr) else datafusion.Expr(expr)


def column_name(column: Any) -> str:
    """The name of a ``Column`` expression.

    >>> import datafusion
    >>> column_name(datafusion.col("a b"))
    'a b'
    """
    return str(column.to_variant().name())


def children(expr: Any) -> list[Any]:
    """The operands of an expression (none for columns, literals and rejected forms).

    >>> import datafusion
    >>> len(children(datafusion.col("a") + datafusion.lit(1)))
    2
    """
    if expr.variant_name() in ("Column", "Literal"):
        return []
    if expr.variant_name() in REJECTED:
        return []
    try:
        return list(expr.rex_call_operands())
    except Exception:  # e.g. a scalar variable: no operands
        return []


def columns_of(expr: Any) -> set[str]:
    """The columns an expression reads (``"?"`` for a subquery: never a constant).

    >>> import datafusion
    >>> sorted(columns_of(datafusion.col("a") + datafusion.col("b")))
    ['a', 'b']
    """
    found: set[str] = set()
    stack = [expr]
    while stack:  # iterative: a filter of 10,000 terms nests 10,000 deep
        node = stack.pop()
        kind = node.variant_name()
        if kind == "Column":
            found.add(column_name(node))
        elif kind in REJECTED:
            found.add("?")  # never a constant
        else:
            stack += children(node)
    return found


def is_volatile(expr: Any) -> bool:
    """Whether an expression calls a function whose value changes from row to row.

    >>> import datafusion
    >>> from datafusion import functions
    >>> is_volatile(functions.random()), is_volatile(datafusion.lit(1))
    (True, False)
    """
    stack = [expr]
    while stack:
        node = stack.pop()
        if node.variant_name() == "ScalarFunction":
            try:
                if str(node.rex_call_operator()).lower() in _VOLATILE:
                    return True
            except Exception:
                return True
        stack += children(node)
    return False


def is_constant(expr: Any) -> bool:
    """Whether an expression can be folded once: no column, nothing volatile.

    >>> import datafusion
    >>> is_constant(datafusion.lit(1) + datafusion.lit(2)), is_constant(datafusion.col("a"))
    (True, False)
    """
    return not columns_of(expr) and not is_volatile(expr)


def is_ilike(expr: Any, column: Any) -> bool:
    """Whether a ``Like`` variant is ILIKE (the Python binding does not expose the flag).

    >>> import datafusion
    >>> df = datafusion.SessionContext().from_pydict({"a": ["x"]})
    >>> a = df.parse_sql_expr("a")
    >>> is_ilike(df.parse_sql_expr("a ILIKE 'x%'"), a), is_ilike(df.parse_sql_expr("a LIKE 'x'"), a)
    (True, False)
    """
    head = wrap(column).canonical_name()
    text = wrap(expr).canonical_name()
    return text.startswith((f"{head} ILIKE ", f"{head} NOT ILIKE "))


class _DeepThread:
    """One daemon thread with a large stack that runs submitted calls in order."""

    def __init__(self) -> None:
        self.pid = os.getpid()  # a forked child has no such thread: it starts its own
        self.calls: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        previous = threading.stack_size(_STACK_BYTES)
        try:
            self.thread = threading.Thread(target=self.run, name="lp-deep-stack", daemon=True)
            self.thread.start()
        finally:
            threading.stack_size(previous)

    def run(self) -> None:
        while True:
            call, future = self.calls.get()
            try:
                future.set_result(call())
            except BaseException as exc:  # handed to the caller
                future.set_exception(exc)
            del call, future  # free what the call built (a deep tree) on this thread


_deep_lock = threading.Lock()
_deep: _DeepThread | None = None


def deep(call: Callable[[], _T]) -> _T:
    """Run ``call`` on a thread with a 256 MB stack and return its result (or raise its error).

    DataFusion parses, plans and frees an expression recursively, one stack frame (or more) per
    level: ``a OR b OR …`` of 10,000 terms overflows the 8 MB stack of a main thread and
    crashes the process. Every use of DataFusion on user filters goes through here. Calls are
    serialised; a call made from the deep thread itself runs at once.

    >>> deep(lambda: 6 * 7)
    42
    """
    global _deep
    if threading.current_thread().name == "lp-deep-stack":
        return call()
    with _deep_lock:
        if _deep is None or _deep.pid != os.getpid():
            _deep = _DeepThread()
        worker = _deep
    future: Future[_T] = Future()
    worker.calls.put((call, future))
    return future.result()


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPENERS = {"case": 1, "end": -1}


def split_top_level(text: str, keyword: str) -> list[str] | None:
    """``text`` cut at ``keyword`` (``AND`` or ``OR``) outside parentheses, quotes and CASE.

    The AND of ``BETWEEN x AND y`` is not a cut. None when the text holds something this
    small lexer does not follow (comments, backslash escapes, unbalanced quotes or
    parentheses): the caller then parses the text whole.

    >>> split_top_level("a = 'x OR y' OR (b OR c) OR d BETWEEN 1 AND 2", "OR")
    ["a = 'x OR y' ", ' (b OR c) ', ' d BETWEEN 1 AND 2']
    >>> split_top_level("d BETWEEN 1 AND 2 AND e", "AND")
    ['d BETWEEN 1 AND 2 ', ' e']
    """
    if "--" in text or "/*" in text or "\\" in text:
        return None
    pieces: list[str] = []
    start = depth = between = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"`":
            close = text.find(ch, i + 1)
            while close != -1 and close + 1 < n and text[close + 1] == ch and ch != "`":
                close = text.find(ch, close + 2)  # a doubled quote inside the string
            if close == -1:
                return None
            i = close + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return None
        elif ch.isalpha() or ch == "_":
            word = _WORD.match(text, i)
            assert word is not None
            lowered = word.group().lower()
            if i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_."):
                pass  # inside an identifier or a number such as 1e5
            elif lowered in _OPENERS:
                depth += _OPENERS[lowered]
            elif depth == 0 and lowered == "between":
                between += 1
            elif depth == 0 and lowered == keyword.lower():
                if keyword.lower() == "and" and between:
                    between -= 1
                else:
                    pieces.append(text[start:i])
                    start = word.end()
            i = word.end()
            continue
        i += 1
    if depth != 0:
        return None
    pieces.append(text[start:])
    return pieces


def unwrap(text: str) -> str | None:
    """The inside of ``text`` when one pair of parentheses encloses all of it, else None.

    >>> unwrap(" (a OR (b)) "), unwrap("(a) OR (b)")
    ('a OR (b)', None)
    """
    body = text.strip()
    if not body.startswith("(") or not body.endswith(")"):
        return None
    inner = body[1:-1]
    pieces = split_top_level(f"x{inner}", "\0")  # checks the inside is balanced on its own
    return inner if pieces is not None else None
