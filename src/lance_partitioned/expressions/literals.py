"""Literal coercion: a Python literal against a column's Arrow type, exactly.

:func:`coerce` places a literal in the column's domain: :class:`Exact` when the domain holds
it, :class:`Between` when it falls strictly between two adjacent values of the domain (``2.5``
against an integer column, ``10:00:00.5`` against a timestamp in seconds), :class:`BelowAll`
or :class:`AboveAll` when it lies outside the domain (``1000`` against int8). Comparisons are
exact, as DataFusion evaluates ``int_col < 2.5``; :func:`~lance_partitioned.expressions.bind`
turns the placement into a comparison with a literal of the column's own type.

Time zones follow DataFusion: a naive timestamp against a time-zone-aware column is a
wall-clock time in the column's zone (``TIMESTAMP '2025-01-01 05:00'`` against an
``America/New_York`` column is 10:00 UTC), while a date is its midnight UTC; an aware
``datetime`` is its instant, and so is a SQL literal with an explicit UTC offset
(``TIMESTAMP '2025-01-01 05:00:00+02:00'``, which the parser reads as an aware value).
Values of time-zone-aware columns are returned as aware ``datetime`` in UTC.

NaN sorts above every number (DataFusion's total order for floats).

>>> import pyarrow as pa
>>> coerce(2.5, pa.int32(), "x"), coerce(1000, pa.int8(), "x")
(Between(below=2), AboveAll())
>>> coerce("2025-12-10", pa.date32(), "d")
Exact(value=datetime.date(2025, 12, 10))
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pyarrow as pa

from lance_partitioned.errors import InvalidInputError

__all__ = ["AboveAll", "BelowAll", "Between", "Exact", "Placement", "coerce", "int_domain"]

_EPOCH = datetime.datetime(1970, 1, 1)
_UTC = datetime.timezone.utc
_MICROS_PER_TICK = {"s": 1_000_000, "ms": 1_000, "us": 1}
_INT64 = (-(1 << 63), (1 << 63) - 1)
_OFFSET = re.compile(r"([+-])(\d{2}):?(\d{2})")


@dataclass(frozen=True)
class Exact:
    """The domain holds the literal: ``value`` is it, in the column's Python type."""

    value: Any


@dataclass(frozen=True)
class Between:
    """The literal lies strictly between ``below`` and the next value of the domain."""

    below: Any


@dataclass(frozen=True)
class BelowAll:
    """Every value of the domain is greater than the literal."""


@dataclass(frozen=True)
class AboveAll:
    """Every value of the domain is less than the literal."""


Placement = Exact | Between | BelowAll | AboveAll


def coerce(value: Any, dtype: pa.DataType, column: str) -> Placement:
    """Place ``value`` in the domain of a column of type ``dtype``.

    Raises
    ------
    InvalidInputError
        If the literal cannot be compared with the column (a string against an integer
        column that does not parse as a number, a number against a date, any literal
        against a list column, an ambiguous local time...). The message names the column.

    Examples
    --------
    >>> import datetime, pyarrow as pa
    >>> coerce(datetime.date(2025, 1, 1), pa.timestamp("s", tz="UTC"), "ts")
    Exact(value=datetime.datetime(2025, 1, 1, 0, 0, tzinfo=datetime.timezone.utc))
    >>> coerce("1.005", pa.decimal128(5, 2), "price")
    Between(below=Decimal('1.00'))
    >>> coerce("abc", pa.int64(), "x")
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.InvalidInputError: column 'x' (int64): cannot compare with 'abc'
    """
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    t = pa.types
    try:
        if t.is_boolean(dtype):
            return _boolean(value)
        if t.is_integer(dtype):
            return _integer(value, dtype)
        if t.is_floating(dtype):
            return _floating(value, dtype)
        if t.is_decimal(dtype):
            return _decimal(value, dtype)
        if t.is_date(dtype):
            return _date(value)
        if t.is_timestamp(dtype):
            return _timestamp(value, dtype)
        if t.is_time(dtype):
            return _time(value, dtype)
        if t.is_string(dtype) or t.is_large_string(dtype) or dtype == pa.string_view():
            return _string(value)
        if t.is_binary(dtype) or t.is_large_binary(dtype) or t.is_fixed_size_binary(dtype):
            return _binary(value, dtype)
    except _Mismatch as exc:
        why = f" ({exc})" if str(exc) else ""
        raise InvalidInputError(
            f"column {column!r} ({dtype}): cannot compare with {value!r}{why}"
        ) from exc
    raise InvalidInputError(
        f"column {column!r} has type {dtype}, which cannot be compared with a literal"
    )


