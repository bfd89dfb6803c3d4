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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import pyarrow as pa

from lance_partitioned import dml, errors, scan
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.dml import DeleteResult, MergeBuilder, UpdateResult
from lance_partitioned.expressions import Predicate
from lance_partitioned.maintenance.cleanup import CleanupProgress, CleanupResult
from lance_partitioned.manifest import (
    BASE_COLUMNS,
    DELIMITER,
    Manifest,
    ManifestSnapshot,
)
from lance_partitioned.scan import ScanTask
from lance_partitioned.spec.metadata import NamespaceMetadata, check_column_names
from lance_partitioned.spec.partitioning import (
    PartitionField,
    PartitionSpec,
    bind_spec,
    check_authored,
    validate_specs,
)
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.shorthand import parse_partition_by, warn_ambiguous_date_parts
from lance_partitioned.write import WriteOptions, WriteProgress, stage

if TYPE_CHECKING:
    import polars as pl

    from lance_partitioned.adapter import PartitionedLanceNamespace
    from lance_partitioned.engines import OnScan
    from lance_partitioned.engines.dataset import PartitionedDataset
    from lance_partitioned.history import Tags
    from lance_partitioned.maintenance.optimize import OptimizeProgress, OptimizeResult

__all__ = ["PartitionedNamespace", "WriteResult"]

_MODES = ("append", "overwrite", "overwrite_partitions")


@dataclass(frozen=True)
class WriteResult:
    """What :meth:`PartitionedNamespace.write` did.

    Attributes
    ----------
    version : int
        The ``__manifest`` version that made the write visible.
    rows_written : int
        Rows committed.
    partitions_created : int
        Leaf tables that did not exist before.
    partitions_touched : int
        Leaf tables written (created ones included).
    partitions_removed : int
        Leaf tables dropped from the manifest by ``mode="overwrite"``.
    attempts : int
        Manifest commit attempts (more than 1 when concurrent writers conflicted).
    seconds : float
        Wall time of the whole write.
    """

    version: int
    rows_written: int
    partitions_created: int
    partitions_touched: int
    partitions_removed: int
    attempts: int
    seconds: float


_T = TypeVar("_T")


def _storage(action: Callable[[], _T], path: str, what: str) -> _T:
    """Run ``action``; a raw storage failure (no space, read-only, a file in the way) becomes
    the typed error of :func:`lance_partitioned.errors.storage_error`."""
    with errors.typed_storage_errors(path, what):
        return action()


def _spec_version(object_id: str) -> int:
    return int(object_id.split(DELIMITER, 1)[0][1:])


