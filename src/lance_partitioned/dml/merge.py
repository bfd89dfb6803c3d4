"""``merge``: upsert a batch of rows by key (pylance's ``merge_insert``), in one commit.

The source is read whole and checked for duplicate keys. The target leaves that can hold a
match are found from the keys alone: for each partition spec version, the partition values
that the key columns determine (the fields whose source column is a key) are computed for
every source row, and only leaves with one of those value combinations are searched — when
``on`` includes every partition source column, exactly the leaves the source rows belong to.
In each searched leaf the key columns are read at its ``read_version`` and joined with the
source (DataFusion; NULL keys never match). Matched target rows are deleted there (Lance
deletion files) and their new version (the source row) is staged, with the inserted rows,
into the leaves of the partitions they belong to under the current spec: a row whose new
values belong to another partition moves. Everything is one ``__manifest`` commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lance import LanceDataset

from lance_partitioned import errors, scan
from lance_partitioned.consistency import conform_for_write, leaf_schema
from lance_partitioned.dml.plan import (
    ROW_ADDRESS,
    DeleteCount,
    Selection,
    addresses,
    delete_operation,
    matched_rows,
)
from lance_partitioned.dml.results import MergeResult
from lance_partitioned.expressions import AlwaysTrue
from lance_partitioned.expressions.sqltext import deep
from lance_partitioned.history import Tally
from lance_partitioned.manifest import DELIMITER, Manifest, ManifestSnapshot
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.transaction import ChangePlan, LeafChange, commit_changes
from lance_partitioned.write import WriteOptions, as_reader, group_rows, partition_values, stage

__all__ = ["MergeBuilder"]

_SOURCE_ROW = "__lp_source_row"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class _LeafMatches:
    """One searched leaf at one version: the target rows to delete, the source rows that
    matched any of its rows and those that update one."""

    read_version: int
    deleted: pa.Array  # row addresses (updated and deleted-by-source rows)
    updated: int  # target rows replaced
    by_source: int  # target rows deleted by when_not_matched_by_source_delete
    matched: np.ndarray  # source row indexes with a key match here
    updating: np.ndarray  # source row indexes that update a row here


class MergeBuilder:
    """An upsert of ``data`` into the namespace keyed by ``on``; configure it with the
    ``when_*`` methods, then :meth:`execute` it (one commit).

    Like pylance's ``merge_insert``: two source rows with one key are an error
    (:class:`~lance_partitioned.errors.DuplicateKeyError`); a NULL key never matches.

    >>> import tempfile, pyarrow as pa
    >>> import lance_partitioned as lp
    >>> ns = lp.PartitionedNamespace.create(
    ...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("c", pa.string())]),
    ...     partition_by="c")
    >>> _ = ns.write(pa.table({"id": [1, 2], "c": ["US", "FR"]}))
    >>> result = (ns.merge(pa.table({"id": [2, 3], "c": ["DE", "DE"]}), on="id")
    ...     .when_matched_update_all().when_not_matched_insert_all().execute())
    >>> result.rows_updated, result.rows_inserted
    (1, 1)
    >>> sorted(ns.to_table().to_pylist(), key=lambda r: r["id"])
    [{'id': 1, 'c': 'US'}, {'id': 2, 'c': 'DE'}, {'id': 3, 'c': 'DE'}]
    """

    def __init__(
        self,
        manifest: Manifest,
        data: Any,
        on: str | Sequence[str],
        *,
        after: Callable[[int], None] | None = None,
        options: WriteOptions | None = None,
    ) -> None:
        keys = [on] if isinstance(on, str) else list(on)
        if not keys or not all(isinstance(k, str) for k in keys) or len(set(keys)) != len(keys):
            raise errors.InvalidInputError(
                f"on must name one or more distinct key columns, got {on!r}"
            )
        self._manifest = manifest
        self._data = data
        self._on = keys
        self._after = after
        self._options = options or WriteOptions()
        self._update: tuple[bool, str | None] = (False, None)
        self._insert = False
        self._delete: tuple[bool, str | None] = (False, None)

    def when_matched_update_all(self, condition: str | None = None) -> MergeBuilder:
        """Replace each target row whose key matches a source row by that source row (only
        where ``condition`` holds: SQL over ``target.<col>`` and ``source.<col>``)."""
        self._update = (True, condition)
        return self

    def when_not_matched_insert_all(self) -> MergeBuilder:
        """Insert each source row whose key matches no target row."""
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> MergeBuilder:
        """Delete each target row whose key matches no source row — in the WHOLE namespace
        when ``condition`` is None (every leaf is searched), else only the rows where
        ``condition`` (SQL over the target's columns) holds, in the leaves it can match."""
        self._delete = (True, condition)
        return self

    # ------------------------------------------------------------------------- execute
    def execute(self) -> MergeResult:
        """Run the merge: one ``__manifest`` commit (nothing when nothing changes).

        A storage failure is a :class:`~lance_partitioned.errors.StorageError` naming the
        namespace, and changes nothing."""
        with errors.typed_storage_errors(self._manifest.root, "merge"):
            return self._execute()

    def _execute(self) -> MergeResult:
        started = time.perf_counter()
        manifest = self._manifest
        first = manifest.snapshot()
        schema = first.metadata.schema
        read = schema.read_schema()
        missing = [k for k in self._on if k not in read.names]
        if missing:
            raise errors.InvalidInputError(
                f"merge key column(s) {missing} are not namespace columns {read.names}"
            )
        source = self._source(schema)
        if self._delete[0] and self._delete[1] is not None:
            scan.bound_filter(self._delete[1], read)  # a bad condition fails first
        cache: dict[str, _LeafMatches] = {}
        counts: dict[str, DeleteCount] = {}
        used: list[_LeafMatches] = []
        inserted = [0]
        operation = Operation("merge", details={"on": ",".join(self._on)})

        def plan(snapshot: ManifestSnapshot) -> ChangePlan:
            if snapshot.metadata.schema.read_schema() != read:
                raise errors.ConcurrentSchemaChangeError(
                    f"the namespace schema changed at __manifest version {snapshot.version} "
                    "while this merge ran: nothing was changed; run the merge again"
                )
            used.clear()
            changes: list[LeafChange] = []
            reads: dict[str, int] = {}
            matched: list[np.ndarray] = []
            updating: list[np.ndarray] = []
            for task, rows in self._candidates(snapshot, source):
                ds = task.open()
                found = cache.get(task.object_id)
                if found is None or found.read_version != ds.version:
                    subset = source if rows is None else source.take(pa.array(rows))
                    found = self._search(ds, task, snapshot.metadata.schema, subset)
                    cache[task.object_id] = found
                used.append(found)
                if task.read_version is not None:  # (a foreign leaf without one: its latest)
                    reads[task.object_id] = found.read_version
                matched.append(found.matched)
                updating.append(found.updating)
                where = addresses(found.deleted)
                if where is not None:
                    count = counts.setdefault(task.object_id, DeleteCount())
                    changes.append(LeafChange(task.object_id, _prepare(where, count)))
            rows = self._new_rows(source, matched, updating)
            inserted[0] = rows.num_rows - sum(len(u) for u in updating)
            writes = None
            if rows.num_rows:
                writes = stage(
                    manifest,
                    snapshot,
                    rows.drop_columns([_SOURCE_ROW]),
                    mode="append",
                    target=leaf_schema(snapshot.metadata.schema),
                    options=self._options,
                )
            tally = Tally(
                operation,
                written=[] if writes is None else writes.leaves,
                deleted=lambda: {c.object_id: counts[c.object_id].rows for c in changes},
                updated=sum(m.updated for m in used),
            )
            return ChangePlan(
                changes=changes, writes=writes, reads=reads, properties=tally.properties
            )

        result = commit_changes(manifest, plan, leaf_threads=self._options.threads)
        if self._after is not None:
            self._after(result.version)
        skipped = result.skipped
        return MergeResult(
            version=result.version,
            rows_updated=0 if skipped else sum(m.updated for m in used),
            rows_inserted=0 if skipped else inserted[0],
            rows_deleted=0 if skipped else sum(m.by_source for m in used),
            leaves_read=len(used),
            attempts=result.attempts,
            seconds=time.perf_counter() - started,
        )

    # ------------------------------------------------------------------------- steps
    def _source(self, schema: NamespaceSchema) -> pa.Table:
        """The source in the namespace schema, with its row index; duplicate keys raise."""
        table = as_reader(self._data).read_all()
        missing = [k for k in self._on if k not in table.column_names]
        if missing:
            raise errors.InvalidInputError(
                f"merge key column(s) {missing} are not in the source data "
                f"(its columns are {table.column_names})"
            )
        table = conform_for_write(table, schema, leaf_schema(schema))
        table = pa.Table.from_arrays(table.columns, schema=schema.read_schema())
        keyed = table.select(self._on)
        valid = pc.invert(pc.is_null(keyed.column(0)))
        for name in self._on[1:]:
            valid = pc.and_(valid, pc.invert(pc.is_null(keyed.column(name))))
        counted = keyed.filter(valid).group_by(self._on).aggregate([([], "count_all")])
        duplicates = counted.filter(pc.greater(counted.column("count_all"), 1))
        if duplicates.num_rows:
            example = duplicates.slice(0, 3).select(self._on).to_pylist()
            raise errors.DuplicateKeyError(
                f"the merge source has {duplicates.num_rows} key(s) on {self._on} held by "
                f"several rows, e.g. {example}: a target row can be matched by one source "
                "row only. Deduplicate the source first"
            )
        return table.append_column(_SOURCE_ROW, pa.array(np.arange(table.num_rows)))

    def _candidates(
        self, snapshot: ManifestSnapshot, source: pa.Table
    ) -> list[tuple[scan.ScanTask, np.ndarray | None]]:
        """The leaves to search, each with the source rows that can match its rows (None:
        every source row): the leaves whose partition values the keys of some source row
        determine, and every leaf a delete-by-source applies to (all without a condition)."""
        manifest = self._manifest
        everything = scan.plan_scan(manifest, snapshot, None, columns=[])
        delete, condition = self._delete
        deleting: set[str] | None = None  # None: every leaf
        if delete and condition is not None:
            deleting = {t.object_id for t in scan.plan_scan(manifest, snapshot, condition, [])}
        groups: dict[str, np.ndarray] = {}
        undetermined: set[int] = set()
        metadata = snapshot.metadata
        for spec in metadata.specs:
            found = _source_groups(snapshot, spec, metadata.schema, source, self._on)
            if found is None:
                undetermined.add(spec.version)
            else:
                groups.update(found)
        empty = np.zeros(0, dtype=np.int64)
        chosen: list[tuple[scan.ScanTask, np.ndarray | None]] = []
        for task in everything:
            rows = None if task.spec_version in undetermined else groups.get(task.object_id)
            if task.spec_version in undetermined or rows is not None:
                chosen.append((task, rows))
            elif delete and (deleting is None or task.object_id in deleting):
                chosen.append((task, empty))  # no source row can match: every row unmatched
        return chosen

    def _search(
        self, ds: LanceDataset, task: scan.ScanTask, schema: NamespaceSchema, source: pa.Table
    ) -> _LeafMatches:
        """Join the leaf's rows with the source on the keys (DataFusion)."""
        import datafusion

        update, update_condition = self._update
        delete, delete_condition = self._delete
        wide = update_condition is not None or delete_condition is not None
        columns = None if wide else list(self._on)
        whole = scan.ScanTask(
            task.object_id,
            task.uri,
            ds.version,
            task.spec_version,
            task.partition_values,
            AlwaysTrue(),
        )
        target = matched_rows(ds, whole, schema, columns)
        keys = " AND ".join(f"target.{_quoted(k)} = source.{_quoted(k)}" for k in self._on)

        def run() -> tuple[pa.Table, pa.Table, pa.Table]:
            ctx = datafusion.SessionContext()
            ctx.register_record_batches("target", [_batches(target)])
            ctx.register_record_batches("source", [_batches(source)])
            pairs = (
                f"SELECT target.{ROW_ADDRESS}, source.{_SOURCE_ROW} "
                f"FROM target JOIN source ON {keys}"
            )
            matches = ctx.sql(pairs).to_arrow_table()
            updates = matches.slice(0, 0)
            if update:
                where = "" if update_condition is None else f" WHERE ({update_condition})"
                updates = ctx.sql(pairs + where).to_arrow_table()
            gone = pa.table({ROW_ADDRESS: pa.array([], pa.uint64())})
            if delete:
                extra = "" if delete_condition is None else f" AND ({delete_condition})"
                gone = ctx.sql(
                    f"SELECT {ROW_ADDRESS} FROM target WHERE NOT EXISTS (SELECT 1 FROM "
                    f"source WHERE {keys}){extra}"
                ).to_arrow_table()
            return matches, updates, gone

        try:
            matches, updates, gone = deep(run)
        except Exception as exc:
            raise errors.InvalidInputError(
                f"cannot evaluate the merge on {self._on}: {exc}"
            ) from exc
        deleted = pa.concat_arrays(
            [
                updates.column(ROW_ADDRESS).combine_chunks().cast(pa.uint64()),
                gone.column(ROW_ADDRESS).combine_chunks().cast(pa.uint64()),
            ]
        )
        return _LeafMatches(
            read_version=int(ds.version),
            deleted=deleted,
            updated=updates.num_rows,
            by_source=gone.num_rows,
            matched=_indexes(matches),
            updating=_indexes(updates),
        )

    def _new_rows(
        self, source: pa.Table, matched: list[np.ndarray], updating: list[np.ndarray]
    ) -> pa.Table:
        """The source rows to stage: each one that updates a target row (once per target
        row it replaces), and the unmatched ones when inserting."""
        parts = [source.take(pa.array(u)) for u in updating if len(u)]
        if self._insert:
            hit = np.zeros(source.num_rows, dtype=bool)
            for m in matched:
                hit[m] = True
            parts.append(source.filter(pa.array(~hit)))
        return pa.concat_tables(parts) if parts else source.slice(0, 0)


def _batches(table: pa.Table) -> list[pa.RecordBatch]:
    return table.combine_chunks().to_batches() or [
        pa.RecordBatch.from_pylist([], schema=table.schema)
    ]


def _indexes(table: pa.Table) -> np.ndarray:
    column = table.column(_SOURCE_ROW).combine_chunks()
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.int64)


