"""Small leaves without a vector index searched exactly in numpy, their vectors kept in memory.

A leaf too small to train an IVF index (:mod:`lance_partitioned.search.build`) is searched
flat. Lance's flat nearest-neighbour search of such a leaf costs about a millisecond and a
half whatever its size (planning and running a scan, a distance and a top-k operator): a
global search of a namespace of a hundred tenants spends most of its time there. A leaf
version never changes, so :func:`flat_vectors` reads the vector column of a small unindexed
leaf once (rows with a NULL vector left out, deleted rows gone) and keeps it, and
:func:`nearest` computes the same squared L2 distances Lance does (``sum((v - q) ** 2)``
in float32, added up in Lance's order: :func:`squared_l2`) and the top ``k`` by
``(distance, row id)``, Lance's order; only the rows that
make the merged top-k are then read from the leaf (late materialisation). A search that
keeps the same small leaves again (a global search) searches them in one pass over their
vectors side by side (:func:`nearest_many`: one matrix-vector product instead of one per
leaf; the same rows as each leaf's :func:`nearest` merged), the last such group kept.

Kept per opened ``LanceDataset`` (the leaf cache, :mod:`lance_partitioned.runtime.leaf_cache`, hands
the same object to every read of a leaf version while that version is the one on disk), at
most :data:`MAX_ROWS` rows per leaf and :data:`MAX_BYTES` in all (least recently used dropped
first).

>>> flat = FlatVectors.of(np.array([[0, 0], [1, 1], [0, 1]], np.float32), np.array([7, 8, 9]))
>>> distances, row_ids = nearest(flat, np.array([0, 0], np.float32), 2)
>>> distances.tolist(), row_ids.tolist()
([0.0, 1.0], [7, 9])
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lance import LanceDataset

from lance_partitioned.runtime.leaf_cache import leaf_schema
from lance_partitioned.search import kept

__all__ = [
    "MAX_BYTES",
    "MAX_ROWS",
    "FlatVectors",
    "clear",
    "flat_vectors",
    "nearest",
    "nearest_many",
    "squared_l2",
]

#: Leaves with more rows are searched by Lance.
MAX_ROWS = 20_000
#: Bytes of vectors kept in all.
MAX_BYTES = 256 << 20

_ROWID = "_rowid"


@dataclass(frozen=True)
class FlatVectors:
    """A leaf's non-NULL vectors (one row each) and their Lance row ids, ascending."""

    matrix: np.ndarray
    row_ids: np.ndarray
    norms: np.ndarray
    """``sum(row ** 2)`` of each row, in float64 (NaN for a row with a NaN)."""

    @classmethod
    def of(cls, matrix: np.ndarray, row_ids: np.ndarray) -> FlatVectors:
        """``matrix`` (float32, one row per vector) with its ``row_ids``, sorted by row id."""
        order = np.argsort(row_ids, kind="stable")
        matrix = np.ascontiguousarray(matrix[order], np.float32)
        wide = matrix.astype(np.float64)
        norms = np.einsum("ij,ij->i", wide, wide)
        return cls(matrix, np.asarray(row_ids[order], np.uint64), norms)

    @property
    def nbytes(self) -> int:
        return int(self.matrix.nbytes + self.row_ids.nbytes + self.norms.nbytes)


_Entry = tuple["weakref.ref[LanceDataset]", FlatVectors | None]
_kept: OrderedDict[tuple[int, str], _Entry] = OrderedDict()
_bytes = 0
_lock = threading.Lock()


def _indexed(dataset: LanceDataset, column: str) -> bool:
    return any(column in index.field_names for index in dataset.describe_indices())


