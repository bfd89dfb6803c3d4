"""The ``partition_by`` shorthand: the string users type to describe a partition spec.

The same text is accepted by the Python API, the Spark option and the CLI. It is a
comma-separated list of partition fields, in level order; each is one of

==========================================  ==============================  ====================
Form                                        Expression (spec 000 App. D)    Default name
==========================================  ==============================  ====================
``col``, ``identity(col)``                  ``col``                         ``<col>``
``year(col)``                               ``date_part('year', col)``      ``<col>_year``
``month(col)``                              ``date_part('month', col)``     ``<col>_month``
``day(col)``                                ``date_part('day', col)``       ``<col>_day``
``hour(col)``                               ``date_part('hour', col)``      ``<col>_hour``
``date(col)``, ``days(col)``                ``CAST(col AS DATE)``           ``<col>_date``
``years(col)``                              years since 1970 (below)        ``<col>_years``
``months(col)``                             months since 1970-01            ``<col>_months``
``hours(col)``                              hours since 1970-01-01T00       ``<col>_hours``
``bucket(N, col)``                          ``abs(hash(col)) % N``          ``<col>_bucket``
``truncate(W, col)``                        ``left(col, W)`` or             ``<col>_trunc``
                                            ``col - (col % W)``
``expr('<sql over col>', col, '<type>')``   the SQL, verbatim               ``<col>_expr``
==========================================  ==============================  ====================

optionally followed by ``AS name``. Function names and ``AS`` are case-insensitive; column
names are case-sensitive. Column names and field names may be double-quoted (``"My Col"``,
``""`` for a quote inside); SQL text and types in ``expr()`` are single-quoted (``''`` for a
quote inside). The ``<type>`` of ``expr()`` is a JsonArrowDataType name (``int32``,
``int64``, ``utf8``, ``date32``, ``bool``, ``float64``...) or, for parameterised types, a
whole JsonArrowDataType object (``'{"type": "decimal128", "precision": 10, "scale": 2}'``).

``month`` and ``day`` are Appendix D's date parts: the month of the *year* (1-12) and the day
of the *month* (1-31), not periods since the epoch. ``day(ts)`` alone puts the 10th of every
month into one partition: for daily partitions use ``date(ts)`` (or ``year(ts), month(ts),
day(ts)``). A spec with ``day`` but not ``year`` and ``month`` of the same column before it,
or ``month`` without ``year``, warns with :class:`AmbiguousPartitionWarning`.

The plural forms are Iceberg's periods since 1970-01-01T00:00, as int32 (they are not Appendix
D forms: other spec-000 clients evaluate their SQL with DataFusion). ``months(ts)`` is one
partition per calendar month,
``(date_part('year', col) - 1970) * 12 + date_part('month', col) - 1``; ``hours(ts)`` one per
hour, ``CAST(CAST(col AS DATE) AS BIGINT) * 24 + date_part('hour', col)``; ``years(ts)`` is
``date_part('year', col) - 1970``. ``days(ts)`` is ``date(ts)``: its value is the date itself.

Sources are the non-deprecated columns of the namespace schema, or fields of a struct
column by their dotted path (``bucket(4, device.ver)``; a segment with a dot in double quotes
or backticks, ``device."x.y"``): the field's ``lance:field_id`` is the ``source_id``, and the
default name joins the path with ``_`` (``device_ver_bucket``). An empty
(or blank) string means "unpartitioned". Errors are
:class:`~lance_partitioned.errors.PartitionByParseError` with the offset of the offending
token and a caret line:

>>> import pyarrow as pa
>>> from lance_partitioned.spec.schema import NamespaceSchema
>>> schema = NamespaceSchema.from_arrow(pa.schema([("ts", pa.timestamp("us")), ("s", pa.utf8())]))
>>> [f.name for f in parse_partition_by("year(ts), bucket(16, s) AS b", schema)]
['ts_year', 'b']
>>> parse_partition_by("year(s)", schema)
Traceback (most recent call last):
...
lance_partitioned.errors.PartitionByParseError: year() cannot be applied to column 's' of
type string at position 5:
  year(s)
       ^
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.spec.partitioning import RESERVED_NAMES, UnboundPartitionField
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.sourcepaths import source_id_at
from lance_partitioned.spec.transforms import (
    Bucket,
    Date,
    Day,
    Hour,
    Hours,
    Identity,
    Month,
    Months,
    Transform,
    Truncate,
    Year,
    Years,
    parse_transform,
)
from lance_partitioned.spec.types import type_from_json

__all__ = ["AmbiguousPartitionWarning", "parse_partition_by", "warn_ambiguous_date_parts"]

_DATE_PARTS: dict[str, Callable[[], Transform]] = {
    "year": Year,
    "month": Month,
    "day": Day,
    "hour": Hour,
    "date": Date,
    "days": Date,  # Iceberg's days: the date
    "years": Years,
    "months": Months,
    "hours": Hours,
}
_SUFFIXES = {"days": "date"}  # days(ts) is date(ts), named alike
_FUNCTIONS = (*_DATE_PARTS, "bucket", "truncate", "expr", "identity")
_PUNCTUATION = {"(": "(", ")": ")", ",": ","}
_EXPECTED = {"string": "a single-quoted string", "(": "'('", ")": "')'", ",": "','"}


@dataclass(frozen=True)
class _Token:
    kind: str  # "ident", "qident", "string", "number", "(", ")", ",", "end"
    value: str  # decoded text (quotes and escapes removed)
    pos: int  # offset of the first character in the text
    raw: str  # the text as written

    def describe(self) -> str:
        return "end of text" if self.kind == "end" else repr(self.raw)


@dataclass(frozen=True)
class _Column:
    name: str
    source_id: int
    dtype: pa.DataType
    token: _Token


def _parse_error(text: str, pos: int, message: str) -> errors.PartitionByParseError:
    shown = "".join(" " if ch.isspace() else ch for ch in text)
    return errors.PartitionByParseError(
        f"{message} at position {pos}:\n  {shown}\n  {' ' * pos}^", text=text, position=pos
    )


def _read_quoted(text: str, start: int, quote: str) -> tuple[str, int]:
    """Decode the quoted text opening at ``start``; return it and the offset after it."""
    parts: list[str] = []
    i = start + 1
    while True:
        end = text.find(quote, i)
        if end < 0:
            what = "identifier" if quote == '"' else "string"
            raise _parse_error(text, start, f"unterminated {what} starting with {quote!r}")
        parts.append(text[i:end])
        if text.startswith(quote * 2, end):
            parts.append(quote)
            i = end + 2
        else:
            return "".join(parts), end + 1


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    i = 0
    while i < len(text):
        ch = text[i]
        start = i
        if ch.isspace():
            i += 1
            continue
        if ch in _PUNCTUATION:
            tokens.append(_Token(_PUNCTUATION[ch], ch, start, ch))
            i += 1
        elif ch in "\"'`":
            value, i = _read_quoted(text, start, ch)
            kind = "string" if ch == "'" else "qident"
            tokens.append(_Token(kind, value, start, text[start:i]))
        elif ch.isdigit() or (ch in "+-" and text[i + 1 : i + 2].isdigit()):
            # A number runs over every word character, so "1.5" or "16x" is one bad token.
            i += 1
            while i < len(text) and (text[i].isalnum() or text[i] in "_."):
                i += 1
            tokens.append(_Token("number", text[start:i], start, text[start:i]))
        elif ch.isalpha() or ch == "_":
            while i < len(text) and (text[i].isalnum() or text[i] == "_"):
                i += 1
            tokens.append(_Token("ident", text[start:i], start, text[start:i]))
        elif ch == "." and tokens and tokens[-1].kind in ("ident", "qident"):
            tokens.append(_Token(".", ".", start, "."))  # a struct field: device.os
            i += 1
        else:
            raise _parse_error(text, start, f"unexpected character {ch!r}")
    tokens.append(_Token("end", "", len(text), ""))
    return tokens


class _Parser:
    def __init__(self, text: str, schema: NamespaceSchema) -> None:
        self.text = text
        self.schema = schema
        self.tokens = _tokenize(text)
        self.index = 0

    # -------------------------------------------------------------- token helpers
    def error(self, token: _Token | int, message: str) -> errors.PartitionByParseError:
        pos = token if isinstance(token, int) else token.pos
        return _parse_error(self.text, pos, message)

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.index + ahead, len(self.tokens) - 1)]

    def next(self) -> _Token:
        token = self.peek()
        self.index = min(self.index + 1, len(self.tokens) - 1)
        return token

    def expect(self, kind: str, context: str) -> _Token:
        token = self.next()
        if token.kind != kind:
            raise self.error(token, f"expected {_EXPECTED[kind]} {context}, got {token.describe()}")
        return token

    # -------------------------------------------------------------- grammar
    def parse(self) -> list[UnboundPartitionField]:
        fields: list[UnboundPartitionField] = []
        positions: dict[str, int] = {}
        while True:
            name_pos, unbound = self.item()
            if unbound.name in RESERVED_NAMES:
                raise self.error(
                    name_pos,
                    f"partition field name {unbound.name!r} is reserved for a __manifest column",
                )
            if unbound.name in positions:
                raise self.error(
                    name_pos,
                    f"duplicate partition field name {unbound.name!r} (first at position "
                    f"{positions[unbound.name]}); rename one with AS",
                )
            positions[unbound.name] = name_pos
            fields.append(unbound)
            token = self.next()
            if token.kind == "end":
                return fields
            if token.kind != ",":
                raise self.error(
                    token, f"expected ',' or the end of partition_by, got {token.describe()}"
                )

    def item(self) -> tuple[int, UnboundPartitionField]:
        first = self.peek()
        if first.kind == "ident" and self.peek(1).kind == "(":
            default_name, column, transform, result_type = self.call()
        elif first.kind in ("ident", "qident"):
            column = self.column()
            transform = Identity()
            result_type = transform.result_type(column.dtype)
            default_name = column.name
        else:
            raise self.error(
                first, f"expected a column or a partition function, got {first.describe()}"
            )
        name, name_pos = default_name, first.pos
        keyword = self.peek()
        if keyword.kind == "ident" and keyword.value.lower() == "as":
            self.next()
            token = self.next()
            if token.kind not in ("ident", "qident") or not token.value:
                raise self.error(
                    token, f"expected a partition field name after AS, got {token.describe()}"
                )
            name, name_pos = token.value, token.pos
        return name_pos, UnboundPartitionField(name, column.source_id, transform, result_type)

    def call(self) -> tuple[str, _Column, Transform, pa.DataType]:
        function = self.next()
        lowered = function.value.lower()
        if lowered not in _FUNCTIONS:
            raise self.error(
                function,
                f"unknown partition function {function.raw!r} (known: {', '.join(_FUNCTIONS)})",
            )
        context = f"after {function.raw}("
        self.expect("(", f"after {function.raw}")
        transform: Transform
        declared: pa.DataType | None = None
        if lowered == "identity":  # Iceberg's spelling of a bare column
            column = self.column()
            self.expect(")", f"to close {function.raw}( at position {function.pos}")
            return column.name, column, Identity(), Identity().result_type(column.dtype)
        if lowered in _DATE_PARTS:
            column = self.column()
            transform = _DATE_PARTS[lowered]()
            suffix = _SUFFIXES.get(lowered, lowered)
        elif lowered == "expr":
            sql = self.expect("string", f"(the SQL over col) {context}")
            self.expect(",", f"after the SQL of {function.raw}(")
            column = self.column()
            self.expect(",", f"after the column of {function.raw}(")
            declared = self.result_type()
            transform = self.build(sql, lambda: parse_transform(sql.value, declared))
            suffix = "expr"
        else:
            width = self.integer(lowered)
            self.expect(",", f"after the {'count' if lowered == 'bucket' else 'width'}")
            column = self.column()
            if lowered == "bucket":
                transform = self.build(width, lambda: Bucket(int(width.value)))
                suffix = "bucket"
            else:
                transform = self.build(
                    column.token, lambda: Truncate.for_type(int(width.value), column.dtype)
                )
                suffix = "trunc"
        self.expect(")", f"to close {function.raw}( at position {function.pos}")
        if not transform.can_apply(column.dtype):
            raise self.error(
                column.token,
                f"{lowered}() cannot be applied to column {column.name!r} of type {column.dtype}",
            )
        if declared is not None:
            return f"{column.name}_{suffix}", column, transform, declared
        result = self.build(column.token, lambda: transform.result_type(column.dtype))
        return f"{column.name}_{suffix}", column, transform, result

    def build(self, token: _Token, make: Callable[[], Any]) -> Any:
        """Run ``make``; turn an input error into a parse error at ``token``."""
        try:
            return make()
        except errors.InvalidInputError as exc:
            raise self.error(token, str(exc)) from exc

    def integer(self, function: str) -> _Token:
        token = self.next()
        what = "bucket count" if function == "bucket" else "truncate width"
        digits = token.value.lstrip("+-")
        if token.kind != "number" or not (digits.isascii() and digits.isdigit()):
            raise self.error(token, f"{what} must be an integer, got {token.describe()}")
        if int(token.value) < 1:
            raise self.error(token, f"{what} must be >= 1, got {token.describe()}")
        return token

    def column(self) -> _Column:
        token = self.next()
        if token.kind not in ("ident", "qident"):
            raise self.error(token, f"expected a column name, got {token.describe()}")
        path = [token.value]
        while self.peek().kind == ".":
            self.next()
            segment = self.next()
            if segment.kind not in ("ident", "qident"):
                raise self.error(
                    segment, f"expected a struct field name after '.', got {segment.describe()}"
                )
            path.append(segment.value)
        try:
            source_id = source_id_at(self.schema, tuple(path))
        except errors.SchemaError as exc:
            columns = ", ".join(self.schema.names) or "none"
            raise self.error(token, f"unknown column: {exc} (columns: {columns})") from None
        # the default field name: the path joined with '_' (no dot in a __manifest column)
        name = "_".join(path)
        return _Column(name, source_id, self.schema.field_by_id(source_id).type, token)

    def result_type(self) -> pa.DataType:
        token = self.expect("string", "(the result type) after the column of expr(")
        spelled = token.value.strip()
        try:
            obj = json.loads(spelled) if spelled.startswith("{") else {"type": spelled}
            return type_from_json(obj)
        except (ValueError, errors.LancePartitionedError) as exc:
            raise self.error(token, f"bad result type {token.describe()}: {exc}") from exc


def parse_partition_by(text: str, schema: NamespaceSchema) -> list[UnboundPartitionField]:
    """Parse the ``partition_by`` shorthand into unbound partition fields.

    Parameters
    ----------
    text : str
        The shorthand, e.g. ``"year(event_date) AS event_year, country"``.
    schema : NamespaceSchema
        The namespace schema; columns resolve against its top-level, non-deprecated names.

    Returns
    -------
    list of UnboundPartitionField
        In level order; empty for a blank string (unpartitioned).

    Raises
    ------
    PartitionByParseError
        With ``position`` at the offending token: a syntax error, an unknown function or
        column, a count or width below 1, a transform that does not apply to the column's
        type, a duplicate or reserved name.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lance_partitioned.spec.schema import NamespaceSchema
    >>> schema = NamespaceSchema.from_arrow(
    ...     pa.schema([("id", pa.int64()), ("event_date", pa.date32()), ("country", pa.utf8())]))
    >>> for f in parse_partition_by("year(event_date) AS event_year, country", schema):
    ...     print(f.name, f.source_id, f.expression, f.result_type)
    event_year 1 date_part('year', col) int32
    country 2 col string
    >>> parse_partition_by("  ", schema)
    []
    """
    if not text.strip():
        return []
    fields = _Parser(text, schema).parse()
    warn_ambiguous_date_parts(fields, schema)
    return fields


class AmbiguousPartitionWarning(UserWarning):
    """A partition field is ``day`` (the day of the month) without ``year`` and ``month`` of
    its column before it, or ``month`` (the month of the year) without ``year``: each of its
    partitions mixes months or years. ``date(ts)`` is the calendar day, ``months(ts)`` the
    calendar month."""


# The date parts that one value of a transform fixes (what makes a day or month below it whole).
_PINS: dict[type[Transform], tuple[str, ...]] = {
    Year: ("year",),
    Years: ("year",),
    Month: ("month",),
    Months: ("year", "month"),
    Date: ("year", "month", "day"),
    Hours: ("year", "month", "day", "hour"),
}


class _Field(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def source_id(self) -> int: ...

    @property
    def transform(self) -> Transform: ...


_PACKAGE = str(Path(__file__).resolve().parents[1])


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside lance_partitioned (for warnings.warn)."""
    frame = sys._getframe(1)  # the caller of this function is warnings.warn's caller: level 1
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level


