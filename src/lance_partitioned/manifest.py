"""The ``__manifest`` table: its columns, object ids, derived names, snapshots and CAS commits.

This is the only module that reads or writes the ``__manifest`` Lance table. Its layout
(spec 000 and DESIGN.md):

- columns ``object_id`` (primary key), ``object_type``, ``location``, ``metadata``,
  ``base_objects`` typed exactly as pylance's ``DirectoryNamespace`` writes them, then
  ``read_version`` (uint64), then one nullable column per partition field name of any spec
  version, typed by its ``result_type``;
- table metadata: ``schema`` and ``partition_spec_v<N>`` as JSON strings (see
  :mod:`lance_partitioned.spec.metadata`), and the writer feature-flag guard that makes
  pylance's own ``DirectoryNamespace`` refuse to rewrite the table;
- one row per spec version namespace (``v1``), per partition namespace (``v1$<name>``, …) and
  per leaf table (``…$dataset``), each with the partition values inherited from its ancestors.

Partition namespace names are 16 base36 characters derived from (spec version, parent object
id, typed value), so that two writers creating the same partition agree on its name, and a
leaf's directory is ``<8 hex>_<object_id>``, derived from its object id.

>>> partition_name(1, "v1", pa.scalar(2025, pa.int32()))
'...'
>>> len(partition_name(1, "v1", pa.scalar("US")))
16
>>> leaf_location("v1$0123456789abcdef$dataset")[8:]
'_v1$0123456789abcdef$dataset'
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
from lance import LanceDataset, LanceOperation
from lance.commit import CommitConflictError
from lance.schema import LanceSchema

from lance_partitioned import errors
from lance_partitioned.spec.metadata import NamespaceMetadata, keep_unknown_keys
from lance_partitioned.spec.types import type_to_json

__all__ = [
    "BASE_COLUMNS",
    "DELIMITER",
    "GUARD_KEY",
    "LEAF_NAME",
    "MANIFEST_DIR",
    "CommitConflict",
    "LeafStats",
    "Manifest",
    "ManifestEntry",
    "ManifestSnapshot",
    "RawManifest",
    "WriterTransactions",
    "leaf_location",
    "leaf_object_id",
    "manifest_schema",
    "partition_name",
    "properties_error",
    "row_properties",
    "row_read_version",
    "schema_fingerprint",
    "spec_namespace_id",
    "value_tokens",
]

MANIFEST_DIR = "__manifest"
DELIMITER = "$"
LEAF_NAME = "dataset"
NAMESPACE = "namespace"
TABLE = "table"
READ_VERSION = "read_version"  # optional in spec 000: absent means NULL (read the latest)
#: Writer feature flag unknown to pylance: its DirectoryNamespace then refuses every write to
#: ``__manifest`` (which would drop the partition columns) while reads keep working.
GUARD_KEY = "lance.namespace.manifest.writer_feature_flags"
GUARD_VALUE = str(1 << 40)

_PK = {b"lance-schema:unenforced-primary-key:position": b"0"}
_BASE_FIELDS = (
    pa.field("object_id", pa.string(), nullable=False, metadata=_PK),
    pa.field("object_type", pa.string(), nullable=False),
    pa.field("location", pa.string()),
    pa.field("metadata", pa.string()),
    pa.field("base_objects", pa.list_(pa.field("object_id", pa.string()))),
    pa.field("read_version", pa.uint64()),
)
BASE_COLUMNS: tuple[str, ...] = tuple(f.name for f in _BASE_FIELDS)
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_NAME_SPACE = 36**16


def manifest_schema(partition_columns: Sequence[tuple[str, pa.DataType]]) -> pa.Schema:
    """The ``__manifest`` Arrow schema: the base columns, then one per partition field name.

    >>> manifest_schema([("country", pa.string())]).names[-2:]
    ['read_version', 'country']
    """
    extra = [pa.field(name, dtype, nullable=True) for name, dtype in partition_columns]
    return pa.schema([*_BASE_FIELDS, *extra])


def spec_namespace_id(version: int) -> str:
    """The object id of the spec version namespace: ``v1``, ``v2``, …

    >>> spec_namespace_id(2)
    'v2'
    """
    return f"v{version}"


def value_tokens(values: pa.Array) -> list[str]:
    """An unambiguous text for each typed value (the type is hashed separately): two values
    name the same partition exactly when their tokens are equal (floats by their bits, so -0.0
    is not 0.0; temporal values by their integer representation; NULL is ``"null"``).

    >>> value_tokens(pa.array([1.5, -0.0, None]))
    ['f0x1.8000000000000p+0', 'f-0x0.0p+0', 'null']
    """
    dtype = values.type
    if pa.types.is_temporal(dtype):
        width = pa.int32() if dtype.bit_width == 32 else pa.int64()
        return ["null" if v is None else f"t{v}" for v in values.cast(width).to_pylist()]
    if pa.types.is_floating(dtype):
        return ["null" if v is None else "f" + float(v).hex() for v in values.to_pylist()]
    if (
        pa.types.is_binary(dtype)
        or pa.types.is_large_binary(dtype)
        or pa.types.is_fixed_size_binary(dtype)
    ):
        return ["null" if v is None else "b" + bytes(v).hex() for v in values.to_pylist()]
    return ["null" if v is None else f"v{v}" for v in values.to_pylist()]


def partition_name(spec_version: int, parent_id: str, value: pa.Scalar) -> str:
    """The 16-character base36 name of a partition namespace.

    Derived from the spec version, the parent's object id and the typed value, so every
    writer (and every client following this rule) names the same partition the same way.
    NULL is a value like any other.

    >>> partition_name(1, "v1", pa.scalar("US")) == partition_name(1, "v1", pa.scalar("US"))
    True
    >>> partition_name(1, "v1", pa.scalar("US")) != partition_name(2, "v2", pa.scalar("US"))
    True
    """
    type_text = json.dumps(type_to_json(value.type), sort_keys=True, separators=(",", ":"))
    token = value_tokens(pa.array([value], value.type))[0]
    key = "\x00".join((str(spec_version), parent_id, type_text, token))
    number = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest(), "big") % _NAME_SPACE
    digits = []
    for _ in range(16):
        number, rem = divmod(number, 36)
        digits.append(_BASE36[rem])
    return "".join(reversed(digits))


def leaf_object_id(parent_id: str) -> str:
    """The object id of the leaf table under a namespace.

    >>> leaf_object_id("v1$0123456789abcdef")
    'v1$0123456789abcdef$dataset'
    """
    return f"{parent_id}{DELIMITER}{LEAF_NAME}"


def leaf_location(object_id: str) -> str:
    """The directory name of a leaf table, relative to the namespace root.

    >>> leaf_location("v1$abc$dataset")
    '..._v1$abc$dataset'
    """
    prefix = hashlib.sha256(object_id.encode("utf-8")).hexdigest()[:8]
    return f"{prefix}_{object_id}"


_PRIVATE_PREFIX = "lance-partitioned."
_STATS_ROWS = "lance-partitioned.num_rows"
_STATS_VERSION = "lance-partitioned.num_rows_version"
_STATS_SCHEMA = "lance-partitioned.schema"


def schema_fingerprint(schema: pa.Schema) -> str:
    """A short digest of a leaf schema (names, types, nullability, field metadata).

    >>> a = schema_fingerprint(pa.schema([("x", pa.int64())]))
    >>> a == schema_fingerprint(pa.schema([("x", pa.int32())])), len(a)
    (False, 16)
    """
    return hashlib.sha256(schema.serialize().to_pybytes()).hexdigest()[:16]


@dataclass(frozen=True)
class LeafStats:
    """Row count of a leaf at one version, kept in its row's ``metadata`` JSON properties.

    Readers answer ``count_rows()`` from it without opening leaves. It is a hint: it counts only
    while its version equals the row's ``read_version`` (another spec-000 client may move the
    ``read_version`` without updating it). Other keys of the JSON map are kept.

    >>> text = LeafStats(3, 42).merge_into('{"owner": "ops"}')
    >>> sorted(json.loads(text).items())  # doctest: +NORMALIZE_WHITESPACE
    [('lance-partitioned.num_rows', '42'), ('lance-partitioned.num_rows_version', '3'),
     ('owner', 'ops')]
    >>> LeafStats.num_rows_at(text, 3), LeafStats.num_rows_at(text, 4)
    (42, None)
    """

    version: int
    num_rows: int
    schema: str | None = None

    @staticmethod
    def _properties(metadata: str | None) -> dict[str, str]:
        try:
            parsed = json.loads(metadata) if metadata else {}
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}

    def merge_into(self, metadata: str | None) -> str:
        """The row's ``metadata`` JSON with these stats set."""
        properties = self._properties(metadata)
        properties[_STATS_ROWS] = str(self.num_rows)
        properties[_STATS_VERSION] = str(self.version)
        if self.schema is None:
            properties.pop(_STATS_SCHEMA, None)
        else:
            properties[_STATS_SCHEMA] = self.schema
        return json.dumps(properties, sort_keys=True)

    @classmethod
    def _at(cls, metadata: str | None, read_version: int | None) -> dict[str, str] | None:
        """The properties when the stats were recorded at ``read_version``, else None."""
        properties = cls._properties(metadata)
        try:
            if read_version is None or int(properties[_STATS_VERSION]) != read_version:
                return None
        except (KeyError, ValueError, TypeError):
            return None
        return properties

    @classmethod
    def num_rows_at(cls, metadata: str | None, read_version: int | None) -> int | None:
        """The recorded row count when it was recorded at ``read_version``, else None."""
        properties = cls._at(metadata, read_version)
        try:
            return None if properties is None else int(properties[_STATS_ROWS])
        except (KeyError, ValueError, TypeError):
            return None

    @classmethod
    def schema_at(cls, metadata: str | None, read_version: int | None) -> str | None:
        """The recorded leaf schema fingerprint when recorded at ``read_version``, else None."""
        properties = cls._at(metadata, read_version)
        value = None if properties is None else properties.get(_STATS_SCHEMA)
        return value if isinstance(value, str) else None