def _read(dataset: LanceDataset, column: str, dim: int) -> FlatVectors | None:
    """The vectors of ``column`` in ``dataset``; None when Lance must search it (an index on
    the column, more than :data:`MAX_ROWS` rows, not float32)."""
    field = leaf_schema(dataset).field(column)
    if field.type != pa.list_(pa.float32(), dim) or dataset.count_rows() > MAX_ROWS:
        return None
    if _indexed(dataset, column):
        return None
    table = dataset.to_table(columns=[column], with_row_id=True)
    vectors = table.column(column)
    valid = pc.is_valid(vectors)
    vectors = vectors.filter(valid).combine_chunks()
    row_ids = table.column(_ROWID).filter(valid).to_numpy()
    values = vectors.values if len(vectors) else pa.array([], pa.float32())
    if len(vectors) and vectors.offset:
        values = values.slice(vectors.offset * dim, len(vectors) * dim)
    matrix = np.asarray(values.to_numpy(zero_copy_only=False), np.float32).reshape(-1, dim)
    return FlatVectors.of(matrix, row_ids)


def flat_vectors(dataset: LanceDataset, column: str, dim: int) -> FlatVectors | None:
    """The vectors of the leaf column ``column`` (``dim`` float32 values) when it is searched
    in numpy, read once per dataset object; None when Lance searches it."""
    global _bytes
    key = (id(dataset), column)
    with _lock:
        found = _kept.get(key)
        if found is not None and found[0]() is dataset:
            _kept.move_to_end(key)
            return found[1]
    flat = _read(dataset, column, dim)
    with _lock:
        previous = _kept.pop(key, None)
        if previous is not None and previous[1] is not None:
            _bytes -= previous[1].nbytes
        if flat is not None and flat.nbytes > MAX_BYTES:
            return flat
        _kept[key] = (weakref.ref(dataset), flat)
        _bytes += 0 if flat is None else flat.nbytes
        while _bytes > MAX_BYTES:
            _, (_, dropped) = _kept.popitem(last=False)
            _bytes -= 0 if dropped is None else dropped.nbytes
            kept.dropped()
    return flat


_LANES = 16


