"""A leaf staged from many input chunks: its buffer, one slice per chunk, is merged before
Lance gets it, and only then checked for misaligned buffers (issue 31: a write of hundreds of
leaves paid that Python check for every slice of every leaf, under the GIL)."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

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


def test_the_buffers_of_many_leaves_share_each_grouped_chunk(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A leaf's buffer refers to the grouped chunks its rows are in, and takes its slice of
    each only when it is staged: the buffers of a write hold one pyarrow Table per input
    chunk, not one per chunk and leaf (issue 31: a streamed write of 10M rows into 731
    partitions held 28,000 of those, about 3 KB each, at its peak)."""
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
    assert (result.rows_written, result.partitions_created) == (CHUNKS * 60, LEAVES)
    entries = [entry for buffer in buffered for entry in buffer]
    tables = {id(entry if isinstance(entry, pa.Table) else entry[0]) for entry in entries}
    # a slice of every grouped chunk in every leaf, each chunk one Table
    assert len(entries) == len(tables) * LEAVES
    assert len(tables) >= CHUNKS
    assert ns.to_table().sort_by("id").column("id").to_pylist() == list(range(CHUNKS * 60))
