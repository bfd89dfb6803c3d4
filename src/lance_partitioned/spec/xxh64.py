"""xxh64 (XXH64, seed 0) in numpy ``uint64`` arithmetic, over whole arrays at once.

The kernel of :mod:`lance_partitioned.spec.hashing`: :func:`xxh64_lanes` digests values of
one to four 8-byte lanes each (fixed-width types, encoded by the caller), :func:`xxh64_varlen`
the bytes between ``offsets`` (strings, binary) with every row walked at once, and
:func:`bucket_inplace` turns digests into ``abs(hash) % N``. Wrap-around is the point: array
operations never warn on it. Work goes in cache-sized blocks of :data:`BLOCK` rows.

>>> import numpy as np
>>> int(xxh64_lanes([np.array([1], np.uint64)], None)[0])
-6977822845260490347
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

__all__ = ["BLOCK", "allocate", "bucket_inplace", "xxh64_lanes", "xxh64_varlen"]

_U64 = NDArray[np.uint64]
_I64 = NDArray[np.int64]

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_MASK64 = (1 << 64) - 1
# Rows per block: the temporaries of one block stay in the CPU cache.
BLOCK = 1 << 16


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


def bucket_inplace(h: _U64, scratch: _U64, num_buckets: int) -> None:
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


def xxh64_lanes(lanes: list[_U64], num_buckets: int | None) -> _I64:
    """xxh64 (seed 0) of inputs made of ``len(lanes)`` 8-byte words (1 to 3), one per row."""
    n = len(lanes[0])
    out = allocate(n, np.uint64)
    size = min(n, BLOCK)
    k_buf = np.empty(size, np.uint64)
    s_buf = np.empty(size, np.uint64)
    start_h = np.uint64((int(_P5) + 8 * len(lanes)) & _MASK64)
    for start in range(0, n, BLOCK):
        stop = min(start + BLOCK, n)
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
            bucket_inplace(h, s, num_buckets)
    return cast(_I64, out.view(np.int64))


def _round(acc: _U64, lane: _U64) -> _U64:
    acc = acc + lane * _P2
    acc = (acc << np.uint64(31)) | (acc >> np.uint64(33))
    return cast(_U64, acc * _P1)


def allocate(n: int, dtype: Any) -> NDArray[Any]:
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


def xxh64_varlen(offsets: NDArray[Any], data: NDArray[np.uint8]) -> _U64:
    """xxh64 (seed 0) of ``data[offsets[i] : offsets[i + 1]]`` for every row ``i``."""
    w64 = _unaligned(data, "<u8", 8)
    w32 = _unaligned(data, "<u4", 4)
    n = len(offsets) - 1
    out = allocate(n, np.uint64)
    size = min(n, BLOCK)
    scratch = (np.empty(size, np.uint64), np.empty(size, np.uint64))
    for start in range(0, n, BLOCK):
        stop = min(start + BLOCK, n)
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
    """Write into ``h`` the xxh64 of each row of one block (see :func:`xxh64_varlen`)."""
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