def warn_ambiguous_date_parts(fields: Sequence[_Field], schema: NamespaceSchema) -> None:
    """Warn (:class:`AmbiguousPartitionWarning`) about ``day`` or ``month`` fields whose coarser
    date parts of the same column are not above them.

    Examples
    --------
    >>> import warnings, pyarrow as pa
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("ts", pa.timestamp("us"))]))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = parse_partition_by("day(ts)", schema)
    >>> print(caught[0].message)
    partition field 'ts_day' is day(ts), the day of the MONTH (1-31) as spec 000 defines it: ...
    >>> parse_partition_by("year(ts), month(ts), day(ts)", schema)[2].name  # no warning
    'ts_day'
    """
    above: dict[int, set[str]] = {}
    for field in fields:
        pinned = above.setdefault(field.source_id, set())  # the date parts fixed above
        transform = field.transform
        try:
            column = schema.name_of(field.source_id)
        except errors.LancePartitionedError:
            column = "col"
        message = None
        if isinstance(transform, Day) and not {"year", "month"} <= pinned:
            message = (
                f"partition field {field.name!r} is day({column}), the day of the MONTH (1-31) "
                f"as spec 000 defines it: without year({column}) and month({column}) (or "
                f"months({column})) before it, one partition holds that day of every month. "
                f"For one partition per calendar day use date({column})"
            )
        elif isinstance(transform, Month) and "year" not in pinned:
            message = (
                f"partition field {field.name!r} is month({column}), the month of the YEAR "
                f"(1-12) as spec 000 defines it: without year({column}) before it, one "
                f"partition holds that month of every year. For one partition per calendar "
                f"month use months({column}) (or year({column}), month({column}); date({column})"
                f" for one per day)"
            )
        if message is not None:
            warnings.warn(message, AmbiguousPartitionWarning, stacklevel=_user_stacklevel())
        pinned.update(_PINS.get(type(transform), ()))
