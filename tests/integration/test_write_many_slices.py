"""A leaf staged from many input chunks: its buffer, one slice per chunk, is merged before
Lance gets it, and only then checked for misaligned buffers (issue 31: a write of hundreds of
leaves paid that Python check for every slice of every leaf, under the GIL)."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import alignment
from lance_partitioned.ingest import WriteOptions
from lance_partitioned.ingest import stager as stager_module

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("day", pa.date32()),
        pa.field("note", pa.string()),
    ]
)
LEAVES = 6
CHUNKS = 40


def _batch(start: int, rows: int) -> pa.RecordBatch:
    ids = range(start, start + rows)
    return pa.record_batch(
        {
            "id": pa.array(list(ids), pa.int64()),
            "day": pa.array([dt.date(2025, 1, 1 + i % LEAVES) for i in ids], pa.date32()),
            "note": [f"n{i}" for i in ids],
        },
        schema=SCHEMA,
    )


def test_a_leaf_of_many_slices_is_checked_for_alignment_once_per_column(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="day")
    checked: list[int] = []
    real = alignment.misaligned

    def spy(array: Any) -> bool:
        checked.append(len(array))
        return real(array)

    monkeypatch.setattr(alignment, "misaligned", spy)
    batches = [_batch(i * 60, 60) for i in range(CHUNKS)]  # each a chunk of its own
    reader = pa.RecordBatchReader.from_batches(SCHEMA, iter(batches))
    result = ns.write(reader, options=WriteOptions(chunk_bytes=1 << 10, threads=2))
    assert (result.rows_written, result.partitions_created) == (CHUNKS * 60, LEAVES)
    # one check per column of each leaf, on its merged rows (not one per slice and column)
    assert len(checked) == LEAVES * len(SCHEMA)
    assert sum(checked) == CHUNKS * 60 * len(SCHEMA)
    assert ns.to_table().sort_by("id").column("id").to_pylist() == list(range(CHUNKS * 60))


def _write_keeping_buffers(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[lp.PartitionedNamespace, Any, list[list[Any]]]:
    """Write CHUNKS chunks of 60 rows into LEAVES leaves; the namespace, the write's result and
    every leaf's buffer as it was when the write staged what was left."""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="day")
    buffered: list[list[Any]] = []
    real = stager_module._Stager.finish

    def spy(self: Any) -> Any:
        buffered.extend(part.buffer for part in self.partitions.values())
        return real(self)

    monkeypatch.setattr(stager_module._Stager, "finish", spy)
    batches = [_batch(i * 60, 60) for i in range(CHUNKS)]  # each a chunk of its own
    reader = pa.RecordBatchReader.from_batches(SCHEMA, iter(batches))
    result = ns.write(reader, options=WriteOptions(chunk_bytes=1 << 10, threads=2))
    return ns, result, buffered


def test_the_buffers_of_many_leaves_share_each_grouped_chunk(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leaf's buffer refers to the grouped chunks its rows are in, and takes its slice of
    each only when it is staged: the buffers of a write hold one pyarrow Table per input
    chunk, not one per chunk and leaf (issue 31: a streamed write of 10M rows into 731
    partitions held 28,000 of those, about 3 KB each, at its peak)."""
    ns, result, buffered = _write_keeping_buffers(tmp_path, monkeypatch)
    assert (result.rows_written, result.partitions_created) == (CHUNKS * 60, LEAVES)
    entries = [entry for buffer in buffered for entry in buffer]
    tables = {id(entry if isinstance(entry, pa.Table) else entry[0]) for entry in entries}
    # a slice of every grouped chunk in every leaf, each chunk one batch (or Table)
    assert len(entries) == len(tables) * LEAVES
    assert len(tables) >= CHUNKS
    assert ns.to_table().sort_by("id").column("id").to_pylist() == list(range(CHUNKS * 60))


def test_a_grouped_chunk_is_buffered_as_one_record_batch(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk of several partitions is gathered into partition order as one RecordBatch, and
    each leaf's buffer slices that batch: a leaf of a write of many leaves is merged from
    batch slices by one ``concat_batches`` (issue 31: a Table per slice, then
    ``concat_tables`` and ``combine_chunks``, cost the 10M-row write of 731 leaves CPU in
    every one of its 28,000 slices)."""
    ns, _, buffered = _write_keeping_buffers(tmp_path, monkeypatch)
    kinds = {type(rows) for buffer in buffered for rows, _, _ in buffer}
    assert kinds == {pa.RecordBatch}
    assert ns.to_table().sort_by("id").column("id").to_pylist() == list(range(CHUNKS * 60))


NESTED = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("day", pa.date32()),
        pa.field("note", pa.string()),
        pa.field("point", pa.struct([("x", pa.int32()), ("label", pa.string())])),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("score", pa.float64()),
    ]
)


def _nested(start: int, rows: int, days: int) -> pa.RecordBatch:
    """Rows ``start`` to ``start + rows`` over ``days`` days (one day: a chunk of one group),
    with NULLs in every column but the id, sliced from a bigger batch (a non-zero offset)."""
    ids = list(range(start - 3, start + rows + 2))

    def maybe(i: int, value: Any) -> Any:
        return None if i % 7 == 3 else value

    batch = pa.record_batch(
        {
            "id": pa.array(ids, pa.int64()),
            "day": pa.array([maybe(i, dt.date(2025, 3, 1 + i % days)) for i in ids], pa.date32()),
            "note": [maybe(i, "é" * (i % 5) + f"note {i}") for i in ids],
            "point": [maybe(i, {"x": i, "label": maybe(i + 1, f"p{i}")}) for i in ids],
            "tags": [maybe(i, [f"t{j}" for j in range(i % 4)]) for i in ids],
            "score": [maybe(i, i / 4) for i in ids],
        },
        schema=NESTED,
    )
    return batch.slice(3, rows)


@pytest.mark.parametrize("chunk_bytes", [1 << 9, 1 << 12, 1 << 20], ids=["small", "mixed", "one"])
def test_leaves_of_gathered_chunks_hold_their_rows_in_input_order(
    tmp_path: os.PathLike[str], chunk_bytes: int
) -> None:
    """Every leaf holds exactly its rows, every column (strings, NULLs, a struct, a list)
    as written, in input order, whether its buffer holds slices of gathered chunks, whole
    chunks of a single partition, or both, and whether a chunk is one input batch, a piece
    of one or several batches merged (``chunk_bytes``)."""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=NESTED, partition_by="day")
    batches = [_nested(i * 37, 37, 1 if i % 3 == 0 else 5) for i in range(12)]
    reader = pa.RecordBatchReader.from_batches(NESTED, iter(batches))
    options = WriteOptions(chunk_bytes=chunk_bytes, threads=2)
    assert ns.write(reader, options=options).rows_written == 12 * 37
    expected = pa.Table.from_batches(batches, NESTED).to_pylist()
    parts = ns.partitions()
    seen = 0
    for location, day in zip(
        parts.column("location").to_pylist(), parts.column("day").to_pylist(), strict=True
    ):
        rows = lance.dataset(f"{ns.uri}/{location}").to_table().to_pylist()
        assert rows == [row for row in expected if row["day"] == day]
        seen += len(rows)
    assert seen == len(expected)
