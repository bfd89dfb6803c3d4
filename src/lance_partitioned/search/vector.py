"""A vector search's kept leaves that are searched without Lance's own nearest-neighbour
call, or by it one leaf at a time (step 2 of :mod:`lance_partitioned.search.query`).

A kept leaf is classified once per plan (:class:`Arranged`): its IVF_PQ codes searched with
the namespace's (:class:`Coded`, :mod:`.ivfpq`), a small unindexed leaf's vectors searched in
numpy with the other small leaves' (:class:`Flat`, :mod:`.flat`), no neighbour at all, or a
leaf Lance searches (:func:`vector_leaf`). :func:`grouped_pass` runs the numpy passes;
:class:`Keys` is a leaf's top-k found in numpy, whose columns are read only for the rows
that make the merged top-k.

>>> import numpy as np
>>> lance_distances(np.array([[0.0, 1.0], [3.0, 4.0]], np.float32), np.zeros(2, np.float32), "l2")
array([ 1., 25.], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors
from lance_partitioned.consistency import leaf_field
from lance_partitioned.expressions import AlwaysTrue
from lance_partitioned.runtime.leaf_cache import leaf_schema
from lance_partitioned.search import encode, ivfpq, turns
from lance_partitioned.search.flat import FlatVectors, flat_vectors, nearest_many, squared_l2
from lance_partitioned.search.flat import nearest as flat_nearest
from lance_partitioned.search.leaves import ROWID
from lance_partitioned.search.leaves import Leaf as _Leaf

__all__ = [
    "Arranged",
    "Coded",
    "Flat",
    "Keys",
    "grouped_pass",
    "in_memory",
    "lance_distances",
    "vector_leaf",
]


def lance_distances(vectors: np.ndarray, query: np.ndarray, metric: str) -> np.ndarray:
    """Lance's distances: squared L2, ``1 - cosine``, ``1 - dot``."""
    if metric in ("l2", "euclidean"):
        return np.asarray(((vectors - query) ** 2).sum(axis=1), dtype=np.float32)
    if metric == "dot":
        return np.asarray(1 - vectors @ query, dtype=np.float32)
    if metric == "cosine":
        norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(1 - (vectors @ query) / norms, dtype=np.float32)
    raise errors.InvalidInputError(f"search: unknown metric {metric!r} (l2, cosine, dot)")


class Keys:
    """A leaf's top-k found in numpy (:mod:`.flat`): distances and row ids, ordered; its
    columns are read (:meth:`_Leaf.take`) only for the rows that make the merged top-k."""

    def __init__(self, leaf: _Leaf, distances: np.ndarray, row_ids: np.ndarray) -> None:
        self.leaf = leaf
        self.distances = distances
        self.row_ids = row_ids


class Flat:
    """A small leaf without an index whose vectors are searched with the other small
    leaves' (:func:`.flat.nearest_many`)."""

    def __init__(self, leaf: _Leaf, vectors: FlatVectors, source: str) -> None:
        self.leaf = leaf
        self.vectors = vectors
        self.source = source


class Coded:
    """A leaf whose IVF_PQ codes are searched with the namespace's (:mod:`.ivfpq`);
    ``flat``: a small leaf's vectors, its codes encoded in memory (:mod:`.encode`)."""

    def __init__(
        self,
        leaf: _Leaf,
        source: str,
        codes: ivfpq.LeafCodes,
        flat: FlatVectors | None = None,
    ) -> None:
        self.leaf = leaf
        self.source = source
        self.codes = codes
        self.flat = flat


def coded_leaf(leaf: _Leaf, column: pa.Field, nearest: dict[str, Any]) -> Coded | None:
    """The leaf's codes when :mod:`.ivfpq` can search it (else None: Lance does)."""
    if nearest.get("nprobes") is None or nearest["metric"] not in ("l2", "euclidean"):
        return None
    if not isinstance(leaf.predicate, AlwaysTrue):
        return None
    source = leaf_field(leaf_schema(leaf.ds), column)
    if source is None or source.type != pa.list_(pa.float32(), column.type.list_size):
        return None
    task = leaf.task
    fixed = task.read_version is not None and task.read_branch is None
    found = ivfpq.leaf_codes(leaf.ds, source.name, dict(task.storage_options), fixed)
    return None if found is None else Coded(leaf, source.name, found)


