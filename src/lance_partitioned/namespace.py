"""``PartitionedNamespace``: the public facade of a partitioned namespace.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> root = tempfile.mkdtemp()
>>> schema = pa.schema([("id", pa.int64()), ("country", pa.string())])
>>> ns = lp.PartitionedNamespace.create(root, schema=schema, partition_by="country")
>>> result = ns.write(pa.table({"id": [1, 2, 3], "country": ["US", "FR", "US"]}))
>>> result.rows_written, result.partitions_created
(3, 2)
>>> sorted(ns.partitions().column("country").to_pylist())
['FR', 'US']
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from lance_partitioned import dml, engines, errors, evolution, history, scan
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.dml import DeleteResult, MergeBuilder, UpdateResult

# delete_rows and update_rows are the functions, not ``dml.delete``/``dml.update``: those names are
# also the submodules', and an import of a submodule by path (doctest collection) rebinds them.
from lance_partitioned.dml.delete import delete as delete_rows
from lance_partitioned.dml.results import WriteResult
from lance_partitioned.dml.update import update as update_rows
from lance_partitioned.evolution.schema_update import UpdateSchema
from lance_partitioned.expressions import Predicate
from lance_partitioned.ingest import WriteOptions, WriteProgress, stage
from lance_partitioned.maintenance import cleanup, optimize
from lance_partitioned.maintenance.cleanup import CleanupProgress, CleanupResult
from lance_partitioned.maintenance.optimize import OptimizeProgress, OptimizeResult
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.manifest.creation import create_manifest
from lance_partitioned.scan import ScanTasks
from lance_partitioned.sizes import list_partitions, partition_sizes
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.partitioning import (
    PartitionField,
    PartitionSpec,
)
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.shorthand import warn_ambiguous_date_parts
from lance_partitioned.transaction import WRITE_MODES, WriteMode

if TYPE_CHECKING:
    import polars as pl

    from lance_partitioned.adapter import PartitionedLanceNamespace
    from lance_partitioned.convert.conversion import ConvertResult
    from lance_partitioned.engines import OnScan
    from lance_partitioned.engines.dataset import PartitionedDataset
    from lance_partitioned.history import Tags
    from lance_partitioned.history.restore import RestoreResult
    from lance_partitioned.search import IndexBuildProgress, IndexBuildResult, IndexStats

__all__ = ["PartitionedNamespace", "WriteResult"]


class PartitionedNamespace:
    """A Lance Partitioned Namespace (spec 000) rooted at a directory or object-store URI.

    Use :meth:`create` or :meth:`open`. :meth:`as_lance_namespace` is the same namespace as
    a ``lance_namespace.LanceNamespace``, which ``lance_namespace.connect("partitioned",
    {"root": uri})`` also returns (properties ``storage.<key>`` become storage options).
    The object reads one ``__manifest`` version (:attr:`version`); :meth:`write` moves it to
    the version it commits and :meth:`refresh` to the latest.
    """

    # ------------------------------------------------------------------ opening
    def __init__(
        self,
        root: str,
        *,
        storage_options: Mapping[str, str] | None = None,
        version: int | None = None,
        max_workers: int | None = None,
    ) -> None:
        self._manifest = Manifest(str(root), dict(storage_options or {}), max_workers=max_workers)
        self._pinned = version
        self._snapshot = self._manifest.snapshot(version)

    @classmethod
    def create(
        cls,
        uri: str,
        *,
        schema: Any,
        partition_by: str | Sequence[PartitionField],
        storage_options: Mapping[str, str] | None = None,
        exist_ok: bool = False,
        max_workers: int | None = None,
        dialect: str = "spec000",
    ) -> PartitionedNamespace:
        """Create a partitioned namespace with a schema and a first partition spec.

        Parameters
        ----------
        uri : str
            Root directory or object-store URI.
        schema : pyarrow.Schema, DataFrame or Polars Schema
            The namespace schema; ``lance:field_id`` is assigned depth-first unless every
            field already carries one. A pandas or Polars DataFrame (or LazyFrame), a Polars
            Schema or any object with ``__arrow_c_schema__`` gives its schema; anything else
            is a :class:`~lance_partitioned.errors.SchemaInputTypeError` (a ``TypeError``).
        partition_by : str or list of PartitionField
            The shorthand (``"year(ts), country, bucket(16, user_id)"``) or bound fields.
        exist_ok : bool
            Return the existing namespace when it has the same schema and spec instead of
            raising :class:`~lance_partitioned.errors.NamespaceAlreadyExistsError`.
        max_workers : int, optional
            Width of the per-leaf thread pools of this object's operations (default:
            ``$LANCE_PARTITIONED_MAX_WORKERS``, else sized for the storage; see
            :func:`lance_partitioned.runtime.max_workers`).
        dialect : {"spec000", "published"}
            How the partition specs are written: spec 000 (JSON arrays, the default) or the
            text published upstream (``{"id": N, "fields": [...]}``, ``partition_field_<id>``
            columns, murmur3 buckets); see ``docs/interop.md``.
        """
        from lance_partitioned.spec.dialects import in_dialect
        from lance_partitioned.writing import schema_of

        base = NamespaceMetadata.create(schema_of(schema), partition_by)
        metadata = NamespaceMetadata(base.schema, in_dialect(base.specs, base.schema, dialect))
        create_manifest(str(uri), metadata, storage_options, exist_ok=exist_ok)
        return cls(str(uri), storage_options=storage_options, max_workers=max_workers)

    @classmethod
    def open(
        cls,
        uri: str,
        *,
        storage_options: Mapping[str, str] | None = None,
        version: int | str | dt.datetime | None = None,
        max_workers: int | None = None,
    ) -> PartitionedNamespace:
        """Open a partitioned namespace, at its latest ``__manifest`` version or ``version``
        (read-only): a version number, a tag name, or a time, which opens the latest version
        committed at or before it (a naive datetime is taken to be UTC). Errors: see
        :func:`lance_partitioned.history.resolve_version`. ``max_workers``: as for
        :meth:`create`."""
        number = history.resolve_version(Manifest(str(uri), storage_options), version)
        return cls(
            str(uri), storage_options=storage_options, version=number, max_workers=max_workers
        )

    def refresh(self) -> PartitionedNamespace:
        """Re-read the latest ``__manifest`` version (no-op when opened at a fixed version)."""
        if self._pinned is None:
            self._snapshot = self._manifest.snapshot()
        return self

    # ------------------------------------------------------------------ what it reads
    @property
    def uri(self) -> str:
        """The root URI."""
        return self._manifest.root

    @property
    def storage_options(self) -> dict[str, str]:
        """Storage options used for every Lance call."""
        return dict(self._manifest.storage_options)

    @property
    def max_workers(self) -> int:
        """Width of the per-leaf thread pools (writes, DML, reads, sizes, optimize): the
        ``max_workers`` option, else ``$LANCE_PARTITIONED_MAX_WORKERS``, else sized for the
        storage (:func:`lance_partitioned.runtime.max_workers`)."""
        return self._manifest.max_workers

    @property
    def metadata(self) -> NamespaceMetadata:
        """Schema and partition specs, as stored in the ``__manifest`` metadata."""
        return self._snapshot.metadata

    @property
    def namespace_schema(self) -> NamespaceSchema:
        """The namespace schema with field ids, deprecated fields included."""
        return self._snapshot.metadata.schema

    @property
    def schema(self) -> pa.Schema:
        """The read schema: every live column, with ``lance:field_id`` metadata."""
        return self._snapshot.metadata.schema.read_schema()

    @property
    def partition_specs(self) -> list[PartitionSpec]:
        """Every partition spec version, oldest first."""
        return list(self._snapshot.metadata.specs)

    @property
    def current_spec(self) -> PartitionSpec:
        """The spec new data is written with."""
        return self._snapshot.metadata.current_spec

    @property
    def version(self) -> int:
        """The ``__manifest`` version this object reads."""
        return self._snapshot.version

    @property
    def snapshot(self) -> ManifestSnapshot:
        """The ``__manifest`` snapshot this object reads."""
        return self._snapshot

    def __repr__(self) -> str:
        spec = ", ".join(f.name for f in self.current_spec.fields) or "unpartitioned"
        return f"PartitionedNamespace({self.uri!r}, version={self.version}, spec=[{spec}])"

    # ------------------------------------------------------------------ data in
    def write(
        self,
        data: Any,
        *,
        mode: WriteMode = "append",
        options: WriteOptions | None = None,
        progress: Callable[[WriteProgress], None] | None = None,
        where: str | Predicate | None = None,
        schema_mode: Literal["merge"] | None = None,
    ) -> WriteResult:
        """Write ``data`` atomically: every partition it touches becomes visible at once.

        Parameters
        ----------
        data
            A ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader`` (streamed with
            bounded memory), any object with ``__arrow_c_stream__`` (pandas, polars, DuckDB),
            a Polars ``LazyFrame`` (streamed), or an iterable of record batches. A pandas
            index that is not a namespace column (``__index_level_0__``) is left out.
        mode : {"append", "overwrite", "overwrite_partitions"}
            ``overwrite`` replaces the whole namespace's data (with ``where``: only the rows
            matching it); ``overwrite_partitions`` replaces the partitions of the current
            spec present in ``data``, rows stored under older spec versions included.
        options : WriteOptions, optional
            Buffering and parallelism knobs.
        progress : callable, optional
            Called with a :class:`~lance_partitioned.ingest.WriteProgress` after each chunk
            and once when every partition is staged.
        where : str or Predicate, optional
            With ``mode="overwrite"``: replace-where, atomically replace the rows matching
            ``where`` by ``data``, every row of which must satisfy it
            (:class:`~lance_partitioned.errors.PredicateViolationError` otherwise).
        schema_mode : {"merge"}, optional
            ``"merge"``: columns of ``data`` that the namespace lacks are added first (an
            ``add_columns`` evolution, its own commit, then the write's); without it such a
            column is a :class:`~lance_partitioned.errors.SchemaMismatchError`.

        Warns
        -----
        PartitionCountWarning
            When the write created more than 1,000 partitions averaging under 10,000 rows.
        """
        from lance_partitioned import writing

        writing.check_schema_mode(schema_mode)
        if mode not in WRITE_MODES:
            raise errors.InvalidInputError(f"mode {mode!r} is not one of {list(WRITE_MODES)}")
        if where is not None and mode != "overwrite":
            raise errors.InvalidInputError(
                f"where= replaces the rows matching it and needs mode='overwrite', not {mode!r}"
            )
        options = options or WriteOptions(threads=self.max_workers)
        started = time.perf_counter()
        with self._committed("write") as moved_to:
            self.refresh()
            if schema_mode == "merge":
                data = self._merge_schema(data)
            snapshot = self._snapshot
            if where is not None:
                data = dml.require_matching(data, where, snapshot)
            pending = stage(
                self._manifest,
                snapshot,
                data,
                mode="append" if where is not None else mode,
                target=leaf_schema(snapshot.metadata.schema),
                options=options,
                progress=progress,
            )
            result = dml.commit_staged(
                self._manifest, pending, where=where, leaf_threads=options.threads
            )
            moved_to(result.version)
        created = set(result.created)
        writing.warn_partition_count(
            [leaf.rows for leaf in pending.leaves if leaf.object_id in created],
            ", ".join(f"{f.name} = {f.expression}" for f in snapshot.metadata.current_spec.fields),
        )
        return WriteResult(
            version=result.version,
            rows_written=result.rows,
            partitions_created=len(result.created),
            partitions_touched=len(result.leaf_versions),
            partitions_removed=result.deleted_leaves,
            attempts=result.attempts,
            seconds=time.perf_counter() - started,
        )

    # ------------------------------------------------------------------ reads
    def partitions(self, filter: str | None = None, *, sizes: bool = True) -> pa.Table:
        """One row per leaf table, in object-id order: ``object_id``, ``location``,
        ``spec_version``, the partition columns, ``read_version``, then the leaf's size at
        its ``read_version``: ``rows`` (deleted rows excluded), ``bytes`` (of its data files),
        ``fragments`` and ``small_fragments`` (fewer rows than
        :data:`~lance_partitioned.sizes.SMALL_FRAGMENT_ROWS`).

        Sizes come from each leaf's Lance manifest (no data file is read): every leaf is
        opened, in parallel (about 75 ms for 1,000 local leaves on 2 CPUs). ``sizes=False``
        lists the ``__manifest`` alone, without opening any leaf.

        Parameters
        ----------
        filter : str, optional
            SQL over the partition columns (``"country = 'US' AND year >= 2025"``), or a
            filter over the namespace's columns (``"ts >= TIMESTAMP '2025-06-01 00:00:00'"``):
            the leaves a scan with it reads.
        sizes : bool, default True
            Add the four size columns.

        Warns
        -----
        UnreadableLeafWarning
            When some leaves cannot be opened (a damaged namespace): their size columns are
            NULL, the other rows are complete, and the warning names those leaves (run
            ``lance-partitioned verify``).

        Examples
        --------
        >>> import tempfile, pyarrow as pa
        >>> ns = PartitionedNamespace.create(
        ...     tempfile.mkdtemp(), schema=pa.schema([("k", pa.utf8()), ("v", pa.int64())]),
        ...     partition_by="k")
        >>> _ = ns.write(pa.table({"k": ["a", "b", "a"], "v": [1, 2, 3]}))
        >>> for leaf in ns.partitions().select(["k", "rows", "fragments"]).to_pylist():
        ...     print(leaf)
        {'k': 'a', 'rows': 2, 'fragments': 1}
        {'k': 'b', 'rows': 1, 'fragments': 1}
        >>> ns.partitions("k = 'b'", sizes=False).column_names[-2:]
        ['k', 'read_version']
        """
        if sizes:
            return partition_sizes(self._manifest, self._snapshot, filter)
        return list_partitions(self._manifest, self._snapshot, filter)

    def plan_scan(
        self, filter: str | Predicate | None = None, columns: Sequence[str] | None = None
    ) -> ScanTasks:
        """The leaves a read with ``filter`` must scan, pruned on the ``__manifest``.

        Parameters
        ----------
        filter : str or Predicate, optional
            A SQL boolean expression (``"country = 'US' AND ts >= TIMESTAMP '2025-01-01
            00:00:00'"``) or a predicate from :mod:`lance_partitioned.expressions`.
        columns : list of str, optional
            Columns to read (validated here; every live column by default).

        Returns
        -------
        ScanTasks
            A sequence (list-like: ``len``, indexing, slices, ``==`` a list) of one ScanTask
            per surviving leaf, with its ``read_version``, partition values and the residual
            filter still to apply inside it; each task is built when first looked at.
        """
        return scan.planned(self._manifest, self._snapshot, filter, columns)

    def to_table(
        self,
        filter: str | Predicate | None = None,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> pa.Table:
        """Read matching rows into one table, from this object's ``__manifest`` version.

        Leaves are read in parallel at their ``read_version``; ``limit`` stops early.
        """
        tasks = self.plan_scan(filter, columns)
        return scan.to_table(tasks, self.namespace_schema, columns, limit, self.max_workers)

    def to_pandas(
        self,
        filter: str | Predicate | None = None,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
        **to_pandas_kwargs: Any,
    ) -> Any:
        """Read matching rows into a ``pandas.DataFrame`` (as :meth:`to_table`, then
        ``pyarrow.Table.to_pandas(**to_pandas_kwargs)``).

        >>> import tempfile, pyarrow as pa
        >>> ns = PartitionedNamespace.create(
        ...     tempfile.mkdtemp(), schema=pa.schema([("k", pa.utf8()), ("v", pa.int64())]),
        ...     partition_by="k")
        >>> _ = ns.write(pa.table({"k": ["a", "b", "a"], "v": [1, 2, 3]}))
        >>> ns.to_pandas("k = 'a'", columns=["v"]).sort_values("v")["v"].tolist()
        [1, 3]
        """
        return self.to_table(filter, columns, limit).to_pandas(**to_pandas_kwargs)

    def to_batches(
        self,
        filter: str | Predicate | None = None,
        columns: Sequence[str] | None = None,
        batch_size: int | None = None,
    ) -> pa.RecordBatchReader:
        """Stream matching rows as a ``RecordBatchReader`` with bounded memory.

        DuckDB, Polars and DataFusion read the reader directly (Arrow C stream).
        """
        tasks = self.plan_scan(filter, columns)
        return scan.to_batches(tasks, self.namespace_schema, columns, batch_size, self.max_workers)

    def count_rows(self, filter: str | Predicate | None = None) -> int:
        """Rows matching ``filter``; leaves decided by their partition values are counted from
        the ``__manifest`` without opening them."""
        return scan.count_rows(self.plan_scan(filter, []), self.namespace_schema, self.max_workers)

    def to_pyarrow_dataset(
        self, filter: str | Predicate | None = None, *, on_scan: OnScan | None = None
    ) -> PartitionedDataset:
        """This version as a lazy ``pyarrow.dataset.Dataset``: DuckDB queries it (``FROM ds``)
        with our pruning and projection (see :mod:`lance_partitioned.engines`)."""
        return engines.to_pyarrow_dataset(self._manifest, self._snapshot, filter, on_scan=on_scan)

    def scan_polars(
        self, filter: str | Predicate | None = None, *, on_scan: OnScan | None = None
    ) -> pl.LazyFrame:
        """This version as a Polars ``LazyFrame`` read by an IO plugin that prunes with the
        query's predicate, projection and limit (see :mod:`lance_partitioned.engines`)."""
        return engines.scan_polars(self._manifest, self._snapshot, filter, on_scan=on_scan)

    def as_lance_namespace(self) -> PartitionedLanceNamespace:
        """This namespace as a :class:`lance_namespace.LanceNamespace` (list and describe its
        namespaces and leaf tables), as ``lance_namespace.connect("partitioned", {"root":
        uri})`` returns it. It reads this object's ``__manifest`` version.

        >>> import tempfile, pyarrow as pa, lance_namespace as ln
        >>> ns = PartitionedNamespace.create(
        ...     tempfile.mkdtemp(), schema=pa.schema([("k", pa.utf8())]), partition_by="k")
        >>> _ = ns.write(pa.table({"k": ["a"]}))
        >>> ns.as_lance_namespace().list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces
        ['v1']
        """
        from lance_partitioned.adapter import PartitionedLanceNamespace

        return PartitionedLanceNamespace(self)

    # ------------------------------------------------------------------ changes
    def delete(self, where: str | Predicate) -> DeleteResult:
        """Delete the rows matching ``where`` in one commit (see :mod:`lance_partitioned.dml`).

        A leaf whose partition values decide that every row matches is dropped from the
        ``__manifest`` without reading it; others get Lance deletion files.
        """
        with self._committed("delete") as moved_to:
            result = delete_rows(self._manifest, where)
            moved_to(result.version)
        return result

    def update(
        self,
        where: str | Predicate,
        set: Mapping[str, str] | None = None,
        *,
        values: Mapping[str, Any] | None = None,
    ) -> UpdateResult:
        """Set columns of the rows matching ``where``: ``set`` maps each column to DataFusion
        SQL over the row (``{"amount": "amount * 2"}``), or ``values`` to a Python value
        (``{"country": "US"}``, None for NULL; deltalake's ``new_values``), one of the two.
        Rows whose partition changes move to their new leaf in the same commit (see
        :mod:`lance_partitioned.dml.update`)."""
        assignments = dml.assignments(set, values)
        with self._committed("update") as moved_to:
            result = update_rows(self._manifest, where, assignments)
            moved_to(result.version)
        return result

    def merge(self, data: Any, on: str | Sequence[str], *, null_safe: bool = False) -> MergeBuilder:
        """An upsert of ``data`` keyed by ``on`` (pylance's ``merge_insert``): configure it
        with ``when_matched_update_all``, ``when_not_matched_insert_all`` and
        ``when_not_matched_by_source_delete``, then ``execute()`` it in one commit.

        Keys that are partition source columns match NULL-safely (``IS NOT DISTINCT
        FROM``: a NULL matches a NULL); ``null_safe=True`` matches every key so, else a
        NULL in another key never matches."""
        self._require_writable("merge")
        return dml.MergeBuilder(self._manifest, data, on, after=self._moved_to, null_safe=null_safe)

    def restore(self, version: int | str | dt.datetime) -> RestoreResult:
        """Make the rows of an earlier ``__manifest`` version the current ones, in one new
        commit (as Delta's ``RESTORE``; see :mod:`lance_partitioned.history.restore`).

        Parameters
        ----------
        version : int, str or datetime
            A version number, a tag name, or a time (the latest version committed at or
            before it; a naive datetime is UTC).
        """
        from lance_partitioned.history import restore

        with self._committed("restore") as moved_to:
            result = restore.restore(self._manifest, version)
            moved_to(result.version)
        return result

    def convert(self, to: str, *, rebucket: bool = True) -> ConvertResult:
        """Rewrite every partition spec version and the ``__manifest`` partition columns in
        dialect ``to`` (``"published"`` or ``"spec000"``); see :mod:`lance_partitioned.convert`.
        The leaves of bucket fields are re-bucketed (``rebucket=False``: refused)."""
        from lance_partitioned.convert.conversion import convert

        with self._committed("convert") as moved_to:
            result = convert(self._manifest, to, rebucket=rebucket)
            moved_to(result.version)
        return result

    # ------------------------------------------------------------------ evolution
    def update_partition_spec(self, partition_by: str | Sequence[PartitionField]) -> PartitionSpec:
        """Start a new partition spec version for new data (see :mod:`.evolution`)."""
        if not isinstance(partition_by, str):  # the shorthand's parser warns itself
            warn_ambiguous_date_parts(partition_by, self.namespace_schema)
        self._evolve(
            "update_partition_spec",
            lambda m: evolution.update_partition_spec(m, partition_by),
        )
        return self.current_spec

    def add_columns(self, fields: Sequence[pa.Field]) -> None:
        """Add nullable columns with new field ids (see :mod:`.evolution`)."""
        self._evolve("add_columns", lambda m: evolution.add_columns(m, fields))

    def drop_columns(self, names: Sequence[str]) -> None:
        """Deprecate columns: kept in the schema and on disk, gone from reads and writes."""
        self._evolve("drop_columns", lambda m: evolution.drop_columns(m, names))

    def rename_column(self, old: str, new: str) -> None:
        """Rename a column; its field id, partition fields and data stay the same."""
        self._evolve("rename_column", lambda m: evolution.rename_column(m, old, new))

    def alter_column_type(self, name: str, new_type: pa.DataType) -> None:
        """Promote a column's type (widening only)."""
        self._evolve("alter_column_type", lambda m: evolution.alter_column_type(m, name, new_type))

    def update_schema(self) -> UpdateSchema:
        """Several column changes (``add_columns``, ``drop_columns``, ``rename_column``,
        ``alter_column_type``) committed as one: ``with ns.update_schema() as u: ...`` (see
        :mod:`.schema_update`)."""
        return UpdateSchema(lambda change: self._evolve("update_schema", change))

    # ------------------------------------------------------------------ maintenance
    def optimize(
        self,
        filter: str | Predicate | None = None,
        *,
        target_rows_per_fragment: int = 1_048_576,
        compact_manifest: bool = True,
        progress: Callable[[OptimizeProgress], None] | None = None,
    ) -> OptimizeResult:
        """Compact the leaves ``filter`` selects (as a scan would) and the ``__manifest``, in
        one atomic commit (see :mod:`lance_partitioned.maintenance.optimize`); this object then
        reads the version it committed."""
        with self._committed("optimize") as moved_to:
            result = optimize.optimize(
                self._manifest,
                filter,
                target_rows_per_fragment=target_rows_per_fragment,
                compact_manifest=compact_manifest,
                progress=progress,
            )
            moved_to(result.version)
        return result

    def cleanup(
        self,
        older_than: dt.timedelta = dt.timedelta(days=7),
        *,
        dry_run: bool = False,
        progress: Callable[[CleanupProgress], None] | None = None,
    ) -> CleanupResult:
        """Remove what no retained version needs (see :mod:`.maintenance.cleanup`)."""
        with self._committed("cleanup"):  # commits no version: this object stays where it is
            return cleanup.cleanup(self._manifest, older_than, dry_run=dry_run, progress=progress)

    # ------------------------------------------------------------------ search and indexes
    def create_index(
        self,
        column: str,
        index_type: str,
        *,
        name: str | None = None,
        filter: str | None = None,
        replace: bool = False,
        progress: Callable[[IndexBuildProgress], None] | None = None,
        **params: Any,
    ) -> IndexBuildResult:
        """Build an index on ``column`` of every leaf ``filter`` keeps, published in one
        ``__manifest`` commit, and record its definition (see :mod:`lance_partitioned.search`).

        ``index_type``: ``IVF_PQ``, ``IVF_HNSW_SQ``, ``IVF_FLAT`` (``params`` go to pylance:
        ``metric``, ``num_partitions``, ``num_sub_vectors``…; defaults sized per leaf;
        ``min_rows``, default 10,000: smaller leaves stay flat), ``BTREE``, ``BITMAP``,
        ``LABEL_LIST``, ``ZONEMAP`` or ``INVERTED``. Leaves written later get it from
        :meth:`optimize_indices`.
        """
        from lance_partitioned import search

        with self._committed("create_index") as moved_to:
            result = search.create_index(
                self._manifest,
                column,
                index_type,
                name=name,
                filter=filter,
                replace=replace,
                progress=progress,
                **params,
            )
            moved_to(result.version)
        return result

    def list_indices(self) -> list[dict[str, Any]]:
        """The indexes the namespace defines (name, type, column, params, filter)."""
        from lance_partitioned import search

        return search.list_indices(self._snapshot)

    def index_stats(self, name: str) -> IndexStats:
        """Leaves indexed, flat or missing, and rows indexed or not, for index ``name``."""
        from lance_partitioned import search

        return search.index_stats(self._manifest, self._snapshot, name)

    def drop_index(self, name: str) -> None:
        """Remove index ``name`` from every leaf (one commit) and its definition."""
        from lance_partitioned import search

        with self._committed("drop_index") as moved_to:
            moved_to(search.drop_index(self._manifest, name))

    def optimize_indices(self, name: str | None = None) -> list[IndexBuildResult]:
        """Build the defined indexes (or ``name``) on leaves that lack them and rebuild them on
        leaves with unindexed rows, one ``__manifest`` commit per index."""
        from lance_partitioned import search

        with self._committed("optimize_indices") as moved_to:
            results = search.optimize_indices(self._manifest, name)
            moved_to(self._manifest.latest_version())
        return results

    def search(
        self,
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
    ) -> pa.Table:
        """The top ``k`` rows nearest to ``vector`` (``_distance``), matching ``text``
        (``_score``) or both (``_relevance_score``, RRF), with ``_partition``; leaves pruned by
        ``filter`` as a scan prunes them (see :mod:`lance_partitioned.search.query`)."""
        from lance_partitioned import search

        with errors.typed_storage_errors(self.uri, "search"):
            return search.search(
                self._manifest,
                self._snapshot,
                vector,
                text=text,
                column=column,
                k=k,
                filter=filter,
                columns=columns,
                metric=metric,
                nprobes=nprobes,
                refine_factor=refine_factor,
                ef=ef,
                fast_search=fast_search,
            )

    # ------------------------------------------------------------------ history
    def versions(self) -> pa.Table:
        """One row per ``__manifest`` version, oldest first: version, timestamp (UTC),
        operation, mode, rows added and removed, partitions touched, tags, and the commit's
        transaction properties (see :func:`lance_partitioned.history.versions`)."""
        return history.versions(self._manifest)

    @property
    def tags(self) -> Tags:
        """The tags of the namespace: ``create(name, version=None)`` (None: :attr:`version`),
        ``delete(name)``, ``list()`` (see :class:`lance_partitioned.history.Tags`)."""
        return history.Tags(self._manifest, self.version)

    # ------------------------------------------------------------------ commits
    def _require_writable(self, operation: str) -> None:
        if self._pinned is not None:
            raise errors.UnsupportedOperationError(
                f"{operation}: this namespace was opened at __manifest version {self._pinned} "
                "(time travel) and is read-only; open it without version= to change it"
            )

    @contextmanager
    def _committed(self, operation: str) -> Iterator[Callable[[int], None]]:
        """Run a change: refused when this object was opened at a version (time travel is
        read-only); a raw storage failure inside becomes a typed
        :class:`~lance_partitioned.errors.StorageError` naming the root; the callable yielded
        moves this object to the version the change committed (a change that commits no
        version does not call it)."""
        self._require_writable(operation)
        with errors.typed_storage_errors(self.uri, operation):
            yield self._moved_to

    def _evolve(self, operation: str, change: Callable[[Manifest], int]) -> None:
        with self._committed(operation) as moved_to:
            moved_to(change(self._manifest))

    def _moved_to(self, version: int) -> None:
        self._snapshot = self._manifest.snapshot(version)

    def _merge_schema(self, data: Any) -> pa.RecordBatchReader:
        """``data`` as a stream, after adding the columns it has and the namespace lacks
        (``write(schema_mode="merge")``)."""
        from lance_partitioned.ingest import as_reader, drop_pandas_index
        from lance_partitioned.writing import new_columns

        live = self.schema.names
        reader = drop_pandas_index(as_reader(data), live)
        added = new_columns(reader.schema, self.namespace_schema)
        if added:
            self.add_columns(added)
        return reader
