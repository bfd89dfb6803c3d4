"""``merge``: upsert a batch of rows by key (pylance's ``merge_insert``), in one commit.

The source is read whole. The target leaves that can hold a match are found from the keys
alone: for each partition spec version, the partition values that the key columns determine
(the fields whose source column is a key) are computed for every source row, and only leaves
with one of those value combinations are searched — when ``on`` includes every partition
source column, exactly the leaves the source rows belong to. In each searched leaf the key
columns are read at its ``read_version`` and joined with the source (DataFusion): a NULL
key matches a NULL key (``IS NOT DISTINCT FROM``) on a partition source column, or on every
key with ``null_safe=True``; elsewhere a NULL key never matches. Matched target rows are
deleted there (Lance deletion files): those a ``when_matched_delete`` clause applies to
go, and for the others their new version (the source row, with the
target's values of the columns the source lacks) is staged, with the inserted rows, into
the leaves of the partitions they belong to under the current spec: a row whose new values
belong to another partition moves. The condition of ``when_not_matched_by_source_delete``
is planned as a delete's predicate is (partition pruning, partition field names, the
residual per leaf). Everything is one ``__manifest`` commit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
from lance import LanceDataset

from lance_partitioned import errors, scan
from lance_partitioned.consistency import conform_for_write, leaf_schema
from lance_partitioned.dml.merge_keys import SourceKeys
from lance_partitioned.dml.merge_leaf import SOURCE_ROW, Clauses, LeafMatches
from lance_partitioned.dml.merge_set import check_assignments_sql
from lance_partitioned.dml.merge_targets import source_groups
from lance_partitioned.dml.plan import (
    DeleteCount,
    Selection,
    addresses,
    delete_operation,
    leaf_tasks,
)
from lance_partitioned.dml.results import MergeResult
from lance_partitioned.expressions import AlwaysFalse, AlwaysTrue, Predicate
from lance_partitioned.ingest import WriteOptions, as_reader, stage
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.spec.multicolumn import sources_of
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.transaction import ChangePlan, LeafChange, PendingWrite, commit_changes
from lance_partitioned.transaction.write import Tally

__all__ = ["MergeBuilder"]


class MergeBuilder:
    """An upsert of ``data`` into the namespace keyed by ``on``; configure it with the
    ``when_*`` methods, then :meth:`execute` it (one commit).

    Like pylance's ``merge_insert`` (and deltalake's ``merge``):

    - a NULL key matches a NULL key (``IS NOT DISTINCT FROM``) when the key is a partition
      source column (of any partition spec version), or for every key with
      ``null_safe=True``; otherwise a NULL key never matches (as in SQL's ``=``). So an
      upsert keyed on partition columns that hold NULLs, run twice, changes nothing the
      second time;
    - columns the source lacks: an updated row keeps the target's values of them (partition
      source columns included, so it stays in its partition); an inserted row gets NULL, and
      an insert into a column that is not nullable is an
      :class:`~lance_partitioned.errors.InvalidInputError` (nothing is changed);
    - WHEN MATCHED clauses (``when_matched_update_all``, ``when_matched_delete``): as in
      Delta Lake, for each matching (target row, source row) pair the first clause, in the
      order they were added, whose condition holds applies (a NULL condition does not
      hold); a pair no clause applies to leaves the target row as it is;
    - duplicate keys: a target row that several source rows match (and satisfy the
      ``when_matched_update_all`` condition) is an error,
      :class:`~lance_partitioned.errors.DuplicateKeyError`, when the merge updates it
      (also when another of those source rows would delete it; several source rows
      deleting it delete it once); source rows that share a key and match no target row
      are each inserted, and source rows that match a target row are never inserted.

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
        null_safe: bool = False,
    ) -> None:
        keys = [on] if isinstance(on, str) else list(on)
        if not keys or not all(isinstance(k, str) for k in keys) or len(set(keys)) != len(keys):
            raise errors.InvalidInputError(
                f"on must name one or more distinct key columns, got {on!r}"
            )
        self._manifest = manifest
        self._data = data
        self._on = keys
        self._null_safe = bool(null_safe)
        self._after = after
        self._options = options or WriteOptions(threads=manifest.max_workers)
        self._update: tuple[bool, str | None] = (False, None)
        # when_matched_update(set=...): column -> SQL over target.<col> and source.<col>
        self._set: dict[str, str] | None = None
        self._matched_delete: tuple[bool, str | None] = (False, None)
        self._delete_first = False  # when_matched_delete was added before the update
        self._insert = False
        self._delete: tuple[bool, str | Predicate | None] = (False, None)
        self._absent: list[pa.Field] = []  # namespace columns the source lacks
        # the source's keys as last encoded: (source table, NULL-safe keys, the encoding)
        self._encoded: tuple[pa.Table, frozenset[str], SourceKeys | None] | None = None

    def when_matched_update_all(self, condition: str | None = None) -> MergeBuilder:
        """Replace each target row whose key matches a source row by that source row (only
        where ``condition`` holds: SQL over ``target.<col>`` and ``source.<col>``).

        Only the columns the source has are updated: the row keeps the target's values of
        the others. Several source rows updating one target row are a
        :class:`~lance_partitioned.errors.DuplicateKeyError`."""
        self._update = (True, condition)
        self._set = None
        return self

    def when_matched_update(
        self, set: Mapping[str, str] | None = None, condition: str | None = None
    ) -> MergeBuilder:
        """Assign ``set`` to each target row whose key matches a source row (only where
        ``condition`` holds), as Delta Lake's ``whenMatchedUpdate(set=...)``.

        ``set`` maps namespace columns to SQL expressions over ``target.<col>`` and
        ``source.<col>`` (``{"amount": "target.amount + source.amount"}``); the row keeps
        the target's values of every other column. A value is converted to its column's
        type (a value that does not fit, or a NULL in a column that is not nullable, is an
        :class:`~lance_partitioned.errors.InvalidInputError` and nothing is changed). An
        assignment to a partition source column moves the row to its new partition, in
        the same commit. Without ``set``: :meth:`when_matched_update_all`. One update
        clause per merge: the last one added stands.

        >>> import tempfile, pyarrow as pa
        >>> import lance_partitioned as lp
        >>> ns = lp.PartitionedNamespace.create(tempfile.mkdtemp(), schema=pa.schema(
        ...     [("id", pa.int64()), ("c", pa.string()), ("n", pa.int64())]), partition_by="c")
        >>> _ = ns.write(pa.table({"id": [1, 2], "c": ["US", "FR"], "n": [10, 20]}))
        >>> _ = (ns.merge(pa.table({"id": [2, 3], "n": [5, 7]}), on="id")
        ...     .when_matched_update(set={"n": "target.n + source.n"})
        ...     .when_not_matched_insert_all().execute())
        >>> [(r["id"], r["n"]) for r in sorted(ns.to_table().to_pylist(), key=lambda r: r["id"])]
        [(1, 10), (2, 25), (3, 7)]
        """
        if set is None:
            return self.when_matched_update_all(condition)
        if (
            not isinstance(set, Mapping)
            or not set
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in set.items())
        ):
            raise errors.InvalidInputError(
                f"set must map one or more column names to SQL expressions, got {set!r}"
            )
        self._update = (True, condition)
        self._set = dict(set)
        return self

    def when_matched_delete(self, condition: str | None = None) -> MergeBuilder:
        """Delete each target row whose key matches a source row (only where ``condition``
        holds: SQL over ``target.<col>`` and ``source.<col>``, as the update's condition).

        With ``when_matched_update_all`` too, the clause added first applies to a matching
        pair when its condition holds, the other one otherwise (Delta Lake's order of
        WHEN MATCHED clauses). The deleted rows are counted in
        :attr:`MergeResult.rows_deleted`."""
        if not self._update[0]:
            self._delete_first = True
        self._matched_delete = (True, condition)
        return self

    def when_not_matched_insert_all(self) -> MergeBuilder:
        """Insert each source row whose key matches no target row (the columns the source
        lacks are NULL; source rows sharing such a key are each inserted)."""
        self._insert = True
        return self

    def when_not_matched_by_source_delete(
        self, condition: str | Predicate | None = None
    ) -> MergeBuilder:
        """Delete each target row whose key matches no source row — in the WHOLE namespace
        when ``condition`` is None (every leaf is searched), else only the rows where
        ``condition`` holds: any predicate :meth:`PartitionedNamespace.delete` accepts (SQL
        over the namespace's columns and partition field names, or an expressions
        ``Predicate``), planned as a delete's is: only the leaves it can match are searched,
        and a row for which it is NULL is kept."""
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
        raw = as_reader(self._data).read_all()
        source = self._source(schema, raw)
        if self._update[0] and self._set is not None:
            check_assignments_sql(self._set, read, source)  # nothing searched when wrong
        if self._delete[0] and self._delete[1] is not None:
            leaf_tasks(manifest, first, self._delete[1])  # a bad condition fails first
        cache: dict[str, LeafMatches] = {}
        safe = [self._safe_keys(first)]
        counts: dict[str, DeleteCount] = {}
        used: list[LeafMatches] = []
        inserted = [0]
        staged: list[tuple[pa.Table, PendingWrite | None, int, Any] | None] = [None]
        operation = Operation("merge", details={"on": ",".join(self._on)})

        def plan(snapshot: ManifestSnapshot) -> ChangePlan:
            nonlocal source, read
            if snapshot.metadata.schema.read_schema() != read:
                # the schema changed meanwhile: the source is conformed to the new one and
                # the leaves searched again
                try:
                    source = self._source(snapshot.metadata.schema, raw)
                except (errors.InvalidInputError, errors.SchemaMismatchError) as exc:
                    raise errors.ConcurrentSchemaChangeError(
                        f"the namespace schema changed at __manifest version "
                        f"{snapshot.version} while this merge ran, and the source no longer "
                        f"fits it ({exc}): nothing was changed"
                    ) from exc
                read = snapshot.metadata.schema.read_schema()
                cache.clear()
            if self._safe_keys(snapshot) != safe[0]:
                # the partition source columns changed meanwhile: NULL keys match otherwise
                safe[0] = self._safe_keys(snapshot)
                cache.clear()
            used.clear()
            changes: list[LeafChange] = []
            reads: dict[str, int] = {}
            candidates = self._candidates(snapshot, source, safe[0])
            schema_now = snapshot.metadata.schema
            keys = self._source_keys(source, safe[0])

            def find(candidate: tuple[scan.ScanTask, np.ndarray | None, Predicate]) -> Any:
                task, rows, deleting = candidate
                found = cache.get(task.object_id)
                if found is None or found.read_version != task.read_version:
                    # (a search at the manifest's version is reused without opening the leaf)
                    ds = task.open()
                    if found is None or found.read_version != ds.version:
                        if keys is not None:  # probed against the source's keys (no subset)
                            found = self._clauses().search(
                                ds, task, schema_now, source, deleting, safe[0], (keys, rows)
                            )
                        else:
                            subset = source if rows is None else source.take(pa.array(rows))
                            found = self._clauses().search(
                                ds, task, schema_now, subset, deleting, safe[0]
                            )
                        cache[task.object_id] = found
                return found

            # the leaves are opened, read and joined on the per-leaf pool (one pool per
            # attempt); their results are used in the candidates' order
            width = max(1, min(self._options.threads, len(candidates)))
            if width == 1:
                searched = [find(c) for c in candidates]
            else:
                with ThreadPoolExecutor(width) as pool:
                    searched = list(pool.map(find, candidates))
            for (task, _, _), found in zip(candidates, searched, strict=True):
                used.append(found)
                if task.read_version is not None:  # (a foreign leaf without one: its latest)
                    reads[task.object_id] = found.read_version
                where = addresses(found.deleted)
                if where is not None:
                    if found.change is None:
                        count = counts.setdefault(task.object_id, DeleteCount())
                        found.change = LeafChange(task.object_id, _prepare(where, count))
                    changes.append(found.change)
            # the same rows to stage under the same metadata (the searches of leaves that
            # moved meanwhile found what they found before): the same staged write, so that
            # its leaf commits are kept on a retry
            rows = self._new_rows(source, used, read)
            entry = staged[0]
            if entry is None or entry[3] != snapshot.metadata or not entry[0].equals(rows):
                writes = None
                if rows.num_rows:
                    writes = stage(
                        manifest,
                        snapshot,
                        rows,
                        mode="append",
                        target=leaf_schema(snapshot.metadata.schema),
                        options=self._options,
                    )
                entry = staged[0] = (rows, writes, rows.num_rows, snapshot.metadata)
            _, writes, staged_rows, _ = entry
            inserted[0] = staged_rows - sum(len(m.updating) for m in used)
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
            rows_deleted=0 if skipped else sum(m.by_source for m in used),  # (matched too)
            leaves_read=len(used),
            attempts=result.attempts,
            seconds=time.perf_counter() - started,
        )

    # ------------------------------------------------------------------------- steps
    def _source_keys(self, source: pa.Table, safe: frozenset[str]) -> SourceKeys | None:
        """The source's keys encoded once for every leaf's probe (:mod:`.merge_keys`), or
        None when the leaves are joined with SQL: a WHEN MATCHED clause has a condition, or
        a key's type is left to SQL. Encoded again for another source table or ``safe``."""
        if self._update[1] is not None or self._matched_delete[1] is not None or self._set:
            return None
        known = self._encoded
        if known is None or known[0] is not source or known[1] != safe:
            known = self._encoded = (source, safe, SourceKeys.build(source, self._on, safe))
        return known[2]

    def _safe_keys(self, snapshot: ManifestSnapshot) -> frozenset[str]:
        """The keys matched NULL-safely (``IS NOT DISTINCT FROM``): every key with
        ``null_safe``, else those that are a partition source column of a spec version."""
        if self._null_safe:
            return frozenset(self._on)
        metadata = snapshot.metadata
        schema = metadata.schema
        sources = {
            schema.name_of(source)
            for spec in metadata.specs
            for f in spec.fields
            for source in sources_of(f)
            if not schema.is_deprecated(source)
        }
        return frozenset(k for k in self._on if k in sources)

    def _source(self, schema: NamespaceSchema, table: pa.Table) -> pa.Table:
        """The source ``table``'s columns in the namespace's types (read-schema order), with
        its row index; the namespace columns it lacks are noted in ``self._absent``."""
        missing = [k for k in self._on if k not in table.column_names]
        if missing:
            raise errors.InvalidInputError(
                f"merge key column(s) {missing} are not in the source data "
                f"(its columns are {table.column_names})"
            )
        read = schema.read_schema()
        present = set(table.column_names)
        # the write rules on the columns the source has (names, types, NULLs); the others
        # are not checked here: an update keeps the target's values, an insert checks them
        relaxed = pa.schema(
            [f if f.name in present else f.with_nullable(True) for f in leaf_schema(schema)]
        )
        table = conform_for_write(table, schema, relaxed)
        fields = [f for f in read if f.name in present]
        self._absent = [f for f in read if f.name not in present]
        table = pa.Table.from_arrays(
            [table.column(f.name) for f in fields], schema=pa.schema(fields)
        )
        return table.append_column(SOURCE_ROW, pa.array(np.arange(table.num_rows)))

    def _candidates(
        self, snapshot: ManifestSnapshot, source: pa.Table, safe: frozenset[str]
    ) -> list[tuple[scan.ScanTask, np.ndarray | None, Predicate]]:
        """The leaves to search, each with the source rows that can match its rows (None:
        every source row) and the residual of the delete-by-source condition there
        (AlwaysFalse: no row of it is deleted): the leaves whose partition values the keys
        of some source row determine, and every leaf a delete-by-source applies to (all
        without a condition)."""
        manifest = self._manifest
        everything = scan.plan_scan(manifest, snapshot, None, columns=[])
        delete, condition = self._delete
        deleting: dict[str, Predicate] | None = None  # None: every leaf, every row
        if not delete:
            deleting = {}
        elif condition is not None:
            deleting = {t.object_id: t.residual for t in leaf_tasks(manifest, snapshot, condition)}
        groups: dict[str, np.ndarray] = {}
        undetermined: set[int] = set()
        metadata = snapshot.metadata
        for spec in metadata.specs:
            found = source_groups(snapshot, spec, metadata.schema, source, self._on, safe)
            if found is None:
                undetermined.add(spec.version)
            else:
                groups.update(found)
        empty = np.zeros(0, dtype=np.int64)
        chosen: list[tuple[scan.ScanTask, np.ndarray | None, Predicate]] = []
        for task in everything:
            residual = AlwaysTrue() if deleting is None else deleting.get(task.object_id)
            gone: Predicate = AlwaysFalse() if residual is None else residual
            rows = None if task.spec_version in undetermined else groups.get(task.object_id)
            if task.spec_version in undetermined or rows is not None:
                chosen.append((task, rows, gone))
            elif residual is not None:
                chosen.append((task, empty, gone))  # no source row can match: all unmatched
        return chosen

    def _clauses(self) -> Clauses:
        """The clauses as they are now, for a leaf's search (:mod:`.merge_leaf`)."""
        return Clauses(
            self._on,
            self._update,
            self._set,
            self._matched_delete,
            self._delete_first,
            self._absent,
        )

    def _new_rows(self, source: pa.Table, found: list[LeafMatches], read: pa.Schema) -> pa.Table:
        """The rows to stage, in the read schema: each source row that updates a target row
        (once per target row it replaces, with that row's values of the columns the source
        lacks), and the unmatched ones (NULL in those columns) when inserting."""
        parts = [
            _complete(
                source.take(pa.array(m.updating)) if m.assigned is None else m.assigned,
                m.kept,
                read,
            )
            for m in found
            if m.updated
        ]
        if self._insert:
            hit = np.zeros(source.num_rows, dtype=bool)
            for m in found:
                hit[m.matched] = True
            new = source.filter(pa.array(~hit))
            if new.num_rows:
                required = [f.name for f in self._absent if not f.nullable]
                if required:
                    raise errors.InvalidInputError(
                        f"the merge would insert {new.num_rows} source row(s) that match no "
                        f"target row, but the source lacks the column(s) {required}, which "
                        "are not nullable: add them to the source, or drop "
                        "when_not_matched_insert_all. Nothing was changed"
                    )
                nulls = pa.table(
                    [pa.nulls(new.num_rows, f.type) for f in self._absent],
                    schema=pa.schema(self._absent),
                )
                parts.append(_complete(new, nulls, read))
        return pa.concat_tables(parts) if parts else read.empty_table()


def _complete(rows: pa.Table, absent: pa.Table, read: pa.Schema) -> pa.Table:
    """``rows`` (source columns) with the columns of ``absent`` added, in the read schema
    (every field nullable: a NULL of a NOT NULL column is refused when staged)."""
    columns = [
        rows.column(f.name) if f.name in rows.column_names else absent.column(f.name) for f in read
    ]
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in read]))


def _prepare(where: Selection, count: DeleteCount) -> Callable[[LanceDataset], Any]:
    def prepare(ds: LanceDataset) -> Any:
        return delete_operation(ds, where, count)

    return prepare
