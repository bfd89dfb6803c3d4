"""Access to the ``__manifest`` Lance table: reading snapshots, creating it, and its
compare-and-swap commits (rows, partition columns, table metadata).

A :class:`Manifest` keeps one Lance session (Lance's metadata cache: opening a version
already seen reads nothing again) and the last snapshot it read or committed: a snapshot of
the version it just committed is built from the rows committed, not read back, and asking
for the latest snapshot when nobody committed since costs one look at the latest version.
A row commit replaces rows by writing deletion vectors for the rows it replaces (their
addresses are known from the snapshot) and one new fragment, in one Lance ``Update``: the
same operation pylance's ``merge_insert`` commits, without its join.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import lance
import numpy as np
import pyarrow as pa
from lance import LanceDataset, LanceOperation, Transaction
from lance.commit import CommitConflictError
from lance.fragment import write_fragments
from lance.lance import _Session as Session
from lance.optimize import Compaction, CompactionOptions
from lance.schema import LanceSchema

from lance_partitioned import errors, runtime
from lance_partitioned.convert.marker import effective_metadata
from lance_partitioned.manifest.datasets import file_on_the_way, open_leaf
from lance_partitioned.manifest.layout import (
    BASE_COLUMNS,
    DELIMITER,
    GUARD_KEY,
    GUARD_VALUE,
    MANIFEST_DIR,
    NAMESPACE,
    READ_VERSION,
    _spec_version_of,
    _with_base,
    local_path,
    manifest_schema,
    rows_table,
    spec_namespace_id,
)
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.manifest.root import refuse_pinned_writes, root_properties
from lance_partitioned.manifest.snapshot import (
    CommitConflict,
    ManifestEntry,
    ManifestSnapshot,
    RawManifest,
)
from lance_partitioned.spec.metadata import NamespaceMetadata, keep_unknown_keys

_CREATE = Operation("create").counted()
_ROW_ADDRESS = "_rowaddr"
_OFFSET_BITS = np.uint64(32)  # a Lance row address is fragment id << 32 | row offset

#: Lance's smallest read of the ``__manifest`` on an object store (its default: 64 KiB). The
#: ``__manifest`` is always read whole, and its data file of 731 leaves (76 KB) took three
#: round trips at 64 KiB, one at 1 MiB: an open + plan at 20 ms per request, 7 -> 5 requests.
MANIFEST_BLOCK_SIZE = 1 << 20


@dataclass(frozen=True)
class ManifestCompaction:
    """What :meth:`Manifest.compact` did: the version it committed (None: nothing to compact)
    and the ``__manifest``'s fragments before and after."""

    version: int | None
    fragments_before: int
    fragments_after: int


