"""Namespace-wide BM25: full-text scores as if the kept leaves were one table.

Lance scores a full-text match with BM25 over the statistics of the leaf's own index
(``k1`` = 1.2, ``b`` = 0.75; a query token repeated counts once per repetition)::

    score(d) = sum over query tokens t of idf(t) * (k1 + 1) * f / (f + K)
    K        = k1 * (1 - b + b * dl / avgdl)
    idf(t)   = ln((N - df(t) + 0.5) / (df(t) + 0.5) + 1)

with ``N`` the documents of the index (non-NULL rows), ``df(t)`` those containing ``t``, ``f``
the occurrences of ``t`` in ``d``, ``dl`` the tokens of ``d`` and ``avgdl`` the index's total
tokens over ``N``. pylance takes no outside statistics, so the namespace computes the scores
itself, from what Lance gives per kept leaf:

- ``N``, the total tokens and every document's ``dl``: the index's document file
  (``part_<n>_docs.lance``: ``_rowid``, ``_num_tokens``, and ``total_tokens`` in its schema
  metadata), read once per index (its files never change) and cached;
- per query token, Lance's own full-text search of that token alone over the whole leaf:
  the rows that contain it (their count is ``df``) and their ``_score``, from which ``f`` is
  solved exactly (``f = w * K / (k1 + 1 - w)`` with ``w = score / idf``); a solution that is not
  an integer means the statistics are not the index's and the search falls back (below);
- the candidates: the rows matching a query token or, with a filter or a phrase (``"..."``),
  the leaf's full-text search of the whole query with the filter as a prefilter, no limit.
  The whole query's scores must equal the sum of the per-token scores, which proves the
  query was split into the tokens Lance uses (not searched for an ASCII query under the
  ``simple`` tokenizer, which splits ASCII text on every character other than a letter or
  digit, as here).

The namespace-wide ``N``, total tokens and ``df`` are the sums over the kept leaves (after
pruning; a prefilter inside a leaf does not change them, as in one Lance table). Every row
with a positive score contains a query token, so it is among the candidates of its leaf: all
of them are scored and the top-k is exact. The cost is one search per distinct query token
per leaf (all of them run in parallel), plus one at most, each over all its matching rows
(no limit): about the cost of per-leaf scores for a one-token query, twice it for three
tokens.

**Fallback.** Where the namespace cannot reproduce the index's statistics, each leaf's own
scores are merged (per-leaf BM25): a base tokenizer other than ``simple``, ``whitespace`` or
``raw``, identifier or numeric splitting, leaves with different tokenizer parameters, a leaf
with rows outside its index (unindexed fragments, searched flat by Lance), deleted rows
(still counted by the index), more than one index on the column, or any check above failing.
The result's schema metadata says which: ``lance-partitioned.bm25`` is ``namespace`` or
``per-leaf``.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any, Protocol, cast

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned.consistency import leaf_field
from lance_partitioned.scan import ScanTask

__all__ = ["MODE_KEY", "NAMESPACE", "PER_LEAF", "namespace_text_hits"]

MODE_KEY = b"lance-partitioned.bm25"
"""The result schema metadata key saying how ``_score`` was computed."""
NAMESPACE = b"namespace"
PER_LEAF = b"per-leaf"

K1 = np.float32(1.2)
B = np.float32(0.75)
_ROWID = "_rowid"
_CACHE_SIZE = 256
_UNSUPPORTED_FLAGS = ("split_identifiers", "split_on_numerics", "preserve_original")


class _Fallback(Exception):
    """The namespace-wide scores cannot be computed exactly: merge per-leaf scores."""


class SearchLeaf(Protocol):
    """What a kept leaf opened for a search offers (``search.leaves.Leaf``)."""

    task: ScanTask
    ds: lance.LanceDataset
    pushdown: str | None
    exact_filter: bool
    columns: list[str]

    def conform(self, table: pa.Table, extra: Sequence[str]) -> pa.Table: ...


@dataclass(frozen=True)
class _Corpus:
    """A leaf index's documents: row ids (sorted), their token counts, and the totals."""

    row_ids: np.ndarray
    lengths: np.ndarray
    total_tokens: int
    params: str

    @property
    def num_docs(self) -> int:
        return int(self.row_ids.shape[0])

    def avgdl(self) -> np.float32:
        avgdl: np.float32 = np.float32(self.total_tokens) / np.float32(max(self.num_docs, 1))
        return avgdl

    def lengths_of(self, row_ids: np.ndarray) -> np.ndarray:
        at = np.searchsorted(self.row_ids, row_ids)
        at = np.minimum(at, max(self.num_docs - 1, 0))
        if self.num_docs == 0 or not np.array_equal(self.row_ids[at], row_ids):
            raise _Fallback("a matching row is not a document of the index")
        return np.asarray(self.lengths[at], dtype=np.float32)


