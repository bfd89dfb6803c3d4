"""One IVF_PQ search over the namespace: the kept leaves' PQ codes scored together in numpy.

Every leaf's ``IVF_PQ`` index built with the namespace's shared model
(:mod:`lance_partitioned.search.training`) holds the same IVF centroids and PQ codebook, so a
search that keeps many leaves is one IVF_PQ search over their rows: the query's distance to
the centroids is computed once and the ``nprobes`` nearest partitions chosen once (the ones
Lance probes in each leaf), one lookup table per probed partition gives the asymmetric
distance (ADC) of every PQ code of that partition in every kept leaf, and the top ``k``
(``k * refine_factor`` with a refine, then reranked exactly on the candidates' vectors, as
Lance refines) is taken over all of them. Per query that costs a few numpy operations on the
probed partitions' codes, instead of one Lance search (about a millisecond) per leaf. They are
whole-array calls (no Python loop per partition or sub-vector): the tables one batched matrix
product on the codebook laid out once per model, the probed rows' codes one ``take`` of
whole rows turned sub-vector major, each sub-vector's distances one contiguous line; numpy
releases the GIL inside each such call, so client threads searching at once overlap.

The codes come from each leaf index's own files (``_indices/<uuid>/auxiliary.idx``, read with
:class:`lance.file.LanceFileReader`): columns ``_rowid`` and ``__pq_code`` stored partition
after partition, the code bytes of each partition transposed (sub-vector major) when the
storage metadata says ``transposed``; the partitions' offsets and lengths in the file's IVF
global buffer (protobuf); the codebook in another global buffer, laid out sub-vector major
(``num_sub_vectors x 256 x sub-vector dimension``); the centroids in ``index.idx``'s IVF
buffer. Lance's L2 ``IVF_PQ`` encodes residuals, so a partition's table is built from
``query - centroid``. They are read once per index (its files never change) and kept, at most
:data:`MAX_BYTES` in all (least recently used dropped first).

Each leaf's read is checked once: its ADC top-10 in its largest partition must equal the
``_distance`` Lance's own search of the leaf returns (same partition, no refine), to float
tolerance. The distances are Lance's up to the order of the float32 additions.

**Fallback.** A leaf is searched by Lance, as before (:mod:`lance_partitioned.search.query`),
and merged, when this module cannot reproduce its search: no ``nprobes`` given (Lance's
automatic probing), a metric other than L2, a residual filter, an index other than one
``IVF_PQ`` segment with 8-bit codes covering every fragment (rows outside it are searched
flat by Lance), deleted rows (still in the index), a model other than the one most kept
leaves share, a layout other than the one above, a read error, or the check failing.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
from lance import LanceDataset

from lance_partitioned.search import kept

__all__ = [
    "MAX_BYTES",
    "MODE_KEY",
    "NAMESPACE",
    "PER_LEAF",
    "LeafCodes",
    "clear",
    "leaf_codes",
    "namespace_nearest",
]

MODE_KEY = b"lance-partitioned.ivf_pq"
"""The result schema metadata key saying how the leaves' IVF_PQ indexes were searched:
:data:`NAMESPACE` (at least one leaf searched here, with every leaf of its model) or
:data:`PER_LEAF` (every leaf by Lance)."""
NAMESPACE = b"namespace"
PER_LEAF = b"per-leaf"

#: Bytes of PQ codes and row ids kept in all (per leaf, and combined for a set of leaves).
MAX_BYTES = 512 << 20

_ROWID = "_rowid"
_CODE = "__pq_code"
_CHECK_K = 10


class _Fallback(Exception):
    """The leaf's index cannot be searched here: Lance searches the leaf."""


@dataclass(frozen=True)
class LeafCodes:
    """A leaf's IVF_PQ index: the shared model and the codes of its rows, by partition.

    Attributes
    ----------
    directory : str
        The index's directory (its files never change).
    model : bytes
        A digest of the centroids and codebook: leaves with the same one are searched
        together.
    centroids : numpy.ndarray
        ``(partitions, dim)`` float32.
    codebook : numpy.ndarray
        ``(num_sub_vectors, 256, dim / num_sub_vectors)`` float32.
    starts : numpy.ndarray
        ``partitions + 1`` offsets: partition ``p`` holds rows ``starts[p]:starts[p + 1]``.
    codes : numpy.ndarray
        ``(rows, num_sub_vectors)`` uint8, one row per indexed row.
    row_ids : numpy.ndarray
        The Lance row id of each row (uint64).
    """

    directory: str
    model: bytes
    centroids: np.ndarray
    codebook: np.ndarray
    starts: np.ndarray
    codes: np.ndarray
    row_ids: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes + self.row_ids.nbytes + self.starts.nbytes)


