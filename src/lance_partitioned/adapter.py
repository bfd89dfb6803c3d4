"""The ``LanceNamespace`` view of a partitioned namespace, for tools that speak lance-namespace.

:class:`PartitionedLanceNamespace` is what ``lance_namespace.connect("partitioned", {...})``
returns and what :meth:`PartitionedNamespace.as_lance_namespace` wraps: the read operations
(list and describe namespaces and tables) answer from the ``__manifest`` version the wrapped
namespace reads; the write operations are refused, since a partitioned namespace creates its
namespaces and leaf tables itself when data is written.

>>> import tempfile, pyarrow as pa
>>> import lance_namespace as ln
>>> import lance_partitioned as lp
>>> root = tempfile.mkdtemp()
>>> schema = pa.schema([("id", pa.int64()), ("country", pa.string())])
>>> ns = lp.PartitionedNamespace.create(root, schema=schema, partition_by="country")
>>> _ = ns.write(pa.table({"id": [1], "country": ["US"]}))
>>> lance_ns = ln.connect("partitioned", {"root": root})
>>> lance_ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces
['v1']
>>> (child,) = lance_ns.list_namespaces(ln.ListNamespacesRequest(id=["v1"])).namespaces
>>> lance_ns.list_tables(ln.ListTablesRequest(id=["v1", child])).tables
['dataset']
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Protocol

import lance_namespace as ln
import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.manifest import (
    BASE_COLUMNS,
    DELIMITER,
    TABLE,
    Manifest,
    ManifestSnapshot,
    row_properties,
    row_read_version,
)
from lance_partitioned.spec.dialects import COLUMN_PREFIX, PublishedSpec
from lance_partitioned.spec.evaluate import evaluate

__all__ = ["PartitionedLanceNamespace"]

_STORAGE_PREFIX = "storage."


class Readable(Protocol):
    """What the adapter reads of the namespace it wraps: its root, storage options and the
    ``__manifest`` snapshot it reads now (a :class:`PartitionedNamespace
    <lance_partitioned.PartitionedNamespace>` is one)."""

    @property
    def uri(self) -> str: ...

    @property
    def storage_options(self) -> dict[str, str]: ...

    @property
    def snapshot(self) -> ManifestSnapshot: ...


class _Opened:
    """A namespace opened from its root at its latest ``__manifest`` version, read-only."""

    def __init__(self, manifest: Manifest) -> None:
        self._manifest = manifest
        self._snapshot = manifest.snapshot()

    @property
    def uri(self) -> str:
        """The root URI."""
        return self._manifest.root

    @property
    def storage_options(self) -> dict[str, str]:
        """Storage options used for every Lance call."""
        return dict(self._manifest.storage_options)

    @property
    def snapshot(self) -> ManifestSnapshot:
        """The ``__manifest`` snapshot read when the namespace was opened."""
        return self._snapshot

    @property
    def version(self) -> int:
        """The ``__manifest`` version read."""
        return self._snapshot.version

    def __repr__(self) -> str:
        return f"PartitionedNamespace({self.uri!r}, version={self.version})"


class PartitionedLanceNamespace(ln.LanceNamespace):
    """A :class:`~lance_namespace.LanceNamespace` over a :class:`PartitionedNamespace`.

    Parameters
    ----------
    root : str or PartitionedNamespace
        The namespace's root URI (as ``lance_namespace.connect`` passes it: read at its
        latest ``__manifest`` version), or an open namespace to wrap (the ``__manifest``
        version it reads is the one answered from, as it moves).
    **properties : str
        ``storage.<key>`` properties become storage options; others are ignored.

    Notes
    -----
    Object ids are the ``$``-separated ``__manifest`` ids split into lists: ``["v1"]`` is
    the spec version's namespace, ``["v1", "<name>", "dataset"]`` a leaf table.
    :meth:`describe_table` answers the leaf's location, its ``read_version`` and its
    properties with one ``partition.<name>`` entry per non-NULL partition value.
    """

    def __init__(self, root: str | os.PathLike[str] | Readable, **properties: str) -> None:
        self._ns: Readable
        if isinstance(root, (str, os.PathLike)):
            options = {
                key[len(_STORAGE_PREFIX) :]: value
                for key, value in properties.items()
                if key.startswith(_STORAGE_PREFIX)
            }
            self._manifest = Manifest(os.fspath(root), options)
            self._ns = _Opened(self._manifest)
        else:
            self._ns = root
            self._manifest = Manifest(root.uri, root.storage_options)

    @property
    def namespace(self) -> Readable:
        """The wrapped partitioned namespace (opened read-only when connected by root)."""
        return self._ns

    def namespace_id(self) -> str:
        return f"PartitionedNamespace {{ root: {self._ns.uri!r} }}"

    def __repr__(self) -> str:
        return f"PartitionedLanceNamespace({self._ns!r})"

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _object_id(parts: Sequence[str] | None) -> str:
        return DELIMITER.join(parts or [])

    def _require_namespace(self, object_id: str) -> None:
        if object_id == "":
            return
        row = self._ns.snapshot.row(object_id)
        if row is None or row["object_type"] == TABLE:
            raise errors.NamespaceNotFoundError(
                f"namespace {object_id!r} does not exist in {self._ns.uri!r}"
            )

    def _properties(self, object_id: str) -> dict[str, str]:
        """The row's own properties (its ``metadata`` JSON, but for our private keys) with a
        ``partition.<name>`` entry added for each of its non-NULL partition values
        (``partition.<field_id>`` in the published dialect)."""
        snapshot = self._ns.snapshot
        row = snapshot.row(object_id)
        if row is None:
            return {}
        properties = row_properties(row)
        schema = snapshot.rows.schema
        published = isinstance(snapshot.metadata.current_spec, PublishedSpec)
        for name in schema.names:
            if name in BASE_COLUMNS or row[name] is None:
                continue
            value = pa.array([row[name]], schema.field(name).type)
            text = evaluate("CAST(col AS VARCHAR)", value, pa.string())
            if published and name.startswith(COLUMN_PREFIX):  # partition.<field_id>
                name = name[len(COLUMN_PREFIX) :]
            properties[f"partition.{name}"] = text[0].as_py()
        return properties

    def _table_row(self, parts: Sequence[str] | None) -> dict[str, Any]:
        object_id = self._object_id(parts)
        row = self._ns.snapshot.row(object_id)
        if row is None or row["object_type"] != TABLE:
            raise errors.TableNotFoundError(
                f"table {object_id!r} does not exist in {self._ns.uri!r}"
            )
        return row

    # ------------------------------------------------------------------ reads
    def list_namespaces(self, request: ln.ListNamespacesRequest) -> ln.ListNamespacesResponse:
        parent = self._object_id(request.id)
        self._require_namespace(parent)
        names = [name for name, kind in self._ns.snapshot.children(parent) if kind != TABLE]
        return ln.ListNamespacesResponse(namespaces=names)

    def describe_namespace(
        self, request: ln.DescribeNamespaceRequest
    ) -> ln.DescribeNamespaceResponse:
        object_id = self._object_id(request.id)
        self._require_namespace(object_id)
        if object_id == "":
            properties = dict(self._ns.snapshot.table_metadata)
        else:
            properties = self._properties(object_id)
        return ln.DescribeNamespaceResponse(properties=properties)

    def namespace_exists(self, request: ln.NamespaceExistsRequest) -> ln.NamespaceExistsResponse:
        self._require_namespace(self._object_id(request.id))
        return ln.NamespaceExistsResponse()

    def list_tables(self, request: ln.ListTablesRequest) -> ln.ListTablesResponse:
        parent = self._object_id(request.id)
        self._require_namespace(parent)
        names = [name for name, kind in self._ns.snapshot.children(parent) if kind == TABLE]
        return ln.ListTablesResponse(tables=names)

    def describe_table(self, request: ln.DescribeTableRequest) -> ln.DescribeTableResponse:
        row = self._table_row(request.id)
        uri = self._manifest.table_uri(row["location"])
        return ln.DescribeTableResponse(
            location=uri,
            table_uri=uri,
            version=row_read_version(row),
            storage_options=self._ns.storage_options or None,
            properties=self._properties(row["object_id"]),
        )

    def table_exists(self, request: ln.TableExistsRequest) -> ln.TableExistsResponse:
        self._table_row(request.id)
        return ln.TableExistsResponse()

    # ------------------------------------------------------------------ refused writes
    def create_namespace(self, request: ln.CreateNamespaceRequest) -> Any:
        raise errors.UnsupportedOperationError(
            "a partitioned namespace creates its namespaces itself when data is written: "
            "use PartitionedNamespace.write"
        )

    def create_table(self, request: Any, request_data: bytes = b"") -> Any:
        raise errors.UnsupportedOperationError(
            "tables cannot be created inside a partitioned namespace by hand: "
            "use PartitionedNamespace.write, which creates each partition's leaf table"
        )

    def declare_table(self, request: Any) -> Any:
        return self.create_table(request)

    def drop_table(self, request: Any) -> Any:
        raise errors.UnsupportedOperationError(
            "dropping a leaf table would lose a partition's data outside the commit "
            "protocol; use PartitionedNamespace.write(mode='overwrite_partitions')"
        )