_EMPTY = _Corpus(np.zeros(0, np.uint64), np.zeros(0, np.uint32), 0, "")
_cache: OrderedDict[str, _Corpus] = OrderedDict()
_versions: OrderedDict[tuple[str, int, str], _Corpus] = OrderedDict()
_cache_lock = threading.Lock()


def _read_corpus(directory: str, storage_options: dict[str, str]) -> _Corpus:
    from lance.file import LanceFileReader

    def reader(name: str) -> Any:
        return LanceFileReader(f"{directory}/{name}", storage_options=storage_options or None)

    meta = reader("metadata.lance").metadata().schema.metadata or {}
    if b"params" not in meta or b"partitions" not in meta:
        raise _Fallback("an index without the documents layout this module reads")
    json.loads(meta[b"params"])  # parsed again by _params: a bad one is a ValueError here
    ids, lengths, total = [], [], 0
    for part in json.loads(meta[b"partitions"]):
        docs = reader(f"part_{int(part)}_docs.lance")
        table = docs.read_all().to_table()
        total += int((docs.metadata().schema.metadata or {})[b"total_tokens"])
        ids.append(np.asarray(table.column(_ROWID).to_numpy(), dtype=np.uint64))
        lengths.append(np.asarray(table.column("_num_tokens").to_numpy(), dtype=np.uint32))
    row_ids = np.concatenate(ids) if ids else _EMPTY.row_ids
    order = np.argsort(row_ids, kind="stable")
    all_lengths = np.concatenate(lengths) if lengths else _EMPTY.lengths
    return _Corpus(row_ids[order], all_lengths[order], total, meta[b"params"].decode())


def _corpus(leaf: SearchLeaf, source: str) -> _Corpus:
    """The statistics of the leaf's INVERTED index on ``source`` (cached by index uuid, and by
    leaf version on the main branch: a version never changes)."""
    key = None if leaf.task.read_branch else (leaf.ds.uri, int(leaf.ds.version), source)
    with _cache_lock:
        known = _versions.get(key) if key is not None else None
    if known is not None:
        return known
    corpus = _index_corpus(leaf, source)
    if key is not None:
        with _cache_lock:
            _versions[key] = corpus
            while len(_versions) > _CACHE_SIZE:
                _versions.popitem(last=False)
    return corpus


def _index_corpus(leaf: SearchLeaf, source: str) -> _Corpus:
    fragments = leaf.ds.get_fragments()
    if not fragments:
        return _EMPTY
    segments = [
        segment
        for index in leaf.ds.describe_indices()
        if index.index_type == "Inverted" and list(index.field_names) == [source]
        for segment in index.segments
    ]
    if len(segments) != 1 or segments[0].base_id is not None:
        raise _Fallback("not exactly one INVERTED index segment on the column, in the leaf")
    covered = {int(i) for i in segments[0].fragment_ids}
    if any(f.fragment_id not in covered for f in fragments):
        raise _Fallback("rows outside the index (searched flat by Lance)")
    if any(f.metadata.deletion_file is not None for f in fragments):
        raise _Fallback("deleted rows, still counted by the index")
    directory = f"{leaf.ds.uri.rstrip('/')}/_indices/{segments[0].uuid}"
    with _cache_lock:
        if directory in _cache:
            _cache.move_to_end(directory)
            return _cache[directory]
    try:
        corpus = _read_corpus(directory, dict(leaf.task.storage_options))
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise _Fallback(f"the index's documents cannot be read: {exc}") from exc
    with _cache_lock:
        _cache[directory] = corpus
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return corpus