def squared_l2(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``sum((row - query) ** 2)`` of each row in float32, added up in Lance's order when the
    dimension is a multiple of 16 (16 running sums over the blocks of 16 values, then the 16
    added in turn: bit for bit Lance's ``_distance`` on x86-64), else numpy's.

    >>> squared_l2(np.ones((2, 32), np.float32), np.zeros(32, np.float32)).tolist()
    [32.0, 32.0]
    """
    diff = matrix - query
    np.square(diff, out=diff)
    dim = diff.shape[1]
    if dim % _LANES or not dim:
        return np.asarray(diff.sum(axis=1), np.float32)
    lanes = diff[:, :_LANES].copy()
    for start in range(_LANES, dim, _LANES):
        lanes += diff[:, start : start + _LANES]
    total: np.ndarray = lanes[:, 0].copy()
    for lane in range(1, _LANES):
        total += lanes[:, lane]
    return total


_UNIT = 2.0**-24  # float32 unit roundoff


def _candidates(flat: FlatVectors, query: np.ndarray, k: int) -> np.ndarray | None:
    """The rows (ascending) that may be among the ``k`` nearest by :func:`squared_l2`, found
    with one matrix-vector product: ``|row|^2 - 2 row.q + |q|^2``, each with a bound of its
    float32 rounding error (``gamma_n |row| |q|`` for the product, ``gamma_n d`` for the sum
    of squares), so no row of the exact top-k, ties included, is left out. None: every row
    (a row with a NaN or an infinity)."""
    dim = flat.matrix.shape[1]
    wide = query.astype(np.float64)
    query_norm = float(wide @ wide)
    if not np.all(np.isfinite(flat.norms)) or not np.isfinite(query_norm):
        return None
    gamma = (dim + 4) * _UNIT / (1 - (dim + 4) * _UNIT)
    # einsum, not BLAS: OpenBLAS threads spinning beside Lance's slow everything down
    products = np.einsum("ij,j->i", flat.matrix, query).astype(np.float64)
    approx = flat.norms - 2.0 * products + query_norm
    error = 2.0 * gamma * np.sqrt(flat.norms * query_norm) + 1e-9 * (flat.norms + query_norm)
    upper = (approx + error) * (1 + gamma)
    lower = (approx - error) * (1 - gamma)
    bound = np.partition(upper, k - 1)[k - 1]
    return np.flatnonzero(lower <= bound)


def nearest(flat: FlatVectors, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest rows of ``flat`` to ``query`` by squared L2 (:func:`squared_l2`):
    their distances (float32) and row ids, ordered by distance, then row id.

    Only the rows :func:`_candidates` keeps get their exact distance."""
    if not len(flat.row_ids):
        return np.zeros(0, np.float32), np.zeros(0, np.uint64)
    rows = _candidates(flat, query, k) if len(flat.row_ids) > 4 * k else None
    if rows is None:
        rows = np.arange(len(flat.row_ids))
    distances = squared_l2(flat.matrix[rows], query)
    if k < len(distances):
        # every row tied with the k-th distance kept, so ties go to the smaller row id
        kth = np.partition(distances, k - 1)[k - 1]
        keep = np.flatnonzero(distances <= kth)
    else:
        keep = np.arange(len(distances))
    order = keep[np.argsort(distances[keep], kind="stable")[:k]]  # row ids ascending
    return distances[order].astype(np.float32), flat.row_ids[rows[order]]


@dataclass(frozen=True)
class _Group:
    """Several leaves' vectors side by side: one pass of :func:`_candidates` over all."""

    members: tuple[FlatVectors, ...]
    flat: FlatVectors
    leaves: np.ndarray  # the position in members of each row's leaf


_groups: OrderedDict[tuple[int, ...], _Group] = OrderedDict()


_asked: OrderedDict[tuple[int, ...], None] = OrderedDict()


def _group(members: tuple[FlatVectors, ...]) -> _Group | None:
    """The vectors of ``members`` concatenated, made the second time the same leaves are
    searched together (the last group kept, at most :data:`MAX_BYTES`); None otherwise."""
    key = tuple(id(member) for member in members)
    with _lock:
        found = _groups.get(key)
        if found is not None and all(a is b for a, b in zip(found.members, members, strict=True)):
            return found
        again = key in _asked
        _asked[key] = None
        while len(_asked) > 16:
            _asked.popitem(last=False)
    if len(members) < 2 or not again or sum(m.nbytes for m in members) > MAX_BYTES:
        return None
    flat = FlatVectors(
        np.concatenate([m.matrix for m in members]),
        np.concatenate([m.row_ids for m in members]),
        np.concatenate([m.norms for m in members]),
    )
    sizes = [len(m.row_ids) for m in members]
    group = _Group(members, flat, np.repeat(np.arange(len(members), dtype=np.int32), sizes))
    with _lock:
        _groups.clear()
        _groups[key] = group
    return group


def nearest_many(
    members: list[FlatVectors], ranks: list[int], query: np.ndarray, k: int
) -> list[tuple[int, np.ndarray, np.ndarray]] | None:
    """The ``k`` nearest rows of several leaves' vectors, by squared L2
    (:func:`squared_l2`), then ``ranks`` (the leaf's place in the merge), then row id: the
    rows :func:`nearest` of each leaf merged would give, found with one pass over all.
    Returns ``(position in members, distances, row ids)`` per leaf with rows among them;
    None when they are not kept together (one leaf, leaves not searched together before,
    too large): search each with :func:`nearest`."""
    group = _group(tuple(members))
    if group is None:
        return None
    flat = group.flat
    if not len(flat.row_ids):
        return []
    rows = _candidates(flat, query, k) if len(flat.row_ids) > 4 * k else None
    if rows is None:
        rows = np.arange(len(flat.row_ids))
    distances = squared_l2(flat.matrix[rows], query)
    positions = group.leaves[rows]
    row_ids = flat.row_ids[rows]
    rank_of = np.asarray(ranks, np.int64)[positions]
    best = np.lexsort((row_ids, rank_of, distances))[:k]
    out = []
    for position in np.unique(positions[best]):
        mine = best[positions[best] == position]
        out.append((int(position), distances[mine].astype(np.float32), row_ids[mine]))
    return out


def clear() -> None:
    """Forget every kept leaf."""
    global _bytes
    with _lock:
        _kept.clear()
        _groups.clear()
        _asked.clear()
        _bytes = 0
    kept.dropped()
