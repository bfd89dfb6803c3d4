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

import functools
import re

import pyarrow as pa

from lance_partitioned.errors import InvalidInputError
from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.convert import Parser
from lance_partitioned.expressions.sqltext import (
    deep,
    split_top_level,
    unwrap,
)
from lance_partitioned.expressions.sqltime import instant_literals
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.expressions.visitors import rewrite_not

__all__ = ["parse_sql"]

_LONG = 32  # filters with more ANDs and ORs than this are cut into pieces (_parse_long)
_CONNECTIVES = re.compile(r"\b(?:and|or)\b", re.IGNORECASE)
_NOT = re.compile(r"\s*not\s*(\(.*\))\s*", re.IGNORECASE | re.DOTALL)
_CACHED = 64  # parsed filters kept (_parse_cached): one of 10,000 terms is a few MB


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
    parser = Parser(text, schema)
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
    parser = Parser(text, schema)
    try:
        return parser.run(text)
    finally:
        parser.close()