def _pieces(text: str, params: dict[str, Any]) -> list[str]:
    """``text`` split as the base tokenizer splits it (each piece one token or none)."""
    if params.get("lance_tokenizer", "text") != "text" or any(
        params.get(flag) for flag in _UNSUPPORTED_FLAGS
    ):
        raise _Fallback("a tokenizer this module does not reproduce")
    base = params.get("base_tokenizer", "simple")
    if base == "simple":
        return re.findall(r"[^\W_]+", text)
    if base == "whitespace":
        return text.split()
    if base == "raw":
        return [text]
    raise _Fallback(f"base tokenizer {base!r}")


def _idf(df: np.ndarray | int, n: int) -> np.ndarray:
    df32 = np.asarray(df, dtype=np.float32)
    n32 = np.float32(n)
    half = np.float32(0.5)
    return np.asarray(np.log((n32 - df32 + half) / (df32 + half) + np.float32(1)), np.float32)


def _norm(lengths: np.ndarray, avgdl: np.float32) -> np.ndarray:
    return np.asarray(K1 * (np.float32(1) - B + B * lengths / avgdl), dtype=np.float32)


def _fts(
    ds: lance.LanceDataset, source: str, text: str, flt: str | None, limit: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    found = ds.to_table(
        columns=["_score"],
        full_text_query={"query": text, "columns": [source]},
        filter=flt,
        prefilter=flt is not None,
        with_row_id=True,
        limit=limit,
    )
    ids = np.asarray(found.column(_ROWID).to_numpy(), dtype=np.uint64)
    return ids, np.asarray(found.column("_score").to_numpy(), dtype=np.float32)


_Match = tuple[np.ndarray, np.ndarray, np.ndarray]
"""One token's matches in a leaf: row ids, the token's count in each, the rows' lengths."""
_Whole = tuple[np.ndarray, np.ndarray, "np.ndarray | pa.Table | None"]
"""Lance's search of the whole query in a leaf: row ids and scores, and the candidates."""


@dataclass
class _LeafTerms:
    """One leaf's statistics for the query: per distinct piece its matches and their ``f``."""

    leaf: SearchLeaf
    source: str | None
    corpus: _Corpus
    matches: dict[str, _Match]
    candidates: np.ndarray | pa.Table


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.allclose(a, b, rtol=1e-4, atol=1e-6))


def _piece_matches(leaf: SearchLeaf, source: str, corpus: _Corpus, piece: str) -> _Match:
    """Lance's search of ``piece`` alone over the whole leaf, and each row's count solved
    from its ``_score`` (an integer, else the statistics are not the index's)."""
    ids, scores = _fts(leaf.ds, source, piece, None)
    if ids.shape[0] == 0:
        return ids, np.zeros(0, np.float32), np.zeros(0, np.float32)
    idf = _idf(ids.shape[0], corpus.num_docs)
    lengths = corpus.lengths_of(ids)
    norm = _norm(lengths, corpus.avgdl())
    w = scores / idf
    f = np.rint(w * norm / (K1 + np.float32(1) - w))
    again = idf * (K1 + np.float32(1)) * f / (f + norm)
    if not (np.all(f >= 1) and _close(again, scores)):
        raise _Fallback("Lance's scores are not BM25 over the index's statistics")
    return ids, f.astype(np.float32), lengths


def _query_hits(
    leaf: SearchLeaf,
    source: str,
    text: str,
    pieces: dict[str, int],
    base: str,
    k: int,
    text_leaf: Callable[[], pa.Table | None],
) -> _Whole | None:
    """The leaf's search of the whole query (the filter as a prefilter): the candidates and
    the scores that prove the split; ``None`` when the per-token searches say it all."""
    if not leaf.exact_filter:  # a residual evaluated in memory: the rows, filtered
        table = text_leaf()
        if table is None:
            return np.zeros(0, np.uint64), np.zeros(0, np.float32), pa.table({})
        return _ids(table), _scores(table), table
    if leaf.pushdown is not None or '"' in text:  # a filter, or a phrase: its matches
        ids, scores = _fts(leaf.ds, source, text, leaf.pushdown)
        return ids, scores, ids
    if list(pieces.items()) == [(text, 1)] or (base == "simple" and text.isascii()):
        return None  # the query is its one token, or ASCII: split as Lance splits it
    ids, scores = _fts(leaf.ds, source, text, None, limit=k)
    return ids, scores, None


