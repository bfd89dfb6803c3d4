"""hash(): xxhash64 (seed 0) over the documented encodings, vectorised."""

from __future__ import annotations

import datetime
import decimal
import struct

import numpy as np
import pyarrow as pa
import pytest
import xxhash

from lance_partitioned.errors import TransformError
from lance_partitioned.spec import hashing
from lance_partitioned.spec.hashing import (
    bucket_array,
    bucket_scalar,
    can_hash,
    hash_array,
    hash_scalar,
)


def _signed(digest: int) -> int:
    return digest - (1 << 64) if digest >= 1 << 63 else digest


def _xxh(data: bytes) -> int:
    return _signed(xxhash.xxh64_intdigest(data))


def _int64_bytes(value: int) -> bytes:
    return struct.pack("<q", value)


# ---------------------------------------------------------------------------------- golden


def test_golden_int64_one() -> None:
    assert xxhash.xxh64_intdigest(struct.pack("<q", 1)) == 11468921228449061269
    assert hash_array(pa.array([1], pa.int64())).to_pylist() == [-6977822845260490347]
    assert bucket_array(pa.array([1], pa.int64()), 16).to_pylist() == [11]
    assert abs(-6977822845260490347) % 16 == 11


def test_golden_us() -> None:
    assert xxhash.xxh64_intdigest(b"US") == 10306674020076073776
    assert hash_array(pa.array(["US"])).to_pylist() == [_signed(10306674020076073776)]


def test_golden_int32_one_hashes_like_int64_one() -> None:
    assert hash_array(pa.array([1], pa.int32())).to_pylist() == [-6977822845260490347]


# ------------------------------------------------------------------------------- encodings


@pytest.mark.parametrize(
    "dtype",
    [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32()],
)
def test_every_integer_type_hashes_as_int64(dtype: pa.DataType) -> None:
    values = [0, 1, 7, 100, None] + ([-1, -100] if pa.types.is_signed_integer(dtype) else [])
    expected = [None if v is None else _xxh(_int64_bytes(v)) for v in values]
    assert hash_array(pa.array(values, dtype)).to_pylist() == expected


def test_uint64_above_2_63_hashes_by_its_int64_bit_pattern() -> None:
    big = (1 << 64) - 5
    assert hash_array(pa.array([big], pa.uint64())).to_pylist() == [_xxh(_int64_bytes(-5))]
    assert hash_scalar(big, pa.uint64()) == hash_scalar(-5, pa.int64())


def test_bool_hashes_as_int64_zero_one() -> None:
    result = hash_array(pa.array([True, False, None])).to_pylist()
    assert result == [_xxh(_int64_bytes(1)), _xxh(_int64_bytes(0)), None]


def test_negative_zero_hashes_as_zero() -> None:
    zero = _xxh(struct.pack("<d", 0.0))
    assert hash_array(pa.array([-0.0, 0.0])).to_pylist() == [zero, zero]
    assert hash_array(pa.array([-0.0], pa.float32())).to_pylist() == [zero]


def test_every_nan_hashes_as_the_canonical_quiet_nan() -> None:
    canonical = _xxh(struct.pack("<Q", 0x7FF8000000000000))
    payloads = np.array([0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000123], np.uint64)
    nans = pa.array(payloads.view(np.float64))
    assert hash_array(nans).to_pylist() == [canonical] * 3
    assert hash_array(pa.array([float("nan")], pa.float32())).to_pylist() == [canonical]
    assert hash_array(pa.array([np.float16("nan")], pa.float16())).to_pylist() == [canonical]


@pytest.mark.parametrize("dtype", [pa.float16(), pa.float32(), pa.float64()])
def test_floats_hash_as_float64_bits(dtype: pa.DataType) -> None:
    expected = [_xxh(struct.pack("<d", 1.5)), _xxh(struct.pack("<d", -2.25)), None]
    assert hash_array(pa.array([1.5, -2.25, None], dtype)).to_pylist() == expected


def test_strings_hash_their_utf8_bytes() -> None:
    values = ["", "US", "héllo", "日本語", "a" * 100, None]
    expected = [None if v is None else _xxh(v.encode()) for v in values]
    for dtype in (pa.utf8(), pa.large_utf8(), pa.string_view()):
        assert hash_array(pa.array(values, dtype)).to_pylist() == expected


def test_binary_hashes_its_bytes() -> None:
    values = [b"", b"\x00\xff", bytes(range(70)), None]
    expected = [None if v is None else _xxh(v) for v in values]
    for dtype in (pa.binary(), pa.large_binary(), pa.binary_view()):
        assert hash_array(pa.array(values, dtype)).to_pylist() == expected


