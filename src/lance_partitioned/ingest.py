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
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import itertools
import os
import sys
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

import lance.fragment
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors
from lance_partitioned.alignment import aligned
from lance_partitioned.consistency import conform_for_write
from lance_partitioned.manifest import (
    Manifest,
    ManifestSnapshot,
    leaf_location,
    leaf_object_id,
    local_path,
    partition_name,
    spec_namespace_id,
    value_tokens,
)
from lance_partitioned.runtime import max_workers
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.multicolumn import MultiColumn, sources_of
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.sourcepaths import source_values
from lance_partitioned.transaction import LeafWrite, PendingWrite, WriteMode

__all__ = [
    "WriteOptions",
    "WriteProgress",
    "as_reader",
    "drop_pandas_index",
    "group_rows",
    "stage",
    "stage_into",
]


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


def as_reader(data: Any) -> pa.RecordBatchReader:
    """Anything that speaks Arrow, as a stream of record batches.

    Accepts a ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``, any object with
    ``__arrow_c_stream__`` (pandas, polars, DuckDB results), a Polars ``LazyFrame`` (run
    with Polars' streaming engine, its batches read one at a time), or an iterable of
    record batches.

    >>> as_reader(pa.table({"a": [1, 2]})).read_all().num_rows
    2
    >>> as_reader([pa.record_batch({"a": [1]}), pa.record_batch({"a": [2]})]).read_all().num_rows
    2
    """
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table):
        return data.to_reader()
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatchReader.from_batches(data.schema, [data])
    polars = sys.modules.get("polars")  # a LazyFrame comes with polars imported
    if polars is not None and isinstance(data, polars.LazyFrame):
        return _lazy_frame(data)
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, dict)):
        iterator = iter(data)
        try:
            first = next(iterator)
        except StopIteration:
            raise errors.InvalidInputError(
                "cannot write an empty iterable: it has no schema (pass an empty "
                "pyarrow.Table instead)"
            ) from None
        if isinstance(first, pa.Table):
            batches: Iterator[Any] = itertools.chain([first], iterator)
            flat = (
                b for t in batches for b in (t.to_batches() if isinstance(t, pa.Table) else [t])
            )
            return pa.RecordBatchReader.from_batches(first.schema, flat)
        if isinstance(first, pa.RecordBatch):
            return pa.RecordBatchReader.from_batches(
                first.schema, itertools.chain([first], iterator)
            )
    raise errors.InvalidInputError(
        f"cannot write an object of type {type(data).__name__}: pass a pyarrow Table, "
        "RecordBatch or RecordBatchReader, an object with __arrow_c_stream__, or an "
        "iterable of RecordBatches"
    )


