"""Partition values and the grouping of an input chunk's rows into partition order, with the
spec's vectorized transforms, Arrow and numpy (no Python loop per row)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors
from lance_partitioned.consistency import conform_for_write
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.multicolumn import MultiColumn, sources_of
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.sourcepaths import source_values

__all__ = ["group_rows", "partition_values"]

# Below this many key combinations, group codes are combined arithmetically (no second hash).
_DIRECT_CODES = 1 << 20


def group_rows(
    keys: list[pa.Array], n: int | None = None
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Group rows by the tuple of their key values (NULL is a value).

    Returns ``(order, offsets, first)``: ``order`` permutes rows so that each group is
    contiguous (None when there is at most one group), group ``g`` spans
    ``offsets[g]:offsets[g+1]`` of the permuted rows, and ``first[g]`` is the index of one of
    its rows in the input (to read the group's key values from).

    >>> order, offsets, first = group_rows([pa.array(["b", "a", "b", None])])
    >>> offsets.tolist(), sorted(first.tolist())
    ([0, 2, 3, 4], [0, 1, 3])
    """
    if n is None:
        n = len(keys[0]) if keys else 0
    if not keys or n == 0:
        return None, np.array([0, n], dtype=np.int64), np.zeros(1 if n else 0, dtype=np.int64)
    codes: np.ndarray | None = None
    size = 1
    for key in keys:
        indices, width = _codes(key, n)
        if codes is None:
            codes, size = indices, width
        elif size * width <= _DIRECT_CODES:  # combine without hashing again
            codes = codes.astype(np.int64) * width + indices
            size *= width
        else:
            combined = pc.dictionary_encode(pa.array(codes.astype(np.int64) * width + indices))
            codes = combined.indices.to_numpy(zero_copy_only=False)
            size = max(1, len(combined.dictionary))
    assert codes is not None
    counts = np.bincount(codes, minlength=size)
    present = np.flatnonzero(counts)
    if len(present) == 1:
        return None, np.array([0, n], dtype=np.int64), np.zeros(1, dtype=np.int64)
    if len(present) < size:  # renumber the groups that occur, in code order
        remap = np.zeros(size, dtype=np.int64)
        remap[present] = np.arange(len(present))
        codes = remap[codes]
        counts = counts[present]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    narrow = codes.astype(np.uint16 if len(present) < (1 << 16) else np.uint32)
    order = np.argsort(narrow, kind="stable")
    return order, offsets, order[offsets[:-1]]


