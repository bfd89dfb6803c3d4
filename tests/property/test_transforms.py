"""Properties: each fast path equals DataFusion, NULL maps to NULL, hash() is xxhash per row."""

from __future__ import annotations

import datetime
import decimal
import math
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lance_partitioned.errors import TransformError
from lance_partitioned.spec import hashing
from lance_partitioned.spec.hashing import bucket_array, hash_array
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
)
from tests.property.strategies import examples

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")

SETTINGS = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

INTEGERS = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
]
FLOATS = [pa.float16(), pa.float32(), pa.float64()]
STRINGS = [pa.utf8(), pa.large_utf8(), pa.string_view()]
BINARIES = [pa.binary(), pa.large_binary(), pa.binary_view(), pa.binary(8), pa.binary(16)]
BINARIES += [pa.binary(5), pa.binary(33)]
TIMEZONES = [None, "UTC", "+05:30", "America/New_York", "Asia/Tokyo"]
TIMESTAMPS = [pa.timestamp(u, tz=tz) for u in ("s", "ms", "us", "ns") for tz in TIMEZONES]
DATES = [pa.date32(), pa.date64()]
DECIMALS = [pa.decimal128(p, s) for p, s in ((1, 0), (5, 2), (18, 0), (19, 4), (38, 10))]
DECIMALS += [pa.decimal256(p, s) for p, s in ((20, 2), (50, 5), (76, 0))]
HASHABLE = [pa.bool_(), *INTEGERS, *FLOATS, *STRINGS, *BINARIES, *DATES, *TIMESTAMPS, *DECIMALS]

# Days around the epoch where the date-part fast path runs, and beyond (DataFusion's answer).
FAST_DAYS = 12_000_000
_UNITS_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}


def _int_range(dtype: pa.DataType) -> tuple[int, int]:
    bits = dtype.bit_width
    if pa.types.is_unsigned_integer(dtype):
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _temporal(per_day: int, low: int, high: int) -> st.SearchStrategy[int]:
    near = max(low, -FAST_DAYS * per_day), min(high, FAST_DAYS * per_day)
    return st.one_of(
        st.integers(*near),
        st.integers(-3650 * per_day, 36500 * per_day),
        st.integers(low, high),
    )


def _values(dtype: pa.DataType) -> st.SearchStrategy[Any]:
    t = pa.types
    if t.is_boolean(dtype):
        return st.booleans()
    if t.is_integer(dtype):
        return st.integers(*_int_range(dtype))
    if t.is_floating(dtype):
        return st.floats(width=dtype.bit_width)
    if t.is_string(dtype) or t.is_large_string(dtype) or t.is_string_view(dtype):
        return st.text(max_size=40)
    if t.is_fixed_size_binary(dtype):
        return st.binary(min_size=dtype.byte_width, max_size=dtype.byte_width)
    if t.is_binary(dtype) or t.is_large_binary(dtype) or t.is_binary_view(dtype):
        return st.binary(max_size=80)
    if t.is_date32(dtype):
        return _temporal(1, -(2**31), 2**31 - 1)
    if t.is_date64(dtype):
        return _temporal(86_400_000, -(2**63), 2**63 - 1)
    if t.is_timestamp(dtype):
        return _temporal(_UNITS_PER_DAY[dtype.unit], -(2**63), 2**63 - 1)
    if t.is_decimal(dtype):
        bound = 10**dtype.precision - 1
        return st.integers(-bound, bound).map(lambda u: decimal.Decimal(f"{u}E-{dtype.scale}"))
    raise AssertionError(f"no strategy for {dtype}")  # pragma: no cover


def _array(dtype: pa.DataType, values: list[Any]) -> pa.Array:
    t = pa.types
    if t.is_float16(dtype):
        mask = np.array([v is None for v in values], dtype=bool)
        data = np.array([0.0 if v is None else v for v in values], dtype=np.float16)
        return pa.array(data, type=dtype, mask=mask)
    if t.is_date64(dtype) or t.is_date32(dtype) or t.is_timestamp(dtype):
        storage = pa.int32() if t.is_date32(dtype) else pa.int64()
        return pa.array(values, storage).view(dtype)
    return pa.array(values, dtype)


@st.composite
def columns(draw: st.DrawFn, types: list[pa.DataType]) -> pa.Array:
    """An array of one of ``types`` with NULLs, sometimes a slice of a longer one."""
    dtype = draw(st.sampled_from(types))
    values = draw(st.lists(st.one_of(st.none(), _values(dtype)), max_size=40))
    arr = _array(dtype, values)
    if len(arr) > 2 and draw(st.booleans()):
        start = draw(st.integers(0, len(arr) - 1))
        arr = arr.slice(start, draw(st.integers(0, len(arr) - start)))
    return arr


def _comparable(arr: pa.Array) -> list[Any]:
    """Values that compare equal when the arrays do: temporal as storage, NaN as a marker."""
    if pa.types.is_temporal(arr.type):  # as_py() fails on dates past the year 9999
        arr = arr.view(pa.int32() if pa.types.is_date32(arr.type) else pa.int64())
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in arr.to_pylist()]