_LeafKey = tuple[int, tuple[str, ...]]  # (spec version, value tokens of every level)


def properties_error(metadata: str | None) -> str | None:
    """Why a row's ``metadata`` JSON is not a valid properties map (None: it is, or NULL).

    >>> properties_error('{"owner": "ops"}') is None, properties_error(None) is None
    (True, True)
    >>> properties_error('{"owner": 1}')
    "property 'owner' is not a string"
    >>> properties_error("{oops")[:16]
    'not valid JSON: '
    """
    if metadata is None:
        return None
    try:
        parsed = json.loads(metadata)
    except ValueError as exc:
        return f"not valid JSON: {exc}"
    if not isinstance(parsed, dict):
        return f"a JSON {type(parsed).__name__}, not an object"
    for key, value in parsed.items():
        if not isinstance(value, str):
            return f"property {key!r} is not a string"
    return None


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


_TXN_PREFIX = "lance-partitioned.txn."


class WriterTransactions:
    """The last committed version of each idempotent writer (application id), kept in the
    ``metadata`` JSON properties of the spec version rows (``v1``, ``v2``…), which every
    data commit rewrites: recorded atomically with the data.

    >>> text = WriterTransactions.merge_into('{"owner": "ops"}', "etl", 7)
    >>> json.loads(text)["lance-partitioned.txn.etl"], json.loads(text)["owner"]
    ('7', 'ops')
    >>> WriterTransactions.merge_into(text, "etl", 3) == text  # never moves back
    True
    """

    @staticmethod
    def merge_into(metadata: str | None, app_id: str, version: int) -> str:
        """The row's ``metadata`` JSON with ``app_id`` at ``version`` (or later) recorded."""
        properties = LeafStats._properties(metadata)
        key = _TXN_PREFIX + app_id
        try:
            recorded = int(properties[key])
        except (KeyError, ValueError, TypeError):
            recorded = -1
        properties[key] = str(max(recorded, version))
        return json.dumps(properties, sort_keys=True)

    @staticmethod
    def version_of(snapshot: ManifestSnapshot, app_id: str) -> int | None:
        """The last version committed by ``app_id`` (across spec versions), or None."""
        key = _TXN_PREFIX + app_id
        found: int | None = None
        ids = snapshot.rows.column("object_id").to_pylist()
        metadata = snapshot.rows.column("metadata").to_pylist()
        for object_id, text in zip(ids, metadata, strict=True):
            if DELIMITER in object_id or not text:
                continue
            try:
                version = int(LeafStats._properties(text)[key])
            except (KeyError, ValueError, TypeError):
                continue
            found = version if found is None else max(found, version)
        return found