def _prepare(where: Selection, count: DeleteCount) -> Callable[[LanceDataset], Any]:
    def prepare(ds: LanceDataset) -> Any:
        return delete_operation(ds, where, count)

    return prepare


def _source_groups(
    snapshot: ManifestSnapshot,
    spec: PartitionSpec,
    schema: NamespaceSchema,
    source: pa.Table,
    on: Sequence[str],
) -> dict[str, np.ndarray] | None:
    """For each leaf of ``spec`` that a source row with non-NULL keys can match, the
    positions of those source rows: a key match means equal partition source values, so
    equal values of every field whose source column is a key (None: no field is).

    The source rows are grouped by those values (NULL is a value) and each group is looked
    up among the leaves' partition values in the ``__manifest``.
    """
    determined = [
        f
        for f in spec.fields
        if not schema.is_deprecated(f.source_id) and schema.name_of(f.source_id) in on
    ]
    if not determined:
        return None
    tables = snapshot.tables
    prefix = f"v{spec.version}{DELIMITER}"
    rows = tables.filter(pc.starts_with(tables.column("object_id"), prefix))
    names = [f.name for f in determined]
    leaves: dict[tuple[Any, ...], list[str]] = {}
    for row in rows.select(["object_id", *names]).to_pylist():
        leaves.setdefault(tuple(row[n] for n in names), []).append(row["object_id"])
    valid = np.ones(source.num_rows, dtype=bool)
    for name in on:
        valid &= ~np.asarray(source.column(name).is_null().to_numpy(zero_copy_only=False))
    positions = np.flatnonzero(valid)
    if not len(positions) or not leaves:
        return {}
    keyed = source.take(pa.array(positions))
    keys = partition_values(keyed, PartitionSpec(spec.version, tuple(determined)), schema)
    keys = [k.combine_chunks() if isinstance(k, pa.ChunkedArray) else k for k in keys]
    order, offsets, first = group_rows(keys, keyed.num_rows)
    groups: dict[str, np.ndarray] = {}
    for g in range(len(offsets) - 1):
        members = (
            np.arange(offsets[g], offsets[g + 1])
            if order is None
            else order[offsets[g] : offsets[g + 1]]
        )
        values = tuple(key[int(first[g])].as_py() for key in keys)
        for object_id in leaves.get(values, ()):
            groups[object_id] = positions[members]
    return groups