class Manifest:
    """Access to the ``__manifest`` table of one partitioned namespace.

    Parameters
    ----------
    root : str
        The namespace root (a local path or an object store URI).
    storage_options : dict, optional
        Passed to every Lance call.
    max_workers : int, optional
        Width of the per-leaf thread pools of the operations on this namespace (see
        :func:`lance_partitioned.runtime.max_workers`).
    """

    def __init__(
        self,
        root: str,
        storage_options: Mapping[str, str] | None = None,
        *,
        max_workers: int | None = None,
    ) -> None:
        self.root = root.rstrip("/")
        self.uri = f"{self.root}/{MANIFEST_DIR}"
        self.storage_options = dict(storage_options or {})
        self.max_workers = runtime.max_workers(max_workers, remote=local_path(self.root) is None)
        self._session: Session | None = None
        self._last: ManifestSnapshot | None = None  # the last snapshot read or committed
        self._dataset: LanceDataset | None = None  # the __manifest at that version, open
        # (version, time.monotonic()): when that version was last known to be the latest
        self._confirmed: tuple[int, float] = (-1, 0.0)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the Lance session and the cached snapshot (this process's)."""
        return {
            **self.__dict__,
            "_session": None,
            "_last": None,
            "_dataset": None,
            "_confirmed": (-1, 0.0),
        }

    def table_uri(self, location: str) -> str:
        """The URI of a leaf table from its ``location`` (relative name or absolute URI)."""
        if "://" in location or location.startswith("/"):
            return location
        return f"{self.root}/{location}"

    def _open(self, version: int | None = None) -> LanceDataset:
        if isinstance(version, int) and not 1 <= version < 2**64:
            raise errors.TableVersionNotFoundError(  # Lance would raise OverflowError
                f"__manifest version {version} does not exist at {self.root!r}: versions are "
                "numbered from 1"
            )
        if self._session is None:
            self._session = Session()
        try:
            return open_leaf(
                self.uri,
                version,
                self.storage_options,
                session=self._session,
                action="read",
                block_size=None if local_path(self.uri) else MANIFEST_BLOCK_SIZE,
            )
        except (errors.TableNotFoundError, errors.StorageError) as exc:
            if not isinstance(exc.__cause__, ValueError):
                raise  # Lance's OSError: a storage failure, typed
            if version is not None and "not found" in str(exc.__cause__).lower():
                raise errors.TableVersionNotFoundError(
                    f"__manifest version {version} does not exist at {self.root!r}"
                ) from exc
            raise errors.NamespaceNotFoundError(
                f"no partitioned namespace at {self.root!r}: cannot open {self.uri!r} "
                f"({exc.__cause__})"
            ) from exc

    def read_raw(self, version: int | None = None) -> RawManifest:
        """One version of the manifest as stored, without parsing its metadata JSON.

        For checks that must report a corrupt ``schema`` or spec key instead of failing on it
        (``snapshot`` raises); a foreign manifest without ``read_version`` reads it as None.
        """
        ds = self._open(version)
        rows = ds.to_table()
        names = rows.column_names
        partition_columns = {f.name: f.type for f in rows.schema if f.name not in BASE_COLUMNS}
        entries = []
        for row in rows.to_pylist():
            read_version = row.get("read_version")
            entries.append(
                ManifestEntry(
                    object_id=row["object_id"],
                    object_type=row["object_type"],
                    location=row.get("location"),
                    metadata=row.get("metadata"),
                    read_version=None if read_version is None else int(read_version),
                    values={name: row[name] for name in names if name in partition_columns},
                )
            )
        stamp = ds.get_version().get("timestamp")
        return RawManifest(
            int(ds.version),
            stamp if isinstance(stamp, dt.datetime) else None,
            root_properties(ds),
            partition_columns,
            tuple(entries),
        )

    def version_time(self, version: int) -> dt.datetime | None:
        """When ``__manifest`` version ``version`` was committed (None: not recorded)."""
        stamp = self._open(version).get_version().get("timestamp")  # no history listing
        return stamp if isinstance(stamp, dt.datetime) else None

    def exists(self) -> bool:
        """Whether a ``__manifest`` Lance table exists at the root."""
        try:
            self._open()
        except errors.NamespaceNotFoundError:
            return False
        return True

    def latest_version(self) -> int:
        """The latest ``__manifest`` version (without reading its rows)."""
        known = self._dataset
        if known is not None:
            return int(known.latest_version)  # (Lance looks it up in the store each time)
        return int(self._open().version)

    def _is_latest(self, version: int) -> bool:
        """Whether ``version`` is the latest (looked up), remembering when it was."""
        asked = time.monotonic()
        if self.latest_version() != version:
            return False
        self._confirmed = (version, asked)
        return True

    def _kept(self, version: int) -> tuple[ManifestSnapshot, LanceDataset] | None:
        """The last snapshot and its open dataset, when they are of ``version``."""
        last, known = self._last, self._dataset
        if last is None or known is None or last.version != version:
            return None
        return last, known

    def snapshot(
        self, version: int | None = None, *, fresh_within: float = 0.0
    ) -> ManifestSnapshot:
        """Read one version of the manifest (the latest by default).

        The last snapshot read or committed through this object is reused when it is of the
        version asked for (a version never changes), or of the latest version. With
        ``fresh_within`` > 0 (seconds), the latest is not looked up (one listing of
        ``_versions/`` less) when the last snapshot was known to be the latest that recently:
        for a caller whose commit is a compare-and-swap on the snapshot's version anyway, so
        that a writer who committed meanwhile is still detected, at the commit.
        """
        last = self._last
        if (
            last is not None
            and version is None
            and fresh_within > 0
            and self._confirmed[0] == last.version
            and time.monotonic() - self._confirmed[1] <= fresh_within
        ):
            return last
        if last is not None and (
            last.version == version
            or (version is None and self._dataset and self._is_latest(last.version))
        ):
            return last
        asked = time.monotonic()
        ds = self._open(version)
        if version is None:
            self._confirmed = (int(ds.version), asked)
        if last is not None and last.version == ds.version:
            self._dataset = ds
            return last
        table_metadata = root_properties(ds)
        if not NamespaceMetadata.is_partitioned(table_metadata):
            raise errors.NotAPartitionedNamespaceError(
                f"{self.root!r} is a directory namespace but not a partitioned namespace: "
                "its __manifest metadata has no partition_spec_v<N> key (a PartitionedNamespace"
                ".create interrupted between its two commits leaves this: create(..., "
                "exist_ok=True) finishes it)"
            )
        metadata = NamespaceMetadata.from_table_metadata(table_metadata)
        # one chunk, not one per fragment (a commit adds one): every scan plan filters it
        read = ds.to_table(with_row_address=True)
        addresses = read.column(_ROW_ADDRESS).combine_chunks()
        rows = _with_base(read.drop_columns([_ROW_ADDRESS])).combine_chunks()
        # a conversion's re-bucketed leaves in, its specs not yet published: read those
        metadata = effective_metadata(metadata, table_metadata, rows)
        self._last = snapshot = ManifestSnapshot(
            ds.version, metadata, table_metadata, rows, addresses
        )
        self._dataset = ds
        return snapshot

    @classmethod
    def create(
        cls,
        root: str,
        metadata: NamespaceMetadata,
        storage_options: Mapping[str, str] | None = None,
    ) -> Manifest:
        """Create the ``__manifest`` with the spec-version row and the metadata (two commits,
        each recorded as operation ``create``).

        Raises :class:`~lance_partitioned.errors.NamespaceAlreadyExistsError` if one exists.
        """
        manifest = cls(root, storage_options)
        schema = manifest_schema(metadata.partition_columns())
        first = spec_namespace_id(metadata.current_spec.version)
        rows = rows_table(schema, [{"object_id": first, "object_type": NAMESPACE}])
        blocked = file_on_the_way(manifest.uri)
        if blocked is not None:  # Lance takes seconds to fail there (it retries)
            raise errors.StorageError(
                f"cannot create a namespace at {root!r}: a path on the way is a file ({blocked!r})"
            )
        try:
            ds = lance.write_dataset(
                rows,
                manifest.uri,
                schema=schema,
                mode="create",
                storage_options=manifest.storage_options or None,
                transaction_properties=_CREATE.with_details(step="rows").to_properties(),
            )
        except (OSError, ValueError) as exc:
            typed = errors.storage_error(exc, manifest.root, "create a namespace")
            if typed is not None:
                raise typed from exc
            if "already exists" in str(exc).lower() or manifest.exists():
                raise errors.NamespaceAlreadyExistsError(
                    f"a namespace already exists at {root!r}"
                ) from exc
            raise
        # A crash here leaves a __manifest without partition specs: not a partitioned
        # namespace to any reader; create(..., exist_ok=True) finishes it (finish_create).
        manifest._dataset = ds  # the second commit reads and commits through it
        manifest._publish_first(int(ds.version), metadata)
        return manifest

    def _publish_first(self, version: int, metadata: NamespaceMetadata) -> None:
        updates = {**metadata.to_table_metadata(), GUARD_KEY: GUARD_VALUE}
        properties = _CREATE.with_details(step="publish").to_properties()
        try:
            self.commit_table_metadata(version, updates, properties=properties)
        except CommitConflict as exc:
            raise errors.ConcurrentModificationError(
                f"another client changed the new __manifest at {self.root!r} before its "
                f"metadata was written: {exc}"
            ) from exc

    def is_unfinished(self) -> bool:
        """Whether the ``__manifest`` is one that :meth:`create` left unfinished: no
        partition spec key, and no row but spec version namespaces (``v<N>``)."""
        ds = self._open()
        if NamespaceMetadata.is_partitioned(root_properties(ds)):
            return False
        rows = ds.to_table(columns=["object_id", "object_type"]).to_pylist()
        return all(
            _spec_version_of(row["object_id"]) is not None and row["object_type"] == NAMESPACE
            for row in rows
        )

    def finish_create(self, metadata: NamespaceMetadata) -> None:
        """Finish a :meth:`create` that stopped between its two commits: add the partition
        columns and the spec version row it may lack, then publish ``metadata`` and the
        writer guard.

        Raises
        ------
        NamespaceAlreadyExistsError
            The ``__manifest`` is not an unfinished create (it holds other rows or specs).
        ConcurrentModificationError
            Another client changed it meanwhile.
        """
        if not self.is_unfinished():
            raise errors.NamespaceAlreadyExistsError(
                f"a directory namespace with content exists at {self.root!r}"
            )
        ds = self._open()
        wanted = manifest_schema(metadata.partition_columns())
        missing = [(f.name, f.type) for f in wanted if f.name not in ds.schema.names]
        clashing = [
            f.name
            for f in wanted
            if f.name in ds.schema.names and ds.schema.field(f.name).type != f.type
        ]
        if clashing:
            raise errors.NamespaceAlreadyExistsError(
                f"an unfinished create with other partition columns ({clashing}) is at "
                f"{self.root!r}: finish it with the schema and partition spec it was started with"
            )
        version = int(ds.version)
        properties = _CREATE.with_details(step="finish").to_properties()
        try:
            if missing:
                version = self._add_columns(ds, missing, version, properties)
            first = spec_namespace_id(metadata.current_spec.version)
            rows = self._open(version).to_table(columns=["object_id"])
            if first not in rows.column("object_id").to_pylist():
                row = rows_table(wanted, [{"object_id": first, "object_type": NAMESPACE}])
                current = self._open(version)
                transaction, _ = (
                    current.merge_insert("object_id")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute_uncommitted(row.select(current.schema.names).cast(current.schema))
                )
                version = self._commit(transaction, version, properties)
        except CommitConflict as exc:
            raise errors.ConcurrentModificationError(
                f"another client changed the unfinished __manifest at {self.root!r}: {exc}"
            ) from exc
        self._publish_first(version, metadata)

    def commit_rows(
        self,
        base: ManifestSnapshot,
        rows: pa.Table,
        *,
        delete: Collection[str] = (),
        delete_partitions: bool = False,
        properties: Mapping[str, str] | None = None,
    ) -> int:
        """Upsert ``rows`` by ``object_id`` as a compare-and-swap on ``base.version``.

        The rows with an object id in ``delete`` that are not in ``rows`` are deleted
        (dropped leaves), and with ``delete_partitions`` every partition namespace and leaf
        row that is not in ``rows`` (a whole-namespace overwrite). ``properties`` become the
        Lance transaction properties of the commit (what the operation did, see
        :mod:`~lance_partitioned.manifest.operations`; other clients ignore them). Returns the
        new manifest version; raises :class:`CommitConflict` when a concurrent commit
        conflicts.

        A commit that replaces or deletes existing rows is one Lance ``Update``: deletion
        vectors for those rows and one new fragment with ``rows``; Lance makes it conflict with
        every concurrent commit that touched one of the same fragments (every commit of the
        transaction protocol rewrites the spec version rows, so all of them). One that only
        inserts is pylance's ``merge_insert``, which refuses a concurrent insert of the same
        key.
        """
        kept = self._kept(base.version)
        ds = kept[1] if kept is not None else self._open(base.version)
        read_version = base.version
        if READ_VERSION not in ds.schema.names:
            # another client's manifest without the optional column: add it (nullable, every
            # existing row NULL: read the latest) so that our rows can carry their versions
            read_version = self._add_columns(
                ds, [(READ_VERSION, pa.uint64())], base.version, properties
            )
            ds = self._open(read_version)
        present = [name for name in ds.schema.names if name in rows.column_names]
        if len(present) != len(ds.schema.names):
            raise errors.InternalError(
                f"the __manifest at {self.root!r} has columns {ds.schema.names}, the rows to "
                f"commit {rows.column_names}"
            )
        data = rows.select(present).cast(ds.schema)
        written = set(data.column("object_id").to_pylist())
        removed = set(delete) - written
        if delete_partitions:
            ids = base.rows.column("object_id").to_pylist()
            removed.update(oid for oid in ids if DELIMITER in oid and oid not in written)
        replaced = base.positions(written | removed)
        refuse_pinned_writes(base.rows, replaced, self.root)
        if replaced and read_version == base.version:
            return self._replace_rows(ds, base, data, replaced, properties)
        builder = (
            ds.merge_insert("object_id").when_matched_update_all().when_not_matched_insert_all()
        )
        if removed:
            quoted = ", ".join("'" + oid.replace("'", "''") + "'" for oid in sorted(removed))
            builder = builder.when_not_matched_by_source_delete(f"object_id IN ({quoted})")
        transaction, _ = builder.execute_uncommitted(data)
        return self._commit(transaction, read_version, properties)

    def _replace_rows(
        self,
        ds: LanceDataset,
        base: ManifestSnapshot,
        data: pa.Table,
        replaced: Sequence[int],
        properties: Mapping[str, str] | None,
    ) -> int:
        """Commit on ``ds`` (at ``base.version``) the deletion of ``base``'s rows at positions
        ``replaced`` and the insertion of ``data``, as one Lance ``Update``."""
        known = self._addresses(ds, base)
        addresses = np.sort(known[np.asarray(replaced, dtype=np.int64)])
        fragment_ids = addresses >> _OFFSET_BITS
        updated, removed = [], []
        for chunk in np.split(addresses, np.flatnonzero(np.diff(fragment_ids)) + 1):
            fragment_id = int(chunk[0] >> _OFFSET_BITS)
            fragment = ds.get_fragment(fragment_id)
            if fragment is None:
                raise errors.InternalError(
                    f"the __manifest at {self.root!r} version {base.version} has no fragment "
                    f"{fragment_id}, which its snapshot said holds rows"
                )
            after = fragment.delete_rows((chunk & np.uint64(0xFFFFFFFF)).tolist())
            if after is None:
                removed.append(fragment_id)
            else:
                updated.append(after)
        new = write_fragments(data, ds) if data.num_rows else []
        operation = LanceOperation.Update(
            removed_fragment_ids=removed, updated_fragments=updated, new_fragments=new
        )
        started = time.monotonic()
        committed = self._commit_dataset(operation, base.version, properties, ds)
        self._confirmed = (int(committed.version), started)  # the latest, then
        self._last = _committed_snapshot(base, known, committed, new, data, replaced)
        self._dataset = committed if self._last is not None else None
        return int(committed.version)

    def _addresses(self, ds: LanceDataset, base: ManifestSnapshot) -> np.ndarray:
        """The row address of each row of ``base`` (read again when the snapshot has none)."""
        if base.addresses is not None and len(base.addresses) == base.rows.num_rows:
            return np.asarray(base.addresses.to_numpy(zero_copy_only=False), dtype=np.uint64)
        read = ds.to_table(columns=["object_id"], with_row_address=True)
        by_id = dict(
            zip(
                read.column("object_id").to_pylist(),
                read.column(_ROW_ADDRESS).to_pylist(),
                strict=True,
            )
        )
        ids = base.rows.column("object_id").to_pylist()
        missing = [oid for oid in ids if oid not in by_id]
        if missing:
            raise errors.InternalError(
                f"the __manifest at {self.root!r} version {base.version} has no rows "
                f"{missing[:5]}, which its snapshot holds"
            )
        return np.array([by_id[oid] for oid in ids], dtype=np.uint64)

    def table_metadata(self, version: int) -> dict[str, str]:
        """The raw table metadata map of one ``__manifest`` version (every key)."""
        return dict(self._open(version).metadata)

    def add_partition_columns(
        self,
        base: ManifestSnapshot,
        columns: Sequence[tuple[str, pa.DataType]],
        *,
        rows: Sequence[Mapping[str, Any]] = (),
        properties: Mapping[str, str] | None = None,
    ) -> int:
        """Add nullable columns (metadata only: every row reads NULL) and insert ``rows``
        (new object ids, NULL in the new columns: a spec version row) in one commit, a
        compare-and-swap on ``base.version``.

        Returns the new manifest version; raises :class:`CommitConflict` when a concurrent
        commit conflicts (any concurrent row or schema change does).
        """
        known = set(base.rows.column("object_id").to_pylist())
        clashing = [row["object_id"] for row in rows if row["object_id"] in known]
        if clashing:
            raise errors.InternalError(
                f"rows {clashing} are in the __manifest at {base.version} already: they can "
                "only be inserted"
            )
        return self._add_columns(self._open(base.version), columns, base.version, properties, rows)

    def _add_columns(
        self,
        ds: LanceDataset,
        columns: Sequence[tuple[str, pa.DataType]],
        read_version: int,
        properties: Mapping[str, str] | None = None,
        rows: Sequence[Mapping[str, Any]] = (),
    ) -> int:
        """One Lance ``Merge`` on ``ds``: the schema widened by ``columns`` (no data file
        changes: the existing rows read NULL) and, when ``rows`` are given, one more fragment
        holding them, written in the schema before (so they read NULL in the new columns
        too). A ``Merge`` conflicts with every concurrent row or schema change."""
        current = ds.schema
        if LanceSchema.from_pyarrow(current) != ds.lance_schema:
            raise errors.InternalError(
                f"the __manifest at {self.root!r} has Lance field ids that do not follow its "
                "column order; cannot add partition columns to it"
            )
        wide = pa.schema([*current, *(pa.field(n, t, nullable=True) for n, t in columns)])
        fragments = [fragment.metadata for fragment in ds.get_fragments()]
        if rows:
            # Lance gives the Merge's new fragment the next fragment id, as for an Append
            fragments += write_fragments(rows_table(current, rows), ds)
        operation = LanceOperation.Merge(
            fragments, LanceSchema.from_pyarrow(wide), preserves_nullability=not rows
        )
        return self._commit(operation, read_version, properties)

    def commit_table_metadata(
        self,
        read_version: int,
        updates: Mapping[str, str | None],
        *,
        properties: Mapping[str, str] | None = None,
    ) -> int:
        """Set table metadata keys (others are kept; a key set to None is removed) as a
        compare-and-swap on ``read_version``.

        Keys of the JSON values that we do not own (another client's, at any level) are
        carried over from the values replaced (:func:`~.spec.metadata.keep_unknown_keys`).
        Lance reports a conflict when a concurrent commit set any of the same keys. Returns
        the new manifest version; raises :class:`CommitConflict` on a conflict.
        When this object holds the ``__manifest`` at ``read_version`` opened already, it is
        read and committed through (on an object store: no listing of the versions and no read
        of that manifest before the commit).
        """
        held = self._dataset
        dataset = held if held is not None and int(held.version) == read_version else None
        current = self.table_metadata(read_version) if dataset is None else dict(dataset.metadata)
        kept: dict[str, str | None] = {
            key: keep_unknown_keys(key, current[key], value)
            if key in current and value is not None
            else value
            for key, value in updates.items()
        }
        operation = LanceOperation.UpdateConfig(
            table_metadata_updates=LanceOperation.UpdateMap(kept, replace=False)
        )
        return int(self._commit_dataset(operation, read_version, properties, dataset).version)

    def _commit(
        self, operation: Any, read_version: int, properties: Mapping[str, str] | None = None
    ) -> int:
        """Commit ``operation`` (a Lance operation or an uncommitted transaction made on
        ``read_version``) with ``properties`` as its transaction properties."""
        return int(self._commit_dataset(operation, read_version, properties).version)

    def _commit_dataset(
        self,
        operation: Any,
        read_version: int,
        properties: Mapping[str, str] | None = None,
        dataset: LanceDataset | None = None,
    ) -> LanceDataset:
        """:meth:`_commit`, returning the committed dataset (``dataset``: the dataset at
        ``read_version`` when opened already)."""
        if properties:
            if isinstance(operation, Transaction):
                operation.transaction_properties = {
                    **(operation.transaction_properties or {}),
                    **properties,
                }
            else:
                operation = Transaction(
                    read_version, operation, transaction_properties=dict(properties)
                )
        try:
            return LanceDataset.commit(
                self.uri if dataset is None else dataset,
                operation,
                read_version=read_version,
                storage_options=self.storage_options or None,
                max_retries=0,
            )
        except CommitConflictError as exc:
            raise CommitConflict(str(exc)) from exc

    def compact(
        self,
        *,
        properties: Mapping[str, str] | None = None,
        before_commit: Callable[[], None] | None = None,
    ) -> ManifestCompaction:
        """Compact the ``__manifest``'s own fragments (every commit adds one) with Lance's
        compaction, committed as a ``Rewrite`` on the latest version read (``properties`` are
        its transaction properties; ``before_commit`` runs just before the commit, for tests).

        Rows, table metadata and older versions stay as they are. Nothing is committed
        (``version`` None) when there is nothing to compact, or when the table has indices
        (which this rewrite would not remap). A concurrent commit that touched a fragment
        being rewritten makes Lance refuse the rewrite: :class:`CommitConflict` is raised and
        nothing is lost (compact again later); one that touched none is kept, the rewrite
        applied on top of it.
        """
        ds = self._open()
        before = len(ds.get_fragments())
        if ds.describe_indices():
            return ManifestCompaction(None, before, before)
        plan = Compaction.plan(ds, CompactionOptions())
        if not plan.tasks:
            return ManifestCompaction(None, before, before)
        # what Compaction.commit commits, without index remapping (there is no index)
        pairs = [
            (list(r.original_fragments), list(r.new_fragments))  # type: ignore[attr-defined]
            for r in (task.execute(ds) for task in plan.tasks)
        ]
        groups = [LanceOperation.RewriteGroup(old, new) for old, new in pairs]
        after = before - sum(len(old) - len(new) for old, new in pairs)
        operation = LanceOperation.Rewrite(groups=groups, rewritten_indices=[])
        transaction = Transaction(
            int(ds.version), operation, transaction_properties=dict(properties or {})
        )
        if before_commit is not None:
            before_commit()
        # through the opened version: Lance lists the versions once and reads no manifest again
        committed = self._commit_dataset(transaction, int(ds.version), dataset=ds)
        return ManifestCompaction(int(committed.version), before, after)


def _committed_snapshot(
    base: ManifestSnapshot,
    addresses: np.ndarray,
    committed: LanceDataset,
    new: Sequence[Any],
    data: pa.Table,
    replaced: Sequence[int],
) -> ManifestSnapshot | None:
    """The snapshot of the version ``committed`` made from ``base`` (its rows at
    ``addresses``) by replacing the rows at positions ``replaced`` with ``data``, written as
    the fragments ``new``: what reading it would return (the kept rows in their order, then
    ``data``). None when another commit was rebased in between, or the committed version's
    last fragments are not ``new`` (by their data files)."""
    if int(committed.version) != base.version + 1 or data.schema.names != base.rows.column_names:
        return None
    fragments = committed.get_fragments()  # an Update appends its new fragments
    if len(fragments) < len(new):
        return None
    tail = fragments[len(fragments) - len(new) :] if new else []
    added = [np.empty(0, dtype=np.uint64)]
    for written, fragment in zip(new, tail, strict=True):
        files = fragment.metadata.files
        if not written.files or not files or files[0].path != written.files[0].path:
            return None
        offsets = np.arange(int(written.physical_rows or 0), dtype=np.uint64)
        added.append((np.uint64(fragment.fragment_id) << _OFFSET_BITS) | offsets)
    kept = np.ones(base.rows.num_rows, dtype=bool)
    kept[np.asarray(replaced, dtype=np.int64)] = False
    every = np.concatenate([addresses[kept], *added])
    if len(every) != int(np.count_nonzero(kept)) + data.num_rows:
        return None
    rows = pa.concat_tables([base.rows.filter(pa.array(kept)), data.cast(base.rows.schema)])
    return ManifestSnapshot(
        int(committed.version),
        base.metadata,
        base.table_metadata,
        rows.combine_chunks(),
        pa.array(every, pa.uint64()),
    )
