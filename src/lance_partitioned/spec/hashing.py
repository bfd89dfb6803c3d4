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

__all__ = [
    "bucket_array",
    "bucket_scalar",
    "can_hash",
    "hash_array",
    "hash_scalar",
]

_U64 = NDArray[np.uint64]
_I64 = NDArray[np.int64]

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_MASK64 = (1 << 64) - 1
_CANONICAL_NAN = np.uint64(0x7FF8000000000000)
_MS_PER_DAY = 86_400_000
_MAX_BUCKETS = (1 << 63) - 1

# Rows per block: the temporaries of one block stay in the CPU cache.
_BLOCK = 1 << 16
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
    digests = _xxh64_varlen(offsets, _bytes(arr.buffers()[1]))
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
    out = _allocate(len(digests), np.uint64)
    scratch = np.empty(min(len(digests), _BLOCK), np.uint64)
    for start in range(0, len(digests), _BLOCK):
        stop = min(start + _BLOCK, len(digests))
        h = out[start:stop]
        h[...] = digests[start:stop]
        _bucket_inplace(h, scratch[: stop - start], num_buckets)
    return cast(_I64, out.view(np.int64))


def _finish(arr: pa.Array, lanes: list[_U64], num_buckets: int | None) -> pa.Array:
    return _result(arr, _xxh64_lanes(lanes, num_buckets))


# --------------------------------------------------------------------------------------------
# xxh64 in numpy uint64 arithmetic (wrap-around is the point: array ops never warn on it)


def _rotl(x: _U64, r: int, scratch: _U64) -> None:
    """Rotate ``x`` left by ``r`` bits in place."""
    np.right_shift(x, 64 - r, out=scratch)
    np.left_shift(x, r, out=x)
    np.bitwise_or(x, scratch, out=x)


def _round0(lane: _U64, k: _U64, scratch: _U64) -> None:
    """``k = XXH64_round(0, lane)`` written into ``k``."""
    np.multiply(lane, _P2, out=k)
    _rotl(k, 31, scratch)
    np.multiply(k, _P1, out=k)


def _avalanche(h: _U64, scratch: _U64) -> None:
    np.right_shift(h, 33, out=scratch)
    np.bitwise_xor(h, scratch, out=h)
    np.multiply(h, _P2, out=h)
    np.right_shift(h, 29, out=scratch)
    np.bitwise_xor(h, scratch, out=h)
    np.multiply(h, _P3, out=h)
    np.right_shift(h, 32, out=scratch)
    np.bitwise_xor(h, scratch, out=h)


def _bucket_inplace(h: _U64, scratch: _U64, num_buckets: int) -> None:
    """Replace each digest by ``abs(signed digest) % N`` (the magnitude of i64::MIN is 2^63)."""
    # sign = 0 or all ones; (h ^ sign) - sign is the two's complement magnitude, mod 2^64.
    np.right_shift(h.view(np.int64), 63, out=scratch.view(np.int64))
    np.bitwise_xor(h, scratch, out=h)
    np.subtract(h, scratch, out=h)
    n = np.uint64(num_buckets)
    if num_buckets & (num_buckets - 1) == 0:
        np.bitwise_and(h, n - np.uint64(1), out=h)
    else:
        np.floor_divide(h, n, out=scratch)  # numpy divides by a scalar with libdivide
        np.multiply(scratch, n, out=scratch)
        np.subtract(h, scratch, out=h)


def _xxh64_lanes(lanes: list[_U64], num_buckets: int | None) -> _I64:
    """xxh64 (seed 0) of inputs made of ``len(lanes)`` 8-byte words (1 to 3), one per row."""
    n = len(lanes[0])
    out = _allocate(n, np.uint64)
    size = min(n, _BLOCK)
    k_buf = np.empty(size, np.uint64)
    s_buf = np.empty(size, np.uint64)
    start_h = np.uint64((int(_P5) + 8 * len(lanes)) & _MASK64)
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        h = out[start:stop]
        k = k_buf[: stop - start]
        s = s_buf[: stop - start]
        for i, lane in enumerate(lanes):
            _round0(lane[start:stop], k, s)
            if i == 0:
                np.bitwise_xor(k, start_h, out=h)
            else:
                np.bitwise_xor(h, k, out=h)
            _rotl(h, 27, s)
            np.multiply(h, _P1, out=h)
            np.add(h, _P4, out=h)
        _avalanche(h, s)
        if num_buckets is not None:
            _bucket_inplace(h, s, num_buckets)
    return cast(_I64, out.view(np.int64))


def _round(acc: _U64, lane: _U64) -> _U64:
    acc = acc + lane * _P2
    acc = (acc << np.uint64(31)) | (acc >> np.uint64(33))
    return cast(_U64, acc * _P1)


def _bytes(buf: pa.Buffer | None) -> NDArray[np.uint8]:
    if buf is None:
        return np.zeros(0, np.uint8)
    return np.frombuffer(buf, np.uint8)


def _allocate(n: int, dtype: Any) -> NDArray[Any]:
    """An uninitialised array in Arrow's memory pool, whose pages stay mapped between calls
    (a fresh ``np.empty`` of 10M rows costs more in page faults than a whole hashing pass)."""
    buf = pa.allocate_buffer(max(n * np.dtype(dtype).itemsize, 1))
    return np.frombuffer(buf, dtype=dtype, count=n)


