"""``search``: one pruned top-k over the leaves of a namespace.

1. The leaves are planned with the scan planner (:func:`lance_partitioned.scan.plan_scan`):
   a leaf that ``filter`` excludes by its partition values is never opened, and each kept
   leaf gets the residual filter, which goes to Lance as a *prefilter* (applied before the
   top-k, so a leaf returns its k best matching rows, never fewer because of the filter).
   The plan of a SQL filter is kept per snapshot (:mod:`lance_partitioned.scan.plans`).
2. Each kept leaf is opened and searched in one task, in parallel on the shared leaf pool of
   the namespace's ``max_workers`` threads (pylance releases the GIL; one kept leaf: in the
   calling thread): Lance's nearest-neighbour search (its index when the leaf has one,
   unindexed fragments searched flat as well; a leaf without an index is searched exactly) or
   its full-text search. A small leaf without a vector index and without a residual is
   searched in numpy on its vectors kept in memory (:mod:`lance_partitioned.search.flat`:
   Lance's L2 distances bit for bit, its order), and only its rows that make the merged
   top-k are read. A residual Lance cannot evaluate (a condition on a partition field's
   transform, a renamed or promoted column) is evaluated in memory and the leaf searched
   exactly in numpy. Leaves whose ``IVF_PQ`` indexes share the namespace's model are
   searched together as one IVF_PQ search (:mod:`lance_partitioned.search.ivfpq`: the
   partitions chosen once, every kept leaf's codes of them scored in numpy) when their
   search can be reproduced (``nprobes`` given, L2, no residual, the whole leaf indexed, no
   deleted rows; else by Lance, as stated there); the result's schema metadata
   ``lance-partitioned.ivf_pq`` says which (``namespace`` or ``per-leaf``). In such a search
   the small unindexed leaves (under the index's ``min_rows``) are searched as leaves of the
   same index, their vectors encoded under its model (:mod:`lance_partitioned.search.encode`),
   as one table's index holds every row; ``lance-partitioned.ivf_pq.small`` counts them.
   That classification of the kept leaves depends on their versions only: it is kept per
   scan plan (:mod:`lance_partitioned.search.prepared`), so a search repeated on the same
   snapshot opens and classifies no leaf.
3. The per-leaf top-k lists are merged exactly: rows are ordered by ``_distance`` (ascending)
   or ``_score`` (descending), ties by leaf object id, then by row id in the leaf, and the
   first k are kept; ``_partition`` is made for those k only (when every kept leaf was
   searched in numpy, the k are chosen there and only their rows read:
   :mod:`lance_partitioned.search.winners`). The winners' columns are
   read from memory once a leaf version's have been read twice
   (:mod:`lance_partitioned.search.rows`). Among rows tied at the k-th
   distance inside one leaf, which ones Lance returns is Lance's choice.

Full-text scores are namespace-wide BM25 (:mod:`lance_partitioned.search.bm25`): the term
statistics of every kept leaf, so a 3-leaf namespace ranks like one table of the same rows;
where they cannot be reproduced exactly, each leaf's own scores are merged (the result's
schema metadata ``lance-partitioned.bm25`` says which).

Vector and text together are fused with reciprocal rank fusion: each row scores
``sum(1 / (rrf_k + rank))`` over the two merged lists (rank from 0, ``rrf_k`` = 60, as
LanceDB's ``RRFReranker``), in ``_relevance_score``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors
from lance_partitioned.consistency import leaf_field
from lance_partitioned.expressions import Predicate
from lance_partitioned.manifest import Manifest, ManifestSnapshot, local_path
from lance_partitioned.runtime.leaf_cache import leaf_schema
from lance_partitioned.runtime.pools import leaf_pool
from lance_partitioned.scan import (
    ScanTask,
)
from lance_partitioned.search import (
    bm25,
    encode,
    ivfpq,
    kept,
    prepared,
    setup,
    turns,
    winners,
)
from lance_partitioned.search.definitions import VECTOR_TYPES, IndexDefinition
from lance_partitioned.search.leaves import ORD, ROWID, partition_text
from lance_partitioned.search.leaves import Leaf as _Leaf
from lance_partitioned.search.vector import (
    Arranged,
    Coded,
    Flat,
    Keys,
    grouped_pass,
    in_memory,
    vector_leaf,
)
from lance_partitioned.spec.schema import NamespaceSchema

__all__ = ["RRF_K", "search"]

RRF_K = 60
"""The ``k`` of reciprocal rank fusion (LanceDB's default)."""

_LEAF = "_leaf"
_ROWID = ROWID
_ORD = ORD


def _resolve_column(
    schema: NamespaceSchema, definitions: dict[str, IndexDefinition], column: str | None, text: bool
) -> str:
    read = schema.read_schema()
    if column is not None:
        if column not in read.names:
            raise errors.InvalidInputError(
                f"search: no column {column!r}; the namespace columns are {read.names}"
            )
        return column
    wanted = ("INVERTED",) if text else VECTOR_TYPES
    named = {
        schema.field_by_id(d.field_id).name
        for d in definitions.values()
        if d.index_type in wanted and not schema.is_deprecated(d.field_id)
    }
    if not named and not text:
        named = {f.name for f in read if pa.types.is_fixed_size_list(f.type)}
    if len(named) != 1:
        what = "full-text" if text else "vector"
        raise errors.InvalidInputError(
            f"search: pass column=, the {what} column to search (candidates: {sorted(named)})"
        )
    return str(named.pop())


def _metric(definitions: dict[str, IndexDefinition], field_id: int, metric: str | None) -> str:
    """The metric every leaf uses: the one asked, else the vector index's, else L2."""
    if metric is not None:
        return metric.lower()
    for definition in definitions.values():
        if definition.field_id == field_id and definition.kind == "vector":
            return str(definition.params.get("metric", "l2")).lower()
    return "l2"


def _small_rows(definitions: dict[str, IndexDefinition], field_id: int) -> int | None:
    """The ``min_rows`` of the ``IVF_PQ`` index on the field when it covers every leaf (no
    ``filter``): its smaller leaves are searched through codes encoded under its model
    (:mod:`.encode`) in an approximate search; None: they are searched exactly."""
    for definition in definitions.values():
        if (
            definition.field_id == field_id
            and definition.index_type == "IVF_PQ"
            and definition.filter is None
        ):
            return int(definition.min_rows)
    return None


def _cached(task: ScanTask) -> bool:
    """The leaf is opened from the leaf cache (a fixed local version)."""
    fixed = task.read_version is not None and task.read_tag is None and task.read_branch is None
    return fixed and local_path(task.uri) is not None


def _text_leaf(leaf: _Leaf, column: pa.Field, text: str, k: int) -> pa.Table | None:
    source = leaf_field(leaf_schema(leaf.ds), column)
    if source is None:
        return None
    query = {"query": text, "columns": [source.name]}
    try:
        found = leaf.ds.to_table(
            columns=[*leaf.columns, "_score"],
            full_text_query=query,
            filter=leaf.pushdown,
            prefilter=True,
            with_row_id=True,
            limit=k if leaf.exact_filter else None,
        )
    except (OSError, ValueError) as exc:
        if "INVERTED index" not in str(exc):
            raise
        if leaf.ds.count_rows() == 0:
            return None
        raise errors.InvalidInputError(
            f"search: leaf {leaf.task.object_id!r} has no INVERTED index on column "
            f"{column.name!r}; create one with create_index({column.name!r}, 'INVERTED') or "
            "build it on new leaves with optimize_indices()"
        ) from exc
    return leaf.conform(found, ["_score", _ROWID])


def _merge(tables: list[pa.Table], key: str, descending: bool, k: int) -> pa.Table:
    """The first ``k`` rows of ``tables`` by ``key``, ties by leaf (``_ord``: object-id
    order), then row id."""
    table = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    order = "descending" if descending else "ascending"
    indices = pc.sort_indices(
        table, sort_keys=[(key, order), (_ORD, "ascending"), (_ROWID, "ascending")]
    )
    return table.take(indices[:k])


def _rrf(vector: pa.Table, text: pa.Table, k: int) -> pa.Table:
    """Reciprocal rank fusion of two ranked lists (rows identified by leaf and row id)."""
    scores: dict[tuple[str, int], float] = {}
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for table in (vector, text):
        for rank, row in enumerate(table.to_pylist()):
            key = (row[_LEAF], row[_ROWID])
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank)
            rows.setdefault(key, {}).update(row)
    ordered = sorted(scores, key=lambda key: (-scores[key], key))[:k]
    names = [n for n in vector.column_names if n not in ("_distance", _LEAF, _ROWID)]
    names = [n for n in names if n != "_partition"]
    out = {n: [rows[key].get(n) for key in ordered] for n in names}
    fused = pa.table(out, schema=vector.select(names).schema)
    fused = fused.append_column(
        "_distance", pa.array([rows[key].get("_distance") for key in ordered], pa.float32())
    )
    fused = fused.append_column(
        "_score", pa.array([rows[key].get("_score") for key in ordered], pa.float32())
    )
    fused = fused.append_column(
        "_relevance_score", pa.array([scores[key] for key in ordered], pa.float32())
    )
    return fused.append_column(
        "_partition", pa.array([rows[key]["_partition"] for key in ordered], pa.utf8())
    )


