"""Type promotion in schema evolution (spec 000): widening only, every value kept exactly."""

from __future__ import annotations

import pyarrow as pa

__all__ = ["can_promote"]


def _int_rank(dtype: pa.DataType) -> tuple[bool, int] | None:
    """(signed, bit width) of an integer type, None for anything else."""
    if pa.types.is_signed_integer(dtype):
        return True, dtype.bit_width
    if pa.types.is_unsigned_integer(dtype):
        return False, dtype.bit_width
    return None


def _is_decimal(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_decimal128(dtype) or pa.types.is_decimal256(dtype))


def can_promote(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether a column of type ``source`` may be promoted to ``target`` (strictly wider).

    Every promotion is exact: each value of ``source`` has one value of ``target``, so leaves
    written before keep reading correctly (cast on read) and partition values stay the same.

    ==========================  ===================================================
    Source                      Allowed targets
    ==========================  ===================================================
    ``intN``                    ``intM``, M > N
    ``uintN``                   ``uintM`` or ``intM``, M > N
    ``float16``, ``float32``    a wider float
    ``decimal128(p, s)``        ``decimal128(p', s)`` or ``decimal256(p', s)``, p' >= p
                                (p' > p when the width does not grow)
    ``utf8``, ``binary``        ``large_utf8``, ``large_binary``
    ``date32``                  ``timestamp`` in ``s``, ``ms`` or ``us`` without time
                                zone (midnight; ``us`` fails on read beyond year 294247)
    ==========================  ===================================================

    Examples
    --------
    >>> can_promote(pa.int32(), pa.int64()), can_promote(pa.int64(), pa.int32())
    (True, False)
    >>> can_promote(pa.uint8(), pa.int16()), can_promote(pa.uint8(), pa.int8())
    (True, False)
    >>> can_promote(pa.decimal128(10, 2), pa.decimal128(12, 2))
    True
    >>> can_promote(pa.decimal128(10, 2), pa.decimal128(12, 3))
    False
    >>> can_promote(pa.date32(), pa.timestamp("us")), can_promote(pa.date32(), pa.timestamp("ns"))
    (True, False)
    """
    source_int, target_int = _int_rank(source), _int_rank(target)
    if source_int is not None and target_int is not None:
        (source_signed, source_bits), (target_signed, target_bits) = source_int, target_int
        if source_signed and not target_signed:
            return False
        return target_bits > source_bits
    if pa.types.is_floating(source) and pa.types.is_floating(target):
        return bool(target.bit_width > source.bit_width)
    if _is_decimal(source) and _is_decimal(target):
        if target.scale != source.scale or target.bit_width < source.bit_width:
            return False
        if target.bit_width > source.bit_width:
            return bool(target.precision >= source.precision)
        return bool(target.precision > source.precision)
    if pa.types.is_string(source):
        return bool(pa.types.is_large_string(target))
    if pa.types.is_binary(source):
        return bool(pa.types.is_large_binary(target))
    if pa.types.is_date32(source) and pa.types.is_timestamp(target):
        return target.unit in ("s", "ms", "us") and target.tz is None
    return False