@pytest.mark.parametrize("width", [1, 5, 8, 16, 24, 32, 40])
def test_fixed_size_binary_hashes_its_bytes(width: int) -> None:
    values = [bytes((i * 7 + j) % 256 for j in range(width)) for i in range(20)] + [None]
    expected = [None if v is None else _xxh(v) for v in values]
    assert hash_array(pa.array(values, pa.binary(width))).to_pylist() == expected


def test_varlen_matches_xxhash_for_every_length_up_to_200() -> None:
    rng = np.random.default_rng(7)
    values = [rng.bytes(n) for n in range(200)] * 2
    order = rng.permutation(len(values))
    values = [values[i] for i in order]
    expected = [_xxh(v) for v in values]
    assert hash_array(pa.array(values, pa.binary())).to_pylist() == expected


def test_low_cardinality_strings_take_the_dictionary_path_with_the_same_result() -> None:
    pool = [f"country-{i}" for i in range(50)]
    values = [pool[i % 50] for i in range(5 * hashing._SAMPLE)]
    arr = pa.array(values)
    assert hashing._few_distinct(arr)
    expected = {v: _xxh(v.encode()) for v in pool}
    assert hash_array(arr).to_pylist() == [expected[v] for v in values]
    assert bucket_array(arr, 7).to_pylist() == [abs(expected[v]) % 7 for v in values]


def test_date32_hashes_days_as_int64() -> None:
    days = [-1, 0, 20432, None]
    expected = [None if d is None else _xxh(_int64_bytes(d)) for d in days]
    assert hash_array(pa.array(days, pa.date32())).to_pylist() == expected


def test_date64_hashes_floored_days() -> None:
    ms = [0, 86_400_000 * 3, 86_400_000 * 3 + 5, -1]
    expected = [_xxh(_int64_bytes(d)) for d in (0, 3, 3, -1)]
    assert hash_array(pa.array(ms, pa.date64())).to_pylist() == expected
    assert hash_array(pa.array([3], pa.date32())).to_pylist() == expected[1:2]


def test_timestamps_hash_utc_microseconds_in_every_unit_and_zone() -> None:
    instant = datetime.datetime(2025, 12, 10, 10, 30, 5, tzinfo=datetime.timezone.utc)
    micros = 1_765_362_605_000_000
    expected = [_xxh(_int64_bytes(micros))]
    for unit in ("s", "ms", "us", "ns"):
        for tz in (None, "UTC", "America/New_York", "+05:30"):
            value = instant if tz else instant.replace(tzinfo=None)
            arr = pa.array([value], pa.timestamp(unit, tz=tz))
            assert hash_array(arr).to_pylist() == expected, (unit, tz)


def test_nanoseconds_floor_to_microseconds() -> None:
    arr = pa.array([-1, 1999, -1001], pa.timestamp("ns"))
    expected = [_xxh(_int64_bytes(v)) for v in (-1, 1, -2)]
    assert hash_array(arr).to_pylist() == expected


def test_seconds_beyond_the_microsecond_range_are_an_error() -> None:
    with pytest.raises(TransformError, match=r"timestamp\[s\]"):
        hash_array(pa.array([2**62], pa.timestamp("s")))


def _decimal_bytes(unscaled: int) -> bytes:
    return unscaled.to_bytes(16, "little", signed=True)


def test_decimals_hash_the_16_byte_unscaled_value() -> None:
    values = [decimal.Decimal("-1.50"), decimal.Decimal("12345678901234567890.12"), None]
    unscaled = [-150, 1234567890123456789012]
    expected = [_xxh(_decimal_bytes(u)) for u in unscaled] + [None]
    assert hash_array(pa.array(values, pa.decimal128(38, 2))).to_pylist() == expected
    assert hash_array(pa.array(values, pa.decimal256(50, 2))).to_pylist() == expected
    small = pa.array([decimal.Decimal("-1.50")], pa.decimal64(10, 2))
    assert hash_array(small).to_pylist() == expected[:1]


def test_decimal256_uses_all_16_bytes() -> None:
    edge = [-(2**127), 2**127 - 1, 10**38]
    arr = pa.array([decimal.Decimal(u) for u in edge] + [None], pa.decimal256(45, 0))
    expected = [_xxh(_decimal_bytes(u)) for u in edge] + [None]
    assert hash_array(arr).to_pylist() == expected


def test_decimal256_that_does_not_fit_16_bytes_is_an_error() -> None:
    huge = pa.array([decimal.Decimal(2**127)], pa.decimal256(45, 0))
    with pytest.raises(TransformError, match="decimal256"):
        hash_array(huge)