def search(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    vector: Any = None,
    *,
    text: str | None = None,
    column: str | None = None,
    k: int = 10,
    filter: str | Predicate | None = None,
    columns: Sequence[str] | None = None,
    metric: str | None = None,
    nprobes: int | None = None,
    refine_factor: int | None = None,
    ef: int | None = None,
    fast_search: bool = False,
    threads: int | None = None,
) -> pa.Table:
    """Top-``k`` rows nearest to ``vector`` and/or matching ``text`` (see the module docstring).

    Returns a table of the selected columns plus ``_distance`` (vector), ``_score`` (text) or
    ``_relevance_score`` (both, with the other two), and ``_partition``.
    """
    if vector is None and text is None:
        raise errors.InvalidInputError("search: pass vector=, text=, or both")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise errors.InvalidInputError(f"search: k must be a positive integer, got {k!r}")
    schema = snapshot.metadata.schema
    # the definitions, fields, plan and leaf ranks: kept per snapshot, filter and columns
    made = setup.setup(manifest, snapshot, filter, columns)
    definitions, fields, tasks, ranks = made.definitions, made.fields, made.tasks, made.ranks
    vector_column, text_column = column, column
    if vector is not None and text is not None and column is not None:  # hybrid: by type
        read = schema.read_schema()
        vectorish = column in read.names and pa.types.is_fixed_size_list(read.field(column).type)
        vector_column, text_column = (column, None) if vectorish else (None, column)
    vector_target = text_target = None
    if vector is not None:
        name = _resolve_column(schema, definitions, vector_column, False)
        vector_target = schema.read_schema().field(name)
        if not pa.types.is_fixed_size_list(vector_target.type):
            raise errors.InvalidInputError(
                f"search: column {name!r} is not a vector (fixed-size list) column"
            )
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != vector_target.type.list_size:
            raise errors.InvalidInputError(
                f"search: the query has {query.shape[0]} dimensions, column {name!r} "
                f"{vector_target.type.list_size}"
            )
        nearest: dict[str, Any] = {"metric": _metric(definitions, schema.field_id(name), metric)}
        for key, value in (("nprobes", nprobes), ("refine_factor", refine_factor)):
            if value is not None:
                nearest[key] = value
        if ef is not None:
            nearest["ef"] = ef
    if text is not None:
        name = _resolve_column(schema, definitions, text_column, True)
        text_target = schema.read_schema().field(name)
    width = max(1, min(threads or manifest.max_workers, len(tasks) or 1))
    by_rank = made.by_rank
    vector_hits = text_hits = None
    if vector_target is not None:

        def by_lance(leaf: _Leaf) -> pa.Table | Keys | Flat | None:
            return vector_leaf(leaf, vector_target, query, k, nearest, fast_search)

        def prepare(task: ScanTask) -> tuple[_Leaf, Keys | Flat | Coded | None]:
            leaf = _Leaf(task, schema, fields, ranks[task.object_id])
            return leaf, in_memory(leaf, vector_target, nearest, fast_search)

        small_rows = _small_rows(definitions, schema.field_id(vector_target.name))
        # the leaves classified once per plan (prepared.py): a repeated search on the same
        # snapshot opens and classifies nothing
        parameters = (vector_target.name, nearest["metric"], nprobes is None, fast_search)
        arranged = prepared.found(tasks, parameters)
        if not isinstance(arranged, Arranged):
            made_at = kept.generation()
            # leaves opened from the leaf cache: classified in this thread (no dispatch per
            # leaf); only the leaves Lance searches go to the pool
            cached = all(_cached(task) for task in tasks)
            if cached or len(tasks) <= 1:
                classified = [prepare(task) for task in tasks]
            else:
                with leaf_pool(width) as pool:
                    classified = list(pool.map(prepare, tasks))
            rest = [leaf for leaf, done in classified if done is None]
            arranged = Arranged(rest, [d for _, d in classified if d is not None], small_rows)
            if cached and (filter is None or isinstance(filter, str)):
                prepared.keep(tasks, parameters, arranged, made_at)
        rest = arranged.lance
        if len(rest) <= 1:
            found = [by_lance(leaf) for leaf in rest]
        else:
            with leaf_pool(min(width, len(rest))) as pool:
                found = list(pool.map(by_lance, rest))
        searched, as_one, small = grouped_pass(
            arranged, found, by_lance, query, k, nearest, manifest.root
        )
        vector_hits = _collect(
            searched,
            fields,
            "_distance",
            False,
            k,
            by_rank,
            width,
            ids=text is not None,
            root=manifest.root,
        )
        ivf_mode = ivfpq.NAMESPACE if as_one else ivfpq.PER_LEAF
    if text_target is not None and text is not None:
        target, words = text_target, text
        with leaf_pool(width) as pool:
            leaves = list(pool.map(lambda t: _Leaf(t, schema, fields, ranks[t.object_id]), tasks))
            # namespace-wide BM25 (search/bm25.py), else each leaf's own scores merged
            per_leaf = lambda leaf: _text_leaf(leaf, target, words, k)  # noqa: E731
            ranked = bm25.namespace_text_hits(pool, leaves, target, words, k, per_leaf)
            bm25_mode = bm25.NAMESPACE if ranked is not None else bm25.PER_LEAF
            texts = list(pool.map(per_leaf, leaves)) if ranked is None else list(ranked)
        text_hits = _collect(texts, fields, "_score", True, k, by_rank, ids=vector is not None)
    if vector_hits is not None and text_hits is not None:
        hits = _rrf(vector_hits, text_hits, k)
    else:
        hits = vector_hits if vector_hits is not None else text_hits
        assert hits is not None  # (no _leaf, _rowid: kept for the fusion only)
    meta = dict(hits.schema.metadata or {})
    if text is not None:
        meta[bm25.MODE_KEY] = bm25_mode
    if vector_target is not None:
        meta[ivfpq.MODE_KEY] = ivf_mode
        meta[encode.SMALL_KEY] = str(small).encode()
    return hits.replace_schema_metadata(meta or None)


