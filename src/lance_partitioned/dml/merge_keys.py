"""The key match of a merge without clause conditions, in Arrow and numpy (issue 31).

A merge whose WHEN MATCHED clauses have no condition needs, per searched leaf, only the
pairs (target row, source row) whose keys are equal: no SQL. :class:`SourceKeys` encodes the
source's keys once per merge (each key column's distinct values, every source row's code
among them, the rows sorted by code); each leaf's key columns are then probed against it
(``numpy.searchsorted`` in an integer key's sorted values, ``pyarrow.compute.index_in``
for other types; ``numpy.searchsorted`` again for the rows): no DataFusion context, no SQL
parsed and no copy of the source registered per leaf, which a merge on a non-partition key
paid on each of hundreds of leaves.

The match is the DataFusion join's: a key that is NULL-safe (``safe``) matches NULL to
NULL, any other key never matches a NULL; several source rows with a key each pair with
every target row of that key. Key types whose equality Arrow's hashing and SQL's ``=``
could disagree on (floating point: ``NaN``, ``-0.0``; nested types) are left to the SQL
join (:meth:`SourceKeys.build` returns None).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["SourceKeys", "sorted_unique", "supported"]

_LIMIT = np.iinfo(np.int64).max


def supported(kind: pa.DataType) -> bool:
    """Whether keys of type ``kind`` are matched here: integers, strings, binaries,
    booleans, dates, times, timestamps, durations and decimals (values equal exactly when
    their Arrow representations are).

    >>> supported(pa.int32()), supported(pa.string()), supported(pa.float64())
    (True, True, False)
    """
    t = pa.types
    return bool(
        t.is_integer(kind)
        or t.is_string(kind)
        or t.is_large_string(kind)
        or t.is_binary(kind)
        or t.is_large_binary(kind)
        or t.is_fixed_size_binary(kind)
        or t.is_boolean(kind)
        or t.is_temporal(kind)
        or t.is_decimal(kind)
    )


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``values``' distinct values, sorted: ``numpy.unique`` by a sort (numpy 2.4's
    ``unique`` hashes: 1.5 s for a million int64 values, where sorting takes 0.05 s).

    >>> sorted_unique(np.array([3, 1, 3, 2])).tolist()
    [1, 2, 3]
    """
    ordered = np.sort(values, kind="stable")
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def _flat(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


class _Dictionary:
    """One key column's distinct source values, and each value's code among them (0 to
    ``size - 1``; -1 for a value the source lacks). Integers are looked up in their sorted
    values (``numpy.searchsorted``: nothing is hashed again per leaf), NULL as the code
    after them; other types in an Arrow dictionary (``pyarrow.compute.index_in``)."""

    def __init__(self, column: pa.Array) -> None:
        self.type = column.type
        self.values: np.ndarray | None = None
        self.dictionary: pa.Array | None = None
        self.null_code = -1  # NULL's code: none when the source has no NULL there
        if pa.types.is_integer(column.type):
            present = column.drop_null() if column.null_count else column
            self.values = sorted_unique(np.asarray(present.to_numpy(zero_copy_only=False)))
            if column.null_count:
                self.null_code = len(self.values)
            self.size = len(self.values) + 1
        else:
            self.dictionary = pc.unique(column)
            self.size = max(1, len(self.dictionary))

    def codes(self, column: pa.Array) -> np.ndarray:
        """Each value's code (-1: not among the source's)."""
        if self.dictionary is not None:
            found = pc.index_in(column, value_set=self.dictionary, skip_nulls=False)
            return np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
        values = self.values if self.values is not None else np.zeros(0, dtype=np.int64)
        data = np.asarray(column.fill_null(0).to_numpy(zero_copy_only=False))
        at = np.searchsorted(values, data)
        hit = at < len(values)
        hit[hit] = values[at[hit]] == data[hit]
        codes = np.where(hit, at, -1).astype(np.int64)
        if column.null_count:
            codes[np.asarray(column.is_null().to_numpy(zero_copy_only=False))] = self.null_code
        return codes


@dataclass(frozen=True)
class SourceKeys:
    """A merge source's keys, encoded once for every leaf's probe.

    ``dictionaries``: each key column's distinct source values (``_Dictionary``);
    ``order``: the source rows that can match (no NULL in a key that is not NULL-safe)
    sorted by their joint code, ``sorted_codes`` those codes (a row's code is its per-key
    codes in mixed radix)."""

    names: tuple[str, ...]
    dictionaries: tuple[_Dictionary, ...]
    safe: tuple[bool, ...]
    radix: tuple[int, ...]
    order: np.ndarray
    sorted_codes: np.ndarray

    @classmethod
    def build(cls, source: pa.Table, on: Sequence[str], safe: frozenset[str]) -> SourceKeys | None:
        """The keys ``on`` of ``source`` encoded (``safe``: the NULL-safe keys); None when a
        key's type is not :func:`supported` or the joint codes would not fit an int64."""
        columns = [_flat(source.column(name)) for name in on]
        if not all(supported(c.type) for c in columns):
            return None
        dictionaries = tuple(_Dictionary(c) for c in columns)
        radix = tuple(d.size for d in dictionaries)
        span = 1
        for size in radix:
            span *= size
        if span > _LIMIT:
            return None
        codes = np.zeros(source.num_rows, dtype=np.int64)
        valid = np.ones(source.num_rows, dtype=bool)
        for name, column, dictionary, size in zip(on, columns, dictionaries, radix, strict=True):
            if name not in safe and column.null_count:
                valid &= ~np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            codes = codes * size + dictionary.codes(column)
        candidates = np.flatnonzero(valid)
        order = candidates[np.argsort(codes[candidates], kind="stable")]
        return cls(
            tuple(on),
            dictionaries,
            tuple(name in safe for name in on),
            radix,
            order,
            codes[order],
        )

    def pairs(
        self, target: pa.Table, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The matching (target row position, source row index) pairs of ``target`` (which
        has the key columns), ordered by target row, then source row; ``rows``: only the
        source rows at these indexes may match (None: every one). None when a key column of
        ``target`` has another type than the source's (left to the SQL join).

        >>> keys = SourceKeys.build(pa.table({"k": [1, 2, 2, None]}), ["k"], frozenset())
        >>> [a.tolist() for a in keys.pairs(pa.table({"k": [2, None, 1, 3]})) or ()]
        [[0, 0, 2], [1, 2, 0]]
        """
        count = target.num_rows
        codes = np.zeros(count, dtype=np.int64)
        valid = np.ones(count, dtype=bool)
        for name, dictionary, safe, size in zip(
            self.names, self.dictionaries, self.safe, self.radix, strict=True
        ):
            column = _flat(target.column(name))
            if column.type != dictionary.type:
                return None
            found = dictionary.codes(column)
            valid &= found >= 0
            if not safe and column.null_count:
                valid &= ~np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)
            codes = codes * size + np.maximum(found, 0)
        starts = np.searchsorted(self.sorted_codes, codes, side="left")
        ends = np.searchsorted(self.sorted_codes, codes, side="right")
        lengths = np.where(valid, ends - starts, 0)
        left = np.repeat(np.arange(count, dtype=np.int64), lengths)
        if not len(left):
            return left, left.copy()
        # each pair's position in the sorted source rows: its run's start plus its rank in it
        firsts = np.repeat(starts, lengths)
        runs = np.cumsum(lengths) - lengths
        ranks = np.arange(len(left), dtype=np.int64) - np.repeat(runs, lengths)
        right = self.order[firsts + ranks]
        if rows is not None:
            allowed = np.zeros(len(self.order) and int(self.order.max()) + 1, dtype=bool)
            allowed[rows[rows < len(allowed)]] = True
            kept = allowed[right]
            left, right = left[kept], right[kept]
        return left, right
