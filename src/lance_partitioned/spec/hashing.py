"""The ``hash()`` of spec 000: xxhash64 with seed 0 over fixed byte encodings.

Spec 000 only says that ``hash()`` is "xxhash64 with seed 0". The bytes that are hashed for each
Arrow type are our contract with every other client:

- every integer type (int8 … int64, uint8 … uint64): the value as int64, little-endian; uint64
  above 2^63 by its int64 bit pattern (so a bucket survives int32 -> int64 promotion);
- bool: int64 0 / 1, little-endian;
- float16, float32, float64: the value as float64 IEEE bits, little-endian; -0.0 as 0.0, every
  NaN as the canonical quiet NaN ``0x7ff8000000000000``;
- utf8, large_utf8, utf8_view: the UTF-8 bytes;
- binary, large_binary, binary_view, fixed_size_binary: the bytes as they are;
- date32, date64: days since the epoch as int64 LE (date64: milliseconds floor-divided by
  86 400 000);
- timestamp (any unit, any time zone): microseconds since the epoch, UTC, as int64 LE (ns
  floor-divided by 1000, s and ms multiplied; beyond the int64 microsecond range is an error);
- decimal32/64/128/256: the unscaled value as 16-byte two's complement LE (a decimal256 only
  when its value fits);
- dictionary<_, T>: as T.

The result is the 64-bit digest reinterpreted as a **signed** int64; NULL hashes to NULL.
``bucket[N]`` is ``abs(hash(col)) % N`` where ``abs(i64::MIN)`` is the unsigned magnitude 2^63
(DataFusion's own ``abs`` overflows there).

Every function here is vectorised: fixed-width values are hashed with xxh64 written in numpy
``uint64`` arithmetic (cache-sized blocks), variable-length values with a numpy xxh64 that
walks all rows at once, and low-cardinality strings are hashed once per distinct value.

>>> import pyarrow as pa
>>> hash_array(pa.array([1, None], pa.int64())).to_pylist()
[-6977822845260490347, None]
>>> bucket_scalar("US", pa.utf8(), 16)
0
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from lance_partitioned.errors import TransformError
from lance_partitioned.spec.xxh64 import BLOCK, allocate, bucket_inplace, xxh64_lanes, xxh64_varlen

__all__ = [
    "bucket_array",
    "bucket_scalar",
    "can_hash",
    "hash_array",
    "hash_scalar",
]

_U64 = NDArray[np.uint64]
_I64 = NDArray[np.int64]

_CANONICAL_NAN = np.uint64(0x7FF8000000000000)
_MS_PER_DAY = 86_400_000
_MAX_BUCKETS = (1 << 63) - 1

# Below this many distinct values per row (estimated on a sample), strings are hashed through a
# dictionary: one hash per distinct value, then a take.
_DICTIONARY_RATIO = 0.5
_SAMPLE = 16384

_t = pa.types
_VARLEN = (_t.is_string, _t.is_large_string, _t.is_binary, _t.is_large_binary)
_VIEWS = (_t.is_string_view, _t.is_binary_view)
_HASHABLE = (
    *_VARLEN,
    *_VIEWS,
    _t.is_integer,
    _t.is_boolean,
    _t.is_floating,
    _t.is_fixed_size_binary,
    _t.is_date,
    _t.is_timestamp,
    _t.is_decimal,
)


def can_hash(dtype: pa.DataType) -> bool:
    """Whether ``hash()`` has an encoding for values of ``dtype``.

    >>> can_hash(pa.int32()), can_hash(pa.list_(pa.int32()))
    (True, False)
    """
    if pa.types.is_dictionary(dtype):
        return can_hash(dtype.value_type)
    return any(predicate(dtype) for predicate in _HASHABLE)


def hash_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Hash every value: the spec's ``hash(col)`` as an int64 array, NULL where ``values`` is NULL.

    Parameters
    ----------
    values : pyarrow.Array or pyarrow.ChunkedArray
        Values of any type accepted by :func:`can_hash`.

    Returns
    -------
    pyarrow.Array
        int64, the xxh64 digest (seed 0) of each value's encoding reinterpreted as signed.

    Raises
    ------
    TransformError
        If the type has no encoding, or a value cannot be encoded (a timestamp beyond the
        microsecond range, a decimal256 that does not fit 16 bytes).

    Examples
    --------
    >>> import pyarrow as pa
    >>> hash_array(pa.array([1], pa.int32())).to_pylist()
    [-6977822845260490347]
    >>> hash_array(pa.array(["US", None])).to_pylist()
    [-8140070053633477840, None]
    """
    return _map_chunks(values, None)