def test_dictionary_hashes_like_its_values() -> None:
    arr = pa.array(["b", "a", None, "b"]).dictionary_encode()
    assert hash_array(arr).to_pylist() == hash_array(pa.array(["b", "a", None, "b"])).to_pylist()


# ----------------------------------------------------------------- nulls, slices, chunks


def test_nulls_are_preserved() -> None:
    arr = pa.array([None, 5, None], pa.int64())
    assert hash_array(arr).to_pylist() == [None, _xxh(_int64_bytes(5)), None]
    assert bucket_array(pa.array([None], pa.utf8()), 4).to_pylist() == [None]


@pytest.mark.parametrize(
    "arr",
    [
        pa.array([1, None, 3, 4, None, 6, 7, 8, 9, 10], pa.int64()),
        pa.array(["a", None, "ccc", "dd", None, "e", "", "f", "g", "h"]),
        pa.array([decimal.Decimal(i) if i % 3 else None for i in range(10)], pa.decimal128(5)),
        pa.array([i % 2 == 0 if i % 4 else None for i in range(10)]),
    ],
)
def test_sliced_arrays_hash_their_own_values(arr: pa.Array) -> None:
    whole = hash_array(arr).to_pylist()
    assert hash_array(arr.slice(3, 5)).to_pylist() == whole[3:8]


def test_chunked_arrays_give_one_array() -> None:
    chunked = pa.chunked_array([[1, 2], [], [None, 4]], pa.int64())
    result = hash_array(chunked)
    assert isinstance(result, pa.Array)
    assert result.to_pylist() == hash_array(pa.array([1, 2, None, 4])).to_pylist()
    assert len(hash_array(pa.chunked_array([], pa.int64()))) == 0


def test_empty_arrays() -> None:
    for dtype in (pa.int64(), pa.utf8(), pa.decimal128(5, 2), pa.binary(16)):
        result = hash_array(pa.array([], dtype))
        assert result.type == pa.int64()
        assert len(result) == 0


def test_unhashable_type_is_an_error_naming_it() -> None:
    assert not can_hash(pa.list_(pa.int64()))
    assert not can_hash(pa.time64("us"))
    with pytest.raises(TransformError, match=r"list<item: int64>"):
        hash_array(pa.array([[1]]))


# --------------------------------------------------------------------------------- buckets


@pytest.mark.parametrize("num_buckets", [1, 2, 10, 16, 1000, 2**31 - 1, 2**63 - 1])
def test_bucket_is_abs_hash_mod_n(num_buckets: int) -> None:
    values = list(range(-50, 50))
    hashes = hash_array(pa.array(values, pa.int64())).to_pylist()
    buckets = bucket_array(pa.array(values, pa.int64()), num_buckets).to_pylist()
    assert buckets == [abs(h) % num_buckets for h in hashes]


def test_bucket_of_i64_min_uses_the_unsigned_magnitude() -> None:
    digests = np.array([1 << 63, (1 << 64) - 1, 5], np.uint64)
    for n in (10, 16, 7):
        result = hashing._post(digests.copy(), n).tolist()
        assert result == [(1 << 63) % n, 1 % n, 5 % n]


@pytest.mark.parametrize("bad", [0, -1, 2**63, True, 2.0])
def test_bucket_count_out_of_range_is_an_error(bad: object) -> None:
    with pytest.raises(TransformError, match="number of buckets"):
        bucket_array(pa.array([1]), bad)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------- scalars


def test_scalars_hash_like_arrays() -> None:
    assert hash_scalar(1, pa.int64()) == -6977822845260490347
    assert hash_scalar("US", pa.utf8()) == _signed(10306674020076073776)
    assert hash_scalar(None, pa.utf8()) is None
    assert bucket_scalar(1, pa.int32(), 16) == 11
    assert bucket_scalar(None, pa.int32(), 16) is None
    day = datetime.date(2025, 12, 10)
    assert hash_scalar(day, pa.date32()) == hash_array(pa.array([day])).to_pylist()[0]


def test_naive_datetime_for_a_zoned_type_is_utc() -> None:
    naive = datetime.datetime(2025, 1, 1, 12)
    aware = naive.replace(tzinfo=datetime.timezone.utc)
    zoned = pa.timestamp("us", tz="Asia/Tokyo")
    assert hash_scalar(naive, zoned) == hash_scalar(aware, zoned)
    assert hash_scalar(naive, zoned) == hash_scalar(naive, pa.timestamp("us"))


def test_scalar_that_does_not_convert_is_an_error() -> None:
    with pytest.raises(TransformError, match="int8"):
        hash_scalar(1000, pa.int8())
