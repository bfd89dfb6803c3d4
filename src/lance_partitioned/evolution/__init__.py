"""Schema evolution and partition evolution, committed to the ``__manifest``.

Each operation reads the latest ``__manifest`` snapshot, computes the new schema or partition
spec with the pure rules of :mod:`lance_partitioned.spec.evolution` (a forbidden change raises
its typed error before anything is written) and publishes it with **one** compare-and-swap
commit of the table metadata (``schema`` and every ``partition_spec_v<N>``, all other keys
kept) on the version read. Every publish rewrites the ``schema`` key, so Lance makes any two
concurrent evolutions conflict; the loser re-reads, re-validates and retries with backoff,
and gives up with :class:`~lance_partitioned.errors.ConcurrentModificationError`.

``add_columns``, ``drop_columns`` and ``alter_column_type`` are therefore one ``__manifest``
version each. Two evolutions need two, because pylance 14 has no single commit that changes
a dataset's table metadata together with its rows or its columns: ``UpdateConfig``, the only
operation that sets table metadata, cannot add a column or a row; ``Merge`` and ``Update``
cannot set table metadata; ``LanceDataset.commit_batch`` combines appends only.

A new partition spec version needs two things that a table-metadata commit cannot carry: the
``__manifest`` column of each new partition field name, and the ``v<N>`` namespace row that
writers require. They are committed first, together, as one compare-and-swap (step
``prepare``: a Lance ``Merge`` that widens the schema and adds one fragment holding the row;
an ``Update`` of the rows when no column is new). Both are invisible to every reader: the
extra column is all NULL and no spec names it, the ``v<N>`` row has no leaf and no spec. The
metadata commit that follows (step ``publish``) is the one that makes the new version exist;
if it never happens (a crash, a lost race), the next update of the spec reuses the column
and the row (and is then one version). Before publishing, the table metadata of the prepared
version is compared with the one the change was computed from, so a concurrent publish is
never overwritten.

Leaves follow the namespace schema through the commit protocol
(:mod:`lance_partitioned.transaction`), never by a rewrite: a write into a leaf first brings
it to the current leaf schema with Lance's metadata-only changes (added nullable columns, a
widened type, which rewrites that column only), each a leaf commit published with the write's
``read_version``; a dropped column stays in the leaves, data included. ``rename_column``
renames the column in every leaf (``alter_columns``) and moves their ``read_version``s in one
``__manifest`` commit (step ``rename_leaves``: a row change, so not the commit of the schema)
before it publishes the schema, so that a plain Lance reader of a leaf sees the new name;
readers match leaf columns by field id, so every version in between reads the column's
values. Without a leaf, it is one version.

Every commit records the evolution (:mod:`lance_partitioned.manifest.operations`): operation
``evolve``, its kind as the mode, its step, no row added, removed or updated, and the leaves
it renamed as ``partitions_touched``.

Several column changes published as one schema change (``ns.update_schema()``, PyIceberg's
model) are :mod:`~lance_partitioned.evolution.schema_update`.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("d", pa.date32())]),
...     partition_by="d")
>>> before = ns.version
>>> ns.update_partition_spec("year(d) AS d_year").version, ns.version > before
(2, True)
>>> ns.update_partition_spec("year(d) AS d_year").version  # the same spec: a no-op
2
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.manifest import (
    NAMESPACE,
    CommitConflict,
    Manifest,
    ManifestSnapshot,
    rows_table,
    spec_namespace_id,
)
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.spec import evolution as rules
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.partitioning import PartitionField
from lance_partitioned.transaction import (
    Backoff,
    ChangePlan,
    LeafWrite,
    PendingWrite,
    commit_changes,
)

__all__ = [
    "add_columns",
    "alter_column_type",
    "drop_columns",
    "rename_column",
    "update_partition_spec",
]

log = logging.getLogger(__name__)

Change = Callable[[NamespaceMetadata], NamespaceMetadata]


def _prepare(
    manifest: Manifest, snapshot: ManifestSnapshot, new: NamespaceMetadata, operation: Operation
) -> int:
    """Commit the ``__manifest`` columns and the spec version row ``new`` needs, in one
    commit recorded as ``operation``, step ``prepare``; return the version to publish on
    (``snapshot.version`` when nothing was needed: both were left by an update of the spec
    that was never published).

    Raises
    ------
    PartitionSpecError
        A column of the new name exists with another type (left by an update that was never
        published).
    CommitConflict
        A concurrent commit conflicted.
    """
    existing = snapshot.rows.schema
    missing: list[tuple[str, pa.DataType]] = []
    for name, dtype in new.partition_columns():
        if name not in existing.names:
            missing.append((name, dtype))
        elif existing.field(name).type != dtype:
            raise errors.PartitionSpecError(
                f"partition field {name!r} has result_type {dtype}, but the __manifest already "
                f"has an unused column {name!r} of type {existing.field(name).type} (left by a "
                "partition spec update that was never published): choose another name"
            )
    properties = operation.counted().with_details(step="prepare").to_properties()
    row_id = spec_namespace_id(new.current_spec.version)
    rows = [] if snapshot.has(row_id) else [{"object_id": row_id, "object_type": NAMESPACE}]
    if missing:  # the columns and the row: one Lance Merge
        return manifest.add_partition_columns(snapshot, missing, rows=rows, properties=properties)
    if rows:
        table = rows_table(snapshot.rows.schema, rows)
        return manifest.commit_rows(snapshot, table, properties=properties)
    return snapshot.version


def _evolve(
    manifest: Manifest,
    change: Change,
    operation: Operation,
    *,
    backoff: Backoff | None = None,
    also: Callable[[ManifestSnapshot, NamespaceMetadata], Mapping[str, str]] | None = None,
) -> int:
    """Apply ``change`` to the latest metadata and publish it (see the module docstring),
    recording ``operation`` on every ``__manifest`` commit (the last one as step
    ``publish``). ``also`` gives more table metadata keys to set in the publishing commit.

    Returns the new ``__manifest`` version, or the version read when ``change`` is a no-op.
    """
    backoff = backoff or Backoff()
    for attempt in range(backoff.attempts):
        snapshot = manifest.snapshot()
        new = change(snapshot.metadata)
        if new == snapshot.metadata:
            return snapshot.version
        try:
            version = snapshot.version
            if new.specs != snapshot.metadata.specs:
                operation = operation.with_details(spec_version=str(new.current_spec.version))
                version = _prepare(manifest, snapshot, new, operation)
                if NamespaceMetadata.own_keys(
                    manifest.table_metadata(version)
                ) != NamespaceMetadata.own_keys(snapshot.table_metadata):
                    raise CommitConflict("the namespace metadata changed while preparing")
            properties = operation.counted().with_details(step="publish").to_properties()
            updates = {**new.to_table_metadata(), **(also(snapshot, new) if also else {})}
            return manifest.commit_table_metadata(version, updates, properties=properties)
        except CommitConflict as exc:
            log.info("evolution conflict on attempt %d: %s", attempt + 1, exc)
            backoff.sleep(attempt)
    raise errors.ConcurrentModificationError(
        f"the __manifest at {manifest.root!r} kept changing under this schema or partition "
        f"spec change: gave up after {backoff.attempts} commit attempts"
    )


def update_partition_spec(
    manifest: Manifest,
    partition_by: str | Sequence[PartitionField],
    *,
    backoff: Backoff | None = None,
) -> int:
    """Add partition spec version ``N+1``; new data is written under ``v<N+1>``.

    Old data stays where it is, readable under its own spec version. The ``__manifest`` gains
    a nullable column per new partition field name. A spec equal to the current one is a
    no-op. See :func:`lance_partitioned.spec.evolution.update_partition_spec` for the rules.

    Two ``__manifest`` versions (steps ``prepare`` and ``publish``): pylance cannot add the
    column and the ``v<N>`` row and set the table metadata in one commit (module docstring).

    Returns
    -------
    int
        The new ``__manifest`` version (the current one for a no-op).

    Raises
    ------
    PartitionSpecError, PartitionByParseError
        The new spec breaks a rule; nothing is written.
    ConcurrentModificationError
        Concurrent evolutions kept winning.
    """
    return _evolve(
        manifest,
        lambda meta: rules.update_partition_spec(meta, partition_by),
        Operation("evolve", "update_partition_spec"),
        backoff=backoff,
    )


def add_columns(
    manifest: Manifest, fields: Sequence[pa.Field], *, backoff: Backoff | None = None
) -> int:
    """Add nullable columns (``"s.c"``: a child of struct ``s``) with new field ids.

    Leaves written before read NULL for them. Returns the new ``__manifest`` version.
    See :func:`lance_partitioned.spec.evolution.add_columns`.
    """
    operation = Operation("evolve", "add_columns", details={"columns": _names(fields)})
    return _evolve(
        manifest, lambda meta: rules.add_columns(meta, fields), operation, backoff=backoff
    )


def drop_columns(
    manifest: Manifest, names: Sequence[str], *, backoff: Backoff | None = None
) -> int:
    """Deprecate columns (``"lance:deprecated": "true"``); their data stays in the leaves.

    The index definitions on the dropped columns are removed in the publishing commit, and
    their leaf indexes by one more ``__manifest`` commit
    (:func:`lance_partitioned.search.evolution.drop_leaf_indexes`).
    Returns the new ``__manifest`` version.
    See :func:`lance_partitioned.spec.evolution.drop_columns`.
    """
    from lance_partitioned.search.evolution import definitions_after_drop, drop_leaf_indexes

    operation = Operation("evolve", "drop_columns", details={"columns": ",".join(names)})
    dropped: list[str] = []
    version = _evolve(
        manifest,
        lambda meta: rules.drop_columns(meta, names),
        operation,
        backoff=backoff,
        also=lambda snapshot, new: definitions_after_drop(snapshot, new, dropped),
    )
    return drop_leaf_indexes(manifest, dropped) if dropped else version


def _rename_leaves(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    renamed: NamespaceMetadata,
    aliases: Mapping[str, str],
    operation: Operation,
) -> None:
    """Rename the column in every leaf (Lance's metadata-only ``alter_columns``, one leaf
    commit each through the commit protocol) and move their ``read_version``s in one
    ``__manifest`` commit.

    The leaves are those of the ``__manifest`` snapshot each commit attempt is made on, not
    those of ``snapshot``: a leaf that a concurrent commit removed meanwhile (``delete``,
    an overwrite) is not brought back, one written meanwhile is renamed too. A leaf's commit
    is reused by the next attempt while the leaf stays at the same version.

    A leaf column carrying our field id key is found by it; one of another client's leaf
    (matched by name) is found by its old name and gets the key, so that readers of the
    namespace schema before the rename (old name) and after it (new name) both find it.
    ``aliases`` maps the field id key of each renamed column to its name in the leaves (the
    last part of its name in ``snapshot``'s schema).
    """
    schema = leaf_schema(renamed.schema)
    step = operation.with_details(step="rename_leaves")
    known: dict[tuple[str, str], LeafWrite] = {}  # the same object: its commit is reused
    committed: dict[str, int] = {}  # the leaf versions of the attempt that commits

    def leaves_committed(versions: dict[str, int]) -> None:
        committed.clear()
        committed.update(versions)

    def plan(current: ManifestSnapshot) -> ChangePlan:
        def properties() -> dict[str, str]:
            # a leaf that needed no change keeps its version: not counted
            moved = sum(1 for oid, v in committed.items() if current.read_version(oid) != v)
            return step.counted(partitions=moved).to_properties()

        leaves = [
            known.setdefault(
                (object_id, location),
                LeafWrite(object_id, location, [], 0, {}, aliases=dict(aliases)),
            )
            for object_id, location in zip(
                current.tables.column("object_id").to_pylist(),
                current.tables.column("location").to_pylist(),
                strict=True,
            )
        ]
        pending = PendingWrite(
            spec_version=current.metadata.current_spec.version,
            leaf_schema=schema,
            leaves=leaves,
            namespaces={},
        )
        return ChangePlan(writes=pending, properties=properties)  # no leaf: nothing to commit

    commit_changes(manifest, plan, on_leaves_committed=leaves_committed)


def _names(fields: Sequence[pa.Field]) -> str:
    """The names of ``fields``, comma-separated (a detail of the recorded operation)."""
    return ",".join(f.name for f in fields)


def _renamed_id(before: NamespaceMetadata, after: NamespaceMetadata) -> int:
    """The id of the field a rename changed (the first in id order: a renamed struct's
    children change their paths too)."""
    for field_id in range(before.schema.max_field_id + 1):
        try:
            if before.schema.name_of(field_id) != after.schema.name_of(field_id):
                return field_id
        except errors.SchemaError:
            continue
    raise errors.InternalError("rename_column changed no field of the namespace schema")


def rename_column(manifest: Manifest, old: str, new: str, *, backoff: Backoff | None = None) -> int:
    """Rename a column; its field id and its partition fields do not change.

    The leaves are renamed first (:func:`_rename_leaves`: plain Lance readers of a leaf see
    the new name), then the namespace schema is published: two ``__manifest`` versions when
    there are leaves (a row change and a table metadata change, which pylance cannot commit
    as one). Readers find the column in leaves by field id, so every ``__manifest`` version in
    between reads the column's values.
    Returns the new ``__manifest`` version.
    See :func:`lance_partitioned.spec.evolution.rename_column`.
    """
    snapshot = manifest.snapshot()
    renamed = rules.rename_column(snapshot.metadata, old, new)  # typed errors before any write
    operation = Operation("evolve", "rename_column", details={"column": old, "new_name": new})
    if renamed != snapshot.metadata:
        aliases = {str(_renamed_id(snapshot.metadata, renamed)): old.rsplit(".", 1)[-1]}
        _rename_leaves(manifest, snapshot, renamed, aliases, operation)
    return _evolve(
        manifest, lambda meta: rules.rename_column(meta, old, new), operation, backoff=backoff
    )


def alter_column_type(
    manifest: Manifest, name: str, new_type: pa.DataType, *, backoff: Backoff | None = None
) -> int:
    """Promote a column to a wider type; leaves keep their data and are cast on read.

    Returns the new ``__manifest`` version.
    See :func:`lance_partitioned.spec.evolution.alter_column_type`.
    """
    operation = Operation(
        "evolve", "alter_column_type", details={"column": name, "type": str(new_type)}
    )
    return _evolve(
        manifest,
        lambda meta: rules.alter_column_type(meta, name, new_type),
        operation,
        backoff=backoff,
    )
