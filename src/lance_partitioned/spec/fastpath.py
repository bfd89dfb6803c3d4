"""Vectorised fast paths of the built-in transforms (numpy and pyarrow kernels).

Each agrees with DataFusion's evaluation of the transform's expression (the property tests
check it); :mod:`lance_partitioned.spec.transforms` decides when to use them.

>>> import pyarrow as pa
>>> truncate_number(pa.array([-13, -3, 27]), 10).to_pylist()
[-10, 0, 20]
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from lance_partitioned.errors import TransformError
from lance_partitioned.spec.evaluate import evaluate

__all__ = [
    "BLOCK",
    "MAX_TABLE",
    "SAFE_DAYS",
    "UNITS_PER_DAY",
    "Instants",
    "fixed_offset",
    "is_ascii",
    "is_string",
    "local_time",
    "truncate_number",
]

BLOCK = 1 << 16
MAX_TABLE = 1 << 22
"""A lookup table of date parts is used when a column spans fewer days (or hours) than this."""
SAFE_DAYS = 10_000_000
"""The fast path of date parts covers days in [-SAFE_DAYS, SAFE_DAYS] (pyarrow is exact there)."""
UNITS_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}
RULES_UNTIL = 2_114_380_800
"""2037-01-01T00:00Z in seconds: pyarrow's zone offsets agree with DataFusion's before it.

pyarrow reads the transitions listed in the zone files (up to 2037) and keeps the last offset
after them; DataFusion (chrono-tz) applies the DST rules until 2100. Past this instant the
wall clock of a zone with rules comes from DataFusion itself (``to_local_time``).
"""
_FIXED = re.compile(r"([+-])([0-9]{2}):?([0-9]{2})")
_UTC_NAMES = frozenset({"utc", "etc/utc", "z", "gmt", "etc/gmt", "zulu", "etc/zulu"})


def fixed_offset(tz: str) -> int | None:
    """The offset in seconds of a fixed-offset zone (``+05:30``, ``UTC``), None for a named zone.

    >>> fixed_offset("+05:30"), fixed_offset("-0345"), fixed_offset("UTC")
    (19800, -13500, 0)
    >>> fixed_offset("America/New_York") is None
    True
    """
    if tz.lower() in _UTC_NAMES:
        return 0
    match = _FIXED.fullmatch(tz)
    if match is None:
        return None
    seconds = int(match.group(2)) * 3600 + int(match.group(3)) * 60
    return -seconds if match.group(1) == "-" else seconds


def local_time(values: pa.Array) -> pa.Array:
    """The wall clock of a zoned timestamp column in its zone, as DataFusion computes it.

    The result is the tz-naive timestamp of the same unit: ``date_part`` of it is DataFusion's
    ``date_part`` of the zoned column (local time, as the property tests check). A fixed offset
    is one addition; a zone with rules takes each row's offset from a table of the offset of
    every UTC hour the column spans (pyarrow's, exact for the rows of an hour holding a
    transition), or from DataFusion past 2037.

    Raises
    ------
    pyarrow.ArrowInvalid
        If a wall clock does not fit the column's int64 storage.

    Examples
    --------
    >>> import datetime
    >>> utc = datetime.timezone.utc
    >>> ts = pa.array([datetime.datetime(2025, 1, 1, 23, 30, tzinfo=utc)],
    ...               pa.timestamp("s", tz="America/New_York"))
    >>> local_time(ts).to_pylist()
    [datetime.datetime(2025, 1, 1, 18, 30)]
    """
    unit = values.type.unit
    naive = pa.timestamp(unit)
    per_second = UNITS_PER_DAY[unit] // 86_400
    raw = values.view(pa.int64())
    offset = fixed_offset(values.type.tz)
    if offset is not None:
        shifted = raw if offset == 0 else pc.add_checked(raw, offset * per_second)
        return shifted.view(naive)
    if values.null_count == len(values):
        return values.view(naive)
    bounds = pc.min_max(raw)
    low, high = int(bounds["min"].as_py()), int(bounds["max"].as_py())
    if high >= RULES_UNTIL * per_second:
        return evaluate("to_local_time(col)", values, naive)
    per_hour = 3600 * per_second
    first, last = low // per_hour, high // per_hour
    if last - first >= MAX_TABLE or len(values) < 64:
        return pc.local_timestamp(values)
    return _by_hour_table(values, raw, first, last, per_hour)


def _by_hour_table(
    values: pa.Array, raw: pa.Array, first: int, last: int, per_hour: int
) -> pa.Array:
    """:func:`local_time` through the offset of each UTC hour from ``first`` to ``last``."""
    dtype = values.type
    starts = np.arange(first, last + 2, dtype=np.int64) * per_hour
    edges = pa.array(np.concatenate([starts, starts[1:] - 1]), dtype)
    local = pc.local_timestamp(edges).view(pa.int64()).to_numpy()
    count = last - first + 1
    at_start = local[:count] - starts[:-1]
    at_end = local[count + 1 :] - (starts[1:] - 1)
    data = np.frombuffer(raw.buffers()[1], np.int64)[raw.offset : raw.offset + len(raw)]
    # NULL slots hold arbitrary values: clipped into the table, hidden by the validity
    slot = np.clip(data // per_hour - first, 0, count - 1)
    shifted = data + at_start[slot]
    mixed = (at_start != at_end)[slot]  # the hour holds a transition: pyarrow row by row
    if mixed.any():
        rows = np.nonzero(mixed)[0]
        exact = pc.local_timestamp(values.take(pa.array(rows)))
        shifted[rows] = exact.view(pa.int64()).fill_null(0).to_numpy()
    validity = pc.is_valid(values).buffers()[1] if values.null_count else None
    return pa.Array.from_buffers(
        pa.timestamp(dtype.unit), len(values), [validity, pa.py_buffer(shifted)], values.null_count
    )


class Instants:
    """The integer storage of a date or tz-naive timestamp column, and its range."""

    def __init__(self, values: pa.Array) -> None:
        t = pa.types
        dtype = values.type
        if t.is_date32(dtype):
            self.per_day, storage = 1, pa.int32()
        elif t.is_date64(dtype):
            self.per_day, storage = 86_400_000, pa.int64()
        else:
            self.per_day, storage = UNITS_PER_DAY[dtype.unit], pa.int64()
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
        index = np.empty(min(len(raw), BLOCK), np.int64)
        for start in range(0, len(raw), BLOCK):
            stop = min(start + BLOCK, len(raw))
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


def is_string(dtype: pa.DataType) -> bool:
    t = pa.types
    return bool(t.is_string(dtype) or t.is_large_string(dtype) or t.is_string_view(dtype))


def is_ascii(values: pa.Array) -> bool:
    """Whether every byte that the (utf8 or large_utf8) values span is below 0x80."""
    if len(values) == 0:
        return True
    large = pa.types.is_large_string(values.type)
    count = values.offset + len(values) + 1
    offsets = np.frombuffer(values.buffers()[1], np.int64 if large else np.int32, count=count)
    first, last = int(offsets[values.offset]), int(offsets[-1])
    data = values.buffers()[2]
    return first == last or int(np.frombuffer(data, np.uint8)[first:last].max()) < 0x80


def truncate_number(values: pa.Array, width: int) -> pa.Array:
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
