"""Small leaves encoded under the namespace's shared IVF_PQ model, in memory.

A leaf with fewer rows than its vector index's ``min_rows`` has no index of its own
(:mod:`lance_partitioned.search.build`; ``index_stats`` counts it as ``flat``). One Lance
table holding the same rows searches them through its IVF_PQ index, approximately; the
namespace searched them exactly in numpy (:mod:`lance_partitioned.search.flat`), which at a
million rows in a hundred tenants was most of a global query's CPU (every small leaf's
vectors read once per query).

When a search is approximate and goes through the namespace IVF_PQ path
(:mod:`lance_partitioned.search.ivfpq`: ``nprobes`` given, L2, no residual filter), each such
small leaf is searched as one more leaf of that IVF_PQ index: :func:`encoded` has every
vector of the leaf (its non-NULL, non-deleted rows, as :func:`.flat.flat_vectors` keeps
them) assigned to its nearest shared IVF centroid (squared L2) and its residual to the
centroid encoded with the shared PQ codebook (the nearest codeword of each sub-vector) by
Lance's own transform, the step of an index build that assigns and encodes rows
(:meth:`lance.indices.IndicesBuilder.transform_vectors`, written to a temporary file and read
back): what Lance's build of an ``IVF_PQ`` index with the same ``ivf_centroids`` and
``pq_codebook`` writes. Should that fail, :func:`encode` computes the same in numpy
(float32; a different centroid or codeword only on a near tie). The codes are laid out as
:class:`.ivfpq.LeafCodes` (rows grouped by partition), so the leaf's probed partitions are
scored with the indexed leaves' in one pass, and refined on its vectors (kept in memory)
with a ``refine_factor``. The encoding is kept per leaf version and model, at most
:data:`MAX_BYTES` of codes in all (least recently used dropped first).

An exact search (no ``nprobes``, another metric, a residual filter, no indexed leaf of the
model among the kept ones, or an index definition with a ``filter``) still searches the small
leaves exactly; so does a leaf of ``min_rows`` rows or more without an index yet (``missing``:
rows one table would also search flat until its index is rebuilt).
"""

from __future__ import annotations

import hashlib
import tempfile
import threading
from collections import OrderedDict

import numpy as np
import pyarrow as pa
from lance import LanceDataset

from lance_partitioned.search import kept
from lance_partitioned.search.flat import FlatVectors, squared_l2
from lance_partitioned.search.ivfpq import LeafCodes

__all__ = ["MAX_BYTES", "SMALL_KEY", "clear", "encode", "encoded", "refined"]

SMALL_KEY = b"lance-partitioned.ivf_pq.small"
"""The result schema metadata key holding how many small unindexed leaves a vector search
searched through their encoded codes (decimal text; ``0``: none, each searched exactly)."""

#: Bytes of codes and row ids of encoded leaves kept in all.
MAX_BYTES = 256 << 20

_CHUNK = 4096

_kept: OrderedDict[tuple[str, int, str, bytes], LeafCodes | None] = OrderedDict()
_bytes = 0
_lock = threading.Lock()


def _nearest(vectors: np.ndarray, book: np.ndarray) -> np.ndarray:
    """The row of ``book`` nearest (squared L2) to each row of ``vectors``: the argmin of
    ``|b|^2 - 2 v.b`` (``|v|^2`` is the same for every row of the book), in float32, one
    matrix product per chunk of rows."""
    norms = np.einsum("ij,ij->i", book, book)
    transposed = np.ascontiguousarray(book.T)
    out = np.empty(len(vectors), np.int64)
    for start in range(0, len(vectors), _CHUNK):
        scores = vectors[start : start + _CHUNK] @ transposed
        scores *= -2.0
        scores += norms
        out[start : start + _CHUNK] = scores.argmin(axis=1)
    return out


def _pq_codes(residuals: np.ndarray, codebook: np.ndarray) -> np.ndarray:
    """The nearest codeword (squared L2) of each sub-vector of each row of ``residuals``
    under ``codebook`` (``sub-vectors x 256 x width``)."""
    subs, _, width = codebook.shape
    codes = np.empty((len(residuals), subs), np.uint8)
    for j in range(subs):
        part = np.ascontiguousarray(residuals[:, j * width : (j + 1) * width])
        codes[:, j] = _nearest(part, codebook[j])
    return codes