def bucket_array(values: pa.Array | pa.ChunkedArray, num_buckets: int) -> pa.Array:
    """The spec's ``abs(hash(col)) % N`` as an int64 array, NULL where ``values`` is NULL.

    ``abs`` of ``i64::MIN`` is taken as the unsigned magnitude 2^63, so every bucket is in
    ``[0, num_buckets)``.

    Parameters
    ----------
    values : pyarrow.Array or pyarrow.ChunkedArray
        Values of any type accepted by :func:`can_hash`.
    num_buckets : int
        ``N``, at least 1 and at most 2^63 - 1.

    Raises
    ------
    TransformError
        As :func:`hash_array`, or if ``num_buckets`` is out of range.

    Examples
    --------
    >>> import pyarrow as pa
    >>> bucket_array(pa.array([1, None, 1]), 16).to_pylist()
    [11, None, 11]
    """
    _check_buckets(num_buckets)
    return _map_chunks(values, num_buckets)


def hash_scalar(value: object, dtype: pa.DataType) -> int | None:
    """Hash one Python value as a value of ``dtype`` (same encoding as :func:`hash_array`).

    The value is converted by pyarrow (``pa.array([value], dtype)``); a naive ``datetime`` for a
    time-zone-aware timestamp type is taken as UTC.

    Raises
    ------
    TransformError
        If ``value`` cannot be converted to ``dtype`` or ``dtype`` has no encoding.

    Examples
    --------
    >>> import pyarrow as pa
    >>> hash_scalar(1, pa.int64()), hash_scalar(None, pa.int64())
    (-6977822845260490347, None)
    """
    result = hash_array(_one(value, dtype))[0].as_py()
    return cast("int | None", result)


def bucket_scalar(value: object, dtype: pa.DataType, num_buckets: int) -> int | None:
    """The bucket of one Python value as a value of ``dtype`` (see :func:`bucket_array`).

    Examples
    --------
    >>> import pyarrow as pa
    >>> bucket_scalar(1, pa.int64(), 16)
    11
    """
    result = bucket_array(_one(value, dtype), num_buckets)[0].as_py()
    return cast("int | None", result)


# --------------------------------------------------------------------------------------------
# Dispatch


def _one(value: object, dtype: pa.DataType) -> pa.Array:
    try:
        return pa.array([value], type=dtype)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        raise TransformError(f"cannot hash {value!r} as a value of type {dtype}: {exc}") from exc


def _check_buckets(num_buckets: int) -> None:
    if isinstance(num_buckets, bool) or not isinstance(num_buckets, int):
        raise TransformError(f"number of buckets must be an int, got {num_buckets!r}")
    if not 1 <= num_buckets <= _MAX_BUCKETS:
        raise TransformError(f"number of buckets must be in [1, 2^63 - 1], got {num_buckets}")


def _map_chunks(values: pa.Array | pa.ChunkedArray, num_buckets: int | None) -> pa.Array:
    if not can_hash(values.type):
        raise TransformError(f"hash() has no encoding for type {values.type}")
    if not isinstance(values, pa.ChunkedArray):
        return _hash_chunk(values, num_buckets)
    parts = [_hash_chunk(chunk, num_buckets) for chunk in values.chunks]
    if len(parts) == 1:
        return parts[0]
    return pa.concat_arrays(parts) if parts else pa.array([], pa.int64())