def _leaf_terms(
    leaf: SearchLeaf,
    source: str,
    corpus: _Corpus,
    pieces: dict[str, int],
    matches: dict[str, _Match],
    whole: _Whole | None,
) -> _LeafTerms:
    """The leaf's candidates (all matching rows), once the split is checked."""
    union = np.unique(np.concatenate([m[0] for m in matches.values()]))
    if whole is None:
        return _LeafTerms(leaf, source, corpus, matches, union)
    ids, scores, candidates = whole
    if not _close(_leaf_sum(corpus, matches, pieces, ids), scores):
        raise _Fallback("the query's tokens are not the pieces split here")
    return _LeafTerms(leaf, source, corpus, matches, union if candidates is None else candidates)


def _ids(table: pa.Table) -> np.ndarray:
    return np.asarray(table.column(_ROWID).to_numpy(), dtype=np.uint64)


def _scores(table: pa.Table) -> np.ndarray:
    return np.asarray(table.column("_score").to_numpy(zero_copy_only=False), dtype=np.float32)


def _bm25(
    ids: np.ndarray,
    matches: dict[str, _Match],
    pieces: dict[str, int],
    idf: dict[str, np.ndarray],
    avgdl: np.float32,
) -> np.ndarray:
    """BM25 of the rows ``ids`` (sorted or not) given each piece's matches in their leaf."""
    total = np.zeros(ids.shape[0], np.float32)
    for piece, times in pieces.items():
        hit_ids, f, lengths = matches[piece]
        if hit_ids.shape[0] == 0:
            continue
        order = np.argsort(hit_ids, kind="stable")
        sorted_ids = hit_ids[order]
        at = np.minimum(np.searchsorted(sorted_ids, ids), sorted_ids.shape[0] - 1)
        found = sorted_ids[at] == ids
        ff = f[order][at]
        norm = _norm(lengths[order][at], avgdl)
        part = idf[piece] * (K1 + np.float32(1)) * ff / (ff + norm)
        total += np.where(found, part * np.float32(times), np.float32(0))
    return total


def _leaf_sum(
    corpus: _Corpus,
    matches: dict[str, _Match],
    pieces: dict[str, int],
    ids: np.ndarray,
) -> np.ndarray:
    idf = {p: _idf(m[0].shape[0], corpus.num_docs) for p, m in matches.items()}
    return _bm25(ids, matches, pieces, idf, corpus.avgdl())


def _params(probes: Iterable[tuple[str | None, _Corpus]]) -> dict[str, Any]:
    found = {corpus.params for _, corpus in probes if corpus.num_docs}
    if len(found) > 1:
        raise _Fallback("leaves with different tokenizer parameters")
    return json.loads(found.pop()) if found else {}


