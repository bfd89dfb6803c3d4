"""Partition transforms: the Appendix D expressions of spec 000 as classes.

Each recognised form of Appendix D is a :class:`Transform` with a vectorised fast path
(:meth:`Transform.apply`) and the DataFusion reference path (:meth:`Transform.apply_reference`);
the two agree on every value (the property tests check it). Any other expression is an
:class:`Opaque` transform, evaluated by DataFusion only.

============================  ============================  ============  ====================
class                         expression                    result type   sources
============================  ============================  ============  ====================
``Identity()``                ``col``                       the source's  any
``Year()``                    ``date_part('year', col)``    int32         date32/64, timestamp
``Month()``                   ``date_part('month', col)``   int32 (1-12)  date32/64, timestamp
``Day()``                     ``date_part('day', col)``     int32 (1-31)  date32/64, timestamp
``Hour()``                    ``date_part('hour', col)``    int32 (0-23)  timestamp
``Bucket(N)``                 ``abs(hash(col)) % N``        int64         all hash() encodes
``Truncate(W)``               ``col - (col % W)``           the source's  integer, decimal128/256
``Truncate(W, string=True)``  ``left(col, W)``              utf8          utf8, large, view
============================  ============================  ============  ====================

Date parts of a timestamp are computed on its UTC instant, whatever its time zone.
``Truncate`` follows the expression's SQL semantics: ``%`` is the truncated remainder, so
negative values truncate toward zero (``-3 - (-3 % 10) = 0``). ``left`` counts characters
(code points), and always returns utf8.

>>> import pyarrow as pa
>>> t = parse_transform("abs(hash(col)) % 16")
>>> t, t.expression
(Bucket(16), 'abs(hash(col)) % 16')
>>> t.apply(pa.array([1, None])).to_pylist()
[11, None]
"""

from __future__ import annotations

import abc
import re
from collections.abc import Callable
from typing import Any, ClassVar, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from lance_partitioned.errors import PartitionSpecError, TransformError
from lance_partitioned.spec.evaluate import bind_type, cast_result, evaluate
from lance_partitioned.spec.hashing import bucket_array, can_hash

__all__ = [
    "Bucket",
    "Day",
    "Hour",
    "Identity",
    "Month",
    "Opaque",
    "Transform",
    "Truncate",
    "Year",
    "parse_transform",
]

_MAX_PARAMETER = (1 << 63) - 1
_BLOCK = 1 << 16
# A lookup table of date parts is used when a column spans fewer days (or hours) than this.
_MAX_TABLE = 1 << 22
# The fast path of date parts covers days in [-_SAFE_DAYS, _SAFE_DAYS] (pyarrow is exact there).
_SAFE_DAYS = 10_000_000
_UNITS_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}


class Transform(abc.ABC):
    """A partition expression: how a source column maps to a partition value.

    Subclasses define :attr:`expression`, :meth:`result_type`, :meth:`can_apply` and the fast
    path ``_apply``; equality and hashing are by class and parameters.

    >>> import pyarrow as pa
    >>> t: Transform = Month()
    >>> t.can_apply(pa.date32()), t.result_type(pa.date32())
    (True, DataType(int32))
    >>> Month() == Month(), Bucket(4) == Bucket(8)
    (True, False)
    """

    @property
    @abc.abstractmethod
    def expression(self) -> str:
        """The DataFusion SQL expression over ``col``, as Appendix D writes it."""

    @abc.abstractmethod
    def result_type(self, source: pa.DataType) -> pa.DataType:
        """The type of the partition value for a source column of type ``source``."""

    @abc.abstractmethod
    def can_apply(self, source: pa.DataType) -> bool:
        """Whether the transform accepts a source column of type ``source``."""

    @abc.abstractmethod
    def _apply(self, values: pa.Array) -> pa.Array:
        """The fast path on an array whose type passed :meth:`can_apply` (any result type)."""

    def _parameters(self) -> tuple[Any, ...]:
        return ()

    def apply(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Compute the partition value of every row (vectorised), NULL for NULL.

        Raises
        ------
        TransformError
            If the transform cannot apply to the column's type, or a value cannot be
            represented in :meth:`result_type`.

        Examples
        --------
        >>> import pyarrow as pa
        >>> Truncate(10).apply(pa.chunked_array([[15, None], [-15]])).to_pylist()
        [10, None, -10]
        """
        self._check(values.type)
        column = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        return cast_result(self._apply(column), self.result_type(column.type), self.expression)

    def apply_reference(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Compute the partition values with DataFusion (the reference for :meth:`apply`).

        Raises
        ------
        TransformError
            As :meth:`apply`, or if DataFusion fails on the expression.

        Examples
        --------
        >>> import pyarrow as pa
        >>> Truncate(10).apply_reference(pa.array([15, None, -15])).to_pylist()
        [10, None, -10]
        """
        self._check(values.type)
        return evaluate(self.expression, values, self.result_type(values.type))

    def _check(self, source: pa.DataType) -> None:
        if not self.can_apply(source):
            raise TransformError(
                f"partition expression {self.expression!r} ({self!r}) cannot apply to a "
                f"column of type {source}"
            )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transform) or type(other) is not type(self):
            return NotImplemented
        return self._parameters() == other._parameters()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._parameters()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(p) for p in self._parameters())})"