def _hash_chunk(arr: pa.Array, num_buckets: int | None) -> pa.Array:
    t = pa.types
    dtype = arr.type
    if len(arr) == 0:
        return pa.array([], pa.int64())
    if t.is_dictionary(dtype):
        return pc.take(_hash_chunk(arr.dictionary, num_buckets), arr.indices)
    if any(view(dtype) for view in _VIEWS):
        return _hash_varlen(arr.cast(pa.large_binary()), num_buckets)
    if any(varlen(dtype) for varlen in _VARLEN):
        return _hash_varlen(arr, num_buckets)
    if t.is_fixed_size_binary(dtype):
        return _hash_fixed_binary(arr, num_buckets)
    if t.is_decimal(dtype):
        return _hash_decimal(arr, num_buckets)
    return _finish(arr, [_int64_words(arr)], num_buckets)


def _data(arr: pa.Array, dtype: Any) -> NDArray[Any]:
    """The values buffer of a fixed-width array as numpy, starting at the array's offset."""
    buf = arr.buffers()[1]
    if len(arr) == 0 or buf is None:
        return np.zeros(0, dtype=dtype)
    whole = np.frombuffer(buf, dtype=dtype, count=arr.offset + len(arr))
    return whole[arr.offset :]


def _int64_words(arr: pa.Array) -> _U64:
    """The 8-byte word hashed for each value of a one-word type (junk where NULL)."""
    t = pa.types
    dtype = arr.type
    if t.is_int64(dtype) or t.is_uint64(dtype):
        return _data(arr, np.uint64)
    if t.is_date32(dtype):
        arr = arr.view(pa.int32())
    if t.is_integer(arr.type) or t.is_boolean(arr.type):
        return cast(_U64, _data(arr.cast(pa.int64()), np.uint64))
    if t.is_date64(dtype):
        days = np.floor_divide(_data(arr, np.int64), _MS_PER_DAY)
        return cast(_U64, days.view(np.uint64))
    if t.is_timestamp(dtype):
        return _micros(arr)
    if t.is_floating(dtype):
        floats = _data(arr if t.is_float64(dtype) else arr.cast(pa.float64()), np.float64)
        with np.errstate(invalid="ignore"):  # a signalling NaN raises "invalid" in the add
            normal = floats + 0.0  # -0.0 + 0.0 == +0.0; copies, so the input is never written
        bits = normal.view(np.uint64)
        bits[np.isnan(normal)] = _CANONICAL_NAN
        return bits
    raise TransformError(f"hash() has no encoding for type {dtype}")  # pragma: no cover


def _micros(arr: pa.Array) -> _U64:
    unit = arr.type.unit
    if unit == "us":
        return _data(arr, np.uint64)
    if unit == "ns":
        return cast(_U64, np.floor_divide(_data(arr, np.int64), 1000).view(np.uint64))
    factor = 1_000_000 if unit == "s" else 1000
    try:
        scaled = pc.multiply_checked(arr.cast(pa.int64()), factor)
    except pa.ArrowInvalid as exc:
        raise TransformError(
            f"timestamp[{unit}] value out of the microsecond range of hash(): {exc}"
        ) from exc
    return cast(_U64, _data(scaled, np.uint64))


def _hash_decimal(arr: pa.Array, num_buckets: int | None) -> pa.Array:
    dtype = arr.type
    if dtype.bit_width < 128:  # decimal32/64: the same unscaled value, widened
        arr = arr.cast(pa.decimal128(dtype.precision, dtype.scale))
    words_per_value = arr.type.bit_width // 64
    whole = np.frombuffer(
        arr.buffers()[1], dtype=np.uint64, count=words_per_value * (arr.offset + len(arr))
    )
    words = whole[words_per_value * arr.offset :].reshape(-1, words_per_value)
    low, high = words[:, 0], words[:, 1]
    if words_per_value == 4:
        _check_fits_128_bits(arr, words)
    return _finish(arr, [low, high], num_buckets)


