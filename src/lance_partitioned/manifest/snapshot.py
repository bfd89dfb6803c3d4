"""Snapshots of the ``__manifest``: one version's rows and metadata, parsed
(:class:`ManifestSnapshot`) or exactly as stored (:class:`RawManifest`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned.manifest.layout import (
    DELIMITER,
    LEAF_NAME,
    NAMESPACE,
    READ_VERSION,
    TABLE,
    _spec_version_of,
    value_tokens,
)
from lance_partitioned.spec.metadata import NamespaceMetadata

_LeafKey = tuple[int, tuple[str, ...]]  # (spec version, value tokens of every level)


@dataclass(frozen=True)
class ManifestEntry:
    """One ``__manifest`` row exactly as stored (see :meth:`Manifest.read_raw`).

    Attributes
    ----------
    object_id, object_type, location : str
        The base columns (``location`` may be None on a namespace row).
    metadata : str or None
        The row's properties JSON, unparsed (see :func:`properties_error`).
    read_version : int or None
        NULL, or no ``read_version`` column, is None.
    values : dict
        Every partition column of the manifest, by name.
    """

    object_id: str
    object_type: str
    location: str | None
    metadata: str | None
    read_version: int | None
    values: Mapping[str, Any]

    @property
    def is_table(self) -> bool:
        """Whether the row is a leaf table (else a namespace)."""
        return self.object_type == TABLE

    @property
    def is_namespace(self) -> bool:
        """Whether the row is a namespace."""
        return self.object_type == NAMESPACE

    @property
    def path(self) -> list[str]:
        """The object id split on the ``$`` delimiter."""
        return self.object_id.split(DELIMITER)


@dataclass(frozen=True)
class RawManifest:
    """One ``__manifest`` version, unparsed: what :meth:`Manifest.read_raw` returns.

    Attributes
    ----------
    version : int
        The ``__manifest`` Lance version read.
    timestamp : datetime or None
        When that version was committed.
    table_metadata : dict[str, str]
        The raw table metadata map.
    partition_columns : dict[str, pyarrow.DataType]
        The manifest's partition columns (every column beyond the base ones), by name.
    entries : tuple of ManifestEntry
        Every row.
    """

    version: int
    timestamp: dt.datetime | None
    table_metadata: Mapping[str, str]
    partition_columns: Mapping[str, pa.DataType]
    entries: tuple[ManifestEntry, ...]


class CommitConflict(Exception):
    """Internal: a ``__manifest`` commit lost a compare-and-swap; re-read and retry."""


#: Rows of a snapshot converted to Python together by :meth:`ManifestSnapshot.row`.
ROW_BLOCK = 64


@dataclass(frozen=True)
class ManifestSnapshot:
    """One version of the ``__manifest``: its metadata and all its rows.

    Attributes
    ----------
    version : int
        The ``__manifest`` Lance version read.
    metadata : NamespaceMetadata
        Schema and partition specs parsed from the table metadata.
    table_metadata : dict[str, str]
        The raw table metadata map, every key kept.
    rows : pyarrow.Table
        Every row of the manifest at ``version``.
    addresses : pyarrow.Array or None
        The Lance row address of each row of ``rows`` at ``version`` (None: not known), so
        that a commit on this snapshot finds the rows it replaces without reading them again.
    """

    version: int
    metadata: NamespaceMetadata
    table_metadata: Mapping[str, str]
    rows: pa.Table = field(repr=False)
    addresses: pa.Array | None = field(default=None, repr=False, compare=False)

    @cached_property
    def _index(self) -> dict[str, int]:
        ids = self.rows.column("object_id").to_pylist()
        return {object_id: i for i, object_id in enumerate(ids)}

    def positions(self, object_ids: Iterable[str]) -> list[int]:
        """The positions in :attr:`rows` of those of ``object_ids`` that have a row, sorted."""
        index = self._index
        return sorted({index[oid] for oid in object_ids if oid in index})

    def has(self, object_id: str) -> bool:
        """Whether a row with this object id exists."""
        return object_id in self._index

    @cached_property
    def _row_blocks(self) -> dict[int, list[dict[str, Any]]]:
        return {}

    def row(self, object_id: str) -> dict[str, Any] | None:
        """The row of ``object_id`` as a dict (a new one), or None. Rows are converted
        :data:`ROW_BLOCK` at a time, once: a commit of many leaves looks up one or two rows
        of each, and converting one row costs nearly as much as a block."""
        i = self._index.get(object_id)
        if i is None:
            return None
        block, at = divmod(i, ROW_BLOCK)
        rows = self._row_blocks.get(block)
        if rows is None:
            rows = self.rows.slice(block * ROW_BLOCK, ROW_BLOCK).to_pylist()
            self._row_blocks[block] = rows
        return dict(rows[at])

    def read_version(self, object_id: str) -> int | None:
        """The ``read_version`` of a leaf row (None: absent row, NULL, or a ``__manifest``
        without the column, which spec 000 allows: read the latest leaf version)."""
        i = self._index.get(object_id)
        if i is None:
            return None
        value = self.rows.column(READ_VERSION)[i].as_py()  # NULL-filled when absent on disk
        return None if value is None else int(value)

    def location(self, object_id: str) -> str | None:
        """The ``location`` of a row, or None."""
        i = self._index.get(object_id)
        return None if i is None else self.rows.column("location")[i].as_py()

    @cached_property
    def _by_values(
        self,
    ) -> tuple[dict[tuple[str, str], str], dict[tuple[int, tuple[str, ...]], str]]:
        """Partition namespaces by (parent object id, value token of their own level) and
        leaves by (spec version, value tokens of every level), over every spec version."""
        namespaces: dict[tuple[str, str], str] = {}
        leaves: dict[_LeafKey, str] = {}
        specs = {spec.version: spec for spec in self.metadata.specs}
        tokens: dict[str, list[str]] = {}

        def token(name: str, i: int) -> str:
            if name not in self.rows.column_names:
                return "null"
            if name not in tokens:
                tokens[name] = value_tokens(self.rows.column(name).combine_chunks())
            return tokens[name][i]

        for i, object_id in enumerate(self.rows.column("object_id").to_pylist()):
            parts = object_id.split(DELIMITER)
            version = _spec_version_of(parts[0])
            spec = None if version is None else specs.get(version)
            if spec is None or version is None:
                continue
            depth = len(parts) - 1
            if parts[-1] == LEAF_NAME and depth == len(spec.fields) + 1:
                key = (version, tuple(token(name, i) for name in spec.names))
                leaves.setdefault(key, object_id)
            elif 1 <= depth <= len(spec.fields):
                parent = DELIMITER.join(parts[:-1])
                namespaces.setdefault((parent, token(spec.names[depth - 1], i)), object_id)
        return namespaces, leaves

    def find_leaf(self, spec_version: int, values: Sequence[pa.Scalar]) -> str | None:
        """The object id of the existing leaf of ``spec_version`` whose partition values are
        ``values`` (in spec order), or None.

        Found by value in the partition columns, whatever the partition names are (spec 000
        makes them random: another client's names are not ours). Values compare as
        :func:`value_tokens` do (NULL equals NULL).
        """
        tokens = tuple(value_tokens(pa.array([v], v.type))[0] for v in values)
        return self.leaf_of_tokens(spec_version, tokens)

    def leaf_of_tokens(self, spec_version: int, tokens: tuple[str, ...]) -> str | None:
        """:meth:`find_leaf` of the values whose :func:`value_tokens` are ``tokens``."""
        return self._by_values[1].get((spec_version, tokens))

    def find_namespace(self, parent_id: str, value: pa.Scalar) -> str | None:
        """The object id of the existing partition namespace under ``parent_id`` whose own
        level's value is ``value``, or None."""
        return self.namespace_of_token(parent_id, value_tokens(pa.array([value], value.type))[0])

    def namespace_of_token(self, parent_id: str, token: str) -> str | None:
        """:meth:`find_namespace` of the value whose :func:`value_tokens` token is ``token``."""
        return self._by_values[0].get((parent_id, token))

    @cached_property
    def tables(self) -> pa.Table:
        """The leaf table rows only."""
        return self.rows.filter(pc.equal(self.rows.column("object_type"), TABLE))

    def children(self, parent_id: str) -> list[tuple[str, str]]:
        """(name, object_type) of the direct children of ``parent_id`` ('' for the root)."""
        prefix = parent_id + DELIMITER if parent_id else ""
        depth = parent_id.count(DELIMITER) + 1 if parent_id else 0
        out = []
        for object_id, object_type in zip(
            self.rows.column("object_id").to_pylist(),
            self.rows.column("object_type").to_pylist(),
            strict=True,
        ):
            if object_id.startswith(prefix) and object_id.count(DELIMITER) == depth:
                out.append((object_id[len(prefix) :], object_type))
        return sorted(out)
