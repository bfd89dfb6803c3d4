"""The ``__manifest`` layout: its columns, object ids and derived names.

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

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lance_partitioned.spec.types import type_to_json

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
# the canonical JSON text of each partition value type named so far (the same few types name
# every partition of a write)
_type_texts: dict[pa.DataType, str] = {}


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
    return token_name(
        spec_version, parent_id, value.type, value_tokens(pa.array([value], value.type))[0]
    )


def token_name(spec_version: int, parent_id: str, dtype: pa.DataType, token: str) -> str:
    """:func:`partition_name` of a value of type ``dtype`` given by its :func:`value_tokens`
    token: a write names the new partitions of an input chunk from the tokens it already has,
    without a scalar (and an Arrow array of it) per level.

    >>> token_name(1, "v1", pa.string(), "vUS") == partition_name(1, "v1", pa.scalar("US"))
    True
    """
    type_text = _type_texts.get(dtype)
    if type_text is None:
        type_text = json.dumps(type_to_json(dtype), sort_keys=True, separators=(",", ":"))
        _type_texts[dtype] = type_text
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


def row_read_version(row: Mapping[str, Any]) -> int | None:
    """The ``read_version`` of a manifest row as a dict: None when NULL or when the row has no
    such column (spec 000: the column is optional; readers then read the latest version).

    >>> row_read_version({"object_id": "v1$dataset"}), row_read_version({"read_version": 3})
    (None, 3)
    """
    value = row.get(READ_VERSION)
    return None if value is None else int(value)


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


def local_path(uri: str) -> str | None:
    """The local file system path of a namespace or leaf URI, or None for an object store.

    >>> local_path("file:///data/ns"), local_path("/data/ns"), local_path("s3://b/ns")
    ('/data/ns', '/data/ns', None)
    """
    if uri.startswith("file://"):
        return uri[len("file://") :]
    return None if "://" in uri else uri