def _check(transform: Transform, values: pa.Array) -> None:
    fast = transform.apply(values)
    reference = transform.apply_reference(values)
    assert fast.type == reference.type == transform.result_type(values.type)
    assert len(fast) == len(values)
    assert _comparable(fast) == _comparable(reference)
    # The reference may be NULL past DataFusion's calendar range; the fast path defers to it.
    if not isinstance(transform, (Year, Month, Day, Hour, Years, Months)):
        assert fast.is_null().to_pylist() == values.is_null().to_pylist()
    else:
        nulls = values.is_null().to_pylist()
        assert all(f is None for f, null in zip(fast.to_pylist(), nulls, strict=True) if null)


# ------------------------------------------------------------ fast path == DataFusion


@SETTINGS
@given(columns(HASHABLE))
def test_identity(values: pa.Array) -> None:
    _check(Identity(), values)


@SETTINGS
@given(columns(DATES + TIMESTAMPS), st.sampled_from([Year(), Month(), Day()]))
def test_year_month_day(values: pa.Array, transform: Transform) -> None:
    _check(transform, values)


@SETTINGS
@given(columns(TIMESTAMPS))
def test_hour(values: pa.Array) -> None:
    _check(Hour(), values)


@SETTINGS
@given(columns(DATES + TIMESTAMPS))
def test_date(values: pa.Array) -> None:
    try:
        Date().apply_reference(values)
    except TransformError:  # past DataFusion's calendar: the fast path fails as it does
        with pytest.raises(TransformError):
            Date().apply(values)
        return
    _check(Date(), values)


def _check_literals(transform: Transform, values: pa.Array) -> None:
    """The image of each value as a bound literal (a Python date or datetime) is its value."""
    if pa.types.is_timestamp(values.type) and values.type.unit == "ns":
        return  # a datetime cannot hold every nanosecond
    expected = transform.apply(values).to_pylist()
    storage = values.view(pa.int32() if pa.types.is_date32(values.type) else pa.int64())
    for raw, value, image in zip(storage.to_pylist(), values, expected, strict=True):
        per_day = 1 if pa.types.is_date32(values.type) else _per_day(values.type)
        if raw is None or not -719_161 <= raw // per_day <= 2_932_895:  # years 1 to 9999
            continue
        literal = value.as_py()
        if pa.types.is_timestamp(values.type) and values.type.tz is not None:
            literal = literal.astimezone(datetime.timezone.utc)  # bound literals are UTC
        got = transform.apply_literal(literal, values.type, pa.int32())
        assert got == image, (literal, values.type, transform)


def _per_day(dtype: pa.DataType) -> int:
    return 86_400_000 if pa.types.is_date64(dtype) else _UNITS_PER_DAY[dtype.unit]