# --- reading a leaf's index -------------------------------------------------------------


def _varint(buf: bytes, at: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = buf[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _proto(buf: bytes) -> dict[int, list[tuple[int, Any]]]:
    """A protobuf message's fields: number -> [(wire type, value)]."""
    out: dict[int, list[tuple[int, Any]]] = {}
    at = 0
    while at < len(buf):
        key, at = _varint(buf, at)
        wire = key & 7
        value: Any
        if wire == 0:
            value, at = _varint(buf, at)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, at = buf[at : at + size], at + size
        elif wire == 2:
            size, at = _varint(buf, at)
            value, at = buf[at : at + size], at + size
        else:
            raise _Fallback(f"protobuf wire type {wire}")
        out.setdefault(key >> 3, []).append((wire, value))
    return out


def _packed(fields: dict[int, list[tuple[int, Any]]], number: int) -> list[int]:
    """A repeated integer field, packed or not."""
    values: list[int] = []
    for wire, value in fields.get(number, []):
        if wire == 0:
            values.append(int(value))
            continue
        at = 0
        while at < len(value):
            item, at = _varint(value, at)
            values.append(item)
    return values


def _tensor(buf: bytes) -> np.ndarray:
    """A Lance ``Tensor`` message of float32 (data type 2)."""
    fields = _proto(buf)
    kind = fields.get(1, [(0, 0)])[0][1]
    if kind != 2:
        raise _Fallback(f"a tensor of data type {kind}, not float32")
    shape = _packed(fields, 2)
    data = np.frombuffer(fields[3][0][1], np.float32)
    if int(np.prod(shape)) != data.size:
        raise _Fallback("a tensor whose data does not match its shape")
    return data.reshape(shape)


def _read(directory: str, storage_options: dict[str, str]) -> LeafCodes:
    from lance.file import LanceFileReader

    def reader(name: str) -> Any:
        return LanceFileReader(f"{directory}/{name}", storage_options=storage_options or None)

    index = reader("index.idx")
    meta = index.metadata().schema.metadata or {}
    kind = json.loads(meta.get(b"lance:index", b"{}"))
    if kind.get("type") != "IVF_PQ" or kind.get("distance_type") != "l2":
        raise _Fallback(f"an index {kind}, not an L2 IVF_PQ")
    ivf = _proto(bytes(index.read_global_buffer(int(meta[b"lance:ivf"]))))
    centroids = _tensor(ivf[4][0][1])
    aux = reader("auxiliary.idx")
    aux_meta = aux.metadata().schema.metadata or {}
    [storage] = [json.loads(s) for s in json.loads(aux_meta[b"storage_metadata"])]
    subs, dim = int(storage["num_sub_vectors"]), int(storage["dimension"])
    if int(storage["nbits"]) != 8 or dim % subs or centroids.shape != (len(centroids), dim):
        raise _Fallback("PQ codes other than 8-bit codes of equal sub-vectors")
    layout = _proto(bytes(aux.read_global_buffer(int(aux_meta[b"lance:ivf"]))))
    offsets, lengths = _packed(layout, 2), _packed(layout, 3)
    codebook = _tensor(bytes(aux.read_global_buffer(int(storage["codebook_position"]))))
    codebook = codebook.reshape(subs, 256, dim // subs)
    table = aux.read_all().to_table()
    rows = table.num_rows
    starts = np.asarray([*offsets, rows], np.int64)
    if (
        len(offsets) != len(centroids)
        or list(np.diff(starts)) != lengths
        or table.column(_CODE).type.list_size != subs
    ):
        raise _Fallback("partition offsets that do not match the codes")
    codes = np.asarray(table.column(_CODE).combine_chunks().values.to_numpy(), np.uint8)
    codes = codes.reshape(rows, subs)
    if storage.get("transposed"):  # each partition's bytes sub-vector major
        codes = codes.copy()
        for start, end in itertools.pairwise(starts.tolist()):
            codes[start:end] = codes[start:end].reshape(subs, end - start).T
    row_ids = np.asarray(table.column(_ROWID).to_numpy(), np.uint64)
    digest = hashlib.sha1(centroids.tobytes() + codebook.tobytes(), usedforsecurity=False)
    return LeafCodes(directory, digest.digest(), centroids, codebook, starts, codes, row_ids)


def _check(ds: LanceDataset, source: str, codes: LeafCodes) -> None:
    """Lance's search of the leaf's largest partition must give the distances computed here."""
    lengths = np.diff(codes.starts)
    if not lengths.any():
        return
    partition = int(np.argmax(lengths))
    query = codes.centroids[partition]
    k = int(min(_CHECK_K, lengths[partition]))
    found = ds.to_table(
        columns=["_distance"],
        nearest={"column": source, "q": query, "k": k, "nprobes": 1, "metric": "l2"},
    )
    probed = np.argsort(_squared(codes.centroids, query), kind="stable")[:1]
    ours, _ = _score(codes, query, probed)
    expected = np.sort(found.column("_distance").to_numpy())
    if not np.allclose(np.sort(ours)[:k], expected, rtol=1e-4, atol=1e-5):
        raise _Fallback("the ADC distances differ from Lance's")


_kept: OrderedDict[str, LeafCodes] = OrderedDict()
_versions: OrderedDict[tuple[str, int, str], LeafCodes | None] = OrderedDict()
_lock = threading.Lock()
_VERSIONS = 4096


def _segment_directory(ds: LanceDataset, source: str) -> str:
    fragments = ds.get_fragments()
    segments = [
        segment
        for index in ds.describe_indices()
        if list(index.field_names) == [source]
        for segment in index.segments
    ]
    described = [i for i in ds.describe_indices() if list(i.field_names) == [source]]
    if len(segments) != 1 or segments[0].base_id is not None or described[0].index_type != "IVF_PQ":
        raise _Fallback("not exactly one IVF_PQ index segment on the column, in the leaf")
    covered = {int(i) for i in segments[0].fragment_ids}
    if any(f.fragment_id not in covered for f in fragments):
        raise _Fallback("rows outside the index (searched flat by Lance)")
    if any(f.metadata.deletion_file is not None for f in fragments):
        raise _Fallback("deleted rows, still in the index")
    return f"{ds.uri.rstrip('/')}/_indices/{segments[0].uuid}"


def _index_codes(ds: LanceDataset, source: str, storage_options: dict[str, str]) -> LeafCodes:
    directory = _segment_directory(ds, source)
    with _lock:
        if directory in _kept:
            _kept.move_to_end(directory)
            return _kept[directory]
    try:
        codes = _read(directory, storage_options)
        _check(ds, source, codes)
    except (OSError, ValueError, KeyError, IndexError, RuntimeError, TypeError) as exc:
        raise _Fallback(f"the index's codes cannot be read: {exc}") from exc
    with _lock:
        _kept[directory] = codes
        total = sum(item.nbytes for item in _kept.values())
        while total > MAX_BYTES and len(_kept) > 1:
            _, dropped = _kept.popitem(last=False)
            total -= dropped.nbytes
            kept.dropped()
    return codes


def leaf_codes(
    ds: LanceDataset, source: str, storage_options: dict[str, str], fixed: bool
) -> LeafCodes | None:
    """The PQ codes of the leaf's ``IVF_PQ`` index on its column ``source``; None when Lance
    must search the leaf (see the module docstring). ``fixed``: ``ds`` is a version of the
    main branch (the answer is kept per version)."""
    key = (ds.uri, int(ds.version), source)
    if fixed:
        with _lock:
            if key in _versions:
                _versions.move_to_end(key)
                return _versions[key]
    try:
        codes: LeafCodes | None = _index_codes(ds, source, storage_options)
    except _Fallback:
        codes = None
    if fixed:
        with _lock:
            _versions[key] = codes
            while len(_versions) > _VERSIONS:
                _versions.popitem(last=False)
    return codes


# --- the search ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Combined:
    """The codes of several leaves (one model) side by side, grouped by partition."""

    first: LeafCodes
    starts: np.ndarray
    codes: np.ndarray
    row_ids: np.ndarray
    leaves: np.ndarray  # the position of each row's leaf in the list combined


_combined: OrderedDict[tuple[str, ...], _Combined] = OrderedDict()


def _combine(key: tuple[str, ...], leaves: list[LeafCodes]) -> _Combined:
    if len(leaves) == 1:
        only = leaves[0]
        return _Combined(only, only.starts, only.codes, only.row_ids, np.zeros(0, np.int32))
    with _lock:
        if key in _combined:
            _combined.move_to_end(key)
            return _combined[key]
    partitions = len(leaves[0].centroids)
    of_row = np.concatenate([np.repeat(np.arange(partitions), np.diff(c.starts)) for c in leaves])
    order = np.argsort(of_row, kind="stable")  # by partition, then leaf, then place in it
    combined = _Combined(
        leaves[0],
        np.concatenate([[0], np.cumsum(np.bincount(of_row, minlength=partitions))]),
        np.concatenate([c.codes for c in leaves])[order],
        np.concatenate([c.row_ids for c in leaves])[order],
        np.concatenate([np.full(len(c.row_ids), i, np.int32) for i, c in enumerate(leaves)])[order],
    )
    with _lock:
        _combined[key] = combined
        while len(_combined) > 2:
            _combined.popitem(last=False)
    return combined


def _squared(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    diff = matrix - query
    return np.asarray(np.einsum("ij,ij->i", diff, diff), np.float32)


@dataclass(frozen=True)
class _Tables:
    """A model's codebook laid out for the per-query lookup tables (:func:`_score`): kept per
    model, so a query makes its tables with one batched matrix product (BLAS, which releases
    the GIL) instead of building the products of every codeword in ``einsum``."""

    book: np.ndarray  # (num_sub_vectors, sub-vector dimension, 256) float64, times -2
    norms: np.ndarray  # (num_sub_vectors, 256) float64: |codeword|^2
    offsets: np.ndarray  # (num_sub_vectors,) intp: j * 256


_tables: OrderedDict[bytes, _Tables] = OrderedDict()
_TABLES = 16


def _model_tables(model: LeafCodes) -> _Tables:
    with _lock:
        found = _tables.get(model.model)
        if found is not None:
            return found
    book = model.codebook.astype(np.float64)
    made = _Tables(
        np.ascontiguousarray(book.transpose(0, 2, 1)) * -2.0,  # (exact: a power of two)
        np.einsum("jcs,jcs->jc", book, book),
        np.arange(book.shape[0], dtype=np.intp) * 256,
    )
    with _lock:
        _tables[model.model] = made
        while len(_tables) > _TABLES:
            _tables.popitem(last=False)
    return made


def _probed_rows(starts: np.ndarray, probed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows of the ``probed`` partitions, partition after partition, and the place in
    ``probed`` of each row's partition (a few whole-array operations, no loop per
    partition)."""
    first = starts[probed]
    lengths = starts[probed + 1] - first
    ends = np.cumsum(lengths)
    total = int(ends[-1]) if len(ends) else 0
    which = np.repeat(np.arange(len(probed), dtype=np.intp), lengths)
    # (the rows of the probed partitions before each: ends - lengths)
    rows = np.arange(total, dtype=np.intp) + np.repeat(first - (ends - lengths), lengths)
    return rows, which


def _nearest_partitions(distances: np.ndarray, count: int) -> np.ndarray:
    """``np.argsort(distances, kind="stable")[:count]`` (by distance, then place), sorting
    only the partitions as near as the ``count``-th."""
    if count >= len(distances):
        return np.argsort(distances, kind="stable")[:count]
    kth = np.partition(distances, count - 1)[count - 1]
    near = np.flatnonzero(distances <= kth)  # (in place order)
    if len(near) < count:  # NaN distances: sorted last, as argsort sorts them
        return np.argsort(distances, kind="stable")[:count]
    return near[np.argsort(distances[near], kind="stable")[:count]]


def _score(
    codes: LeafCodes | _Combined, query: np.ndarray, probed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The ADC distances of the rows of the ``probed`` partitions, and those rows."""
    model = codes if isinstance(codes, LeafCodes) else codes.first
    subs, _, width = model.codebook.shape
    probed = np.asarray(probed, dtype=np.intp)
    rows, which = _probed_rows(codes.starts, probed)
    if not len(rows):
        return np.zeros(0, np.float32), rows
    # one table per sub-vector j and probed partition: |(q - c_p)_j - codeword|^2, as
    # |r|^2 - 2 r.c + |c|^2 in float64 (the products: one batched matrix product), laid out
    # (sub-vector, partition, codeword) so that no step copies a transposed array
    prepared = _model_tables(model)
    residuals = (query - model.centroids[probed]).astype(np.float64).reshape(-1, subs, width)
    by_sub = residuals.transpose(1, 0, 2)
    tables = np.matmul(by_sub, prepared.book)  # -2 r.c
    tables += np.einsum("jps,jps->jp", by_sub, by_sub)[:, :, None]
    tables += prepared.norms[:, None, :]
    # the probed rows' codes: one take of whole rows (a row's bytes as one element), then
    # sub-vector major, so that each sub-vector's distances are one contiguous line
    whole = np.ascontiguousarray(codes.codes).view(np.dtype((np.void, subs))).reshape(-1)
    picked = whole.take(rows).view(np.uint8).reshape(-1, subs)
    index = picked.T.astype(np.intp, order="C")  # (sub-vector, row)
    index += (prepared.offsets * len(probed))[:, None]
    index += which * 256
    return _row_sums(tables.astype(np.float32).reshape(-1).take(index).T), rows


def _pairwise(values: np.ndarray) -> np.ndarray:
    """The sum of each column of ``values`` (float32, 8 to 128 rows: a row per sub-vector)
    added up as numpy's ``sum(axis=1)`` adds up a row of the transpose (eight running sums,
    paired, then the rest in turn), on whole contiguous lines: a few vector additions
    instead of one reduction per row."""
    width = values.shape[0]
    full = width - width % 8
    lanes = values[:8]
    if full > 8:
        lanes = lanes.copy()
        for start in range(8, full, 8):
            lanes += values[start : start + 8]
    total: np.ndarray = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + (
        (lanes[4] + lanes[5]) + (lanes[6] + lanes[7])
    )
    for j in range(full, width):
        total += values[j]
    return total


_same_order: dict[int, bool] = {}


def _row_sums(values: np.ndarray) -> np.ndarray:
    """``values.sum(axis=1, dtype=float32)`` bit for bit, by :func:`_pairwise` on its
    columns (contiguous lines when ``values`` is the transpose of a C-ordered array, as in
    :func:`_score`) when it gives numpy's sums (checked once per width on random rows of
    every magnitude)."""
    width = values.shape[1]
    same = _same_order.get(width)
    if same is None:
        sample = np.random.default_rng(width).standard_exponential((4096, width))
        sample = (sample**4).astype(np.float32)
        same = 8 <= width <= 128 and np.array_equal(
            _pairwise(sample.T), sample.sum(axis=1, dtype=np.float32)
        )
        _same_order[width] = same
    return _pairwise(values.T) if same else values.sum(axis=1, dtype=np.float32)


def namespace_nearest(
    leaves: list[LeafCodes],
    ranks: list[int],
    query: np.ndarray,
    k: int,
    nprobes: int,
    *,
    each: bool = False,
) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """The ``k`` rows of ``leaves`` (one model) nearest to ``query`` by their ADC distance
    over the ``nprobes`` partitions nearest to it (``each``: the ``k`` nearest of each leaf,
    the candidates Lance refines in each), ties by ``ranks`` (the leaf's place in the merge),
    then row id: ``(position in leaves, distances, row ids)`` per leaf with rows among them."""
    combined = _combine(tuple(c.directory for c in leaves), leaves)
    centroids = combined.first.centroids
    probed = _nearest_partitions(_squared(centroids, query), max(1, nprobes))
    distances, rows = _score(combined, query, probed)
    if not len(rows):
        return []
    if k < len(rows) and not each:  # every row tied with the k-th kept, the tie broken below
        kth = np.partition(distances, k - 1)[k - 1]
        keep = np.flatnonzero(distances <= kth)
        distances, rows = distances[keep], rows[keep]
    # (the row ids and leaves of the candidates only)
    row_ids = combined.row_ids[rows]
    if len(leaves) == 1:  # one leaf (a tenant's search): by distance, then row id
        best = np.lexsort((row_ids, distances))[:k]
        return [(0, distances[best], row_ids[best])]
    positions = combined.leaves[rows]
    if each:
        order = np.lexsort((row_ids, distances, positions))
        starts = np.searchsorted(positions[order], positions[order], side="left")
        best = order[np.arange(len(order)) - starts < k]
    else:
        rank_of = np.asarray(ranks, np.int64)[positions]
        best = np.lexsort((row_ids, rank_of, distances))[:k]
    out = []
    for position in np.unique(positions[best]):
        mine = best[positions[best] == position]
        out.append((int(position), distances[mine], row_ids[mine]))
    return out


def clear() -> None:
    """Forget every kept index."""
    with _lock:
        _kept.clear()
        _versions.clear()
        _combined.clear()
        _tables.clear()
    kept.dropped()