def _check_fits_128_bits(arr: pa.Array, words: _U64) -> None:
    """Raise unless every valid decimal256 value is the sign extension of its low 16 bytes."""
    sign = (words[:, 1].view(np.int64) >> 63).view(np.uint64)
    fits = (words[:, 2] == sign) & (words[:, 3] == sign)
    if arr.null_count:
        fits |= ~pc.is_valid(arr).to_numpy(zero_copy_only=False)
    if not fits.all():
        bad = arr[int(np.argmin(fits))]
        raise TransformError(
            f"{arr.type} value {bad} does not fit the 16 bytes (two's complement) that hash() "
            "encodes a decimal in"
        )


def _hash_fixed_binary(arr: pa.Array, num_buckets: int | None) -> pa.Array:
    width = arr.type.byte_width
    n = len(arr)
    if width % 8 == 0 and 0 < width < 32:
        lanes = width // 8
        whole = np.frombuffer(arr.buffers()[1], np.uint64, count=lanes * (arr.offset + n))
        words = whole[lanes * arr.offset :]
        return _finish(arr, [words[i::lanes] for i in range(lanes)], num_buckets)
    offsets = (np.arange(n + 1, dtype=np.int64) + arr.offset) * width
    digests = xxh64_varlen(offsets, _bytes(arr.buffers()[1]))
    return _result(arr, _post(digests, num_buckets))


# --------------------------------------------------------------------------------------------
# Output


def _validity(arr: pa.Array) -> pa.Buffer | None:
    if arr.null_count == 0:
        return None
    return pc.is_valid(arr).buffers()[1]


def _result(arr: pa.Array, values: _I64) -> pa.Array:
    return pa.Array.from_buffers(
        pa.int64(), len(arr), [_validity(arr), pa.py_buffer(values)], arr.null_count
    )


def _post(digests: _U64, num_buckets: int | None) -> _I64:
    if num_buckets is None:
        return cast(_I64, digests.view(np.int64))
    out = allocate(len(digests), np.uint64)
    scratch = np.empty(min(len(digests), BLOCK), np.uint64)
    for start in range(0, len(digests), BLOCK):
        stop = min(start + BLOCK, len(digests))
        h = out[start:stop]
        h[...] = digests[start:stop]
        bucket_inplace(h, scratch[: stop - start], num_buckets)
    return cast(_I64, out.view(np.int64))


def _finish(arr: pa.Array, lanes: list[_U64], num_buckets: int | None) -> pa.Array:
    return _result(arr, xxh64_lanes(lanes, num_buckets))


def _bytes(buf: pa.Buffer | None) -> NDArray[np.uint8]:
    if buf is None:
        return np.zeros(0, np.uint8)
    return np.frombuffer(buf, np.uint8)


# --------------------------------------------------------------------------------------------
# Strings and binary


def _offsets(arr: pa.Array) -> NDArray[Any]:
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    dtype = np.int64 if large else np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=dtype, count=arr.offset + len(arr) + 1)
    return offsets[arr.offset :]


def _hash_varlen(arr: pa.Array, num_buckets: int | None) -> pa.Array:
    if _few_distinct(arr):
        encoded = pc.dictionary_encode(arr)
        inner = _hash_varlen_direct(encoded.dictionary, num_buckets)
        return pc.take(inner, encoded.indices)
    return _hash_varlen_direct(arr, num_buckets)


def _few_distinct(arr: pa.Array) -> bool:
    n = len(arr)
    if n < 4 * _SAMPLE:
        return False
    step = n // _SAMPLE
    sample = arr.take(pa.array(np.arange(0, n, step, dtype=np.int64)[:_SAMPLE]))
    distinct = pc.count_distinct(sample).as_py()
    return bool(distinct < _DICTIONARY_RATIO * len(sample))


def _hash_varlen_direct(arr: pa.Array, num_buckets: int | None) -> pa.Array:
    digests = xxh64_varlen(_offsets(arr), _bytes(arr.buffers()[2]))
    return _result(arr, _post(digests, num_buckets))
