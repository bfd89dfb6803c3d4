"""The ``murmur3`` of the published dialect: murmur3_x86_32, seed 0, Iceberg's byte encodings.

The published partitioning text buckets with ``abs(murmur3(col0)) % N`` (an int32) but leaves
open which bytes are hashed. We hash the bytes of Iceberg's spec (Appendix B), which survive the
published text's type-promotion rule (``int32 5`` and ``int64 5`` land in one bucket):

- every integer type and bool: the value as int64, little-endian (uint64 above 2^63 by its
  int64 bit pattern; bool as 0 / 1);
- float16, float32, float64: the value as float64 IEEE bits, little-endian; -0.0 as 0.0, every
  NaN as the canonical quiet NaN;
- date32, date64: days since the epoch as int64 LE;
- timestamp (any unit, any zone): microseconds since the epoch, UTC, as int64 LE;
- time32, time64: microseconds of the day as int64 LE;
- utf8 (all three layouts): the UTF-8 bytes; binary (all layouts, fixed size): the bytes;
- decimal: the unscaled value as its minimal big-endian two's complement bytes;
- dictionary<_, T>: as T.

``murmur3_multi(col0, col1, …)`` hashes the concatenated encodings of its non-NULL inputs, in
order; it is NULL only when every input is.

Iceberg's published test vectors hold (``34`` as int32 and as int64 alike):

>>> import datetime, decimal
>>> murmur3_scalar(34, pa.int32()), murmur3_scalar(34, pa.int64())
(2017239379, 2017239379)
>>> murmur3_scalar(datetime.date(2017, 11, 16), pa.date32())
-653330422
>>> murmur3_scalar(datetime.datetime(2017, 11, 16, 22, 31, 8), pa.timestamp("us"))
-2047944441
>>> murmur3_scalar("iceberg", pa.utf8())
1210000089
>>> murmur3_scalar(b"\\x00\\x01\\x02\\x03", pa.binary())
-188683207
>>> murmur3_scalar(decimal.Decimal("14.20"), pa.decimal128(4, 2))
-500754589

``bucket`` is ``abs(h) % N`` with ``abs(-2^31)`` taken as 2^31 (not Iceberg's
``(h & 0x7fffffff) % N``: the published text says ``abs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import mmh3
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from lance_partitioned.errors import TransformError

__all__ = [
    "ENCODING",
    "bucket_murmur3",
    "can_murmur3",
    "encoding_agnostic",
    "murmur3_array",
    "murmur3_multi",
    "murmur3_scalar",
]

ENCODING = "iceberg"
"""The marker of this module's byte encoding (``hash_encoding`` in a transform object)."""

_U32 = NDArray[np.uint32]
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_N = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)
_MAX_BUCKETS = (1 << 31) - 1
_US_PER_DAY = 86_400_000_000
_MS_PER_DAY = 86_400_000
_CANONICAL_NAN = np.uint64(0x7FF8000000000000)
_UNIT_TO_US = {"s": (1_000_000, 1), "ms": (1000, 1), "us": (1, 1), "ns": (1, 1000)}

_t = pa.types
_STRINGS = (_t.is_string, _t.is_large_string, _t.is_string_view)
_BINARIES = (_t.is_binary, _t.is_large_binary, _t.is_binary_view, _t.is_fixed_size_binary)


def _rotl(x: _U32, r: int) -> _U32:
    return cast("_U32", (x << np.uint32(r)) | (x >> np.uint32(32 - r)))


def _hash_int64(values: NDArray[np.int64]) -> NDArray[np.int32]:
    """murmur3_x86_32 (seed 0) of each value's 8 little-endian bytes, in numpy arithmetic."""
    words = values.astype(np.int64, copy=False).view(np.uint64)
    h = np.zeros(len(words), dtype=np.uint32)
    for word in (
        (words & np.uint64(0xFFFFFFFF)).astype(np.uint32),
        (words >> np.uint64(32)).astype(np.uint32),
    ):
        k = _rotl(word * _C1, 15) * _C2
        h = _rotl(h ^ k, 13) * np.uint32(5) + _N
    h ^= np.uint32(8)
    h ^= h >> np.uint32(16)
    h *= _F1
    h ^= h >> np.uint32(13)
    h *= _F2
    h ^= h >> np.uint32(16)
    return h.view(np.int32)


