"""Arrow buffers aligned as Lance needs them, copied only when they are not.

Lance (arrow-rs) imports Arrow data through the C data interface and panics when a buffer is
not aligned for its element type ("Memory pointer from external source (e.g, FFI) is not
aligned"): a ``decimal128`` value buffer must start on a 16-byte boundary. Arrow IPC only
pads buffers to 8 bytes, so a batch read from a stream (PySpark hands every task its rows
that way) holds decimals 16-byte aligned or not depending on the sizes of the columns before
them. :func:`aligned` returns a table whose every buffer meets its type's alignment, copying
only the chunks that do not.

>>> import decimal
>>> raw = pa.allocate_buffer(16 * 2 + 8).slice(8)  # 8 bytes past a 64-byte boundary
>>> values = pa.Array.from_buffers(pa.decimal128(10, 2), 2, [None, raw])
>>> misaligned(values)
True
>>> fixed = aligned(pa.table({"d": values}))
>>> misaligned(fixed.column("d").chunk(0)), fixed.column("d").type
(False, Decimal128Type(decimal128(10, 2)))
>>> table = pa.table({"n": [1, 2]})
>>> aligned(table) is table  # nothing to copy
True
"""

from __future__ import annotations

import functools

import pyarrow as pa

__all__ = ["aligned", "misaligned"]

#: The alignment assumed for a buffer of a layout this module does not know.
_MAX_ALIGNMENT = 16


@functools.lru_cache(maxsize=256)
def _layout(dtype: pa.DataType) -> tuple[int, ...] | None:
    """The alignment of each buffer ``Array.buffers()`` lists for ``dtype`` (its children's
    included, depth first), or None for a layout not described here (once per type: a write
    checks every column of every leaf it stages)."""
    found = _layout_of(dtype)
    return None if found is None else tuple(found)


def _layout_of(dtype: pa.DataType) -> list[int] | None:
    if pa.types.is_null(dtype):
        return [1]
    if pa.types.is_boolean(dtype) or pa.types.is_fixed_size_binary(dtype):
        return [1, 1]
    if pa.types.is_decimal(dtype):
        return [1, 16]  # arrow-rs's i128 / i256
    if dtype == pa.month_day_nano_interval():
        return [1, 8]
    if pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_temporal(dtype):
        return [1, max(1, dtype.bit_width // 8)]
    if pa.types.is_string(dtype) or pa.types.is_binary(dtype):
        return [1, 4, 1]
    if pa.types.is_large_string(dtype) or pa.types.is_large_binary(dtype):
        return [1, 8, 1]
    if pa.types.is_list(dtype) or pa.types.is_map(dtype):
        child = _layout(dtype.value_type if pa.types.is_list(dtype) else _entries(dtype))
        return None if child is None else [1, 4, *child]
    if pa.types.is_large_list(dtype):
        child = _layout(dtype.value_type)
        return None if child is None else [1, 8, *child]
    if pa.types.is_fixed_size_list(dtype):
        child = _layout(dtype.value_type)
        return None if child is None else [1, *child]
    if pa.types.is_struct(dtype):
        layout = [1]
        for i in range(dtype.num_fields):
            child = _layout(dtype.field(i).type)
            if child is None:
                return None
            layout.extend(child)
        return layout
    return None


def _entries(dtype: pa.MapType) -> pa.DataType:
    return pa.struct([dtype.key_field, dtype.item_field])


def misaligned(array: pa.Array) -> bool:
    """Whether a buffer of ``array`` (or of its children or dictionary) is not aligned for
    its element type."""
    if isinstance(array, pa.DictionaryArray):
        return misaligned(array.indices) or misaligned(array.dictionary)
    buffers = array.buffers()
    layout = _layout(array.type)
    if layout is None or len(layout) != len(buffers):
        layout = (_MAX_ALIGNMENT,) * len(buffers)
    return any(
        buffer is not None and buffer.address % alignment != 0
        for buffer, alignment in zip(buffers, layout, strict=True)
    )


def aligned(table: pa.Table) -> pa.Table:
    """``table`` with every misaligned chunk copied into freshly allocated (64-byte aligned)
    buffers; ``table`` itself when nothing needs a copy."""
    if not any(misaligned(chunk) for column in table.columns for chunk in column.chunks):
        return table  # (the common case: a staged leaf is checked once, nothing is rebuilt)
    columns = [
        pa.chunked_array(
            [pa.concat_arrays([chunk]) if misaligned(chunk) else chunk for chunk in column.chunks],
            type=column.type,
        )
        for column in table.columns
    ]
    return pa.Table.from_arrays(columns, schema=table.schema)
