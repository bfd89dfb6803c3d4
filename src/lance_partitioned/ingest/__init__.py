"""Streaming partitioned writes: conform, compute partition values, group, stage fragments.

A write reads its input as a stream of record batches, in chunks of bounded size. Each chunk
is conformed to the schema consistency rules, its partition values are computed with the
spec's vectorized transforms, and its rows are gathered into partition order with Arrow and
numpy (no Python loop per row); several chunks are grouped at once on a thread pool. The
groups are appended to per-partition buffers in input order. Buffers are flushed to
uncommitted Lance fragments in the partition's leaf directory on the same pool, when one
grows past ``flush_bytes`` or when all of them together reach ``max_buffer_bytes``; while the
bytes buffered or still being staged exceed it, reading waits for staging to catch up, so
memory stays bounded whatever the input size. The staged fragments are then committed by
:func:`lance_partitioned.transaction.write.commit_write`.

The modules: :mod:`~lance_partitioned.ingest.options` (``WriteOptions``,
``WriteProgress``), :mod:`~lance_partitioned.ingest.reading` (the input as chunks),
:mod:`~lance_partitioned.ingest.grouping` (partition values, rows in partition order),
:mod:`~lance_partitioned.ingest.stager` (the per-partition buffers and their staging);
:func:`stage` and :func:`stage_into` are here.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import itertools
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.ingest.grouping import _group_chunk, _Grouped, group_rows, partition_values
from lance_partitioned.ingest.options import WriteOptions, WriteProgress
from lance_partitioned.ingest.reading import _chunks, as_reader, coalesce, drop_pandas_index
from lance_partitioned.ingest.stager import _Partition, _Stager
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.transaction import PendingWrite, WriteMode

__all__ = [
    "WriteOptions",
    "WriteProgress",
    "as_reader",
    "coalesce",
    "drop_pandas_index",
    "group_rows",
    "partition_values",
    "stage",
    "stage_into",
]


class _Inline(concurrent.futures.Executor):
    """An executor that runs each call at once on the calling thread: a write with one
    thread (the leaves of a row-level change, each staged by a worker of the caller's pool)
    pays no thread start and no hand-off per call."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


def _pool(threads: int) -> concurrent.futures.Executor:
    return ThreadPoolExecutor(max_workers=threads) if threads > 1 else _Inline()


def stage(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    data: Any,
    *,
    mode: WriteMode,
    target: pa.Schema,
    options: WriteOptions,
    progress: Callable[[WriteProgress], None] | None = None,
) -> PendingWrite:
    """Stage ``data`` as uncommitted fragments under the current spec; nothing is visible yet."""
    metadata = snapshot.metadata
    spec = metadata.current_spec
    reader = drop_pandas_index(as_reader(data), target.names)
    rows = 0
    with _pool(options.threads) as pool:
        stager = _Stager(manifest, snapshot, spec, target, options, pool)
        grouping: collections.deque[Future[_Grouped]] = collections.deque()
        try:
            chunks = _chunks(reader, options.chunk_bytes)
            while True:
                # the reader is consumed here, in order; up to `threads` chunks are grouped
                # ahead in the pool, and their groups are staged in input order
                for chunk in itertools.islice(chunks, options.threads - len(grouping)):
                    grouping.append(pool.submit(_group_chunk, chunk, metadata, spec, target))
                if not grouping:
                    break
                grouped = grouping.popleft().result()
                bounds = grouped.offsets.tolist()
                parts = stager.partitions_of(grouped.keys, len(bounds) - 1)
                stager.add_groups(parts, grouped.rows, bounds)
                stager.relieve()
                rows += grouped.rows.num_rows
                if progress is not None:
                    progress(WriteProgress(rows, len(stager.partitions), stager.staged_bytes))
            leaves = stager.finish()
            if progress is not None:  # every partition staged: the final byte count
                progress(WriteProgress(rows, len(stager.partitions), stager.staged_bytes))
        except BaseException:
            for pending in grouping:
                pending.cancel()
            stager.discard()
            raise
    namespaces: dict[str, dict[str, Any]] = {}
    for part in stager.partitions.values():
        for object_id, inherited in part.namespaces:
            namespaces.setdefault(object_id, inherited)
    return PendingWrite(
        spec_version=spec.version,
        leaf_schema=target,
        leaves=leaves,
        namespaces=namespaces,
        mode=mode,
    )


def stage_into(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    parts: Iterable[tuple[str, Mapping[str, Any], pa.Table]],
    *,
    target: pa.Schema,
    options: WriteOptions,
) -> PendingWrite:
    """Stage rows into leaves of ``snapshot`` known to hold them, for an append; nothing
    is visible yet.

    ``parts`` are (leaf object id, its partition values, rows in the leaf schema ``target``,
    as :func:`~lance_partitioned.consistency.conform_for_write` makes them): rows that
    belong to that leaf of the current spec by construction (an update that assigns no
    partition source column), so their partition values are neither computed nor looked
    up, and the leaf is not checked again (it was just read). Each leaf's rows are written
    on the pool as :func:`stage` writes them.
    """
    spec = snapshot.metadata.current_spec
    known: dict[str, dict[str, Any]] = {}
    with _pool(options.threads) as pool:
        stager = _Stager(manifest, snapshot, spec, target, options, pool)
        try:
            for object_id, values, rows in parts:
                location = snapshot.location(object_id)
                if location is None or object_id in stager.partitions:
                    raise errors.InternalError(
                        f"rows staged into leaf {object_id!r}, which the __manifest at "
                        f"{snapshot.version} does not list, or twice"
                    )
                part = _Partition(tuple(values.values()), [], object_id, location)
                stager.partitions[object_id] = part
                known[object_id] = dict(values)
                stager.add(part, rows, rows.nbytes)
                stager.relieve()
            leaves = [
                dataclasses.replace(leaf, values=known[leaf.object_id]) for leaf in stager.finish()
            ]
        except BaseException:
            stager.discard()
            raise
    return PendingWrite(
        spec_version=spec.version, leaf_schema=target, leaves=leaves, namespaces={}, mode="append"
    )
