"""The tuning knobs of a write and the progress it reports."""

from __future__ import annotations

from dataclasses import dataclass, field

from lance_partitioned.runtime import max_workers

__all__ = ["WriteOptions", "WriteProgress"]


@dataclass(frozen=True)
class WriteOptions:
    """Tuning knobs of a write (the defaults suit a machine with a few GB of memory).

    Attributes
    ----------
    chunk_bytes : int
        Input is grouped in chunks of about this many bytes. Small chunks keep the gather of
        rows into partition order in the CPU cache: 16 MB groups 10M rows 3x faster than 128
        MB on the benchmark machine (32 MB L3).
    flush_bytes : int
        A partition buffer is staged to fragments once it holds this many bytes.
    max_buffer_bytes : int
        The bytes a write holds, buffered or handed to Lance and not yet written, stay about
        within this (beside the chunks being grouped and Lance's own encoding buffers): when
        the buffers reach it, all are flushed, and while staging lags behind, reading the
        input waits.
    max_rows_per_file : int
        Passed to Lance when staging fragments.
    threads : int
        Threads grouping input chunks, staging fragments and committing leaves in parallel
        (default: ``$LANCE_PARTITIONED_MAX_WORKERS``, else two per CPU, between 2 and 8; Lance
        encodes on its own threads too; a namespace's ``max_workers`` option when
        ``PartitionedNamespace.write`` gets no options). Up to this many chunks are grouped
        ahead of the one being staged.
    """

    chunk_bytes: int = 16 << 20
    flush_bytes: int = 128 << 20
    max_buffer_bytes: int = 640 << 20
    max_rows_per_file: int = 1 << 20
    threads: int = field(default_factory=max_workers)


@dataclass(frozen=True)
class WriteProgress:
    """Reported after each input chunk, and once more when every partition is staged.

    Attributes
    ----------
    rows : int
        Rows read so far.
    partitions : int
        Partitions seen so far.
    bytes_staged : int
        Bytes of the data files written so far (staging runs behind the input: the last
        report holds the size of every file the write staged).
    """

    rows: int
    partitions: int
    bytes_staged: int