@st.composite
def calendar_columns(draw: st.DrawFn, types: list[pa.DataType]) -> pa.Array:
    """Dates or timestamps of years 1 to 9999 (ns: its whole range), many of them a few units
    from the start of a month or an hour of UTC."""
    dtype = draw(st.sampled_from(types))
    per_day = 1 if pa.types.is_date32(dtype) else _per_day(dtype)
    ns = pa.types.is_timestamp(dtype) and dtype.unit == "ns"
    low, high = (-(2**63), 2**63 - 1) if ns else (-719_162 * per_day, 2_932_897 * per_day - 1)
    month_starts = st.builds(
        lambda y, m: (datetime.date(y, m, 1) - datetime.date(1970, 1, 1)).days * per_day,
        st.integers(1678 if ns else 1, 2261 if ns else 9999),
        st.integers(1, 12),
    )
    per_hour = max(per_day // 24, 1)
    hour_starts = st.builds(lambda v: v - v % per_hour, st.integers(low // 2, high // 2))
    near = st.builds(
        lambda start, delta: min(max(start + delta, low), high),
        month_starts | hour_starts,
        st.integers(-2, 2),
    )
    values = draw(st.lists(st.none() | near | st.integers(low, high), max_size=40))
    return _array(dtype, values)


@SETTINGS
@given(
    columns(DATES + TIMESTAMPS) | calendar_columns(DATES + TIMESTAMPS),
    st.sampled_from([Years(), Months()]),
)
def test_years_months(values: pa.Array, transform: Transform) -> None:
    _check(transform, values)
    _check_literals(transform, values)


@SETTINGS
@given(columns(TIMESTAMPS) | calendar_columns(TIMESTAMPS))
def test_hours(values: pa.Array) -> None:
    try:
        Hours().apply_reference(values)
    except TransformError:  # past DataFusion's calendar or int32: the fast path fails as it does
        with pytest.raises(TransformError):
            Hours().apply(values)
        return
    _check(Hours(), values)
    _check_literals(Hours(), values)


@SETTINGS
@given(columns(HASHABLE), st.sampled_from([1, 2, 3, 10, 16, 1000, 2**31 - 1, 2**63 - 1]))
def test_bucket(values: pa.Array, num_buckets: int) -> None:
    if not _representable(values):
        for path in (Bucket(num_buckets).apply, Bucket(num_buckets).apply_reference):
            with pytest.raises(TransformError, match=r"timestamp|decimal256"):
                path(values)
        return
    _check(Bucket(num_buckets), values)


@SETTINGS
@given(
    columns(INTEGERS + DECIMALS),
    st.one_of(st.integers(1, 1000), st.integers(1, 2**63 - 1)),
)
def test_truncate_numbers(values: pa.Array, width: int) -> None:
    _check(Truncate(width), values)


@SETTINGS
@given(columns(STRINGS), st.integers(1, 45))
def test_truncate_strings(values: pa.Array, width: int) -> None:
    _check(Truncate(width, string=True), values)


# ------------------------------------------------------------ hash() == xxhash per row


def _encode(value: Any, dtype: pa.DataType) -> bytes:
    """The documented encoding of one value, written independently of the vectorised code."""
    t = pa.types
    if t.is_boolean(dtype) or t.is_integer(dtype):
        return struct.pack("<q", int(value) - (1 << 64) if int(value) >= 1 << 63 else int(value))
    if t.is_floating(dtype):
        if math.isnan(value):
            return struct.pack("<Q", 0x7FF8000000000000)
        return struct.pack("<d", float(value) + 0.0)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    if t.is_decimal(dtype):
        unscaled = int(value.scaleb(dtype.scale, decimal.Context(prec=100)))
        return unscaled.to_bytes(16, "little", signed=True)
    raise AssertionError(f"no encoding for {dtype}")  # pragma: no cover


def _temporal_encoding(raw: int, dtype: pa.DataType) -> bytes:
    t = pa.types
    if t.is_date32(dtype):
        return struct.pack("<q", raw)
    if t.is_date64(dtype):
        return struct.pack("<q", raw // 86_400_000)
    micros = {"s": raw * 1_000_000, "ms": raw * 1000, "us": raw, "ns": raw // 1000}[dtype.unit]
    return struct.pack("<q", micros)


def _reference_hashes(values: pa.Array) -> list[int | None]:
    dtype = values.type
    t = pa.types
    if t.is_temporal(dtype):
        storage = pa.int32() if t.is_date32(dtype) else pa.int64()
        raws = values.view(storage).to_pylist()
        encoded = [None if r is None else _temporal_encoding(r, dtype) for r in raws]
    else:
        encoded = [None if v is None else _encode(v, dtype) for v in values.to_pylist()]
    digests = [None if e is None else xxhash.xxh64_intdigest(e) for e in encoded]
    return [None if d is None else d - (1 << 64) if d >= 1 << 63 else d for d in digests]


def _representable(values: pa.Array) -> bool:
    """Whether hash() encodes every value: s/ms timestamps overflowing int64 microseconds and
    decimal256 values beyond 16 bytes are an error, not a hash."""
    dtype = values.type
    if pa.types.is_decimal256(dtype):
        scale = decimal.Context(prec=100)
        unscaled = [int(v.scaleb(dtype.scale, scale)) for v in values.to_pylist() if v is not None]
        return all(-(2**127) <= u < 2**127 for u in unscaled)
    if not pa.types.is_timestamp(dtype) or dtype.unit not in ("s", "ms"):
        return True
    factor = 1_000_000 if dtype.unit == "s" else 1000
    raws = values.view(pa.int64()).to_pylist()
    return all(r is None or -(2**63) <= r * factor < 2**63 for r in raws)


@SETTINGS
@given(columns(HASHABLE))
def test_hash_array_equals_xxhash_per_row(values: pa.Array) -> None:
    if not _representable(values):
        with pytest.raises(TransformError, match=r"timestamp|decimal256"):
            hash_array(values)
        return
    assert hash_array(values).to_pylist() == _reference_hashes(values)


@settings(max_examples=examples(20), deadline=None)
@given(
    st.lists(st.text(max_size=30), min_size=1, max_size=300, unique=True),
    st.integers(0, 2**32 - 1),
    st.sampled_from([7, 16]),
)
def test_dictionary_path_equals_xxhash(pool: list[str], seed: int, num_buckets: int) -> None:
    rng = np.random.default_rng(seed)
    indices = pa.array(rng.integers(0, len(pool), 5 * hashing._SAMPLE))
    values = pa.array(pool).take(indices)
    expected = {v: xxhash.xxh64_intdigest(v.encode()) for v in pool}
    signed = {v: d - (1 << 64) if d >= 1 << 63 else d for v, d in expected.items()}
    pos = indices.to_numpy()
    hashes = np.array([signed[v] for v in pool], dtype=np.int64)[pos]
    assert np.array_equal(hash_array(values).to_numpy(), hashes)
    buckets = np.array([abs(signed[v]) % num_buckets for v in pool], dtype=np.int64)[pos]
    assert np.array_equal(bucket_array(values, num_buckets).to_numpy(), buckets)