# The integer-backed types whose groups are numbered by value, without hashing: numpy's view
# of the values, by Arrow bit width
_INTEGERS = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_UNSIGNED = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _codes(key: pa.Array | pa.ChunkedArray, n: int) -> tuple[np.ndarray, int]:
    """Dense codes of ``key``'s values (NULL is a value) and the size of the code space.

    A key of an integer, date, time, timestamp or duration type whose values span at most
    ``max(n, 65536)`` is numbered by value (its minimum is code 0, NULL comes before it), a
    subtraction instead of a hash: a day, a year or a bucket of an input chunk. Any other
    key is dictionary-encoded (codes in order of first appearance).

    >>> codes, size = _codes(pa.array([7, 5, None, 7]), 4)
    >>> codes.tolist(), size
    ([3, 1, 0, 3], 4)
    >>> codes, size = _codes(pa.array([2**40, 5, 2**40]), 3)  # a wide span: hashed
    >>> codes.tolist(), size
    ([0, 1, 0], 2)
    """
    if isinstance(key, pa.ChunkedArray):
        key = key.combine_chunks() if key.num_chunks != 1 else key.chunk(0)
    kind = key.type
    bits = kind.bit_width if pa.types.is_integer(kind) or _temporal(kind) else 0
    if bits in _INTEGERS and key.null_count < len(key):
        dtype = (_UNSIGNED if pa.types.is_unsigned_integer(kind) else _INTEGERS)[bits]
        bounds = pc.min_max(key.view(pa.from_numpy_dtype(dtype)))
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        span = high - low + 1
        if span <= max(n, 1 << 16):
            values = np.frombuffer(
                key.buffers()[1], dtype=dtype, count=len(key), offset=key.offset * (bits // 8)
            )
            # every value is within [low, high]: its difference to low fits the width unsigned
            codes = (values - dtype(low)).view(_UNSIGNED[bits]).astype(np.int64)
            nulls = key.null_count > 0
            if nulls:  # NULL is code 0 (a NULL slot holds any value)
                codes += 1
                codes[key.is_null().to_numpy(zero_copy_only=False)] = 0
            return codes, span + nulls
    encoded = pc.dictionary_encode(key, null_encoding="encode")
    return encoded.indices.to_numpy(zero_copy_only=False), max(1, len(encoded.dictionary))


def _temporal(kind: pa.DataType) -> bool:
    return bool(
        pa.types.is_date(kind)
        or pa.types.is_time(kind)
        or pa.types.is_timestamp(kind)
        or pa.types.is_duration(kind)
    )


@dataclass(frozen=True)
class _Grouped:
    """One input chunk in the leaf schema, its rows in partition order."""

    # group ``g`` is ``rows[offsets[g]:offsets[g+1]]``: a RecordBatch when the rows were
    # gathered (a write of many leaves slices it once per leaf, and slicing a batch is cheaper
    # than slicing a Table, which wraps every column in a ChunkedArray), the conformed chunk
    # as it is when it is one group
    rows: pa.Table | pa.RecordBatch
    offsets: np.ndarray
    keys: list[pa.Array]  # one array per partition field: group ``g``'s value at ``g``


def _group_chunk(
    chunk: pa.Table, metadata: NamespaceMetadata, spec: PartitionSpec, target: pa.Schema
) -> _Grouped:
    """Conform ``chunk``, compute its partition values and gather it into partition order.

    Every step is vectorized Arrow or numpy work that releases the GIL, so chunks are grouped
    in parallel on the write's thread pool.
    """
    table = conform_for_write(chunk, metadata.schema, target)
    keys = partition_values(table, spec, metadata.schema)
    order, offsets, first = group_rows(keys, table.num_rows)
    rows = table if order is None else _gathered(table, order)
    return _Grouped(rows, offsets, [key.take(first) for key in keys])


def _gathered(table: pa.Table, order: np.ndarray) -> pa.RecordBatch:
    """The rows of ``table`` in ``order``, as one record batch. A chunk of several batches
    is taken as a Table (the take concatenates one column at a time, where concatenating
    the whole chunk first would hold a second copy of it while it is gathered)."""
    batches = table.to_batches()
    if len(batches) == 1:
        return batches[0].take(order)
    # each column of the result is one chunk: combining them copies nothing
    return table.take(order).combine_chunks().to_batches()[0]


def _source_column(
    data: pa.Table, schema: NamespaceSchema, source_id: int
) -> pa.Array | pa.ChunkedArray:
    """The values of one partition source column of ``data``."""
    if schema.is_deprecated(source_id):
        # Appendix E: a spec another client left on a dropped column, which writes treat
        # as absent: its values are NULL
        return pa.nulls(data.num_rows, schema.field_by_id(source_id).type)
    return source_values(data, schema, source_id)


def partition_values(
    data: pa.Table, spec: PartitionSpec, schema: NamespaceSchema
) -> list[pa.Array]:
    """The partition value arrays of ``data`` (in the leaf schema) under ``spec``."""
    keys = []
    for spec_field in spec.fields:
        columns = [_source_column(data, schema, s) for s in sources_of(spec_field)]
        transform = spec_field.transform
        if isinstance(transform, MultiColumn):  # a published field over col0..colN
            values = transform.apply_columns(columns)
        else:
            values = transform.apply(columns[0])
        column = columns[0]
        if values.type != spec_field.result_type:
            try:
                values = pc.cast(values, spec_field.result_type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
                raise errors.CastError(
                    f"partition field {spec_field.name!r} of {spec.key} has result_type "
                    f"{spec_field.result_type}, which cannot hold every value of column "
                    f"{schema.name_of(spec_field.source_id)!r} ({column.type}) written: {exc}. "
                    "After widening a partition source column, partition new data by it under a "
                    "new partition field name (update_partition_spec: a name keeps its "
                    "result_type in every spec version)"
                ) from exc
        keys.append(values)
    return keys
