"""The scan plan as columns: :class:`ScanTasks`, the sequence :func:`~lance_partitioned.scan.
plan_scan` returns, holds the positions of the kept leaves in the ``__manifest`` snapshot's
rows and builds a :class:`~lance_partitioned.scan.task.ScanTask` only when one is asked for.

A plan of 100k leaves is then a few Arrow calls (no Python object per leaf); its tasks are
built a block of rows at a time when the plan is iterated or indexed (the partition values,
``read_version``, location and row count of those rows only: the ``metadata`` JSON of a leaf
that is never looked at is never read). It behaves as the list of tasks did: ``len``,
indexing (negative too), slices, iteration, ``==`` with a list of tasks, ``bool``; pickled, it
is that list.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("country", pa.string())]),
...     partition_by="country")
>>> _ = ns.write(pa.table({"id": [1, 2, 3], "country": ["US", "FR", "DE"]}))
>>> tasks = ns.plan_scan()
>>> type(tasks).__name__, len(tasks)
('ScanTasks', 3)
>>> sorted(t.partition_values[0][1] for t in tasks)
['DE', 'FR', 'US']
>>> tasks[-1] == list(tasks)[2], tasks[1:] == list(tasks)[1:]
(True, True)
"""

from __future__ import annotations

import bisect
import contextlib
import gc
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import pyarrow as pa

from lance_partitioned.expressions import Predicate
from lance_partitioned.manifest import READ_VERSION, LeafStats
from lance_partitioned.manifest.root import READ_REFS
from lance_partitioned.scan.task import ScanTask

__all__ = ["LeafRows", "ScanTasks"]

#: Tasks built at once when a plan is iterated or indexed: one Arrow ``take`` and one
#: ``to_pylist`` per column for that many rows.
BLOCK = 256
#: Blocks built at once when a plan is iterated.
AHEAD = 32


