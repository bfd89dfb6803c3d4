"""One leaf's part of a merge: its rows joined with the source on the keys, and what the
WHEN MATCHED / NOT MATCHED BY SOURCE clauses do to them (:class:`Clauses.search`).

The join is DataFusion's (``IS NOT DISTINCT FROM`` on the NULL-safe keys, ``=`` on the
others), or, when no clause has a condition and the keys allow it, a probe of the source's
encoded keys (:mod:`.merge_keys`) that gives the same pairs without SQL. Used by
:class:`~lance_partitioned.dml.merge.MergeBuilder` on each searched leaf and by the Spark
merge in each leaf's task.

>>> quoted('a"b')
'"a""b"'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lance import LanceDataset

from lance_partitioned import errors, scan
from lance_partitioned.dml.merge_keys import SourceKeys
from lance_partitioned.dml.merge_set import assigned_values, assignment_query
from lance_partitioned.dml.plan import ROW_ADDRESS, matched_rows
from lance_partitioned.expressions import AlwaysFalse, AlwaysTrue, Predicate
from lance_partitioned.expressions.sqltext import deep
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.transaction import LeafChange

__all__ = ["SOURCE_ROW", "Clauses", "LeafMatches", "quoted"]

SOURCE_ROW = "__lp_source_row"  # the source's row index column
SHALLOW_QUERY = 2_000  # characters: DataFusion queries this short run on the calling thread
NO_PAIR = " WHERE FALSE"  # the clause of a WHEN MATCHED clause that applies to no pair


def quoted(name: str) -> str:
    """``name`` as a SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


@dataclass
class LeafMatches:
    """One searched leaf at one version: the target rows to delete, the source rows that
    matched any of its rows and those that update one (with the target's values of the
    columns the source lacks, row for row)."""

    read_version: int
    deleted: pa.Array  # row addresses (updated and deleted-by-source rows)
    updated: int  # target rows replaced
    # target rows deleted and not replaced: matched (when_matched_delete) or not
    # (when_not_matched_by_source_delete)
    by_source: int
    matched: np.ndarray  # source row indexes with a key match here
    updating: np.ndarray  # source row indexes that update a row here
    kept: pa.Table  # the updated target rows' values of the columns the update keeps
    change: LeafChange | None = None  # the same object on every attempt: its commit is kept
    # with when_matched_update(set=...): the new values of the ``set`` columns, row for row
    assigned: pa.Table | None = None