class Identity(Transform):
    """``col``: the source value itself.

    >>> import pyarrow as pa
    >>> Identity().apply(pa.array(["a", None])).to_pylist()
    ['a', None]
    >>> Identity().result_type(pa.date32())
    DataType(date32[day])
    """

    @property
    def expression(self) -> str:
        return "col"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return source

    def can_apply(self, source: pa.DataType) -> bool:
        return True

    def _apply(self, values: pa.Array) -> pa.Array:
        return values


class _DatePart(Transform):
    """``date_part('<part>', col)`` on the UTC instant, as int32.

    The fast path covers days within ``_SAFE_DAYS`` of the epoch (about years -25000 to 29000),
    where pyarrow's calendar arithmetic is exact; a column reaching beyond goes to DataFusion,
    which answers NULL past its own range (chrono's years -262143 to 262142).
    """

    _part: ClassVar[str]
    _dates: ClassVar[bool] = True
    _per_day: ClassVar[int] = 1  # table entries per day

    @property
    def expression(self) -> str:
        return f"date_part('{self._part}', col)"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return pa.int32()

    def can_apply(self, source: pa.DataType) -> bool:
        t = pa.types
        return bool(t.is_timestamp(source) or (self._dates and t.is_date(source)))

    def _kernel(self, values: pa.Array) -> pa.Array:
        return getattr(pc, self._part)(values)

    def _table(self, instants: _Instants) -> tuple[int, NDArray[np.int32]] | None:
        """The part for each day the column spans (first day, values), or None if too many."""
        low, high = instants.span(instants.per_day)
        if high - low >= _MAX_TABLE:
            return None
        days = pa.array(np.arange(low, high + 1, dtype=np.int32), pa.date32())
        return low, self._kernel(days).to_numpy().astype(np.int32)

    def _apply(self, values: pa.Array) -> pa.Array:
        values = values.cast(bind_type(values.type))  # tz-aware -> the UTC instant, zero-copy
        if values.null_count == len(values):
            return pa.nulls(len(values), pa.int32())
        instants = _Instants(values)
        low, high = instants.span(instants.per_day)
        if low < -_SAFE_DAYS or high > _SAFE_DAYS:
            return evaluate(self.expression, values)
        table = self._table(instants)
        if table is None:
            return self._kernel(values)
        return instants.lookup(instants.per_day // self._per_day, *table)


class Year(_DatePart):
    """``date_part('year', col)``: the year of a date or timestamp (UTC), as int32.

    >>> import datetime, pyarrow as pa
    >>> Year().apply(pa.array([datetime.date(2025, 12, 10), None])).to_pylist()
    [2025, None]
    """

    _part = "year"


class Month(_DatePart):
    """``date_part('month', col)``: the month (1-12) of a date or timestamp (UTC), as int32.

    >>> import datetime, pyarrow as pa
    >>> Month().apply(pa.array([datetime.date(2025, 12, 10)])).to_pylist()
    [12]
    """

    _part = "month"


class Day(_DatePart):
    """``date_part('day', col)``: the day of the month of a date or timestamp (UTC), as int32.

    >>> import datetime, pyarrow as pa
    >>> Day().apply(pa.array([datetime.date(2025, 12, 10)])).to_pylist()
    [10]
    """

    _part = "day"


class Hour(_DatePart):
    """``date_part('hour', col)``: the hour (0-23) of a timestamp in UTC, as int32.

    Dates have no hour: ``Hour().can_apply(pa.date32())`` is False.

    >>> import datetime, pyarrow as pa
    >>> ts = pa.array([datetime.datetime(2025, 1, 1, 23, 30)], pa.timestamp("us", tz="Asia/Tokyo"))
    >>> Hour().apply(ts).to_pylist()
    [23]
    >>> Hour().can_apply(pa.date32())
    False
    """

    _part = "hour"
    _dates = False
    _per_day = 24

    def _table(self, instants: _Instants) -> tuple[int, NDArray[np.int32]] | None:
        low, high = instants.span(instants.per_day // 24)
        if high - low >= _MAX_TABLE:
            return None
        return low, (np.arange(low, high + 1, dtype=np.int64) % 24).astype(np.int32)


class _Instants:
    """The integer storage of a date or tz-naive timestamp column, and its range."""

    def __init__(self, values: pa.Array) -> None:
        t = pa.types
        dtype = values.type
        if t.is_date32(dtype):
            self.per_day, storage = 1, pa.int32()
        elif t.is_date64(dtype):
            self.per_day, storage = 86_400_000, pa.int64()
        else:
            self.per_day, storage = _UNITS_PER_DAY[dtype.unit], pa.int64()
        self.values = values
        self.raw = values.view(storage)
        bounds = pc.min_max(self.raw)
        self.min, self.max = int(bounds["min"].as_py()), int(bounds["max"].as_py())

    def span(self, per: int) -> tuple[int, int]:
        """The first and last ``value // per`` of the valid values."""
        return self.min // per, self.max // per

    def lookup(self, per: int, low: int, table: NDArray[np.int32]) -> pa.Array:
        """``table[value // per - low]`` for every row, as int32 with the column's NULLs.

        A column's days (or hours) usually span a few thousand values: a date part computed
        once per day and gathered is several times faster than per-row calendar arithmetic.
        """
        raw = self.raw
        data = np.frombuffer(raw.buffers()[1], dtype=raw.type.to_pandas_dtype())
        data = data[raw.offset : raw.offset + len(raw)]
        buffer = pa.allocate_buffer(max(4 * len(raw), 1))  # Arrow's pool: no fresh page faults
        out = np.frombuffer(buffer, dtype=np.int32, count=len(raw))
        index = np.empty(min(len(raw), _BLOCK), np.int64)
        for start in range(0, len(raw), _BLOCK):
            stop = min(start + _BLOCK, len(raw))
            block = index[: stop - start]
            if per == 1:
                np.subtract(data[start:stop], np.int64(low), out=block)
            else:
                np.floor_divide(data[start:stop], per, out=block)
                np.subtract(block, low, out=block)
            # NULL slots hold arbitrary values: clip keeps them in bounds, the mask hides them.
            np.take(table, block, mode="clip", out=out[start:stop])
        nulls = self.values.null_count
        validity = pc.is_valid(self.values).buffers()[1] if nulls else None
        return pa.Array.from_buffers(pa.int32(), len(raw), [validity, buffer], nulls)


class Bucket(Transform):
    """``abs(hash(col)) % N``: the bucket in ``[0, N)`` of the value's ``hash()``, as int64.

    See :mod:`lance_partitioned.spec.hashing` for the bytes hashed per type.

    Parameters
    ----------
    num_buckets : int
        ``N``, at least 1.

    Raises
    ------
    PartitionSpecError
        If ``num_buckets`` is not an int in ``[1, 2^63 - 1]``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> Bucket(16).apply(pa.array([1, 1, None], pa.int32())).to_pylist()
    [11, 11, None]
    >>> Bucket(0)
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.PartitionSpecError: bucket: number of buckets must be ...
    """

    def __init__(self, num_buckets: int) -> None:
        self.num_buckets = _positive("bucket", "number of buckets", num_buckets)

    @property
    def expression(self) -> str:
        return f"abs(hash(col)) % {self.num_buckets}"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return pa.int64()

    def can_apply(self, source: pa.DataType) -> bool:
        return can_hash(source)

    def _apply(self, values: pa.Array) -> pa.Array:
        return bucket_array(values, self.num_buckets)

    def _parameters(self) -> tuple[Any, ...]:
        return (self.num_buckets,)


class Truncate(Transform):
    """``col - (col % W)`` for numbers, ``left(col, W)`` for strings.

    Numbers keep their type and truncate toward zero, as SQL's truncated ``%`` does
    (``-3 - (-3 % 10) = 0``; ``-13`` gives ``-10``). Strings keep their first ``W`` characters
    and the result is utf8 whatever the string type of the source.

    Parameters
    ----------
    width : int
        ``W``, at least 1.
    string : bool
        True for the string form ``left(col, W)``.

    Raises
    ------
    PartitionSpecError
        If ``width`` is not an int in ``[1, 2^63 - 1]``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> Truncate(10).apply(pa.array([-13, -3, 3, 27, None])).to_pylist()
    [-10, 0, 0, 20, None]
    >>> Truncate(2, string=True).apply(pa.array(["héllo", "a", None])).to_pylist()
    ['hé', 'a', None]
    """

    def __init__(self, width: int, *, string: bool = False) -> None:
        self.width = _positive("truncate", "width", width)
        self.string = bool(string)

    @classmethod
    def for_type(cls, width: int, source_type: pa.DataType) -> Truncate:
        """The truncation of ``width`` that fits a column of ``source_type``.

        >>> Truncate.for_type(4, pa.utf8()), Truncate.for_type(4, pa.int64())
        (Truncate(4, string=True), Truncate(4))
        """
        return cls(width, string=_is_string(source_type))

    @property
    def expression(self) -> str:
        if self.string:
            return f"left(col, {self.width})"
        return f"col - (col % {self.width})"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return pa.utf8() if self.string else source

    def can_apply(self, source: pa.DataType) -> bool:
        if self.string:
            return _is_string(source)
        t = pa.types
        return bool(t.is_integer(source) or t.is_decimal128(source) or t.is_decimal256(source))

    def _apply(self, values: pa.Array) -> pa.Array:
        if not self.string:
            return _truncate_number(values, self.width)
        if pa.types.is_string_view(values.type):
            values = values.cast(pa.utf8())
        if _is_ascii(values):  # characters are bytes: a byte slice is several times faster
            binary = pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary()
            return pc.binary_slice(values.view(binary), 0, self.width).view(values.type)
        return pc.utf8_slice_codeunits(values, 0, self.width)

    def _parameters(self) -> tuple[Any, ...]:
        return (self.width, self.string)

    def __repr__(self) -> str:
        return f"Truncate({self.width}, string=True)" if self.string else f"Truncate({self.width})"


def _is_string(dtype: pa.DataType) -> bool:
    t = pa.types
    return bool(t.is_string(dtype) or t.is_large_string(dtype) or t.is_string_view(dtype))


def _is_ascii(values: pa.Array) -> bool:
    """Whether every byte that the (utf8 or large_utf8) values span is below 0x80."""
    if len(values) == 0:
        return True
    large = pa.types.is_large_string(values.type)
    count = values.offset + len(values) + 1
    offsets = np.frombuffer(values.buffers()[1], np.int64 if large else np.int32, count=count)
    first, last = int(offsets[values.offset]), int(offsets[-1])
    data = values.buffers()[2]
    return first == last or int(np.frombuffer(data, np.uint8)[first:last].max()) < 0x80


def _truncate_number(values: pa.Array, width: int) -> pa.Array:
    """``values - (values % width)`` with the truncated ``%``: round toward zero to a multiple."""
    dtype = values.type
    if pa.types.is_decimal(dtype):
        if dtype.precision <= dtype.scale or width >= 10 ** (dtype.precision - dtype.scale):
            return pc.subtract(values, values)  # |x| < W for every x: x % W == x
        multiple = pa.scalar(width, pa.decimal128(19, 0))
    else:
        if width > _max_magnitude(dtype):
            wider = pa.uint64() if pa.types.is_unsigned_integer(dtype) else pa.int64()
            if width > _max_magnitude(wider):
                return pc.subtract(values, values)
            values = values.cast(wider)
        multiple = pa.scalar(width, values.type)
    try:
        return pc.round_to_multiple(values, multiple=multiple, round_mode="towards_zero")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise TransformError(
            f"partition expression 'col - (col % {width})' fails on a column of type {dtype}: {exc}"
        ) from exc


def _max_magnitude(dtype: pa.DataType) -> int:
    bits = int(dtype.bit_width)
    return (1 << bits) - 1 if pa.types.is_unsigned_integer(dtype) else (1 << (bits - 1)) - 1


def _positive(transform: str, what: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PartitionSpecError(f"{transform}: {what} must be an int, got {value!r}")
    if not 1 <= value <= _MAX_PARAMETER:
        raise PartitionSpecError(f"{transform}: {what} must be in [1, 2^63 - 1], got {value}")
    return value


class Opaque(Transform):
    """Any other DataFusion expression over ``col``, evaluated by DataFusion only.

    Parameters
    ----------
    expression : str
        The expression, kept as written.
    result_type : pyarrow.DataType, optional
        The declared result type. Without it, the type DataFusion infers for the source type
        (evaluating the expression on an empty column).

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = Opaque("upper(col)")
    >>> t.apply(pa.array(["us", None])).to_pylist()
    ['US', None]
    >>> t.result_type(pa.utf8()), t.can_apply(pa.int64())
    (DataType(string), False)
    """

    def __init__(self, expression: str, result_type: pa.DataType | None = None) -> None:
        self._expression = expression
        self.declared_type = result_type
        self._inferred: dict[pa.DataType, pa.DataType | None] = {}

    @property
    def expression(self) -> str:
        return self._expression

    def _infer(self, source: pa.DataType) -> pa.DataType | None:
        if source not in self._inferred:
            try:
                empty = evaluate(self._expression, pa.array([], source), self.declared_type)
            except TransformError:
                self._inferred[source] = None
            else:
                self._inferred[source] = empty.type
        return self._inferred[source]

    def result_type(self, source: pa.DataType) -> pa.DataType:
        inferred = self._infer(source)
        if inferred is None:
            self._check(source)  # raises, naming the expression and the type
        return cast(pa.DataType, inferred)

    def can_apply(self, source: pa.DataType) -> bool:
        return self._infer(source) is not None

    def _apply(self, values: pa.Array) -> pa.Array:
        return evaluate(self._expression, values, self.result_type(values.type))

    def _parameters(self) -> tuple[Any, ...]:
        return (self._expression, self.declared_type)

    def __repr__(self) -> str:
        if self.declared_type is None:
            return f"Opaque({self._expression!r})"
        return f"Opaque({self._expression!r}, {self.declared_type})"


_PARTS: dict[str, type[_DatePart]] = {"year": Year, "month": Month, "day": Day, "hour": Hour}
# Each Appendix D form without whitespace, in lower case, and how to build its transform.
_FORMS: tuple[tuple[re.Pattern[str], Callable[[str], Transform]], ...] = (
    (re.compile(r"col"), lambda _: Identity()),
    (re.compile(r"date_part\('(year|month|day|hour)',col\)"), lambda part: _PARTS[part]()),
    (re.compile(r"abs\(hash\(col\)\)%([0-9]+)"), lambda n: Bucket(int(n))),
    (re.compile(r"left\(col,([0-9]+)\)"), lambda w: Truncate(int(w), string=True)),
    (re.compile(r"col-\(col%([0-9]+)\)"), lambda w: Truncate(int(w))),
)


def parse_transform(expression: str, result_type: pa.DataType | None = None) -> Transform:
    """The transform of a partition expression: an Appendix D form, or :class:`Opaque`.

    Forms are recognised ignoring whitespace and case. ``result_type`` is only used for
    :class:`Opaque`; for a recognised form the caller compares the declared type with
    :meth:`Transform.result_type`.

    Raises
    ------
    PartitionSpecError
        If a recognised form has a parameter out of range (``abs(hash(col)) % 0``).

    Examples
    --------
    >>> parse_transform("DATE_PART( 'Year' ,col )")
    Year()
    >>> parse_transform("abs(hash(col))%16"), parse_transform("left(col,3)")
    (Bucket(16), Truncate(3, string=True))
    >>> parse_transform("col - (col % 10)")
    Truncate(10)
    >>> parse_transform("date_trunc('day', col)")
    Opaque("date_trunc('day', col)")
    """
    text = re.sub(r"\s+", "", expression).lower()
    for pattern, build in _FORMS:
        match = pattern.fullmatch(text)
        if match:
            return build(match.group(match.lastindex or 0))
    return Opaque(expression, result_type)