def int_domain(dtype: pa.DataType) -> tuple[int, int] | None:
    """The smallest and largest value of an integer type, None for other types.

    >>> import pyarrow as pa
    >>> int_domain(pa.uint8()), int_domain(pa.utf8())
    ((0, 255), None)
    """
    if pa.types.is_dictionary(dtype):
        dtype = dtype.value_type
    if not pa.types.is_integer(dtype):
        return None
    bits = int(dtype.bit_width)
    if pa.types.is_unsigned_integer(dtype):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


class _Mismatch(Exception):
    """The literal's type does not fit the column's type."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def _boolean(value: Any) -> Placement:
    if isinstance(value, bool):
        return Exact(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return Exact(value.strip().lower() == "true")
    raise _Mismatch


def _number(value: Any) -> int | float | decimal.Decimal:
    """A numeric literal; strings are read as SQL casts them (``'5'``, ``'2.5'``, ``'NaN'``)."""
    if _is_number(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, str):
        try:
            parsed = decimal.Decimal(value.strip())
        except decimal.InvalidOperation:
            raise _Mismatch from None
        return float(parsed) if not parsed.is_finite() else parsed
    raise _Mismatch


def _in_range(n: int, low: int, high: int) -> Placement:
    if n < low:
        return BelowAll()
    if n > high:
        return AboveAll()
    return Exact(n)


def _integer(value: Any, dtype: pa.DataType) -> Placement:
    low, high = int_domain(dtype) or _INT64
    number = _number(value)
    if isinstance(number, int):
        return _in_range(number, low, high)
    if isinstance(number, float) and math.isnan(number):
        return AboveAll()
    if isinstance(number, decimal.Decimal) and number.is_nan():
        return AboveAll()
    if isinstance(number, float) and math.isinf(number):
        return AboveAll() if number > 0 else BelowAll()
    floor = math.floor(number)
    if floor == number:
        return _in_range(int(floor), low, high)
    if floor < low:
        return BelowAll()
    return AboveAll() if floor >= high else Between(int(floor))


def _floating(value: Any, dtype: pa.DataType) -> Placement:
    number = _number(value)
    if isinstance(number, decimal.Decimal):
        number = float(number)  # the nearest double, as SQL reads a decimal literal
    width = {16: np.float16, 32: np.float32, 64: np.float64}[int(dtype.bit_width)]
    if isinstance(number, float) and math.isnan(number):
        return Exact(math.nan)
    with np.errstate(over="ignore"):
        try:
            nearest = width(number)
        except OverflowError:  # an int beyond every double
            nearest = width(math.inf if number > 0 else -math.inf)
    if _exact_equal(nearest, number):
        return Exact(float(nearest))
    below = nearest if _less(nearest, number) else np.nextafter(nearest, width(-math.inf))
    return Between(float(below))


def _exact_equal(nearest: Any, number: int | float) -> bool:
    if isinstance(number, int):
        return bool(np.isfinite(nearest)) and int(nearest) == number
    return float(nearest) == number


def _less(nearest: Any, number: int | float) -> bool:
    if isinstance(number, int):
        if not np.isfinite(nearest):
            return float(nearest) < 0
        return int(nearest) < number
    return float(nearest) < number


def _decimal(value: Any, dtype: pa.DataType) -> Placement:
    number = _number(value)
    if isinstance(number, float):
        if math.isnan(number) or number == math.inf:
            return AboveAll()
        if number == -math.inf:
            return BelowAll()
        number = decimal.Decimal(repr(number))  # the literal as written, not its binary value
    exact = decimal.Decimal(number)
    if exact.is_nan():
        return AboveAll()
    if exact.is_infinite():
        return AboveAll() if exact > 0 else BelowAll()
    with decimal.localcontext() as ctx:
        ctx.prec = 200
        step = decimal.Decimal(1).scaleb(-dtype.scale)
        largest = (decimal.Decimal(10) ** dtype.precision - 1) * step
        floor = exact.quantize(step, rounding=decimal.ROUND_FLOOR)
        if floor < -largest:
            return BelowAll()
        if floor > largest or (floor == largest and floor != exact):
            return AboveAll()
        return Exact(floor) if floor == exact else Between(floor)


def _parse_datetime(text: str) -> datetime.date:
    text = text.strip()
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        pass
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        raise _Mismatch("not an ISO date or timestamp") from None


def _date(value: Any) -> Placement:
    if isinstance(value, str):
        value = _parse_datetime(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_UTC).replace(tzinfo=None)
        day = value.date()
        return Exact(day) if value.time() == datetime.time() else Between(day)
    if isinstance(value, datetime.date):
        return Exact(value)
    raise _Mismatch


def _zone(tz: str) -> datetime.tzinfo:
    match = _OFFSET.fullmatch(tz)
    if match:
        sign = -1 if match.group(1) == "-" else 1
        minutes = sign * (int(match.group(2)) * 60 + int(match.group(3)))
        return datetime.timezone(datetime.timedelta(minutes=minutes))
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise _Mismatch(f"unknown time zone {tz!r}") from None


def _instant(value: datetime.datetime, tz: str | None) -> datetime.datetime:
    """The naive UTC instant of ``value`` (a naive value is wall-clock time in ``tz``)."""
    if value.tzinfo is None:
        if tz is None:
            return value
        zone = _zone(tz)
        first = value.replace(tzinfo=zone, fold=0)
        second = value.replace(tzinfo=zone, fold=1)
        if first.utcoffset() != second.utcoffset():
            raise _Mismatch(
                f"{value} is ambiguous or does not exist in time zone {tz}: "
                "give the literal a UTC offset"
            )
        value = first
    return value.astimezone(_UTC).replace(tzinfo=None)


def _timestamp(value: Any, dtype: pa.DataType) -> Placement:
    if isinstance(value, str):
        value = _parse_datetime(value)
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        # DataFusion casts a date to its midnight UTC, whatever the column's zone
        value = datetime.datetime.combine(value, datetime.time(), tzinfo=_UTC)
    if not isinstance(value, datetime.datetime):
        raise _Mismatch
    micros = (_instant(value, dtype.tz) - _EPOCH) // datetime.timedelta(microseconds=1)
    if dtype.unit == "ns":
        placement = _in_range(micros * 1000, *_INT64)
        floor, exact = micros, True
    else:
        floor, rest = divmod(micros, _MICROS_PER_TICK[dtype.unit])
        placement = _in_range(floor, *_INT64)
        floor, exact = floor * _MICROS_PER_TICK[dtype.unit], rest == 0
    if not isinstance(placement, Exact):
        return placement
    out = _EPOCH + datetime.timedelta(microseconds=floor)
    if dtype.tz is not None:
        out = out.replace(tzinfo=_UTC)
    return Exact(out) if exact else Between(out)


def _time(value: Any, dtype: pa.DataType) -> Placement:
    if isinstance(value, str):
        try:
            value = datetime.time.fromisoformat(value.strip())
        except ValueError:
            raise _Mismatch("not an ISO time") from None
    if not isinstance(value, datetime.time) or value.tzinfo is not None:
        raise _Mismatch
    micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000
    micros += value.microsecond
    step = _MICROS_PER_TICK.get(dtype.unit, 1)
    floor = micros - micros % step
    out = (_EPOCH + datetime.timedelta(microseconds=floor)).time()
    return Exact(out) if floor == micros else Between(out)


def _string(value: Any) -> Placement:
    if isinstance(value, str):
        return Exact(value)
    raise _Mismatch


def _binary(value: Any, dtype: pa.DataType) -> Placement:
    if isinstance(value, str):
        value = value.encode()
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise _Mismatch
    data = bytes(value)
    if pa.types.is_fixed_size_binary(dtype) and len(data) != dtype.byte_width:
        raise _Mismatch(f"{len(data)} bytes, the column holds {dtype.byte_width}")
    return Exact(data)
