"""murmur3 of the published dialect: Iceberg's test vectors, promotion, NULLs and buckets."""

from __future__ import annotations

import datetime
import decimal
import struct

import mmh3
import numpy as np
import pyarrow as pa
import pytest

from lance_partitioned.errors import TransformError
from lance_partitioned.spec.murmur3 import (
    bucket_murmur3,
    encoding_agnostic,
    murmur3_array,
    murmur3_multi,
    murmur3_scalar,
)

# Iceberg spec, Appendix B ("32-bit Hash Requirements"), the published test vectors.
ICEBERG_VECTORS = [
    (34, pa.int32(), 2017239379),
    (34, pa.int64(), 2017239379),
    (decimal.Decimal("14.20"), pa.decimal128(4, 2), -500754589),
    (datetime.date(2017, 11, 16), pa.date32(), -653330422),
    (datetime.time(22, 31, 8), pa.time64("us"), -662762989),
    (datetime.datetime(2017, 11, 16, 22, 31, 8), pa.timestamp("us"), -2047944441),
    (
        datetime.datetime(2017, 11, 16, 22, 31, 8, tzinfo=datetime.UTC),
        pa.timestamp("us", tz="UTC"),
        -2047944441,
    ),
    ("iceberg", pa.utf8(), 1210000089),
    (b"\x00\x01\x02\x03", pa.binary(), -188683207),
    (b"\x00\x01\x02\x03", pa.binary(4), -188683207),
    (1.0, pa.float32(), -142385009),
    (1.0, pa.float64(), -142385009),
]


@pytest.mark.parametrize(("value", "dtype", "expected"), ICEBERG_VECTORS)
def test_iceberg_vectors(value: object, dtype: pa.DataType, expected: int) -> None:
    assert murmur3_scalar(value, dtype) == expected


@pytest.mark.parametrize(
    "dtype",
    [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64()],
)
def test_integers_survive_promotion(dtype: pa.DataType) -> None:
    assert murmur3_array(pa.array([34, None, 0], dtype)).to_pylist() == [
        2017239379,
        None,
        mmh3.hash(struct.pack("<q", 0), 0, signed=True),
    ]


def test_numpy_path_matches_mmh3() -> None:
    rng = np.random.default_rng(7)
    values = rng.integers(-(1 << 63), (1 << 63) - 1, size=500, dtype=np.int64)
    expected = [mmh3.hash(struct.pack("<q", int(v)), 0, signed=True) for v in values]
    assert murmur3_array(pa.array(values)).to_pylist() == expected


def test_temporal_units_agree() -> None:
    day = datetime.date(2017, 11, 16)
    stamp = datetime.datetime(2017, 11, 16, 22, 31, 8)
    assert murmur3_scalar(day, pa.date64()) == -653330422
    for unit in ("s", "ms", "us", "ns"):
        assert murmur3_scalar(stamp, pa.timestamp(unit)) == -2047944441


def test_strings_of_every_layout_and_dictionary() -> None:
    for dtype in (pa.utf8(), pa.large_utf8(), pa.string_view()):
        assert murmur3_array(pa.array(["iceberg", None], dtype)).to_pylist() == [1210000089, None]
    encoded = pa.array(["iceberg", "iceberg", None]).dictionary_encode()
    assert murmur3_array(encoded).to_pylist() == [1210000089, 1210000089, None]


def test_negative_decimal_minimal_bytes() -> None:
    # -1 as one byte 0xff; 128 needs a sign byte: 0x00 0x80.
    assert murmur3_scalar(decimal.Decimal("-0.01"), pa.decimal128(4, 2)) == mmh3.hash(
        b"\xff", 0, signed=True
    )
    assert murmur3_scalar(decimal.Decimal("1.28"), pa.decimal128(4, 2)) == mmh3.hash(
        b"\x00\x80", 0, signed=True
    )


def test_multi_skips_nulls() -> None:
    ints = pa.array([34, None, 34, None], pa.int32())
    strings = pa.array(["iceberg", "iceberg", None, None])
    got = murmur3_multi([ints, strings]).to_pylist()
    both = mmh3.hash(struct.pack("<q", 34) + b"iceberg", 0, signed=True)
    assert got == [both, 1210000089, 2017239379, None]


def test_bucket_is_abs_mod_int32() -> None:
    hashes = pa.array([-2047944441, 1210000089, -(1 << 31), None], pa.int32())
    result = bucket_murmur3(hashes, 16)
    assert result.type == pa.int32()
    assert result.to_pylist() == [2047944441 % 16, 1210000089 % 16, (1 << 31) % 16, None]
    with pytest.raises(TransformError):
        bucket_murmur3(hashes, 0)


def test_unsupported_type_is_typed_error() -> None:
    with pytest.raises(TransformError):
        murmur3_array(pa.array([[1]]))
    assert encoding_agnostic(pa.large_binary())
    assert not encoding_agnostic(pa.date32())
