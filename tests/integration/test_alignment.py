"""Writes of Arrow data whose buffers are not aligned as Lance needs (IPC-read, sliced).

Lance panicked ("Memory pointer ... is not aligned") on a decimal column whose value buffer
did not start on a 16-byte boundary, as happens with batches read from an Arrow stream.
"""

from __future__ import annotations

import ctypes
import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned.alignment import aligned, misaligned

SIZES = [*range(1, 21), 1001]


def every_type(start: int, n: int) -> pa.Table:
    """``n`` rows of every storable Arrow type, NULL every fifth row."""
    ids = list(range(start, start + n))

    def opt(values: list[object]) -> list[object]:
        return [None if i % 5 == 4 else v for i, v in zip(ids, values, strict=True)]

    dec = [decimal.Decimal(i).scaleb(-2) for i in ids]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "flag": pa.array(opt([i % 2 == 0 for i in ids]), pa.bool_()),
            "i8": pa.array(opt([i % 100 for i in ids]), pa.int8()),
            "i16": pa.array(opt(ids), pa.int16()),
            "i32": pa.array(opt(ids), pa.int32()),
            "u64": pa.array(opt(ids), pa.uint64()),
            "f16": pa.array(opt([float(i % 50) for i in ids]), pa.float16()),
            "f32": pa.array(opt([i / 4 for i in ids]), pa.float32()),
            "f64": pa.array(opt([i / 3 for i in ids]), pa.float64()),
            "d9": pa.array(opt(dec), pa.decimal128(9, 2)),
            "d38": pa.array(opt(dec), pa.decimal128(38, 10)),
            "d76": pa.array(opt(dec), pa.decimal256(76, 2)),
            "s": pa.array(opt([f"s{i}" for i in ids]), pa.string()),
            "ls": pa.array(opt([f"l{i}" for i in ids]), pa.large_string()),
            "b": pa.array(opt([bytes([i % 256]) for i in ids]), pa.binary()),
            "fsb": pa.array(opt([i.to_bytes(3, "little") for i in ids]), pa.binary(3)),
            "day": pa.array(opt([dt.date(2025, 1, 1) + dt.timedelta(i) for i in ids])),
            "ts": pa.array(opt([i * 1_000_000 for i in ids]), pa.timestamp("us", "UTC")),
            "ns": pa.array(opt(list(ids)), pa.timestamp("ns")),
            "t": pa.array(opt(list(ids)), pa.time64("us")),
            "span": pa.array(opt(list(ids)), pa.duration("us")),
            "tags": pa.array(opt([[f"t{i}", None] for i in ids]), pa.list_(pa.string())),
            "amounts": pa.array(opt([[d, None] for d in dec]), pa.list_(pa.decimal128(12, 2))),
            "point": pa.array(
                opt([{"x": i / 2, "d": d} for i, d in zip(ids, dec, strict=True)]),
                pa.struct([("x", pa.float64()), ("d", pa.decimal128(20, 2))]),
            ),
            "attrs": pa.array(
                opt([[("k", d)] for d in dec]), pa.map_(pa.string(), pa.decimal128(10, 2))
            ),
        }
    )


def shifted(table: pa.Table, shift: int) -> pa.Table:
    """``table`` read back zero-copy from an Arrow IPC stream placed ``shift`` bytes past a
    64-byte boundary: every buffer moves by ``shift`` (IPC pads buffers to 8 bytes only)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    stream = sink.getvalue()
    placed = pa.allocate_buffer(stream.size + shift).slice(shift)
    ctypes.memmove(placed.address, stream.address, stream.size)
    return pa.ipc.open_stream(placed).read_all()


def has_misaligned(table: pa.Table) -> bool:
    return any(misaligned(chunk) for column in table.columns for chunk in column.chunks)


def addresses(array: pa.Array) -> list[int]:
    return [buffer.address for buffer in array.buffers() if buffer is not None]


def test_aligned_copies_only_misaligned_chunks() -> None:
    table = every_type(0, 4)
    assert not has_misaligned(table)
    assert aligned(table) is table
    moved = shifted(table, 8)
    assert has_misaligned(moved)
    fixed = aligned(moved)
    assert not has_misaligned(fixed)
    assert fixed.equals(table)
    # columns that were aligned are not copied
    same = [
        addresses(moved.column(i).chunk(0)) == addresses(fixed.column(i).chunk(0))
        for i in range(moved.num_columns)
        if not misaligned(moved.column(i).chunk(0))
    ]
    assert same
    assert all(same)


# every type at every batch size and offset, per spec
@pytest.mark.matrix(2)  # the inner loop runs half of the cases
@pytest.mark.parametrize("partition_by", ["", "bucket(3, id)"])
def test_every_type_at_every_batch_size_and_offset(tmp_path: Path, partition_by: str) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path), schema=every_type(0, 1).schema, partition_by=partition_by
    )
    expected = []
    start = 0
    seen_misaligned = False
    for n in SIZES:
        for shift in (0, 8):
            for offset in (0, 1):
                table = every_type(start, n + offset)
                start += n + offset
                data = shifted(table, shift).slice(offset)
                seen_misaligned = seen_misaligned or has_misaligned(data)
                ns.write(data)
                expected.append(table.slice(offset))
    assert seen_misaligned  # the inputs did hold buffers Lance could not take as they were
    want = pa.concat_tables(expected)
    got = ns.to_table()
    got = got.take(pc.sort_indices(got, [("id", "ascending")]))
    assert got.num_rows == want.num_rows
    assert got.equals(want.combine_chunks())