def _materialise(keys: list[Keys], tables: list[pa.Table], k: int, width: int) -> list[pa.Table]:
    """The rows of ``keys`` that make the top ``k`` with ``tables`` (by ``_distance``, leaf,
    row id), read from their leaves; the others are never read."""
    ranked = [t.select(["_distance", _ORD, _ROWID]) for t in tables]
    ranks = np.concatenate([np.full(len(item.row_ids), item.leaf.rank, np.int32) for item in keys])
    distances = np.concatenate([item.distances for item in keys])
    row_ids = np.concatenate([item.row_ids for item in keys])
    best = np.lexsort((row_ids, ranks, distances))[:k]  # one table of the k best keys
    ranked.append(
        pa.table(
            {
                "_distance": pa.array(distances[best], pa.float32()),
                _ORD: pa.array(ranks[best], pa.int32()),
                _ROWID: pa.array(row_ids[best], pa.uint64()),
            }
        )
    )
    first = ranked[0].schema
    top = _merge([t if t.schema == first else t.cast(first) for t in ranked], "_distance", False, k)
    kept = top.column(_ORD).to_numpy()
    leaves = {item.leaf.rank: item.leaf for item in keys}
    wanted = [
        (leaves[int(rank)], top.take(pa.array(np.flatnonzero(kept == rank))))
        for rank in np.unique(kept)
        if int(rank) in leaves  # (else a leaf Lance searched: its rows already read)
    ]
    # rows kept in memory (.rows) read in this thread, the others one read per leaf
    here = [pair for pair in wanted if pair[0].in_memory()]
    wanted = [pair for pair in wanted if not pair[0].in_memory()]
    out = [leaf.take(chosen) for leaf, chosen in here]
    if len(wanted) <= 1:
        return out + [leaf.take(chosen) for leaf, chosen in wanted]
    with leaf_pool(min(len(wanted), width)) as pool:  # in parallel
        return out + list(pool.map(lambda pair: pair[0].take(pair[1]), wanted))