@contextlib.contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while tasks are built: the many small
    objects (none in a cycle) make the collector walk the heap again and again, half of
    building 100k tasks. Resumed after, when it was running (a thread that finds it paused
    by another leaves it to that one to resume)."""
    running = gc.isenabled()
    if running:
        gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()


def _task(fields: dict[str, Any]) -> ScanTask:
    """A :class:`ScanTask` of every field, without the frozen dataclass's ``__init__`` (one
    ``object.__setattr__`` per field: a quarter of the cost of building a task)."""
    task = object.__new__(ScanTask)
    object.__setattr__(task, "__dict__", fields)
    return task


@dataclass(frozen=True)
class LeafRows:
    """The kept leaves of one partition spec version, as positions in the snapshot's rows.

    Attributes
    ----------
    rows : pyarrow.Table
        Every row of the ``__manifest`` snapshot (shared, never copied).
    positions : pyarrow.Array
        The kept leaves' positions in ``rows`` (int64), in task order.
    names : tuple of str
        The spec's partition field names (its ``__manifest`` columns), in spec order.
    filled : tuple of (int, str)
        ``(index in names, column)`` of the identity fields a leaf may lack the column of.
    residuals : tuple of Predicate
        The distinct residuals of the leaves.
    groups : pyarrow.Array or None
        The index in ``residuals`` of each leaf's residual, aligned with ``positions``
        (None: every leaf's is the first).
    spec_version : int
        The spec version of these leaves.
    table_uri : callable
        A leaf's URI from its ``location`` (:meth:`Manifest.table_uri`).
    shared : dict
        The fields every task of the plan has alike (storage options, manifest root and
        version...).
    """

    rows: pa.Table
    positions: pa.Array
    names: tuple[str, ...]
    filled: tuple[tuple[int, str], ...]
    residuals: tuple[Predicate, ...]
    groups: pa.Array | None
    spec_version: int
    table_uri: Callable[[str], str]
    shared: dict[str, Any]

    def __len__(self) -> int:
        return len(self.positions)

    def _column(self, name: str, picked: pa.Array, dtype: pa.DataType) -> pa.Array:
        if name in self.rows.column_names:
            return self.rows.column(name).take(picked)
        return pa.nulls(len(picked), dtype)

    def build(self, start: int, stop: int) -> list[ScanTask]:
        """The tasks of the kept leaves ``start`` to ``stop`` (positions in this block)."""
        picked = self.positions.slice(start, stop - start)
        n = len(picked)
        ids = self.rows.column("object_id").take(picked).to_pylist()
        locations = self.rows.column("location").take(picked).to_pylist()
        versions = self._column(READ_VERSION, picked, pa.int64())
        counts = LeafStats.num_rows_column(self._column("metadata", picked, pa.string()), versions)
        branch, tag = (self._column(name, picked, pa.string()).to_pylist() for name in READ_REFS)
        columns = [self._column(name, picked, pa.null()).to_pylist() for name in self.names]
        values = list(zip(*columns, strict=True)) if columns else [()] * n
        groups = None if self.groups is None else self.groups.slice(start, n).to_pylist()
        out: list[ScanTask] = []
        for i, read_version in enumerate(versions.to_pylist()):
            row = values[i]
            out.append(
                _task(
                    {
                        "object_id": ids[i],
                        "uri": self.table_uri(locations[i]),
                        "read_version": None if read_version is None else int(read_version),
                        "spec_version": self.spec_version,
                        "partition_values": tuple(zip(self.names, row, strict=True)),
                        "residual": self.residuals[0 if groups is None else groups[i]],
                        "row_count": counts[i],
                        "filled": tuple((c, row[j]) for j, c in self.filled if row[j] is not None),
                        "read_branch": branch[i],
                        "read_tag": tag[i],
                        **self.shared,
                    }
                )
            )
        return out

    def slice(self, start: int, stop: int) -> LeafRows:
        """These leaves from ``start`` to ``stop``."""
        groups = None if self.groups is None else self.groups.slice(start, stop - start)
        return LeafRows(
            self.rows,
            self.positions.slice(start, stop - start),
            self.names,
            self.filled,
            self.residuals,
            groups,
            self.spec_version,
            self.table_uri,
            self.shared,
        )


class ScanTasks(Sequence[ScanTask]):
    """The tasks of a scan plan, built from the ``__manifest`` columns when asked for.

    A read-only sequence of :class:`~lance_partitioned.scan.task.ScanTask` that behaves as
    a list of them (equal to the list of the same tasks; pickled as that list). Each task
    is built once, a block of :data:`BLOCK` leaves at a time, and kept.

    Parameters
    ----------
    parts : sequence of LeafRows
        The kept leaves of each spec version, in task order.
    """

    def __init__(self, parts: Sequence[LeafRows] = ()) -> None:
        self._parts = [part for part in parts if len(part)]
        self._starts: list[int] = []
        total = 0
        for part in self._parts:
            self._starts.append(total)
            total += len(part)
        self._len = total
        self._built: dict[tuple[int, int], list[ScanTask]] = {}

    def __len__(self) -> int:
        return self._len

    def _block(self, part: int, block: int, ahead: int = 1) -> list[ScanTask]:
        """The tasks of block ``block`` of part ``part``, built with the next blocks not
        built yet (up to ``ahead`` blocks in all: one Arrow call per column for them all)."""
        tasks = self._built.get((part, block))
        if tasks is None:
            leaves = self._parts[part]
            last = min(block + ahead, (len(leaves) + BLOCK - 1) // BLOCK)
            stop = block + 1
            while stop < last and (part, stop) not in self._built:
                stop += 1
            with _collection_paused():
                built = leaves.build(block * BLOCK, min(stop * BLOCK, len(leaves)))
            for b in range(block, stop):
                self._built[(part, b)] = built[(b - block) * BLOCK : (b - block + 1) * BLOCK]
            tasks = self._built[(part, block)]
        return tasks

    @overload
    def __getitem__(self, index: int) -> ScanTask: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ScanTask]: ...

    def __getitem__(self, index: int | slice) -> ScanTask | Sequence[ScanTask]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return self._slice(start, max(start, stop))
        try:
            i = index.__index__()
        except AttributeError:
            raise TypeError(
                f"ScanTasks indices must be integers or slices, not {type(index).__name__}"
            ) from None
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("ScanTasks index out of range")
        part = bisect.bisect_right(self._starts, i) - 1
        offset = i - self._starts[part]
        return self._block(part, offset // BLOCK)[offset % BLOCK]

    def _slice(self, start: int, stop: int) -> ScanTasks:
        parts: list[LeafRows] = []
        for first, leaves in zip(self._starts, self._parts, strict=True):
            low, high = max(start - first, 0), min(stop - first, len(leaves))
            if low < high:
                parts.append(leaves if (low, high) == (0, len(leaves)) else leaves.slice(low, high))
        return ScanTasks(parts)

    def object_ids(self) -> pa.Array:
        """The tasks' object ids, in task order, without building the tasks."""
        ids = [leaves.rows.column("object_id").take(leaves.positions) for leaves in self._parts]
        return pa.chunked_array(ids, pa.string()).combine_chunks()

    def __iter__(self) -> Iterator[ScanTask]:
        for part, leaves in enumerate(self._parts):
            for block in range((len(leaves) + BLOCK - 1) // BLOCK):
                yield from self._block(part, block, AHEAD)

    def __reversed__(self) -> Iterator[ScanTask]:
        return reversed(list(self))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ScanTasks | list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-like, as the list was

    def __repr__(self) -> str:
        return repr(list(self))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as the list of its tasks (what a Spark executor or another process needs;
        not the whole ``__manifest`` snapshot)."""
        return (list, (list(self),))