def encode(flat: FlatVectors, model: LeafCodes, directory: str) -> LeafCodes:
    """The codes of ``flat``'s vectors under ``model``'s centroids and codebook, as a leaf's
    IVF_PQ index would hold them (``directory``: the key naming them)."""
    centroids = np.asarray(model.centroids, np.float32)
    codebook = np.asarray(model.codebook, np.float32)
    matrix = flat.matrix
    partitions = _nearest(matrix, centroids) if len(matrix) else np.zeros(0, np.int64)
    residuals = matrix - centroids[partitions]
    codes = _pq_codes(residuals, codebook)
    order = np.argsort(partitions, kind="stable")
    counts = np.bincount(partitions, minlength=len(centroids))
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    row_ids = np.asarray(flat.row_ids, np.uint64)[order]
    return LeafCodes(
        directory, model.model, model.centroids, model.codebook, starts, codes[order], row_ids
    )


def _lance_encode(
    ds: LanceDataset, column: str, flat: FlatVectors, model: LeafCodes, directory: str
) -> LeafCodes | None:
    """The codes Lance's own transform (:meth:`lance.indices.IndicesBuilder.transform_vectors`,
    the step of an index build that assigns and encodes the rows) writes for the leaf under
    ``model``, read back from a temporary file; None when it fails or gives other rows than
    ``flat`` (then :func:`encode` computes them in numpy)."""
    from lance.file import LanceFileReader
    from lance.indices import IndicesBuilder, IvfModel, PqModel

    subs, _, width = model.codebook.shape
    dim = subs * width
    centroids = np.ascontiguousarray(model.centroids, np.float32).reshape(-1)
    codebook = np.ascontiguousarray(model.codebook, np.float32).reshape(-1)
    ivf = IvfModel(pa.FixedSizeListArray.from_arrays(pa.array(centroids), dim), "l2")
    pq = PqModel(subs, pa.FixedSizeListArray.from_arrays(pa.array(codebook), dim))
    try:
        with tempfile.TemporaryDirectory(prefix="lp-encode-") as tmp:
            uri = f"{tmp}/codes.lance"
            IndicesBuilder(ds, column).transform_vectors(ivf, pq, uri)
            table = LanceFileReader(uri).read_all().to_table()
    except (OSError, ValueError, RuntimeError, TypeError):
        return None
    row_ids = np.asarray(table.column("_rowid").to_numpy(), np.uint64)
    if len(row_ids) != len(flat.row_ids) or not np.array_equal(np.sort(row_ids), flat.row_ids):
        return None
    partitions = np.asarray(table.column("__ivf_part_id").to_numpy(), np.int64)
    codes = table.column("__pq_code").combine_chunks().values.to_numpy()
    codes = np.asarray(codes, np.uint8).reshape(len(row_ids), subs)
    order = np.lexsort((row_ids, partitions))
    counts = np.bincount(partitions, minlength=len(model.centroids))
    starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return LeafCodes(
        directory,
        model.model,
        model.centroids,
        model.codebook,
        starts,
        codes[order],
        row_ids[order],
    )


def encoded(
    ds: LanceDataset, column: str, flat: FlatVectors, model: LeafCodes, min_rows: int
) -> LeafCodes | None:
    """The codes of the small leaf ``ds`` (a fixed version; ``flat``: its vectors of
    ``column``) under ``model``, kept per leaf version; None when the leaf has ``min_rows``
    rows or more (an index is due on it: it stays flat)."""
    global _bytes
    key = (ds.uri, int(ds.version), column, model.model)
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
    codes = None
    if ds.count_rows() < min_rows:
        digest = hashlib.sha1(repr(key).encode(), usedforsecurity=False).hexdigest()
        directory = f"encoded:{digest}"
        codes = _lance_encode(ds, column, flat, model, directory)
        if codes is None:
            codes = encode(flat, model, directory)
    with _lock:
        if key not in _kept:
            _kept[key] = codes
            _bytes += 0 if codes is None else codes.nbytes
        while _bytes > MAX_BYTES and len(_kept) > 1:
            _, dropped = _kept.popitem(last=False)
            _bytes -= 0 if dropped is None else dropped.nbytes
            kept.dropped()
    return codes


def refined(flat: FlatVectors, row_ids: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The squared L2 distances (Lance's, :func:`.flat.squared_l2`) of the rows ``row_ids``
    of ``flat`` to ``query``: a refine on the vectors kept in memory."""
    at = np.searchsorted(flat.row_ids, np.asarray(row_ids, np.uint64))
    return squared_l2(flat.matrix[at], query)


def clear() -> None:
    """Forget every encoded leaf."""
    global _bytes
    with _lock:
        _kept.clear()
        _bytes = 0
    kept.dropped()