@dataclass(frozen=True)
class Clauses:
    """What a merge does to one leaf's rows: the keys ``on`` and the clauses as
    :class:`~lance_partitioned.dml.merge.MergeBuilder` holds them (``update``: (present,
    condition); ``assign``: ``when_matched_update``'s ``set``; ``matched_delete``:
    (present, condition); ``delete_first``: the delete clause was added first; ``absent``:
    the namespace columns the source lacks)."""

    on: list[str]
    update: tuple[bool, str | None]
    assign: Mapping[str, str] | None
    matched_delete: tuple[bool, str | None]
    delete_first: bool
    absent: list[pa.Field]

    def search(
        self,
        ds: LanceDataset,
        task: scan.ScanTask,
        schema: NamespaceSchema,
        source: pa.Table,
        deleting: Predicate,
        safe: frozenset[str],
        probe: tuple[SourceKeys, np.ndarray | None] | None = None,
    ) -> LeafMatches:
        """Join the leaf's rows with the source on the keys (DataFusion; with ``probe``,
        the source's encoded keys and the source rows that can match here, by probing them
        instead when no clause has a condition); the unmatched rows for which ``deleting``
        (the delete-by-source condition's residual here) holds go."""
        import datafusion

        update, update_condition = self.update
        remove, remove_condition = self.matched_delete
        read = schema.read_schema()
        assign = self.assign if update else None
        kept = [f.name for f in self.absent] if update else []
        if assign is not None:  # the target's values of the columns not assigned
            kept = [name for name in read.names if name not in assign]
        if update_condition is not None or remove_condition is not None or assign is not None:
            columns = None
        else:
            wanted = {*self.on, *kept}
            if not isinstance(deleting, (AlwaysTrue, AlwaysFalse)):
                wanted |= {f.name for f in scan.residual_fields(deleting, read)}
            columns = [name for name in read.names if name in wanted]
        whole = scan.ScanTask(
            task.object_id,
            task.uri,
            ds.version,
            task.spec_version,
            task.partition_values,
            AlwaysTrue(),
        )
        target = matched_rows(ds, whole, schema, columns)
        # the columns the source lacks stay out of DataFusion (taken by row address below)
        joined = target if columns is None else target.select([*self.on, ROW_ADDRESS])
        keys = " AND ".join(
            f"(target.{quoted(k)} {'IS NOT DISTINCT FROM' if k in safe else '='} "
            f"source.{quoted(k)})"
            for k in self.on
        )

        selected = [f"target.{ROW_ADDRESS}", f"source.{SOURCE_ROW}"]
        pairs = assignment_query({}, selected, keys)
        # with set=...: the update's pairs carry the assigned values
        assigning = None if assign is None else assignment_query(assign, selected, keys)
        # a clause without a WHERE applies to every matching pair: its rows are the matches
        # (no second join)
        clauses = {
            kind: self.clause(kind)
            for kind, wanted in (("update", update), ("delete", remove))
            if wanted
        }
        others = " WHERE NOT EXISTS (SELECT 1 FROM source WHERE {keys})"

        def run() -> tuple[pa.Table, pa.Table, pa.Table, pa.Table]:
            ctx = datafusion.SessionContext()
            ctx.register_record_batches("target", [_batches(joined)])
            ctx.register_record_batches("source", [_batches(source)])
            matches = ctx.sql(pairs).to_arrow_table()
            found = {
                kind: ctx.sql(pairs + clause).to_arrow_table() if clause else matches
                for kind, clause in clauses.items()
                if not (kind == "update" and assigning is not None)
            }
            if assigning is not None:
                found["update"] = ctx.sql(assigning + clauses["update"]).to_arrow_table()
            none = matches.slice(0, 0)
            unmatched = pa.table({ROW_ADDRESS: pa.array([], pa.uint64())})
            if not isinstance(deleting, AlwaysFalse):
                unmatched = ctx.sql(
                    f"SELECT {ROW_ADDRESS} FROM target" + others.format(keys=keys)
                ).to_arrow_table()
            return matches, found.get("update", none), found.get("delete", none), unmatched

        probed = None
        if probe is not None and all(c in ("", NO_PAIR) for c in clauses.values()):
            probed = probe[0].pairs(joined, probe[1])
        if probed is not None:
            matches, updates, removes, unmatched = _paired(joined, probed, clauses, deleting)
        else:
            # short queries cannot nest deep enough to need deep()'s big stack, and deep()
            # runs one call at a time: the leaves are searched in parallel
            longest = len(pairs) + max([len(others) + len(keys), *map(len, clauses.values())])
            longest += len(assigning or "")
            try:
                matches, updates, removes, unmatched = (
                    run() if longest <= SHALLOW_QUERY else deep(run)
                )
            except Exception as exc:
                raise errors.InvalidInputError(
                    f"cannot evaluate the merge on {self.on}: {exc}"
                ) from exc
        removed = pc.unique(removes.column(ROW_ADDRESS).combine_chunks().cast(pa.uint64()))
        both = pa.table({ROW_ADDRESS: updates.column(ROW_ADDRESS).cast(pa.uint64())})
        self.check_single_update(pa.concat_tables([both, pa.table({ROW_ADDRESS: removed})]), target)
        gone = _unmatched_deleted(unmatched, target, deleting)
        deleted = pa.concat_arrays(
            [updates.column(ROW_ADDRESS).combine_chunks().cast(pa.uint64()), removed, gone]
        )
        return LeafMatches(
            read_version=int(ds.version),
            deleted=deleted,
            updated=updates.num_rows,
            by_source=len(gone) + len(removed),
            matched=_indexes(matches),
            updating=_indexes(updates),
            kept=_rows_at(target, updates.column(ROW_ADDRESS), kept),
            assigned=None if assign is None else assigned_values(updates, assign, read),
        )

    def clause(self, kind: str) -> str:
        """The WHERE clause of the matching pairs a WHEN MATCHED clause (``"update"`` or
        ``"delete"``) applies to: its condition holds and the other clause's, when that
        one was added first, does not (a NULL condition does not hold)."""
        own, other = self.update, self.matched_delete
        other_first = self.delete_first  # (for the update: the delete comes first)
        if kind == "delete":
            own, other = other, own
            other_first = not other_first
        parts = [] if own[1] is None else [f"(({own[1]}) IS TRUE)"]
        if other[0] and other_first:
            if other[1] is None:
                return NO_PAIR
            parts.append(f"(({other[1]}) IS NOT TRUE)")
        return f" WHERE {' AND '.join(parts)}" if parts else ""

    def check_single_update(self, updates: pa.Table, target: pa.Table) -> None:
        """Raise DuplicateKeyError when several source rows update one target row (or one
        updates it and another deletes it: ``updates`` then lists it twice)."""
        if not updates.num_rows:
            return
        row_addresses = updates.column(ROW_ADDRESS).combine_chunks().to_numpy(zero_copy_only=False)
        values, counted = np.unique(row_addresses, return_counts=True)
        repeated = values[counted > 1]
        if not len(repeated):
            return
        where = pc.is_in(target.column(ROW_ADDRESS), pa.array(repeated[:3], pa.uint64()))
        example = target.filter(where).select(self.on).to_pylist()
        raise errors.DuplicateKeyError(
            f"{len(repeated)} target row(s) are matched on {self.on} by several source rows "
            f"that would update them, e.g. the key(s) {example}: a target row can be updated "
            "by one source row only. Deduplicate the source first (source rows that share a "
            "key matching no target row are each inserted)"
        )