class Arranged:
    """The kept leaves of a vector search classified (query-independent, kept per plan by
    :mod:`.prepared`): ``lance`` the leaves Lance searches, ``done`` the leaves with no
    neighbour, ``flats`` the small leaves searched exactly in numpy together, ``group`` the
    coded leaves of the model most share (one IVF_PQ search), ``others`` the coded leaves of
    another model (Lance searches each), ``small`` how many of ``group`` are small leaves
    encoded."""

    def __init__(
        self,
        lance: list[_Leaf],
        found: list[Keys | Flat | Coded],
        small_rows: int | None,
    ) -> None:
        self.lance = lance
        flats = [item for item in found if isinstance(item, Flat)]
        coded = [item for item in found if isinstance(item, Coded)]
        self.done = [item for item in found if isinstance(item, Keys)]
        if coded and flats and small_rows is not None:  # approximate: small leaves by codes
            flats, small = encoded_flats(flats, coded, small_rows)
            coded = [*coded, *small]
        self.flats = flats
        self.flat_ranks = [item.leaf.rank for item in flats]
        self.group: list[Coded] = []
        self.others: list[Coded] = []
        if coded:
            models = [item.codes.model for item in coded]
            model = max(set(models), key=models.count)
            self.group = [item for item in coded if item.codes.model == model]
            self.others = [item for item in coded if item.codes.model != model]
        self.group_codes = [item.codes for item in self.group]
        self.group_ranks = [item.leaf.rank for item in self.group]
        self.small = sum(item.flat is not None for item in self.group)


def grouped_pass(
    arranged: Arranged,
    searched: list[pa.Table | Keys | Flat | None],
    search_leaf: Any,
    query: np.ndarray,
    k: int,
    nearest: dict[str, Any],
    root: str = "",
) -> tuple[list[pa.Table | Keys | Flat | None], int, int]:
    """The small unindexed leaves searched in one numpy pass (:func:`.flat.nearest_many`),
    and the coded leaves of the model most of them share as one IVF_PQ search
    (:func:`.ivfpq.namespace_nearest`; with a ``refine_factor``, the ``k * refine_factor``
    best of each leaf reranked on their vectors, squared L2 as Lance computes it, as Lance
    refines a leaf); the other coded leaves searched by ``search_leaf`` (Lance), each.
    The small unindexed leaves under the index's ``min_rows`` are searched as leaves of that
    IVF_PQ index (:class:`Arranged`), their codes encoded under its model
    (:mod:`.encode`), refined on their vectors kept in memory. ``searched``: the hits of the
    leaves Lance searched. Returns the leaves' hits, how many leaves were searched as one
    IVF_PQ index, and how many of them were small leaves encoded. The two numpy passes run
    in the turn of the namespace at ``root`` (:mod:`.turns`); Lance's searches outside it."""
    flats = arranged.flats
    out: list[pa.Table | Keys | Flat | None] = [*searched, *arranged.done]
    if flats:
        with turns.turn(root):
            many = nearest_many([item.vectors for item in flats], arranged.flat_ranks, query, k)
        if many is None:  # not kept together: each leaf on its own
            out += [Keys(i.leaf, *flat_nearest(i.vectors, query, k)) for i in flats]
        else:
            out += [Keys(flats[at].leaf, dist, ids) for at, dist, ids in many]
    group = arranged.group
    if not group:
        return out, 0, 0
    out += [search_leaf(item.leaf) for item in arranged.others]
    refine = nearest.get("refine_factor")
    wanted = k * int(refine) if refine else k
    with turns.turn(root):
        hits = ivfpq.namespace_nearest(
            arranged.group_codes,
            arranged.group_ranks,
            query,
            wanted,
            int(nearest["nprobes"]),
            each=bool(refine),
        )
    for position, distances, row_ids in hits:
        item = group[position]
        if refine and item.flat is not None:
            distances = encode.refined(item.flat, row_ids, query)
        elif refine:
            taken = item.leaf.ds._take_rows(row_ids.tolist(), columns=[item.source])
            vectors = taken.column(0).combine_chunks()
            dim = vectors.type.list_size
            matrix = np.asarray(vectors.values.to_numpy(zero_copy_only=False), np.float32)
            distances = squared_l2(matrix.reshape(-1, dim), query)
        out.append(Keys(item.leaf, distances.astype(np.float32), row_ids))
    return out, len(group), arranged.small