class PartitionedNamespace:
    """A Lance Partitioned Namespace (spec 000) rooted at a directory or object-store URI.

    Use :meth:`create` or :meth:`open`. :meth:`as_lance_namespace` is the same namespace as
    a ``lance_namespace.LanceNamespace``, which ``lance_namespace.connect("partitioned",
    {"root": uri})`` also returns (properties ``storage.<key>`` become storage options).
    The object reads one ``__manifest`` version (:attr:`version`); :meth:`write` moves it to
    the version it commits and :meth:`refresh` to the latest.
    """

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

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def create(
        cls,
        uri: str,
        *,
        schema: pa.Schema,
        partition_by: str | Sequence[PartitionField],
        storage_options: Mapping[str, str] | None = None,
        exist_ok: bool = False,
        max_workers: int | None = None,
    ) -> PartitionedNamespace:
        """Create a partitioned namespace with a schema and a first partition spec.

        Parameters
        ----------
        uri : str
            Root directory or object-store URI.
        schema : pyarrow.Schema
            The namespace schema; ``lance:field_id`` is assigned depth-first unless every
            field already carries one.
        partition_by : str or list of PartitionField
            The shorthand (``"year(ts), country, bucket(16, user_id)"``) or bound fields.
        exist_ok : bool
            Return the existing namespace when it has the same schema and spec instead of
            raising :class:`~lance_partitioned.errors.NamespaceAlreadyExistsError`.
        max_workers : int, optional
            Width of the per-leaf thread pools of this object's operations (default:
            ``$LANCE_PARTITIONED_MAX_WORKERS``, else sized for the storage; see
            :func:`lance_partitioned.runtime.max_workers`).
        """
        ns_schema = NamespaceSchema.from_arrow(schema)
        check_column_names(ns_schema)
        if isinstance(partition_by, str):
            spec = bind_spec(
                parse_partition_by(partition_by, ns_schema), existing=(), schema=ns_schema
            )
        else:
            spec = PartitionSpec(1, tuple(partition_by))
            validate_specs([spec], ns_schema)
            check_authored(spec, ns_schema)
            warn_ambiguous_date_parts(spec.fields, ns_schema)
        metadata = NamespaceMetadata(ns_schema, (spec,))
        manifest = Manifest(str(uri), storage_options, max_workers=max_workers)

        def made() -> PartitionedNamespace:
            return cls(str(uri), storage_options=storage_options, max_workers=max_workers)

        if manifest.exists():
            if manifest.is_unfinished():
                if not exist_ok:
                    raise errors.NamespaceAlreadyExistsError(
                        f"an unfinished create left a __manifest without partition specs at "
                        f"{uri!r}: pass exist_ok=True to finish it"
                    )
                _storage(lambda: manifest.finish_create(metadata), manifest.root, "create")
                return made()
            if not exist_ok:
                raise errors.NamespaceAlreadyExistsError(f"a namespace already exists at {uri!r}")
            try:
                existing = made()
            except errors.NotAPartitionedNamespaceError as exc:
                raise errors.NamespaceAlreadyExistsError(
                    f"a directory namespace with content (not a partitioned one) exists at {uri!r}"
                ) from exc
            if existing.metadata.to_table_metadata() != metadata.to_table_metadata():
                raise errors.NamespaceAlreadyExistsError(
                    f"a namespace with another schema or partition spec exists at {uri!r}"
                )
            return existing
        _storage(
            lambda: Manifest.create(str(uri), metadata, storage_options), manifest.root, "create"
        )
        return made()

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
        from lance_partitioned import history

        number = history.resolve_version(Manifest(str(uri), storage_options), version)
        return cls(
            str(uri), storage_options=storage_options, version=number, max_workers=max_workers
        )

    def refresh(self) -> PartitionedNamespace:
        """Re-read the latest ``__manifest`` version (no-op when opened at a fixed version)."""
        if self._pinned is None:
            self._snapshot = self._manifest.snapshot()
        return self

    # ------------------------------------------------------------------ properties
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

    # ------------------------------------------------------------------ writes
    def write(
        self,
        data: Any,
        *,
        mode: Literal["append", "overwrite", "overwrite_partitions"] = "append",
        options: WriteOptions | None = None,
        progress: Callable[[WriteProgress], None] | None = None,
        where: str | Predicate | None = None,
    ) -> WriteResult:
        """Write ``data`` atomically: every partition it touches becomes visible at once.

        Parameters
        ----------
        data
            A ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader`` (streamed with
            bounded memory), any object with ``__arrow_c_stream__`` (pandas, polars, DuckDB),
            or an iterable of record batches.
        mode : {"append", "overwrite", "overwrite_partitions"}
            ``overwrite`` replaces the whole namespace's data (with ``where``: only the rows
            matching it); ``overwrite_partitions`` replaces the partitions of the current
            spec present in ``data``, rows stored under older spec versions included.
        options : WriteOptions, optional
            Buffering and parallelism knobs.
        progress : callable, optional
            Called with a :class:`~lance_partitioned.write.WriteProgress` after each chunk
            and once when every partition is staged.
        where : str or Predicate, optional
            With ``mode="overwrite"``: replace-where, atomically replace the rows matching
            ``where`` by ``data``, every row of which must satisfy it
            (:class:`~lance_partitioned.errors.PredicateViolationError` otherwise).
        """
        if mode not in _MODES:
            raise errors.InvalidInputError(f"mode {mode!r} is not one of {list(_MODES)}")
        if where is not None and mode != "overwrite":
            raise errors.InvalidInputError(
                f"where= replaces the rows matching it and needs mode='overwrite', not {mode!r}"
            )
        self._require_writable("write")
        started = time.perf_counter()
        self.refresh()
        snapshot = self._snapshot
        target = leaf_schema(snapshot.metadata.schema)
        if where is not None:
            data = dml.require_matching(data, where, snapshot)
        options = options or WriteOptions(threads=self.max_workers)
        pending = _storage(
            lambda: stage(
                self._manifest,
                snapshot,
                data,
                mode="append" if where is not None else mode,
                target=target,
                options=options,
                progress=progress,
            ),
            self.uri,
            "write",
        )
        result = _storage(
            lambda: dml.commit_staged(
                self._manifest,
                pending,
                where=where,
                leaf_threads=options.threads,
            ),
            self.uri,
            "write",
        )
        self._snapshot = self._manifest.snapshot(result.version)
        return WriteResult(
            version=result.version,
            rows_written=result.rows,
            partitions_created=len(result.created),
            partitions_touched=len(result.leaf_versions),
            partitions_removed=result.deleted_leaves,
            attempts=result.attempts,
            seconds=time.perf_counter() - started,
        )

    # ------------------------------------------------------------------ partitions
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
            SQL over the partition columns (``"country = 'US' AND year >= 2025"``).
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
            from lance_partitioned.sizes import partition_sizes

            return partition_sizes(self, filter)
        tables = self._snapshot.tables
        partition_names = [n for n in tables.column_names if n not in BASE_COLUMNS]
        spec_versions = pa.array(
            [_spec_version(oid) for oid in tables.column("object_id").to_pylist()], pa.int32()
        )
        out = pa.table(
            {
                "object_id": tables.column("object_id"),
                "location": tables.column("location"),
                "spec_version": spec_versions,
                **{name: tables.column(name) for name in partition_names},
                "read_version": tables.column("read_version"),
            }
        )
        out = out.sort_by([("object_id", "ascending")])
        if filter is None:
            return out
        return scan.sql_filter(out, filter, what="partition filter")

    # ------------------------------------------------------------------ reads
    def plan_scan(
        self, filter: str | Predicate | None = None, columns: Sequence[str] | None = None
    ) -> list[ScanTask]:
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
        list of ScanTask
            One per surviving leaf, with its ``read_version``, partition values and the
            residual filter still to apply inside it.
        """
        return scan.plan_scan(self._manifest, self._snapshot, filter, columns)

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

    # ------------------------------------------------------------------ evolution
    def _require_writable(self, operation: str) -> None:
        if self._pinned is not None:
            raise errors.UnsupportedOperationError(
                f"{operation}: this namespace was opened at __manifest version {self._pinned} "
                "(time travel) and is read-only; open it without version= to change it"
            )

    def _evolve(self, operation: str, change: Callable[[Manifest], int]) -> None:
        self._require_writable(operation)
        version = _storage(lambda: change(self._manifest), self.uri, operation)
        self._snapshot = self._manifest.snapshot(version)

    def update_partition_spec(self, partition_by: str | Sequence[PartitionField]) -> PartitionSpec:
        """Start a new partition spec version for new data (see :mod:`.evolution`)."""
        from lance_partitioned import evolution

        if not isinstance(partition_by, str):  # the shorthand's parser warns itself
            warn_ambiguous_date_parts(partition_by, self.namespace_schema)
        self._evolve(
            "update_partition_spec",
            lambda m: evolution.update_partition_spec(m, partition_by),
        )
        return self.current_spec

    def add_columns(self, fields: Sequence[pa.Field]) -> None:
        """Add nullable columns with new field ids (see :mod:`.evolution`)."""
        from lance_partitioned import evolution

        self._evolve("add_columns", lambda m: evolution.add_columns(m, fields))

    def drop_columns(self, names: Sequence[str]) -> None:
        """Deprecate columns: kept in the schema and on disk, gone from reads and writes."""
        from lance_partitioned import evolution

        self._evolve("drop_columns", lambda m: evolution.drop_columns(m, names))

    def rename_column(self, old: str, new: str) -> None:
        """Rename a column; its field id, partition fields and data stay the same."""
        from lance_partitioned import evolution

        self._evolve("rename_column", lambda m: evolution.rename_column(m, old, new))

    def alter_column_type(self, name: str, new_type: pa.DataType) -> None:
        """Promote a column's type (widening only)."""
        from lance_partitioned import evolution

        self._evolve("alter_column_type", lambda m: evolution.alter_column_type(m, name, new_type))

    # ------------------------------------------------------------------ LanceNamespace
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

    # --- optimize18 ---
    def optimize(
        self,
        filter: str | Predicate | None = None,
        *,
        target_rows_per_fragment: int = 1_048_576,
        compact_manifest: bool = True,
        progress: Callable[[OptimizeProgress], None] | None = None,
    ) -> OptimizeResult:
        """Compact the leaves ``filter`` selects (as a scan would) and the ``__manifest``, in
        one atomic commit (see :mod:`lance_partitioned.maintenance.optimize`)."""
        from lance_partitioned.maintenance import optimize

        return optimize.optimize_namespace(
            self, filter, target_rows_per_fragment, compact_manifest, progress
        )

    # --- cleanup18 ---
    def cleanup(
        self,
        older_than: dt.timedelta = dt.timedelta(days=7),
        *,
        dry_run: bool = False,
        progress: Callable[[CleanupProgress], None] | None = None,
    ) -> CleanupResult:
        """Remove what no retained version needs (see :mod:`.maintenance.cleanup`)."""
        from lance_partitioned.maintenance import cleanup

        self._require_writable("cleanup")
        return cleanup.cleanup(self._manifest, older_than, dry_run=dry_run, progress=progress)

    # --- history18 ---
    def versions(self) -> pa.Table:
        """One row per ``__manifest`` version, oldest first: version, timestamp (UTC),
        operation, mode, rows added and removed, partitions touched, tags, and the commit's
        transaction properties (see :func:`lance_partitioned.history.versions`)."""
        from lance_partitioned import history

        return history.versions(self._manifest)

    @property
    def tags(self) -> Tags:
        """The tags of the namespace: ``create(name, version=None)`` (None: :attr:`version`),
        ``delete(name)``, ``list()`` (see :class:`lance_partitioned.history.Tags`)."""
        from lance_partitioned import history

        return history.Tags(self._manifest, self.version)

    # --- engines20 ---
    def to_pyarrow_dataset(
        self, filter: str | Predicate | None = None, *, on_scan: OnScan | None = None
    ) -> PartitionedDataset:
        """This version as a lazy ``pyarrow.dataset.Dataset``: DuckDB queries it (``FROM ds``)
        with our pruning and projection (see :mod:`lance_partitioned.engines`)."""
        from lance_partitioned import engines

        return engines.to_pyarrow_dataset(self, filter, on_scan=on_scan)

    def scan_polars(
        self, filter: str | Predicate | None = None, *, on_scan: OnScan | None = None
    ) -> pl.LazyFrame:
        """This version as a Polars ``LazyFrame`` read by an IO plugin that prunes with the
        query's predicate, projection and limit (see :mod:`lance_partitioned.engines`)."""
        from lance_partitioned import engines

        return engines.scan_polars(self, filter, on_scan=on_scan)

    # --- dml19 ---
    def delete(self, where: str | Predicate) -> DeleteResult:
        """Delete the rows matching ``where`` in one commit (see :mod:`lance_partitioned.dml`).

        A leaf whose partition values decide that every row matches is dropped from the
        ``__manifest`` without reading it; others get Lance deletion files.
        """
        self._require_writable("delete")
        result = _storage(lambda: dml.delete(self._manifest, where), self.uri, "delete")
        self._snapshot = self._manifest.snapshot(result.version)
        return result

    def update(self, where: str | Predicate, set: Mapping[str, str]) -> UpdateResult:
        """Set columns of the rows matching ``where``: ``set`` maps each column to DataFusion
        SQL over the row (``{"amount": "amount * 2"}``). Rows whose partition changes move
        to their new leaf in the same commit (see :mod:`lance_partitioned.dml.update`)."""
        self._require_writable("update")
        result = _storage(lambda: dml.update(self._manifest, where, set), self.uri, "update")
        self._snapshot = self._manifest.snapshot(result.version)
        return result

    def merge(self, data: Any, on: str | Sequence[str]) -> MergeBuilder:
        """An upsert of ``data`` keyed by ``on`` (pylance's ``merge_insert``): configure it
        with ``when_matched_update_all``, ``when_not_matched_insert_all`` and
        ``when_not_matched_by_source_delete``, then ``execute()`` it in one commit."""
        self._require_writable("merge")
        return dml.MergeBuilder(self._manifest, data, on, after=self._moved_to)

    def _moved_to(self, version: int) -> None:
        self._snapshot = self._manifest.snapshot(version)