def _paired(
    target: pa.Table,
    pairs: tuple[np.ndarray, np.ndarray],
    clauses: dict[str, str],
    deleting: Predicate,
) -> tuple[pa.Table, pa.Table, pa.Table, pa.Table]:
    """What the SQL join of :meth:`Clauses.search` returns, from the matching
    (target row position, source row) ``pairs``: every pair, the pairs each clause applies
    to (a clause without a condition: every pair, or none, :data:`NO_PAIR`, when the
    other one was added first) and the target rows without a pair (when ``deleting``)."""
    left, right = pairs
    row_addresses = target.column(ROW_ADDRESS).combine_chunks().cast(pa.uint64())
    matches = pa.table(
        {ROW_ADDRESS: row_addresses.take(pa.array(left)), SOURCE_ROW: pa.array(right)}
    )
    none = matches.slice(0, 0)
    found = {kind: none if clause else matches for kind, clause in clauses.items()}
    unmatched = pa.table({ROW_ADDRESS: pa.array([], pa.uint64())})
    if not isinstance(deleting, AlwaysFalse):
        alone = np.ones(target.num_rows, dtype=bool)
        alone[left] = False
        unmatched = pa.table({ROW_ADDRESS: row_addresses.filter(pa.array(alone))})
    return matches, found.get("update", none), found.get("delete", none), unmatched


def _rows_at(target: pa.Table, row_addresses: pa.ChunkedArray, columns: list[str]) -> pa.Table:
    """The ``columns`` of the ``target`` rows at ``row_addresses``, in that order."""
    where = pc.index_in(
        row_addresses.cast(pa.uint64()), target.column(ROW_ADDRESS).combine_chunks()
    )
    return target.select(columns).take(where)


def _unmatched_deleted(unmatched: pa.Table, target: pa.Table, deleting: Predicate) -> pa.Array:
    """The row addresses of the ``unmatched`` target rows for which ``deleting`` holds
    (evaluated as a delete evaluates its residual: in memory over the target's rows)."""
    gone = unmatched.column(ROW_ADDRESS).combine_chunks().cast(pa.uint64())
    if isinstance(deleting, AlwaysTrue) or not len(gone):
        return gone
    if isinstance(deleting, AlwaysFalse):
        return gone.slice(0, 0)
    holding = [
        scan.post_filter(batch, deleting).column(ROW_ADDRESS) for batch in target.to_batches()
    ]
    if not holding:
        return gone.slice(0, 0)
    return gone.filter(pc.is_in(gone, pa.concat_arrays(holding).cast(pa.uint64())))


def _batches(table: pa.Table) -> list[pa.RecordBatch]:
    return table.combine_chunks().to_batches() or [
        pa.RecordBatch.from_pylist([], schema=table.schema)
    ]


def _indexes(table: pa.Table) -> np.ndarray:
    column = table.column(SOURCE_ROW).combine_chunks()
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)
