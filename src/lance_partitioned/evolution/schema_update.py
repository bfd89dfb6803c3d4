"""Several column changes committed together: :meth:`PartitionedNamespace.update_schema`.

PyIceberg's model: collect the changes, then publish them as one schema change::

    with ns.update_schema() as update:
        update.add_columns([pa.field("note", pa.string())])
        update.rename_column("qty", "quantity")
        update.drop_columns(["legacy"])
        update.alter_column_type("amount", pa.float64())

The methods are those of the namespace (:mod:`lance_partitioned.evolution`), with the same
rules (:mod:`lance_partitioned.spec.evolution`), applied in the order they were called, each
to the schema the previous ones made; a change that breaks a rule raises its typed error
before anything is written, and leaving the ``with`` block by an exception commits nothing.

The changes are **one** ``__manifest`` commit (operation ``evolve``, mode ``update_schema``,
step ``publish``, the changes in detail ``changes``): one compare-and-swap of the table
metadata, re-validated and retried on a conflict as every evolution is. A rename of a column
that leaves already hold adds one commit before it (step ``rename_leaves``: every leaf
renamed, all the renames at once, so that a plain Lance reader of a leaf sees the new names),
because pylance cannot commit a change of rows and one of table metadata as one (see
:mod:`lance_partitioned.evolution`); without a leaf, or without a rename, it is one version.
A partition spec change is not a schema change: it stays :meth:`update_partition_spec`.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("p", pa.string()), ("n", pa.int32())]),
...     partition_by="p")
>>> before = ns.version
>>> with ns.update_schema() as update:
...     _ = update.add_columns([pa.field("note", pa.string())]).rename_column("n", "count")
...     _ = update.alter_column_type("count", pa.int64())
>>> ns.version - before, ns.schema.names, str(ns.schema.field("count").type)
(1, ['p', 'count', 'note'], 'int64')
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.evolution import _evolve, _names, _rename_leaves
from lance_partitioned.manifest import Manifest
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.spec import evolution as rules
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.transaction import Backoff

__all__ = ["SchemaChange", "UpdateSchema", "update_schema"]


@dataclass(frozen=True)
class SchemaChange:
    """One change of an :class:`UpdateSchema`: what it does to the namespace metadata, how
    the recorded operation names it, and the ``(old, new)`` names of a rename."""

    apply: Callable[[NamespaceMetadata], NamespaceMetadata]
    detail: str
    rename: tuple[str, str] | None = None


def _apply(metadata: NamespaceMetadata, changes: Sequence[SchemaChange]) -> NamespaceMetadata:
    for change in changes:
        metadata = change.apply(metadata)
    return metadata


def _leaf_name(metadata: NamespaceMetadata, field_id: int) -> str | None:
    try:
        return metadata.schema.name_of(field_id).rsplit(".", 1)[-1]
    except errors.SchemaError:
        return None


def _renamed_in_leaves(
    before: NamespaceMetadata, changes: Sequence[SchemaChange]
) -> tuple[NamespaceMetadata, dict[str, str]]:
    """``before`` with the renames of its own columns applied (not those of a column the
    changes add), and the field id key of each column whose name in a leaf changes, mapped
    to its name there."""
    renamed = before
    for change in changes:
        if change.rename is None:
            continue
        try:
            renamed = rules.rename_column(renamed, *change.rename)
        except errors.InvalidInputError:  # a column added (or dropped) by these changes
            continue
    aliases = {}
    for field_id in range(before.schema.max_field_id + 1):
        old = _leaf_name(before, field_id)
        if old is not None and old != _leaf_name(renamed, field_id):
            aliases[str(field_id)] = old
    return renamed, aliases


def update_schema(
    manifest: Manifest, changes: Sequence[SchemaChange], *, backoff: Backoff | None = None
) -> int:
    """Apply ``changes`` in order to the latest namespace metadata and publish the result in
    one commit (a rename of a column with leaves adds the leaves' commit before it: module
    docstring). Returns the new ``__manifest`` version (the one read when nothing changes).

    Raises
    ------
    InvalidInputError
        A change breaks a schema evolution rule (its typed subclass); nothing is written.
    ConcurrentModificationError
        Concurrent evolutions kept winning.
    """
    snapshot = manifest.snapshot()
    if _apply(snapshot.metadata, changes) == snapshot.metadata:  # typed errors before a write
        return snapshot.version
    operation = Operation(
        "evolve", "update_schema", details={"changes": "; ".join(c.detail for c in changes)}
    )
    renamed, aliases = _renamed_in_leaves(snapshot.metadata, changes)
    if aliases and snapshot.tables.num_rows:
        _rename_leaves(manifest, snapshot, renamed, aliases, operation)
    return _evolve(manifest, lambda meta: _apply(meta, changes), operation, backoff=backoff)


class UpdateSchema:
    """The column changes to commit together (module docstring); each method returns this
    object, so that calls chain. Used as a context manager it commits on a normal exit;
    :meth:`commit` commits without one. A committed update cannot be reused.

    Parameters
    ----------
    commit : callable
        Runs the change it is given on the namespace's ``__manifest`` (the facade's own
        checks and snapshot move around it).
    """

    def __init__(self, commit: Callable[[Callable[[Manifest], int]], None]) -> None:
        self._commit = commit
        self._changes: list[SchemaChange] = []
        self._done = False

    def _add(self, change: SchemaChange) -> UpdateSchema:
        if self._done:
            raise errors.UnsupportedOperationError(
                "this schema update was committed already: start another with update_schema()"
            )
        self._changes.append(change)
        return self

    def add_columns(self, fields: Sequence[pa.Field]) -> UpdateSchema:
        """Add nullable columns with new field ids (see
        :func:`lance_partitioned.spec.evolution.add_columns`)."""
        fields = list(fields)
        return self._add(
            SchemaChange(
                lambda meta: rules.add_columns(meta, fields), f"add_columns({_names(fields)})"
            )
        )

    def drop_columns(self, names: Sequence[str]) -> UpdateSchema:
        """Deprecate columns (see :func:`lance_partitioned.spec.evolution.drop_columns`)."""
        names = list(names)
        return self._add(
            SchemaChange(
                lambda meta: rules.drop_columns(meta, names), f"drop_columns({','.join(names)})"
            )
        )

    def rename_column(self, old: str, new: str) -> UpdateSchema:
        """Rename a column (see :func:`lance_partitioned.spec.evolution.rename_column`)."""
        return self._add(
            SchemaChange(
                lambda meta: rules.rename_column(meta, old, new),
                f"rename_column({old}->{new})",
                rename=(old, new),
            )
        )

    def alter_column_type(self, name: str, new_type: pa.DataType) -> UpdateSchema:
        """Promote a column to a wider type (see
        :func:`lance_partitioned.spec.evolution.alter_column_type`)."""
        return self._add(
            SchemaChange(
                lambda meta: rules.alter_column_type(meta, name, new_type),
                f"alter_column_type({name}:{new_type})",
            )
        )

    def commit(self) -> None:
        """Validate and commit the changes collected (nothing when there is none).

        Raises
        ------
        InvalidInputError
            A change breaks a rule; nothing is written.
        UnsupportedOperationError
            Committed already, or the namespace is read-only (opened at a version).
        ConcurrentModificationError
            Concurrent evolutions kept winning.
        """
        if self._done:
            raise errors.UnsupportedOperationError("this schema update was committed already")
        self._done = True
        changes = list(self._changes)
        if changes:
            self._commit(lambda manifest: update_schema(manifest, changes))

    def __enter__(self) -> UpdateSchema:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is None:
            self.commit()