class CommitConflict(Exception):
    """Internal: a ``__manifest`` commit lost a compare-and-swap; re-read and retry."""


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
    """

    version: int
    metadata: NamespaceMetadata
    table_metadata: Mapping[str, str]
    rows: pa.Table = field(repr=False)

    @cached_property
    def _index(self) -> dict[str, int]:
        ids = self.rows.column("object_id").to_pylist()
        return {object_id: i for i, object_id in enumerate(ids)}

    def has(self, object_id: str) -> bool:
        """Whether a row with this object id exists."""
        return object_id in self._index

    def row(self, object_id: str) -> dict[str, Any] | None:
        """The row of ``object_id`` as a dict, or None."""
        i = self._index.get(object_id)
        return None if i is None else self.rows.slice(i, 1).to_pylist()[0]

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
        return self._by_values[1].get((spec_version, tokens))

    def find_namespace(self, parent_id: str, value: pa.Scalar) -> str | None:
        """The object id of the existing partition namespace under ``parent_id`` whose own
        level's value is ``value``, or None."""
        token = value_tokens(pa.array([value], value.type))[0]
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


class Manifest:
    """Access to the ``__manifest`` table of one partitioned namespace.

    Parameters
    ----------
    root : str
        The namespace root (a local path or an object store URI).
    storage_options : dict, optional
        Passed to every Lance call.
    """

    def __init__(self, root: str, storage_options: Mapping[str, str] | None = None) -> None:
        self.root = root.rstrip("/")
        self.uri = f"{self.root}/{MANIFEST_DIR}"
        self.storage_options = dict(storage_options or {})

    def table_uri(self, location: str) -> str:
        """The URI of a leaf table from its ``location`` (relative name or absolute URI)."""
        if "://" in location or location.startswith("/"):
            return location
        return f"{self.root}/{location}"

    def _open(self, version: int | None = None) -> LanceDataset:
        try:
            return lance.dataset(
                self.uri, version=version, storage_options=self.storage_options or None
            )
        except ValueError as exc:
            if version is not None and "not found" in str(exc).lower():
                raise errors.TableVersionNotFoundError(
                    f"__manifest version {version} does not exist at {self.root!r}"
                ) from exc
            raise errors.NamespaceNotFoundError(
                f"no partitioned namespace at {self.root!r}: cannot open {self.uri!r} ({exc})"
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
            dict(ds.metadata),
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
        return int(self._open().version)

    def snapshot(self, version: int | None = None) -> ManifestSnapshot:
        """Read one version of the manifest (the latest by default)."""
        ds = self._open(version)
        table_metadata = dict(ds.metadata)
        if not NamespaceMetadata.is_partitioned(table_metadata):
            raise errors.NotAPartitionedNamespaceError(
                f"{self.root!r} is a directory namespace but not a partitioned namespace: "
                "its __manifest metadata has no partition_spec_v<N> key (a PartitionedNamespace"
                ".create interrupted between its two commits leaves this: create(..., "
                "exist_ok=True) finishes it)"
            )
        metadata = NamespaceMetadata.from_table_metadata(table_metadata)
        return ManifestSnapshot(ds.version, metadata, table_metadata, _with_base(ds.to_table()))

    @classmethod
    def create(
        cls,
        root: str,
        metadata: NamespaceMetadata,
        storage_options: Mapping[str, str] | None = None,
    ) -> Manifest:
        """Create the ``__manifest`` with the spec-version row and the metadata.

        Raises :class:`~lance_partitioned.errors.NamespaceAlreadyExistsError` if one exists.
        """
        manifest = cls(root, storage_options)
        schema = manifest_schema(metadata.partition_columns())
        first = spec_namespace_id(metadata.current_spec.version)
        rows = rows_table(schema, [{"object_id": first, "object_type": NAMESPACE}])
        try:
            ds = lance.write_dataset(
                rows,
                manifest.uri,
                schema=schema,
                mode="create",
                storage_options=manifest.storage_options or None,
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
        manifest._publish_first(int(ds.version), metadata)
        return manifest

    def _publish_first(self, version: int, metadata: NamespaceMetadata) -> None:
        updates = {**metadata.to_table_metadata(), GUARD_KEY: GUARD_VALUE}
        try:
            self.commit_table_metadata(version, updates)
        except CommitConflict as exc:
            raise errors.ConcurrentModificationError(
                f"another client changed the new __manifest at {self.root!r} before its "
                f"metadata was written: {exc}"
            ) from exc

    def is_unfinished(self) -> bool:
        """Whether the ``__manifest`` is one that :meth:`create` left unfinished: no
        partition spec key, and no row but spec version namespaces (``v<N>``)."""
        ds = self._open()
        if NamespaceMetadata.is_partitioned(dict(ds.metadata)):
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
        try:
            if missing:
                version = self._add_columns(ds, missing, version)
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
                version = self._commit(transaction, version)
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
        delete_where: str | None = None,
    ) -> int:
        """Upsert ``rows`` by ``object_id`` as a compare-and-swap on ``base.version``.

        ``delete_where`` additionally deletes every existing row that is not in ``rows`` and
        matches that SQL filter (used by whole-namespace overwrite). Returns the new
        manifest version; raises :class:`CommitConflict` when a concurrent commit conflicts.
        """
        ds = self._open(base.version)
        read_version = base.version
        if READ_VERSION not in ds.schema.names:
            # another client's manifest without the optional column: add it (nullable, every
            # existing row NULL: read the latest) so that our rows can carry their versions
            read_version = self._add_columns(ds, [(READ_VERSION, pa.uint64())], base.version)
            ds = self._open(read_version)
        builder = (
            ds.merge_insert("object_id").when_matched_update_all().when_not_matched_insert_all()
        )
        if delete_where is not None:
            builder = builder.when_not_matched_by_source_delete(delete_where)
        present = [name for name in ds.schema.names if name in rows.column_names]
        if len(present) != len(ds.schema.names):
            raise errors.InternalError(
                f"the __manifest at {self.root!r} has columns {ds.schema.names}, the rows to "
                f"commit {rows.column_names}"
            )
        transaction, _ = builder.execute_uncommitted(rows.select(present).cast(ds.schema))
        return self._commit(transaction, read_version)

    def table_metadata(self, version: int) -> dict[str, str]:
        """The raw table metadata map of one ``__manifest`` version (every key)."""
        return dict(self._open(version).metadata)

    def add_partition_columns(
        self, base: ManifestSnapshot, columns: Sequence[tuple[str, pa.DataType]]
    ) -> int:
        """Add nullable columns (metadata only: every row reads NULL) as a compare-and-swap
        on ``base.version``.

        Returns the new manifest version; raises :class:`CommitConflict` when a concurrent
        commit conflicts (any concurrent row or schema change does).
        """
        return self._add_columns(self._open(base.version), columns, base.version)

    def _add_columns(
        self, ds: LanceDataset, columns: Sequence[tuple[str, pa.DataType]], read_version: int
    ) -> int:
        current = ds.schema
        if LanceSchema.from_pyarrow(current) != ds.lance_schema:
            raise errors.InternalError(
                f"the __manifest at {self.root!r} has Lance field ids that do not follow its "
                "column order; cannot add partition columns to it"
            )
        wide = pa.schema([*current, *(pa.field(n, t, nullable=True) for n, t in columns)])
        fragments = [fragment.metadata for fragment in ds.get_fragments()]
        operation = LanceOperation.Merge(
            fragments, LanceSchema.from_pyarrow(wide), preserves_nullability=True
        )
        return self._commit(operation, read_version)

    def commit_table_metadata(self, read_version: int, updates: Mapping[str, str]) -> int:
        """Set table metadata keys (others are kept) as a compare-and-swap on ``read_version``.

        Keys of the JSON values that we do not own (another client's, at any level) are
        carried over from the values replaced (:func:`~.spec.metadata.keep_unknown_keys`).
        Lance reports a conflict when a concurrent commit set any of the same keys. Returns
        the new manifest version; raises :class:`CommitConflict` on a conflict.
        """
        current = self.table_metadata(read_version)
        kept: dict[str, str | None] = {
            key: keep_unknown_keys(key, current[key], value) if key in current else value
            for key, value in updates.items()
        }
        operation = LanceOperation.UpdateConfig(
            table_metadata_updates=LanceOperation.UpdateMap(kept, replace=False)
        )
        return self._commit(operation, read_version)

    def _commit(self, operation: Any, read_version: int) -> int:
        try:
            ds = LanceDataset.commit(
                self.uri,
                operation,
                read_version=read_version,
                storage_options=self.storage_options or None,
                max_retries=0,
            )
        except CommitConflictError as exc:
            raise CommitConflict(str(exc)) from exc
        return int(ds.version)


def row_read_version(row: Mapping[str, Any]) -> int | None:
    """The ``read_version`` of a manifest row as a dict: None when NULL or when the row has no
    such column (spec 000: the column is optional; readers then read the latest version).

    >>> row_read_version({"object_id": "v1$dataset"}), row_read_version({"read_version": 3})
    (None, 3)
    """
    value = row.get(READ_VERSION)
    return None if value is None else int(value)


def row_properties(row: Mapping[str, Any]) -> dict[str, str]:
    """The properties a manifest row carries in its ``metadata`` JSON (written by any
    client), without the keys private to lance-partitioned; non-string values as JSON text.

    >>> row_properties({"metadata": '{"owner": "ops", "lance-partitioned.num_rows": "3"}'})
    {'owner': 'ops'}
    >>> row_properties({"metadata": "not json"}), row_properties({})
    ({}, {})
    """
    parsed = LeafStats._properties(row.get("metadata"))
    return {
        key: value if isinstance(value, str) else json.dumps(value)
        for key, value in parsed.items()
        if isinstance(key, str) and not key.startswith(_PRIVATE_PREFIX)
    }


def _with_base(rows: pa.Table) -> pa.Table:
    """``rows`` with every base column that another client's manifest may lack (the optional
    ``read_version``, and ``metadata``/``base_objects`` of a hand-written one) added as NULL."""
    for base in _BASE_FIELDS:
        if base.name not in rows.column_names:
            rows = rows.append_column(base, pa.nulls(rows.num_rows, base.type))
    return rows


def _spec_version_of(level: str) -> int | None:
    """N of a spec version namespace name ``v<N>``, or None."""
    digits = level[1:]
    if level.startswith("v") and digits.isascii() and digits.isdigit():
        return int(digits)
    return None


def rows_table(schema: pa.Schema, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Build manifest rows (dicts of column name to Python value) in the manifest schema."""
    columns = {f.name: pa.array([row.get(f.name) for row in rows], type=f.type) for f in schema}
    return pa.table(columns, schema=schema)
