"""The winning rows of a search read from memory: a leaf's asked columns kept per version.

A global search reads the columns of its top-k rows from the leaves that hold them
(late materialisation, :mod:`lance_partitioned.search.query`): one Lance ``take`` per such
leaf, about 0.3 ms each, a third of a search over a hundred leaves. A leaf version never
changes, so the second time rows of a leaf are read for the same columns, :func:`taken`
reads those columns of the whole leaf once (with the row ids) and keeps them: the next
reads are a lookup in memory, the same values Lance's ``take`` gives, in the order asked.

Kept per opened ``LanceDataset`` (the leaf cache, :mod:`lance_partitioned.runtime.leaf_cache`,
hands the same object to every read of a leaf version while that version is the one on disk:
a new version is a new object) and columns; a leaf whose columns would take more than
:data:`MAX_LEAF_BYTES` (estimated from the rows read the first time) is read by Lance each
time; at most :data:`MAX_BYTES` in all (least recently used dropped first).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np
import pyarrow as pa
from lance import LanceDataset

__all__ = [
    "MAX_BYTES",
    "MAX_LEAF_BYTES",
    "Columns",
    "clear",
    "in_memory",
    "kept_columns",
    "positions",
    "taken",
]

#: Bytes of columns kept in all.
MAX_BYTES = 128 << 20
#: A leaf's columns larger than this are never kept.
MAX_LEAF_BYTES = 32 << 20

_ROWID = "_rowid"
_SEEN = 4096


class Columns:
    """A leaf's columns, rows ordered by row id, and those row ids."""

    def __init__(self, table: pa.Table, row_ids: np.ndarray) -> None:
        self.table = table
        self.row_ids = row_ids
        self.nbytes = int(table.nbytes + row_ids.nbytes)


_Key = tuple[int, tuple[str, ...]]
_kept: OrderedDict[_Key, tuple[weakref.ref[LanceDataset], Columns]] = OrderedDict()
# leaves read once by Lance: their estimated size (None: too large to keep)
_seen: OrderedDict[_Key, tuple[weakref.ref[LanceDataset], bool]] = OrderedDict()
_bytes = 0
_lock = threading.Lock()


def _read(dataset: LanceDataset, columns: list[str]) -> Columns:
    table = dataset.to_table(columns=columns, with_row_id=True)
    row_ids = np.asarray(table.column(_ROWID).to_numpy(), np.uint64)
    table = table.select(columns)
    if len(row_ids) > 1 and np.any(row_ids[1:] < row_ids[:-1]):
        order = np.argsort(row_ids, kind="stable")
        table, row_ids = table.take(pa.array(order)), row_ids[order]
    return Columns(table.combine_chunks(), row_ids)


def positions(columns: Columns, row_ids: np.ndarray) -> np.ndarray | None:
    """The places of ``row_ids`` (uint64) in ``columns``' rows; None when one is not there."""
    kept = columns.row_ids
    if not len(kept):
        return None
    at = np.searchsorted(kept, row_ids)
    at[at >= len(kept)] = len(kept) - 1
    if not np.array_equal(kept[at], row_ids):
        return None  # a row not there: Lance says what it says
    return at


def _from_memory(columns: Columns, row_ids: np.ndarray) -> pa.Table | None:
    at = positions(columns, row_ids)
    return None if at is None else columns.table.take(pa.array(at))


def kept_columns(dataset: LanceDataset, columns: list[str]) -> Columns | None:
    """The kept ``columns`` of ``dataset`` (:func:`taken` reads them from memory), else None;
    no Lance call."""
    key = (id(dataset), tuple(columns))
    with _lock:
        found = _kept.get(key)
        if found is None or found[0]() is not dataset:
            return None
        _kept.move_to_end(key)
        return found[1]


def in_memory(dataset: LanceDataset, columns: list[str]) -> bool:
    """Whether :func:`taken` reads ``columns`` of ``dataset`` from memory (no Lance call)."""
    with _lock:
        found = _kept.get((id(dataset), tuple(columns)))
    return found is not None and found[0]() is dataset


def taken(dataset: LanceDataset, columns: list[str], row_ids: np.ndarray) -> pa.Table:
    """``dataset._take_rows(row_ids, columns)``: from memory when the leaf's columns are
    kept, else by Lance (the second read of the leaf's columns keeps them)."""
    global _bytes
    row_ids = np.asarray(row_ids, np.uint64)
    key = (id(dataset), tuple(columns))
    with _lock:
        found = _kept.get(key)
        if found is not None and found[0]() is dataset:
            _kept.move_to_end(key)
            kept: Columns | None = found[1]
        else:
            kept = None
            seen = _seen.get(key)
            again = seen is not None and seen[0]() is dataset and seen[1]
    if kept is not None:
        table = _from_memory(kept, row_ids)
        if table is not None:
            return table
        return dataset._take_rows(row_ids.tolist(), columns=columns)
    if not again:  # the first read: by Lance, the leaf's size estimated from it
        table = dataset._take_rows(row_ids.tolist(), columns=columns)
        per_row = table.nbytes / max(1, table.num_rows) + 8
        fits = per_row * dataset.count_rows() <= MAX_LEAF_BYTES
        with _lock:
            _seen[key] = (weakref.ref(dataset), fits)
            while len(_seen) > _SEEN:
                _seen.popitem(last=False)
        return table
    read = _read(dataset, columns)
    with _lock:
        if read.nbytes <= MAX_LEAF_BYTES:
            previous = _kept.pop(key, None)
            _bytes -= 0 if previous is None else previous[1].nbytes
            _kept[key] = (weakref.ref(dataset), read)
            _bytes += read.nbytes
            while _bytes > MAX_BYTES and _kept:
                _, (_, dropped) = _kept.popitem(last=False)
                _bytes -= dropped.nbytes
        else:
            _seen[key] = (weakref.ref(dataset), False)
    table = _from_memory(read, row_ids)
    return table if table is not None else dataset._take_rows(row_ids.tolist(), columns=columns)


def clear() -> None:
    """Forget every kept leaf's columns."""
    global _bytes
    with _lock:
        _kept.clear()
        _seen.clear()
        _bytes = 0