def encoded_flats(
    flats: list[Flat], coded: list[Coded], small_rows: int
) -> tuple[list[Flat], list[Coded]]:
    """The small leaves of ``flats`` (under ``small_rows`` rows) as coded leaves of the model
    most ``coded`` leaves share (:func:`.encode.encoded`), and the other flat leaves."""
    models = [item.codes.model for item in coded]
    common = max(set(models), key=models.count)
    model = next(item.codes for item in coded if item.codes.model == common)
    rest, small = [], []
    for item in flats:
        codes = encode.encoded(item.leaf.ds, item.source, item.vectors, model, small_rows)
        if codes is None:
            rest.append(item)
        else:
            small.append(Coded(item.leaf, item.source, codes, item.vectors))
    return rest, small


def in_memory(
    leaf: _Leaf, column: pa.Field, nearest: dict[str, Any], fast: bool
) -> Keys | Flat | Coded | None:
    """A leaf searched without Lance: its IVF_PQ codes (:func:`coded_leaf`), its vectors
    when it is small and unindexed (:mod:`.flat`), or no neighbour; None: Lance searches
    it."""
    coded = coded_leaf(leaf, column, nearest)
    if coded is not None:
        return coded
    none = Keys(leaf, np.zeros(0, np.float32), np.zeros(0, np.uint64))
    source = leaf_field(leaf_schema(leaf.ds), column)
    if source is None:
        return none  # the leaf predates the column: every value NULL, no neighbour
    flat = _small_vectors(leaf, source.name, column, nearest)
    if flat is not None:
        # fast_search leaves out unindexed rows, as Lance does
        return none if fast else Flat(leaf, flat, source.name)
    return None


def _small_vectors(
    leaf: _Leaf, source: str, column: pa.Field, nearest: dict[str, Any]
) -> FlatVectors | None:
    """The vectors of ``source`` kept in memory when the leaf is small, without an index
    and searched whole by L2 (:mod:`.flat`: searched in numpy); None otherwise."""
    if leaf.flat and isinstance(leaf.predicate, AlwaysTrue) and nearest["metric"] == "l2":
        return flat_vectors(leaf.ds, source, column.type.list_size)
    return None


def vector_leaf(
    leaf: _Leaf,
    column: pa.Field,
    query: np.ndarray,
    k: int,
    nearest: dict[str, Any],
    fast: bool,
) -> pa.Table | Keys | Flat | None:
    source = leaf_field(leaf_schema(leaf.ds), column)
    if source is None:
        return None  # the leaf predates the column: every value NULL, no neighbour
    flat = _small_vectors(leaf, source.name, column, nearest)
    if flat is not None:
        if fast:
            return None  # fast_search leaves out unindexed rows, as Lance does
        return Keys(leaf, *flat_nearest(flat, query, k))
    if leaf.exact_filter:
        found = leaf.ds.to_table(
            columns=[*leaf.columns, "_distance"],
            nearest={"column": source.name, "q": query, "k": k, **nearest},
            filter=leaf.pushdown,
            prefilter=True,
            with_row_id=True,
            fast_search=fast,
        )
        return leaf.conform(found, ["_distance", ROWID])
    # a residual only we can evaluate: filter the leaf in memory, then search it exactly
    scanned = leaf.ds.to_table(columns=sorted({*leaf.columns, source.name}), with_row_id=True)
    vectors = scanned.column(source.name)
    conformed = leaf.conform(scanned, [ROWID])
    keep = pc.is_in(scanned.column(ROWID), conformed.column(ROWID))
    vectors = vectors.filter(keep)
    valid = pc.is_valid(vectors)
    conformed = conformed.filter(valid)
    array = vectors.filter(valid).combine_chunks()
    dim = column.type.list_size
    matrix = np.asarray(array.values.to_numpy(zero_copy_only=False), dtype=np.float32)
    distances = lance_distances(matrix.reshape(-1, dim), query, nearest.get("metric", "l2"))
    conformed = conformed.append_column("_distance", pa.array(distances, pa.float32()))
    return conformed.take(np.argsort(distances, kind="stable")[:k])