def namespace_text_hits(
    pool: Executor,
    leaves: Sequence[SearchLeaf],
    column: pa.Field,
    text: str,
    k: int,
    text_leaf: Callable[[SearchLeaf], pa.Table | None],
) -> list[pa.Table] | None:
    """Each kept leaf's rows among the namespace-wide BM25 top ``k`` for ``text``.

    Returns the per-leaf tables (the output columns, ``_score``, ``_rowid``, ``_leaf`` and
    ``_partition``, as ``search.query`` merges them), or ``None`` when the namespace-wide scores
    cannot be computed exactly (see the module docstring): the caller merges per-leaf scores.
    """
    try:
        probes = list(pool.map(lambda leaf: _probe(leaf, column), leaves))
        params = _params(probes)
        pieces: dict[str, int] = {}
        for piece in _pieces(text, params):
            pieces[piece] = pieces.get(piece, 0) + 1
        base = str(params.get("base_tokenizer", "simple"))
        # one job per (leaf, distinct piece) and per leaf for the whole query, all in parallel
        jobs = [
            (i, piece)
            for i, (source, corpus) in enumerate(probes)
            if source is not None and corpus.num_docs
            for piece in [*pieces, None]
        ]

        def run(job: tuple[int, str | None]) -> _Match | _Whole | None:
            i, piece = job
            leaf, (source, corpus) = leaves[i], probes[i]
            assert source is not None
            if piece is not None:
                return _piece_matches(leaf, source, corpus, piece)
            return _query_hits(leaf, source, text, pieces, base, k, lambda: text_leaf(leaf))

        done = dict(zip(jobs, pool.map(run, jobs), strict=True))
        terms = []
        for i, (source, corpus) in enumerate(probes):
            if source is None or not corpus.num_docs:
                terms.append(_LeafTerms(leaves[i], source, corpus, {}, np.zeros(0, np.uint64)))
                continue
            matches = {p: cast(_Match, done[(i, p)]) for p in pieces}
            terms.append(_leaf_terms(leaves[i], source, corpus, pieces, matches, done[(i, None)]))
    except _Fallback:
        return None
    num_docs = sum(t.corpus.num_docs for t in terms)
    if num_docs == 0:
        return []
    total = sum(t.corpus.total_tokens for t in terms)
    avgdl = np.float32(total) / np.float32(num_docs)
    df = {p: sum(t.matches[p][0].shape[0] for t in terms if t.matches) for p in pieces}
    idf = {p: _idf(df[p], num_docs) for p in pieces}
    scored = []
    for i, t in enumerate(terms):
        ids = t.candidates if isinstance(t.candidates, np.ndarray) else _ids(t.candidates)
        if ids.shape[0]:
            scores = _bm25(ids, t.matches, pieces, idf, avgdl)
            scored.append((i, ids, scores))
    if not scored:
        return []
    best = _top_k(terms, scored, k)
    return list(pool.map(lambda item: _fetch(terms[item[0]], *item[1]), best.items()))


def _probe(leaf: SearchLeaf, column: pa.Field) -> tuple[str | None, _Corpus]:
    """The leaf's name of ``column`` (``None``: the leaf predates it) and its index's corpus."""
    field = leaf_field(leaf.ds.schema, column)
    return (None, _EMPTY) if field is None else (field.name, _corpus(leaf, field.name))


def _top_k(
    terms: list[_LeafTerms], scored: list[tuple[int, np.ndarray, np.ndarray]], k: int
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The ``k`` best rows: score descending, ties by leaf object id, then row id."""
    leaf = np.concatenate([np.full(ids.shape[0], i) for i, ids, _ in scored])
    ids = np.concatenate([ids for _, ids, _ in scored])
    scores = np.concatenate([s for _, _, s in scored])
    names = np.array([t.leaf.task.object_id for t in terms])
    rank = np.argsort(np.argsort(names, kind="stable"), kind="stable")
    order = np.lexsort((ids, rank[leaf], -scores))[:k]
    best: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for i in np.unique(leaf[order]):
        mine = order[leaf[order] == i]
        best[int(i)] = (ids[mine], scores[mine])
    return best


def _fetch(terms: _LeafTerms, ids: np.ndarray, scores: np.ndarray) -> pa.Table:
    """The leaf's rows ``ids`` with their namespace-wide ``_score``, conformed."""
    extra = pa.table({"_score": pa.array(scores, pa.float32()), _ROWID: pa.array(ids, pa.uint64())})
    if isinstance(terms.candidates, pa.Table):  # filtered in memory: the rows are there
        table = terms.candidates
        keep = table.filter(pc.is_in(table.column(_ROWID), value_set=extra.column(_ROWID)))
        index = {int(r): float(s) for r, s in zip(ids, scores, strict=True)}
        new = pa.array([index[int(r)] for r in _ids(keep)], pa.float32())
        return keep.set_column(keep.schema.get_field_index("_score"), "_score", new)
    leaf = terms.leaf
    if leaf.columns:
        rows = leaf.ds._take_rows(pa.array(ids, pa.uint64()), columns=leaf.columns)
        for name in extra.column_names:
            rows = rows.append_column(name, extra.column(name))
    else:
        rows = extra
    return leaf.conform(rows, ["_score", _ROWID])