def _lazy_frame(frame: Any) -> pa.RecordBatchReader:
    """A Polars ``LazyFrame`` as a stream: ``collect_batches`` runs the query with the
    streaming engine and hands over one ``DataFrame`` at a time (never the whole result)."""
    import polars as pl

    schema = pa.RecordBatchReader.from_stream(pl.DataFrame(schema=frame.collect_schema())).schema

    def batches() -> Iterator[pa.RecordBatch]:
        for part in frame.collect_batches(engine="streaming"):
            for batch in pa.RecordBatchReader.from_stream(part):
                yield batch if batch.schema == schema else batch.cast(schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


def drop_pandas_index(reader: pa.RecordBatchReader, keep: Collection[str]) -> pa.RecordBatchReader:
    """``reader`` without the columns that hold a pandas index (``__index_level_0__``, or a
    named index) when they are not in ``keep`` (the namespace's columns), as deltalake and
    pylance do: a filtered DataFrame's index is not data. An index named like a namespace
    column stays, as that column.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"a": [1, 2, 3]}).iloc[[0, 2]]
    >>> drop_pandas_index(pa.RecordBatchReader.from_stream(frame), ["a"]).schema.names
    ['a']
    """
    metadata = reader.schema.pandas_metadata
    if not metadata:
        return reader
    names = reader.schema.names
    index = [c for c in metadata.get("index_columns", []) if isinstance(c, str)]
    dropped = {c for c in index if c not in keep and c in names}
    if not dropped:
        return reader
    kept = [i for i, name in enumerate(names) if name not in dropped]
    schema = pa.schema([reader.schema.field(i) for i in kept])
    return pa.RecordBatchReader.from_batches(
        schema, (batch.select(kept) for batch in _batches(reader))
    )


# Below this many key combinations, group codes are combined arithmetically (no second hash).
_DIRECT_CODES = 1 << 20


def _chunks(reader: pa.RecordBatchReader, chunk_bytes: int) -> Iterator[pa.Table]:
    """The input in tables of about ``chunk_bytes``: small batches are gathered, big ones cut
    (zero-copy) into even pieces that stay whole chunks, so most chunks are one contiguous
    batch (a gather from several batches first concatenates them)."""
    pending: list[pa.RecordBatch] = []
    size = 0
    for batch in _batches(reader):
        if batch.num_rows == 0:
            continue
        if batch.nbytes >= chunk_bytes:
            if pending:
                yield pa.Table.from_batches(pending, schema=reader.schema)
                pending, size = [], 0
            pieces = -(-batch.nbytes // chunk_bytes)
            step = -(-batch.num_rows // pieces)
            for start in range(0, batch.num_rows, step):
                yield pa.Table.from_batches([batch.slice(start, step)], schema=reader.schema)
            continue
        pending.append(batch)
        size += batch.nbytes
        if size >= chunk_bytes:
            yield pa.Table.from_batches(pending, schema=reader.schema)
            pending, size = [], 0
    if pending:
        yield pa.Table.from_batches(pending, schema=reader.schema)


def _batches(reader: pa.RecordBatchReader) -> Iterator[pa.RecordBatch]:
    """The reader's batches; a batch whose schema differs from the reader's (an iterable of
    batches of several schemas) is a :class:`~lance_partitioned.errors.SchemaMismatchError`."""
    iterator = iter(reader)
    while True:
        try:
            batch = next(iterator)
        except StopIteration:
            return
        except pa.ArrowInvalid as exc:
            if "schema" not in str(exc).lower():
                raise
            raise _mixed(reader.schema, str(exc)) from exc
        if not batch.schema.equals(reader.schema, check_metadata=False):
            raise _mixed(reader.schema, f"a batch has the schema {batch.schema}")
        yield batch


def _mixed(first: pa.Schema, problem: str) -> errors.SchemaMismatchError:
    return errors.SchemaMismatchError(
        f"the record batches of one write must share one schema, the first batch's ({first}); "
        f"{problem}. Cast them to one schema first"
    )


# Lance pays about half a millisecond per input batch: smaller slices are merged up to this
# many rows (or bytes, for wide rows) per batch when a partition is staged.
_BATCH_ROWS = 1 << 16
_BATCH_BYTES = 8 << 20


def coalesce(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """``batches`` with runs of small ones merged, lazily, into batches of about ``rows``
    rows; a batch that is big enough on its own passes as it is (no copy).

    >>> small = [pa.record_batch({"a": [i]}) for i in range(5)]
    >>> [b.num_rows for b in coalesce(small, rows=2)]
    [2, 2, 1]
    >>> big = pa.record_batch({"a": list(range(4))})
    >>> [b.num_rows for b in coalesce([small[0], big, small[1]], rows=2)]
    [1, 4, 1]
    """
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows >= rows:
            if pending:
                yield pa.concat_batches(pending)
                pending, count = [], 0
            yield batch
            continue
        pending.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pa.concat_batches(pending)
            pending, count = [], 0
    if pending:
        yield pa.concat_batches(pending)


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
        encoded = pc.dictionary_encode(key, null_encoding="encode")
        if isinstance(encoded, pa.ChunkedArray):
            encoded = encoded.combine_chunks()
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        width = max(1, len(encoded.dictionary))
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


@dataclass(frozen=True)
class _Grouped:
    """One input chunk in the leaf schema, its rows in partition order."""

    rows: pa.Table  # group ``g`` is ``rows[offsets[g]:offsets[g+1]]``
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
    rows = table if order is None else table.take(order)
    return _Grouped(rows, offsets, [key.take(first) for key in keys])


@dataclass
class _Partition:
    values: tuple[Any, ...]
    namespaces: list[tuple[str, dict[str, Any]]]
    object_id: str
    location: str
    buffer: list[pa.Table] = field(default_factory=list)
    buffered: int = 0
    rows: int = 0
    fragments: list[Any] = field(default_factory=list)
    futures: list[Future[list[Any]]] = field(default_factory=list)
    directory_existed: bool | None = None  # local leaf directory before this write (None: unknown)


class _Stager:
    """Per-partition buffers flushed to uncommitted fragments on a thread pool."""

    def __init__(
        self,
        manifest: Manifest,
        snapshot: ManifestSnapshot,
        spec: PartitionSpec,
        target: pa.Schema,
        options: WriteOptions,
        pool: concurrent.futures.Executor,
    ) -> None:
        self.manifest = manifest
        self.snapshot = snapshot
        self.spec = spec
        self.target = target
        self.options = options
        self.pool = pool
        self.partitions: dict[str, _Partition] = {}
        self._by_tokens: dict[tuple[str, ...], _Partition] = {}
        self.buffered = 0
        self.staged_bytes = 0  # bytes of the data files written so far
        self._staged_lock = threading.Lock()
        # buffers handed to the pool and not yet written, with their sizes
        self.in_flight: collections.deque[tuple[Future[list[Any]], int]] = collections.deque()
        self.staging = 0

    def _check_leaf(self, object_id: str, location: str) -> None:
        """Before staging into an existing leaf on a local file system, check that its
        directory and its pinned version are there (two ``stat`` calls), so that a damaged
        namespace fails before anything is written. Elsewhere the leaf commit finds it."""
        uri = self.manifest.table_uri(location)
        path = local_path(uri)
        if path is None:
            return
        version = self.snapshot.read_version(object_id)
        versions = os.path.join(path, "_versions")
        if not os.path.isdir(versions):
            problem = "the leaf directory (or its _versions) does not exist"
        elif version is not None and not any(
            os.path.exists(os.path.join(versions, name))
            for name in (f"{_U64_MAX - version:020d}.manifest", f"{version}.manifest")
        ):
            problem = f"its pinned version {version} does not exist"
        else:
            return
        raise errors.CorruptNamespaceError(
            f"leaf table {object_id!r} of the __manifest is damaged at {uri!r}: {problem}. "
            "Nothing was written; restore the leaf, or replace the namespace's data with a "
            "write in mode 'overwrite'"
        )

    def partition(self, scalars: list[pa.Scalar]) -> _Partition:
        """The partition of one group (NULL and NaN too).

        An existing partition is found by (spec version, partition values) in the
        ``__manifest``, whatever its names are (another client's are random); only the levels
        that do not exist yet get derived names.
        """
        version = self.spec.version
        parent = spec_namespace_id(version)
        existing = self.snapshot.find_leaf(version, scalars)
        chain = []
        if existing is not None:
            parts = existing.split("$")[:-1]
            chain = ["$".join(parts[: i + 1]) for i in range(1, len(parts))]
            parent = "$".join(parts)
        else:
            for scalar in scalars:
                found = self.snapshot.find_namespace(parent, scalar)
                parent = found or f"{parent}${partition_name(version, parent, scalar)}"
                chain.append(parent)
        object_id = leaf_object_id(parent)
        found_part = self.partitions.get(object_id)
        if found_part is not None:
            return found_part
        values = tuple(s.as_py() for s in scalars)
        names = [spec_field.name for spec_field in self.spec.fields]
        namespaces = [
            (ns_id, dict(zip(names[: i + 1], values[: i + 1], strict=True)))
            for i, ns_id in enumerate(chain)
        ]
        location = self.snapshot.location(object_id) or leaf_location(object_id)
        created = _Partition(values, namespaces, object_id, location)
        if self.snapshot.has(object_id):
            self._check_leaf(object_id, location)
        self.partitions[object_id] = created
        return created

    def partitions_of(self, keys: list[pa.Array], groups: int) -> list[_Partition]:
        """The partition of each of ``groups`` groups, whose values are ``key[g]``.

        Partitions seen in earlier chunks are found by the value tokens their names are
        derived from (:func:`~lance_partitioned.manifest.value_tokens`), without deriving the
        names again.
        """
        columns = [value_tokens(key) for key in keys]
        found = []
        for g, tokens in enumerate(zip(*columns, strict=True) if columns else [()] * groups):
            part = self._by_tokens.get(tokens)
            if part is None:
                part = self.partition([key[g] for key in keys])
                self._by_tokens[tokens] = part
            found.append(part)
        return found

    def add(self, part: _Partition, rows: pa.Table, nbytes: int) -> None:
        """Buffer ``rows`` (about ``nbytes``: a slice's exact size is costly to measure)."""
        part.buffer.append(rows)
        part.buffered += nbytes
        part.rows += rows.num_rows
        self.buffered += nbytes
        if part.buffered >= self.options.flush_bytes:
            self.flush(part)

    def relieve(self) -> None:
        """Keep the bytes held, buffered or being staged, within ``max_buffer_bytes``.

        Staging writes that finished free their buffers; while more is held, the oldest is
        waited for (backpressure on the input). Once the buffers alone reach the budget, all
        of them are flushed: buffers are slices of the grouped input chunks, so a chunk's
        memory is only released once every partition holding a slice of it has flushed, and
        flushing all at once is what actually bounds memory.
        """
        budget = self.options.max_buffer_bytes
        while self.in_flight and (
            self.in_flight[0][0].done() or self.buffered + self.staging > budget
        ):
            future, nbytes = self.in_flight.popleft()
            future.result()
            self.staging -= nbytes
        if self.buffered >= budget:
            for part in self.partitions.values():
                self.flush(part)

    def flush(self, part: _Partition) -> None:
        """Hand the partition's buffer to the pool, to be staged as fragments."""
        if not part.buffer:
            return
        buffer, nbytes = part.buffer, part.buffered
        self.buffered -= nbytes
        part.buffer, part.buffered = [], 0
        uri = self.manifest.table_uri(part.location)
        if part.directory_existed is None and local_path(uri) is not None:
            part.directory_existed = os.path.exists(local_path(uri) or "")
        # staged with the field ids of a new leaf in the leaf schema, never against what is in
        # the leaf directory (its latest version may be an orphan of any schema): the commit
        # maps them to the ids of the leaf version it commits on
        mode = "overwrite" if self.snapshot.has(part.object_id) else "create"
        future = self.pool.submit(self._write, buffer, uri, mode, nbytes)
        part.futures.append(future)
        self.in_flight.append((future, nbytes))
        self.staging += nbytes

    def _write(self, buffer: list[pa.Table], uri: str, mode: str, nbytes: int) -> list[Any]:
        # The buffer's slices are concatenated here, on the pool, not on the thread that reads
        # the input. A partition of many slices is merged lazily as Lance reads it, so one
        # merged batch is in memory at a time, not a second copy of the partition; a small one
        # is merged at once (reading a Python generator makes Lance take the GIL for each
        # batch), and then its alignment is checked on one chunk per column instead of on
        # every slice (a leaf of a write of many leaves holds a slice of every input chunk,
        # and the check is Python code, run under the GIL).
        # Lance panics on a buffer not aligned for its type: aligned() copies those.
        data = pa.concat_tables(buffer)
        rows = max(1, min(_BATCH_ROWS, _BATCH_BYTES * data.num_rows // max(1, nbytes)))
        merged = aligned(data.combine_chunks()) if data.num_rows <= rows else None
        if merged is None:
            data = aligned(data)

        def source() -> pa.Table | pa.RecordBatchReader:
            if merged is not None:
                return merged
            return pa.RecordBatchReader.from_batches(data.schema, coalesce(data.to_batches(), rows))

        def stage(mode: str) -> list[Any]:
            return cast(
                list[Any],
                lance.fragment.write_fragments(
                    source(),
                    uri,
                    schema=self.target,
                    mode=mode,
                    max_rows_per_file=self.options.max_rows_per_file,
                    storage_options=self.manifest.storage_options or None,
                ),
            )

        # A new partition is staged in mode "create": in any other mode Lance logs "No
        # existing dataset ... it will be created" once per new leaf, whatever LANCE_LOG says
        # once ``lance`` was imported before us. Where a Lance table already is (a leaf of the
        # __manifest, or the orphan directory of a new one), Lance refuses "create" before
        # reading any row, and "overwrite" stages the same fragments without logging.
        if mode == "create":
            try:
                return self._staged(stage("create"))
            except OSError as exc:
                if "already exists" not in str(exc):
                    raise
        return self._staged(stage("overwrite"))

    def _staged(self, fragments: list[Any]) -> list[Any]:
        """Count the bytes of staged ``fragments`` (``WriteProgress.bytes_staged``)."""
        written = sum(f.file_size_bytes or 0 for m in fragments for f in m.files)
        with self._staged_lock:
            self.staged_bytes += written
        return fragments

    def discard(self) -> None:
        """After a failure: wait for the staging writes under way and remove the files of
        every fragment staged so far, then the leaf directories this write created if nothing
        else is in them (local file systems; elsewhere the files stay, invisible, for
        Lance's cleanup). Staged fragments are in no leaf version, so nothing refers to them.
        """
        for part in self.partitions.values():
            futures = [f for f in part.futures if not f.cancel()]
            concurrent.futures.wait(futures)
            fragments = [
                *part.fragments,
                *(
                    fragment
                    for future in futures
                    if future.exception() is None
                    for fragment in future.result()
                ),
            ]
            root = local_path(self.manifest.table_uri(part.location))
            if root is None:
                continue
            for fragment in fragments:
                for data_file in fragment.files:
                    with contextlib.suppress(OSError):
                        os.remove(os.path.join(root, "data", data_file.path))
            if part.directory_existed is False:
                for directory in (os.path.join(root, "data"), root):
                    with contextlib.suppress(OSError):
                        os.rmdir(directory)  # only when empty: another writer may share it

    def finish(self) -> list[LeafWrite]:
        """Stage what is left in every buffer; the leaves in the order they were first seen."""
        for part in self.partitions.values():
            self.flush(part)
        leaves = []
        for part in self.partitions.values():
            for future in part.futures:
                part.fragments.extend(future.result())
            leaves.append(
                LeafWrite(
                    object_id=part.object_id,
                    location=part.location,
                    fragments=part.fragments,
                    rows=part.rows,
                    values=dict(part.namespaces[-1][1]) if part.namespaces else {},
                )
            )
        return leaves


_U64_MAX = (1 << 64) - 1  # Lance's V2 manifest paths name version v as u64::MAX - v


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
                row_bytes = grouped.rows.nbytes / max(1, grouped.rows.num_rows)
                for g, part in enumerate(stager.partitions_of(grouped.keys, len(bounds) - 1)):
                    begin, length = bounds[g], bounds[g + 1] - bounds[g]
                    stager.add(part, grouped.rows.slice(begin, length), int(length * row_bytes))
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
