"""A Bloom filter of a Spark merge's source keys, for the leaves' key read of a join route.

With ``on="id"`` into ``day`` partitions the keys name no partition, so the merge joins the
source with the (key, leaf) pairs every leaf holds (:mod:`.merge_route`). Most of those keys
match no source row (10M target keys for 500k matches in issue 30's benchmark); a Bloom
filter of the source's keys, applied where the leaves' keys are read, sends Spark only the
pairs whose key may be in the source. A false positive costs a pair the join drops; a key
in the source always passes.

The filter is built on executors (each source partition sets the bits of its keys in a
numpy bit array, ``mapInArrow``; the arrays are OR-ed by one reduce task): the driver
receives one array (10-20 bits per source row, 8 KiB to 8 MiB), never the source. Keys
are hashed with the spec's xxhash64 (:func:`lance_partitioned.spec.hashing.hash_array`, on
the values in the source's Arrow types on both sides: an integer as int64, a string by its
UTF-8 bytes, -0.0 as 0.0, every NaN alike, as Spark's join compares them); a key of a type
it cannot hash builds no filter (every pair is sent, as before). A leaf key with a NULL
always passes (NULL-safe keys match NULLs).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lance_partitioned.errors import TransformError
from lance_partitioned.spec.hashing import can_hash, hash_array

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["KeyFilter", "source_filter"]

_HASHES = 4  # bit positions per key
_BITS_PER_KEY = 10  # (rounded up to a power of two: 10-20 bits, about 1% false positives)
_MIN_BITS, _MAX_BITS = 1 << 16, 1 << 26  # 8 KiB .. 8 MiB
_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class KeyFilter:
    """A Bloom filter of key tuples: ``bits`` (packed, little bit order), ``2**log2`` bits."""

    bits: bytes
    log2: int

    def may_contain(self, columns: Sequence[pa.Array | pa.ChunkedArray]) -> np.ndarray:
        """A boolean mask: the rows whose key may be in the filter (every row with a NULL
        key column too)."""
        try:
            hashed, valid = _hashes(columns)
        except TransformError:  # (a timestamp beyond the int64 microseconds)
            return np.ones(len(columns[0]), dtype=bool)
        found = np.ones(len(hashed), dtype=bool)
        words = np.frombuffer(self.bits, dtype=np.uint8)
        for position in _positions(hashed, self.log2):
            found &= (words[position >> np.uint64(3)] >> (position & np.uint64(7))) & 1 == 1
        return np.asarray(found | ~valid, dtype=bool)


def _hashes(columns: Sequence[pa.Array | pa.ChunkedArray]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's 64-bit hash of its key tuple, and whether no key column is NULL."""
    n = len(columns[0])
    combined = np.zeros(n, dtype=np.uint64)
    valid = np.ones(n, dtype=bool)
    with np.errstate(over="ignore"):
        for column in columns:
            digest = hash_array(column)
            valid &= np.asarray(digest.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
            values = np.asarray(digest.fill_null(0).to_numpy(zero_copy_only=False))
            combined = (combined * _MIX) ^ values.astype(np.int64).view(np.uint64)
    return combined, valid


def _positions(hashed: np.ndarray, log2: int) -> Iterator[np.ndarray]:
    """The ``_HASHES`` bit positions of each hash (double hashing of its two halves)."""
    mask = np.uint64((1 << log2) - 1)
    low = hashed & np.uint64(0xFFFFFFFF)
    high = (hashed >> np.uint64(32)) | np.uint64(1)
    with np.errstate(over="ignore"):
        for i in range(_HASHES):
            yield (low + np.uint64(i) * high) & mask


def _bits(columns: Sequence[pa.Array | pa.ChunkedArray], log2: int) -> bytes:
    """The packed bit array with the bits of every key tuple without a NULL set."""
    try:
        hashed, valid = _hashes(columns)
    except TransformError:  # (a timestamp beyond the int64 microseconds): every key passes
        return np.packbits(np.ones(1 << log2, dtype=bool)).tobytes()
    hashed = hashed[valid]
    flags = np.zeros(1 << log2, dtype=bool)
    for position in _positions(hashed, log2):
        flags[position] = True
    return np.packbits(flags, bitorder="little").tobytes()


def hashable(types: Sequence[pa.DataType]) -> bool:
    """Whether keys of these Arrow types can be filtered (hashed by
    :func:`~lance_partitioned.spec.hashing.hash_array`)."""
    return all(can_hash(t) for t in types)


def source_filter(
    source: DataFrame, on: Sequence[str], rows: Callable[[], int] | None = None
) -> KeyFilter | None:
    """The Bloom filter of ``source``'s ``on`` keys, built on executors (None: a key type
    :func:`hashable` refuses). Runs a Spark job on ``source`` for the bits, and one to count
    its rows unless ``rows`` gives them (the merge counted them already)."""
    from pyspark.sql.pandas.types import to_arrow_type

    if not hashable([to_arrow_type(source.schema[k].dataType) for k in on]):
        return None
    keys = source.select(*on)
    count = keys.count() if rows is None else rows()
    log2 = int(np.clip(int(max(count, 1) * _BITS_PER_KEY - 1).bit_length(), 16, 26))
    assert _MIN_BITS <= 1 << log2 <= _MAX_BITS
    names = list(on)

    def build(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if tables:
            table = pa.concat_tables(tables)
            bits = _bits([table.column(k) for k in names], log2)
            yield pa.RecordBatch.from_pydict({"bits": [bits]})

    def merge(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        every = np.zeros((1 << log2) // 8, dtype=np.uint8)
        for batch in batches:
            for bits in batch.column(0).to_pylist():
                every |= np.frombuffer(bits, dtype=np.uint8)
        yield pa.RecordBatch.from_pydict({"bits": [every.tobytes()]})

    with warnings.catch_warnings():
        # mapInArrow checks the pandas version and warns for pandas 3, which it never uses
        warnings.filterwarnings("ignore", "PySpark does not yet fully", FutureWarning)
        parts = keys.mapInArrow(build, "bits binary")
        # OR-ed on executors (one task, after a shuffle of the partitions' arrays): one
        # array reaches the driver, however many partitions the source has
        found = parts.repartition(1).mapInArrow(merge, "bits binary").toArrow()
    if not found.num_rows:  # (an empty source: no key passes)
        return KeyFilter(bytes((1 << log2) // 8), log2)
    return KeyFilter(found.column(0)[0].as_py(), log2)
