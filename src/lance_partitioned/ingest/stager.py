"""Per-partition buffers of a write, flushed to uncommitted Lance fragments in each
partition's leaf directory on the write's thread pool, within a memory budget."""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import os
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, cast

import lance.fragment
import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.alignment import aligned
from lance_partitioned.ingest.options import WriteOptions
from lance_partitioned.ingest.reading import coalesce
from lance_partitioned.manifest import (
    Manifest,
    ManifestSnapshot,
    leaf_location,
    leaf_object_id,
    local_path,
    spec_namespace_id,
    token_name,
    value_tokens,
)
from lance_partitioned.runtime.staging import file_version, stage_fragment
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.transaction import LeafWrite

# Lance pays about half a millisecond per input batch: smaller slices are merged up to this
# many rows (or bytes, for wide rows) per batch when a partition is staged.
_BATCH_ROWS = 1 << 16
_BATCH_BYTES = 8 << 20


_U64_MAX = (1 << 64) - 1  # Lance's V2 manifest paths name version v as u64::MAX - v

# A partition's buffer: (rows, first row, row count) of grouped input chunks, sliced when staged
_Buffer: TypeAlias = list[tuple[pa.Table | pa.RecordBatch, int, int]]


@dataclass
class _Partition:
    values: tuple[Any, ...]
    namespaces: list[tuple[str, dict[str, Any]]]
    object_id: str
    location: str
    # (rows, first row, row count): the partition's rows of a grouped input chunk that every
    # partition of it shares, sliced only when staged (a pyarrow Table per slice is about 3 KB,
    # and 10M rows into 731 partitions make 28,000 slices)
    buffer: _Buffer = field(default_factory=list)
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
        # by leaf URI: the file format to stage in without looking at the
        # leaf (False: unknown, staged by write_fragments; runtime.staging.file_version)
        self.formats: dict[str, str | Literal[False] | None] = {}

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

    def partition(
        self, scalars: list[pa.Scalar], tokens: tuple[str, ...] | None = None
    ) -> _Partition:
        """The partition of one group (NULL and NaN too), whose values are ``scalars``
        (``tokens``: their :func:`~lance_partitioned.manifest.value_tokens`, when known).

        An existing partition is found by (spec version, partition values) in the
        ``__manifest``, whatever its names are (another client's are random); only the levels
        that do not exist yet get derived names.
        """
        if tokens is None:
            tokens = tuple(value_tokens(pa.array([s], s.type))[0] for s in scalars)
        version = self.spec.version
        parent = spec_namespace_id(version)
        existing = self.snapshot.leaf_of_tokens(version, tokens)
        chain = []
        if existing is not None:
            parts = existing.split("$")[:-1]
            chain = ["$".join(parts[: i + 1]) for i in range(1, len(parts))]
            parent = "$".join(parts)
        else:
            for scalar, token in zip(scalars, tokens, strict=True):
                found = self.snapshot.namespace_of_token(parent, token)
                parent = found or f"{parent}${token_name(version, parent, scalar.type, token)}"
                chain.append(parent)
        object_id = leaf_object_id(parent)
        found_part = self.partitions.get(object_id)
        if found_part is not None:
            return found_part
        values = tuple(s.as_py() for s in scalars)
        names = self.spec.names
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
        names again; a new one is named from its tokens.
        """
        columns = [value_tokens(key) for key in keys]
        found = []
        for g, tokens in enumerate(zip(*columns, strict=True) if columns else [()] * groups):
            part = self._by_tokens.get(tokens)
            if part is None:
                part = self.partition([key[g] for key in keys], tokens)
                self._by_tokens[tokens] = part
            found.append(part)
        return found

    def add(
        self,
        part: _Partition,
        rows: pa.Table | pa.RecordBatch,
        nbytes: int,
        begin: int = 0,
        length: int | None = None,
    ) -> None:
        """Buffer ``length`` rows of ``rows`` from ``begin`` (default: all of them), about
        ``nbytes`` (a slice's exact size is costly to measure). The slice is taken when the
        buffer is staged."""
        count = rows.num_rows - begin if length is None else length
        part.buffer.append((rows, begin, count))
        part.buffered += nbytes
        part.rows += count
        self.buffered += nbytes
        if part.buffered >= self.options.flush_bytes:
            self.flush(part)

    def add_groups(
        self, parts: list[_Partition], rows: pa.Table | pa.RecordBatch, offsets: list[int]
    ) -> None:
        """:meth:`add` of each group of a grouped chunk: group ``g``, rows
        ``offsets[g]:offsets[g+1]`` of ``rows``, to ``parts[g]`` (one call per chunk: a chunk
        of a write of many leaves has a group per leaf)."""
        row_bytes = rows.nbytes / max(1, rows.num_rows)
        flush_bytes = self.options.flush_bytes
        added = 0
        for part, begin, end in zip(parts, offsets, offsets[1:], strict=False):
            nbytes = int((end - begin) * row_bytes)
            part.buffer.append((rows, begin, end - begin))
            part.buffered += nbytes
            part.rows += end - begin
            added += nbytes
            if part.buffered >= flush_bytes:
                self.buffered += added
                added = 0
                self.flush(part)
        self.buffered += added

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
        if uri not in self.formats:
            self.formats[uri] = file_version(
                uri,
                None if mode == "create" else self.snapshot.read_version(part.object_id),
                new=mode == "create",
                storage_options=self.manifest.storage_options or None,
            )
        future = self.pool.submit(self._write, buffer, uri, mode, nbytes)
        part.futures.append(future)
        self.in_flight.append((future, nbytes))
        self.staging += nbytes

    def _write(self, buffer: _Buffer, uri: str, mode: str, nbytes: int) -> list[Any]:
        # The buffer's slices are concatenated here, on the pool, not on the thread that reads
        # the input. A partition of many slices is merged lazily as Lance reads it, so one
        # merged batch is in memory at a time, not a second copy of the partition; a small one
        # is merged at once (reading a Python generator makes Lance take the GIL for each
        # batch), and then its alignment is checked on one chunk per column instead of on
        # every slice (a leaf of a write of many leaves holds a slice of every input chunk,
        # and the check is Python code, run under the GIL).
        # The slices are record batches (a grouped chunk is one), merged by one
        # concat_batches: a copy of each row, without a Table and a ChunkedArray per column
        # for each slice.
        # Lance panics on a buffer not aligned for its type: aligned() copies those.
        schema = buffer[0][0].schema
        pieces = _batches_of(buffer)
        data = pa.Table.from_batches(pieces, schema=schema)
        rows = max(1, min(_BATCH_ROWS, _BATCH_BYTES * data.num_rows // max(1, nbytes)))
        merged = None
        if data.num_rows <= rows:
            whole = [pa.concat_batches(pieces)] if len(pieces) > 1 else pieces
            merged = aligned(pa.Table.from_batches(whole, schema=schema))
        else:
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

        version = self.formats.get(uri, False)
        if (
            version is not False
            and data.num_rows <= self.options.max_rows_per_file
            and data.schema.equals(self.target)
        ):
            # one file: written without looking at the leaf first
            whole = merged if merged is not None else data  # aligned either way
            fragment = stage_fragment(
                whole,
                whole.to_batches() if merged is not None else coalesce(data.to_batches(), rows),
                uri,
                schema=self.target,
                version=version,
                storage_options=self.manifest.storage_options or None,
            )
            return self._staged([fragment])
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


def _batches_of(buffer: _Buffer) -> list[pa.RecordBatch]:
    """The record batches of a partition's buffer: each entry's rows ``begin`` to
    ``begin + count`` (zero-copy slices), in order."""
    pieces: list[pa.RecordBatch] = []
    for rows, begin, count in buffer:
        piece = rows.slice(begin, count)
        if isinstance(piece, pa.RecordBatch):
            pieces.append(piece)
        else:
            pieces.extend(piece.to_batches())
    return pieces