def _unaligned(data: NDArray[np.uint8], dtype: str, width: int) -> NDArray[Any]:
    """A view of ``data`` whose element ``i`` is the ``width``-byte word starting at byte ``i``."""
    count = max(len(data) - width + 1, 0)
    if count == 0:
        return np.zeros(0, dtype=dtype)
    return cast(NDArray[Any], np.ndarray((count,), dtype=dtype, buffer=data, strides=(1,)))


def _xxh64_varlen(offsets: NDArray[Any], data: NDArray[np.uint8]) -> _U64:
    """xxh64 (seed 0) of ``data[offsets[i] : offsets[i + 1]]`` for every row ``i``."""
    w64 = _unaligned(data, "<u8", 8)
    w32 = _unaligned(data, "<u4", 4)
    n = len(offsets) - 1
    out = _allocate(n, np.uint64)
    size = min(n, _BLOCK)
    scratch = (np.empty(size, np.uint64), np.empty(size, np.uint64))
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        bounds = offsets[start : stop + 1].astype(np.int64)
        starts, lengths = bounds[:-1], np.diff(bounds)
        _varlen_block(out[start:stop], starts, lengths, (data, w64, w32), scratch)
    return out


def _varlen_block(
    h: _U64,
    starts: _I64,
    lengths: _I64,
    views: tuple[NDArray[np.uint8], _U64, NDArray[np.uint32]],
    scratch: tuple[_U64, _U64],
) -> None:
    """Write into ``h`` the xxh64 of each row of one block (see :func:`_xxh64_varlen`)."""
    data, w64, w32 = views
    k, s = scratch[0][: len(h)], scratch[1][: len(h)]
    np.add(lengths.view(np.uint64), _P5, out=h)
    long_rows = np.flatnonzero(lengths >= 32)
    if len(long_rows):
        stripes = _stripes(starts[long_rows], lengths[long_rows], w64)
        h[long_rows] = stripes + lengths[long_rows].view(np.uint64)
    # The tail (the last len % 32 bytes): up to three 8-byte words, a 4-byte word, three bytes.
    rest = lengths & 31
    words = starts + lengths - rest
    half = words + (rest & 24)
    ones = half + (rest & 4)
    for mask, source, pos, shift, mix in (
        (rest >= 8, w64, words, 0, _word),
        (rest >= 16, w64, words, 8, _word),
        (rest >= 24, w64, words, 16, _word),
        ((rest & 4) != 0, w32, half, 0, _half),
        ((rest & 3) > 0, data, ones, 0, _byte),
        ((rest & 3) > 1, data, ones, 1, _byte),
        ((rest & 3) > 2, data, ones, 2, _byte),
    ):
        if mask.all():  # in place on the whole block
            np.copyto(k, source[pos + shift if shift else pos], casting="safe")
            mix(h, k, s)
        elif mask.any():
            rows = np.flatnonzero(mask)
            sub_h = h[rows]
            mix(sub_h, source[pos[rows] + shift].astype(np.uint64), np.empty_like(sub_h))
            h[rows] = sub_h
    _avalanche(h, s)


def _word(h: _U64, k: _U64, s: _U64) -> None:
    """``h ^= round(0, k); h = rotl(h, 27) * P1 + P4`` (clobbers ``k``)."""
    _round0(k, k, s)
    np.bitwise_xor(h, k, out=h)
    _rotl(h, 27, s)
    np.multiply(h, _P1, out=h)
    np.add(h, _P4, out=h)


def _half(h: _U64, k: _U64, s: _U64) -> None:
    """``h ^= k * P1; h = rotl(h, 23) * P2 + P3`` for a 4-byte input word (clobbers ``k``)."""
    np.multiply(k, _P1, out=k)
    np.bitwise_xor(h, k, out=h)
    _rotl(h, 23, s)
    np.multiply(h, _P2, out=h)
    np.add(h, _P3, out=h)


def _byte(h: _U64, k: _U64, s: _U64) -> None:
    """``h ^= k * P5; h = rotl(h, 11) * P1`` for one input byte (clobbers ``k``)."""
    np.multiply(k, _P5, out=k)
    np.bitwise_xor(h, k, out=h)
    _rotl(h, 11, s)
    np.multiply(h, _P1, out=h)


def _stripes(starts: _I64, lengths: _I64, w64: _U64) -> _U64:
    """The xxh64 state after the 32-byte stripes of rows at least 32 bytes long."""
    count = lengths // 32
    order = np.argsort(-count, kind="stable")
    starts, count = starts[order], count[order]
    m = len(starts)
    v = [
        np.full(m, (int(_P1) + int(_P2)) & _MASK64, np.uint64),
        np.full(m, int(_P2), np.uint64),
        np.zeros(m, np.uint64),
        np.full(m, (-int(_P1)) & _MASK64, np.uint64),
    ]
    neg_count = -count  # ascending, for searchsorted
    for stripe in range(int(count[0])):
        active = int(np.searchsorted(neg_count, -stripe, side="left"))
        base = starts[:active] + 32 * stripe
        for i in range(4):
            v[i][:active] = _round(v[i][:active], w64[base + 8 * i])
    h = np.zeros(m, np.uint64)
    for i, r in enumerate((1, 7, 12, 18)):
        h += (v[i] << np.uint64(r)) | (v[i] >> np.uint64(64 - r))
    for i in range(4):
        h ^= _round(np.zeros(1, np.uint64), v[i])
        h = h * _P1 + _P4
    result = np.empty(m, np.uint64)
    result[order] = h
    return result


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
    digests = _xxh64_varlen(_offsets(arr), _bytes(arr.buffers()[2]))
    return _result(arr, _post(digests, num_buckets))