def can_murmur3(dtype: pa.DataType) -> bool:
    """Whether ``murmur3`` has an encoding for values of ``dtype``.

    >>> can_murmur3(pa.int32()), can_murmur3(pa.list_(pa.int32()))
    (True, False)
    """
    if _t.is_dictionary(dtype):
        return can_murmur3(dtype.value_type)
    return any(
        check(dtype)
        for check in (
            *_STRINGS,
            *_BINARIES,
            _t.is_integer,
            _t.is_boolean,
            _t.is_floating,
            _t.is_date,
            _t.is_timestamp,
            _t.is_time,
            _t.is_decimal,
        )
    )


def encoding_agnostic(dtype: pa.DataType) -> bool:
    """Whether every byte encoding of ``murmur3`` agrees on ``dtype`` (strings and binaries).

    A bucket field written by another client, without our ``hash_encoding`` marker, is pruned
    only over such a type.

    >>> encoding_agnostic(pa.utf8()), encoding_agnostic(pa.int32())
    (True, False)
    """
    if _t.is_dictionary(dtype):
        return encoding_agnostic(dtype.value_type)
    return any(check(dtype) for check in (*_STRINGS, *_BINARIES))


def _as_int64(values: pa.Array) -> NDArray[np.int64] | None:
    """The int64 encoding of a fixed-width array (None for byte-encoded types); NULLs as 0."""
    dtype = values.type
    if _t.is_boolean(dtype) or _t.is_integer(dtype):
        if _t.is_uint64(dtype):
            raw = values.fill_null(0).to_numpy(zero_copy_only=False).view(np.int64)
            return cast("NDArray[np.int64]", raw)
        return cast(
            "NDArray[np.int64]",
            pc.cast(values.fill_null(0), pa.int64()).to_numpy(zero_copy_only=False),
        )
    if _t.is_floating(dtype):
        doubles = pc.cast(values.fill_null(0), pa.float64()).to_numpy(zero_copy_only=False)
        doubles = np.where(doubles == 0.0, 0.0, doubles)
        bits = doubles.view(np.uint64).copy()
        bits[np.isnan(doubles)] = _CANONICAL_NAN
        return cast("NDArray[np.int64]", bits.view(np.int64))
    if _t.is_date32(dtype):
        return cast(
            "NDArray[np.int64]", values.fill_null(0).cast(pa.int32()).to_numpy().astype(np.int64)
        )
    if _t.is_date64(dtype):
        ms = values.fill_null(0).cast(pa.int64()).to_numpy()
        return cast("NDArray[np.int64]", np.floor_divide(ms, _MS_PER_DAY))
    if _t.is_timestamp(dtype) or _t.is_time(dtype):
        raw = values.fill_null(0).cast(pa.int64()).to_numpy().astype(np.int64)
        times, divide = _UNIT_TO_US[dtype.unit]
        if divide > 1:
            return cast("NDArray[np.int64]", np.floor_divide(raw, divide))
        if times > 1:
            if np.any(np.abs(raw) > np.iinfo(np.int64).max // times):
                raise TransformError(f"a {dtype} value is beyond the int64 microsecond range")
            return cast("NDArray[np.int64]", raw * times)
        return cast("NDArray[np.int64]", raw)
    return None


def _to_bytes(value: object, dtype: pa.DataType) -> bytes:
    if _t.is_decimal(dtype):
        unscaled = int(value.scaleb(dtype.scale))  # type: ignore[attr-defined]
        return unscaled.to_bytes(max(1, (unscaled.bit_length() + 8) // 8), "big", signed=True)
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(cast("bytes", value))


def _encodings(values: pa.Array) -> list[bytes | None]:
    """The bytes hashed for each value (NULL as None), for :func:`murmur3_multi`."""
    ints = _as_int64(values)
    valid = values.is_valid().to_numpy(zero_copy_only=False)
    if ints is not None:
        raw = ints.astype("<i8").tobytes()
        return [raw[8 * i : 8 * i + 8] if valid[i] else None for i in range(len(values))]
    return [
        None if value is None else _to_bytes(value, values.type) for value in values.to_pylist()
    ]


def _check(dtype: pa.DataType) -> None:
    if not can_murmur3(dtype):
        raise TransformError(f"murmur3 has no byte encoding for values of type {dtype}")


def _decode(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if _t.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    if _t.is_string_view(values.type):
        values = values.cast(pa.large_utf8())
    if _t.is_binary_view(values.type):
        values = values.cast(pa.large_binary())
    return values


def murmur3_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``murmur3(col)`` for every value: int32, NULL where ``values`` is NULL.

    Fixed-width values are hashed in numpy arithmetic; strings, binaries and decimals once per
    distinct value.

    Raises
    ------
    TransformError
        If the type has no encoding, or a timestamp is beyond the int64 microsecond range.

    Examples
    --------
    >>> murmur3_array(pa.array([34, None], pa.int16())).to_pylist()
    [2017239379, None]
    """
    _check(values.type)
    values = _decode(values)
    mask = values.is_null()
    ints = _as_int64(values)
    if ints is not None:
        return pa.array(_hash_int64(ints), pa.int32(), mask=mask.to_numpy(zero_copy_only=False))
    encoded = values.dictionary_encode()
    hashes = [
        mmh3.hash(_to_bytes(value, values.type), 0, signed=True)
        for value in encoded.dictionary.to_pylist()
    ]
    return pc.take(pa.array(hashes, pa.int32()), encoded.indices)


def murmur3_scalar(value: object, dtype: pa.DataType) -> int | None:
    """``murmur3`` of one Python value taken as a value of ``dtype``."""
    try:
        array = pa.array([value], type=dtype)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise TransformError(f"cannot read {value!r} as {dtype}: {exc}") from exc
    return cast("int | None", murmur3_array(array)[0].as_py())


def murmur3_multi(columns: Sequence[pa.Array | pa.ChunkedArray]) -> pa.Array:
    """``murmur3_multi(col0, col1, …)``: the hash of the non-NULL inputs' encodings, in order.

    NULL only where every input is NULL.

    >>> murmur3_multi([pa.array([34, None]), pa.array([None, None], pa.utf8())]).to_pylist()
    [2017239379, None]
    """
    if not columns:
        raise TransformError("murmur3_multi needs at least one column")
    for column in columns:
        _check(column.type)
    encoded = [_encodings(_decode(column)) for column in columns]
    out: list[int | None] = []
    for row in zip(*encoded, strict=True):
        parts = [part for part in row if part is not None]
        out.append(mmh3.hash(b"".join(parts), 0, signed=True) if parts else None)
    return pa.array(out, pa.int32())


def bucket_murmur3(hashes: pa.Array, num_buckets: int) -> pa.Array:
    """``abs(h) % N`` as int32, NULL stays NULL (``abs(-2^31)`` is 2^31).

    >>> bucket_murmur3(pa.array([-7, None, 9], pa.int32()), 4).to_pylist()
    [3, None, 1]
    """
    if not isinstance(num_buckets, int) or not 1 <= num_buckets <= _MAX_BUCKETS:
        raise TransformError(f"num_buckets must be in [1, 2^31 - 1], got {num_buckets!r}")
    wide = pc.abs(pc.cast(hashes, pa.int64()))
    return pc.cast(pc.remainder(wide, num_buckets), pa.int32())
