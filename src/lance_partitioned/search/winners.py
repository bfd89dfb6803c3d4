"""The merged top-k of a vector search whose every leaf was searched in numpy.

When every kept leaf's top-k was found in memory (:mod:`.ivfpq` codes, :mod:`.flat` vectors:
distances and row ids, no column read), as for a tenant-filtered search of one indexed leaf,
the merge needs no Arrow table of candidates: the ``k`` best keys are chosen in numpy (by
distance, then the leaf's place in object-id order, then row id, the order of
:func:`lance_partitioned.search.query._merge`), the winners' columns read from their leaves
(:meth:`Winner.read`), already in that order, and ``_distance``, ``_rowid``, ``_leaf`` and
``_partition`` appended. The general path builds, sorts and casts tables of the candidates
twice, about as long as the numpy search of a leaf of 200,000 rows (issue 29's largest
tenant); the rows and columns are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa

__all__ = ["Found", "Winner", "top"]


class Winner(Protocol):
    """A leaf whose rows are read by row id (:class:`~.leaves.Leaf`)."""

    rank: int

    def read(self, row_ids: np.ndarray) -> pa.Table:
        """The output columns of the rows ``row_ids`` of the leaf, in that order."""
        ...

    def in_memory(self) -> bool:
        """Whether :meth:`read` reads from memory."""
        ...


class Found(Protocol):
    """A leaf's top-k found in numpy: distances and row ids (:class:`~.query._Keys`)."""

    @property
    def leaf(self) -> Winner: ...

    distances: np.ndarray
    row_ids: np.ndarray


def top(
    keys: Sequence[Found],
    k: int,
    read_many: Callable[[list[tuple[Winner, np.ndarray]]], list[pa.Table]],
) -> tuple[pa.Table | None, np.ndarray, np.ndarray, np.ndarray]:
    """The ``k`` best rows of ``keys`` (``_distance``, leaf rank, row id ascending): their
    output columns read from their leaves by ``read_many`` (one row-id array per leaf, the
    tables in that order; None when there is no output column), their distances, row ids and
    leaf ranks (numpy arrays, in that order)."""
    if len(keys) == 1:  # one leaf (a tenant's search): no concatenation, one read
        only = keys[0]
        distances, row_ids = only.distances, only.row_ids
        best = np.lexsort((row_ids, distances))[:k]
        won_ids = row_ids[best]
        won_ranks = np.full(len(best), only.leaf.rank, np.int32)
        table: pa.Table | None = read_many([(only.leaf, won_ids)])[0]
        return _columns(table), distances[best], won_ids, won_ranks
    ranks = np.concatenate([np.full(len(item.row_ids), item.leaf.rank, np.int32) for item in keys])
    distances = np.concatenate([item.distances for item in keys])
    row_ids = np.concatenate([item.row_ids for item in keys])
    best = np.lexsort((row_ids, ranks, distances))[:k]
    won_ranks, won_ids = ranks[best], row_ids[best]
    leaves = {item.leaf.rank: item.leaf for item in keys}
    chosen = np.unique(won_ranks)
    wanted = [(leaves[int(rank)], won_ids[won_ranks == rank]) for rank in chosen]
    tables = read_many(wanted)
    if len(tables) == 1:
        table = tables[0]
    else:  # the leaves' rows back in the winners' order
        table = pa.concat_tables(tables)
        placed = np.concatenate([np.flatnonzero(won_ranks == rank) for rank in chosen])
        table = table.take(pa.array(np.argsort(placed, kind="stable")))
    return _columns(table), distances[best], won_ids, won_ranks


def _columns(table: pa.Table) -> pa.Table | None:
    """``table``, None when it has no column (``columns=[]``)."""
    return table if table.num_columns else None