def _read_many(
    wanted: list[tuple[winners.Winner, np.ndarray]], width: int, root: str = ""
) -> list[pa.Table]:
    """Each leaf's rows of ``wanted`` read (:meth:`_Leaf.read`), in that order: the rows
    kept in memory (:mod:`.rows`) in this thread, in the turn of the namespace at ``root``
    (:mod:`.turns`), the others one read per leaf, in parallel."""
    with turns.turn(root):
        out: list[pa.Table | None] = [
            leaf.read(ids) if leaf.in_memory() else None for leaf, ids in wanted
        ]
    rest = [at for at, table in enumerate(out) if table is None]
    if len(rest) == 1:
        out[rest[0]] = wanted[rest[0]][0].read(wanted[rest[0]][1])
    elif rest:
        with leaf_pool(min(len(rest), width)) as pool:
            read = pool.map(lambda at: wanted[at][0].read(wanted[at][1]), rest)
            for at, table in zip(rest, read, strict=True):
                out[at] = table
    return [table for table in out if table is not None]


def _collect(
    found: Sequence[pa.Table | Keys | None],
    fields: list[pa.Field],
    key: str,
    descending: bool,
    k: int,
    tasks: dict[int, ScanTask],
    width: int = 1,
    *,
    ids: bool = True,
    root: str = "",
) -> pa.Table:
    """The merged top ``k`` of the leaves' tables: the output fields, ``key``, ``_rowid`` and
    ``_leaf`` (``ids``: only when asked, for the fusion of two lists) and ``_partition`` (of the
    leaf ranked ``_ord`` in ``tasks``), added to the winners only."""
    keys = [item for item in found if isinstance(item, Keys) and len(item.row_ids)]
    tables = [t for t in found if isinstance(t, pa.Table) and t.num_rows]
    if keys and not tables and all(item.leaf.exact_filter for item in keys):
        # every leaf searched in numpy: the k best keys chosen there, only their rows read,
        # the result built in one call
        table, distances, row_ids, won = winners.top(
            keys, k, lambda wanted: _read_many(wanted, width, root)
        )
        texts = {item.leaf.rank: item.leaf.partition for item in keys}
        won_ranks = won.tolist()
        added = [(key, pa.array(distances, pa.float32()))]
        if ids:
            added.append((_ROWID, pa.array(row_ids, pa.uint64())))
            added.append((_LEAF, pa.array([tasks[r].object_id for r in won_ranks], pa.utf8())))
        if len(keys) == 1:  # (one leaf: its text made once)
            partitions = keys[0].leaf.partitions(len(won_ranks))
        else:
            partitions = pa.array([texts[r] for r in won_ranks], pa.utf8())
        added.append(("_partition", partitions))
        if table is None:  # no output column (columns=[])
            return pa.table(dict(added))
        schema = pa.schema([*table.schema, *(pa.field(name, a.type) for name, a in added)])
        return pa.Table.from_arrays([*table.columns, *(a for _, a in added)], schema=schema)
    if keys:
        tables += _materialise(keys, tables, k, width)
    order = [*(f.name for f in fields), key, _ROWID]
    if not tables:
        empty = pa.schema(
            [
                *fields,
                pa.field(key, pa.float32()),
                pa.field(_ROWID, pa.uint64()),
                pa.field(_LEAF, pa.utf8()),
                pa.field("_partition", pa.utf8()),
            ]
        )
        table = empty.empty_table()
        return table if ids else table.drop_columns([_LEAF, _ROWID])
    tables = [table.select([*order, _ORD]) for table in tables]
    first = tables[0].schema
    tables = [table if table.schema == first else table.cast(first) for table in tables]
    merged = _merge(tables, key, descending, k)
    chosen = [tasks[rank] for rank in merged.column(_ORD).to_pylist()]
    merged = merged.select(order if ids else order[:-1])
    if ids:
        merged = merged.append_column(_LEAF, pa.array([t.object_id for t in chosen], pa.utf8()))
    return merged.append_column(
        "_partition", pa.array([partition_text(t) for t in chosen], pa.utf8())
    )
