"""The properties a ``__manifest`` row carries in its ``metadata`` JSON: what any client put
there (kept), and what lance-partitioned keeps there for itself (``lance-partitioned.*`` keys:
leaf row counts and schema fingerprints, idempotent writers' transactions).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_partitioned.manifest.layout import DELIMITER

if TYPE_CHECKING:
    from lance_partitioned.manifest.snapshot import ManifestSnapshot

_PRIVATE_PREFIX = "lance-partitioned."
_STATS_ROWS = "lance-partitioned.num_rows"
_STATS_VERSION = "lance-partitioned.num_rows_version"
_STATS_SCHEMA = "lance-partitioned.schema"
# the JSON merge_into writes when no other key is there (json.dumps, sorted keys)
_CANONICAL = (
    r'^\{"lance-partitioned\.num_rows": "(?P<rows>[0-9]+)", '
    r'"lance-partitioned\.num_rows_version": "(?P<version>[0-9]+)"'
    r'(?:, "lance-partitioned\.schema": "[0-9a-f]*")?\}$'
)


def _parse(metadata: str | None) -> dict[str, Any]:
    """A row's ``metadata`` JSON as a map (empty when NULL, invalid or not an object)."""
    try:
        parsed = json.loads(metadata) if metadata else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


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

    def merge_into(self, metadata: str | None) -> str:
        """The row's ``metadata`` JSON with these stats set."""
        properties = _parse(metadata)
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
        properties = _parse(metadata)
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
    def num_rows_column(
        cls, metadata: pa.Array | pa.ChunkedArray, read_versions: pa.Array | pa.ChunkedArray
    ) -> list[int | None]:
        """:meth:`num_rows_at` of every row at once: the ``metadata`` JSON that
        :meth:`merge_into` writes with no other key is read by one regular expression over the
        column; any other JSON (another client's keys, other spacing) row by row.

        >>> text = LeafStats(3, 42).merge_into(None)
        >>> LeafStats.num_rows_column(pa.array([text, text, '{"x": 1}', None]),
        ...                           pa.array([3, 4, 3, None]))
        [42, None, None, None]
        """
        import pyarrow.compute as pc

        texts = metadata.combine_chunks() if isinstance(metadata, pa.ChunkedArray) else metadata
        versions = read_versions.to_pylist()
        parsed = pc.extract_regex(texts.cast(pa.string()), _CANONICAL)
        rows = parsed.field("rows").to_pylist()
        recorded = parsed.field("version").to_pylist()
        matched = parsed.is_valid().to_pylist()
        out: list[int | None] = []
        for i, (count, at, version) in enumerate(zip(rows, recorded, versions, strict=True)):
            if not matched[i]:
                text = texts[i].as_py()
                out.append(cls.num_rows_at(text, version) if text else None)
            else:
                out.append(int(count) if version is not None and int(at) == version else None)
        return out

    @classmethod
    def schema_at(cls, metadata: str | None, read_version: int | None) -> str | None:
        """The recorded leaf schema fingerprint when recorded at ``read_version``, else None."""
        properties = cls._at(metadata, read_version)
        value = None if properties is None else properties.get(_STATS_SCHEMA)
        return value if isinstance(value, str) else None


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
        properties = _parse(metadata)
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
                version = int(_parse(text)[key])
            except (KeyError, ValueError, TypeError):
                continue
            found = version if found is None else max(found, version)
        return found


def row_properties(row: Mapping[str, Any]) -> dict[str, str]:
    """The properties a manifest row carries in its ``metadata`` JSON (written by any
    client), without the keys private to lance-partitioned; non-string values as JSON text.

    >>> row_properties({"metadata": '{"owner": "ops", "lance-partitioned.num_rows": "3"}'})
    {'owner': 'ops'}
    >>> row_properties({"metadata": "not json"}), row_properties({})
    ({}, {})
    """
    parsed = _parse(row.get("metadata"))
    return {
        key: value if isinstance(value, str) else json.dumps(value)
        for key, value in parsed.items()
        if isinstance(key, str) and not key.startswith(_PRIVATE_PREFIX)
    }
