"""Namespaces in the published dialect, built from the published text with pylance and pyarrow
alone (never lance_partitioned): ``partition_spec_v<N>`` objects ``{"id": N, "fields": [...]}``,
``partition_field_<field_id>`` columns in ``__manifest``, leaves at ``<hash>_<object_id>``.

Partition values are computed here in plain Python (:func:`partition_value`, the oracle of each
published transform), murmur3 over Iceberg's byte encodings with ``mmh3``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import lance
import mmh3
import pyarrow as pa

BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"
EPOCH = dt.date(1970, 1, 1)
_PK = {b"lance-schema:unenforced-primary-key:position": b"0"}
BASE_FIELDS = [
    pa.field("object_id", pa.string(), nullable=False, metadata=_PK),
    pa.field("object_type", pa.string(), nullable=False),
    pa.field("location", pa.string()),
    pa.field("metadata", pa.string()),
    pa.field("read_version", pa.uint64()),
    pa.field("read_branch", pa.string()),
    pa.field("read_tag", pa.string()),
]
# The JsonArrowDataType of each Arrow type the fixtures use.
JSON_TYPES: dict[pa.DataType, dict[str, Any]] = {
    pa.int32(): {"type": "int32"},
    pa.int64(): {"type": "int64"},
    pa.utf8(): {"type": "utf8"},
    pa.date32(): {"type": "date32"},
    pa.timestamp("us"): {"type": "timestamp", "unit": "us"},
}


def _encode(value: Any) -> bytes:
    """Iceberg's bytes of one value (Appendix B of the Iceberg spec)."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, dt.datetime):
        micros = (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
        return struct.pack("<q", micros)
    if isinstance(value, dt.date):
        return struct.pack("<q", (value - EPOCH).days)
    return struct.pack("<q", value)


def partition_value(transform: dict[str, Any], value: Any) -> Any:
    """The oracle: a published transform applied to one Python value."""
    kind = transform["type"]
    if value is None:
        return None
    if kind == "identity":
        return value
    if kind in ("year", "month", "day", "hour"):
        return getattr(value, kind)
    if kind == "bucket":
        return abs(mmh3.hash(_encode(value), 0, signed=True)) % transform["num_buckets"]
    if kind == "truncate":
        width = transform["width"]
        if isinstance(value, str):
            return value[:width]
        return value - int(math.fmod(value, width))  # SQL's truncated %
    raise AssertionError(kind)


def multi_bucket(num_buckets: int, values: Sequence[Any]) -> int | None:
    """The oracle of ``multi_bucket``: murmur3 of the non-NULL inputs' bytes, concatenated in
    order (NULL inputs skipped), NULL only when every input is."""
    parts = [_encode(v) for v in values if v is not None]
    if not parts:
        return None
    return abs(mmh3.hash(b"".join(parts), 0, signed=True)) % num_buckets


def field_value(spec_field: dict[str, Any], schema: pa.Schema, row: dict[str, Any]) -> Any:
    """The oracle of one published field on one row: its ``oracle`` callable (of the source
    values, for a field given by an ``expression``), else its transform."""
    values = [row[schema.field(i).name] for i in spec_field["source_ids"]]
    if "oracle" in spec_field:
        return spec_field["oracle"](*values)
    transform = spec_field["transform"]
    if transform["type"] == "multi_bucket":
        return multi_bucket(transform["num_buckets"], values)
    return partition_value(transform, values[0])


@dataclass
class Published:
    """A published-dialect namespace and what a reader must see in it."""

    root: str
    schema: pa.Schema
    fields: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    leaves: dict[tuple[Any, ...], str] = field(default_factory=dict)  # values -> object_id

    def expected(self, keep: Any = None) -> list[dict[str, Any]]:
        return sorted(
            (r for r in self.rows if keep is None or keep(r)), key=lambda r: repr(sorted(r.items()))
        )


def _schema_json(schema: pa.Schema) -> dict[str, Any]:
    return {
        "fields": [
            {
                "name": f.name,
                "nullable": f.nullable,
                "type": JSON_TYPES[f.type],
                "metadata": {"lance:field_id": str(i)},
            }
            for i, f in enumerate(schema)
        ]
    }


def build(
    root: str,
    schema: pa.Schema,
    fields: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    *,
    seed: int = 0,
    properties_in_schema: bool = False,
    leaves_without_partition_columns: bool = False,
    extra_rows: Sequence[dict[str, Any]] = (),
) -> Published:
    """One spec version (``v1``) with ``fields`` (published field objects whose
    ``result_type`` is an Arrow type here; a field given by an ``expression`` carries its
    Python ``oracle`` too, not written), ``rows`` as Python dicts.

    ``properties_in_schema`` puts the root properties in the ``__manifest``'s Arrow schema
    metadata (Daft's branch) instead of its table metadata; ``leaves_without_partition_columns``
    drops the identity-partitioned source columns from the leaves; ``extra_rows`` are more
    ``__manifest`` rows (``table_version`` rows, say), written as given.
    """
    rng = random.Random(seed)
    sources = [schema.field(f["source_ids"][0]).name for f in fields]
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        key = tuple(field_value(f, schema, row) for f in fields)
        groups.setdefault(key, []).append(row)
    result = Published(root, schema, fields, rows)
    names = [f"partition_field_{f['field_id']}" for f in fields]
    manifest: dict[str, dict[str, Any]] = {"v1": {"object_id": "v1", "object_type": "namespace"}}
    level_names: dict[tuple[Any, ...], str] = {}
    for values, group in groups.items():
        parts = ["v1"]
        for depth in range(1, len(values) + 1):
            prefix = values[:depth]
            parts.append(level_names.setdefault(prefix, "".join(rng.choices(BASE36, k=16))))
            object_id = "$".join(parts)
            inherited = dict(zip(names[:depth], prefix, strict=True))
            manifest.setdefault(
                object_id, {"object_id": object_id, "object_type": "namespace", **inherited}
            )
        object_id = "$".join([*parts, "dataset"])
        location = f"{rng.getrandbits(32):08x}_{object_id}"
        data = pa.Table.from_pylist(group, schema=schema)
        if leaves_without_partition_columns:
            dropped = [
                s
                for f, s in zip(fields, sources, strict=True)
                if f.get("transform", {}).get("type") == "identity"
            ]
            data = data.drop_columns(dropped)
        ds = lance.write_dataset(data, f"{root}/{location}")
        manifest[object_id] = {
            "object_id": object_id,
            "object_type": "table",
            "location": location,
            "read_version": ds.version,
            **dict(zip(names, values, strict=True)),
        }
        result.leaves[values] = object_id
    columns = [
        *BASE_FIELDS,
        *(pa.field(n, f["result_type"]) for n, f in zip(names, fields, strict=True)),
    ]
    extra_names = {k for r in extra_rows for k in r} - {c.name for c in columns}
    columns += [pa.field(n, pa.string()) for n in sorted(extra_names)]
    all_rows = [*manifest.values(), *extra_rows]
    properties = {
        "schema": json.dumps(_schema_json(schema)),
        "partition_spec_v1": json.dumps(
            {
                "id": 1,
                "fields": [
                    {
                        **{k: v for k, v in f.items() if k != "oracle"},
                        "result_type": JSON_TYPES[f["result_type"]],
                    }
                    for f in fields
                ],
            }
        ),
    }
    table = pa.Table.from_pylist(all_rows, schema=pa.schema(columns))
    if properties_in_schema:
        table = table.replace_schema_metadata(properties)
    ds = lance.write_dataset(table, f"{root}/__manifest")
    if not properties_in_schema:
        ds.update_metadata(properties)
    return result


def pin(built: Published, values: tuple[Any, ...], column: str, ref: str) -> list[dict[str, Any]]:
    """Pin the leaf of ``values`` to a ref with pylance, as the published text's Transaction
    section allows, and make its main branch differ from it.

    ``column`` ``read_branch``: a branch ``ref`` gets one more row (a copy of the leaf's first
    with ``id`` + 1000) and the row points at it (``read_branch`` + ``read_version``);
    ``read_tag``: the leaf gets that row on main, tag ``ref`` names that version, and the row
    points at the tag alone (``read_version`` NULL). Then main gets another row (``id`` + 2000)
    that a reader must not see. Returns the rows the leaf's ref holds (updates ``built.rows``).
    """
    object_id = built.leaves[values]
    manifest = lance.dataset(f"{built.root}/__manifest")
    location = manifest.to_table(filter=f"object_id = '{object_id}'").column("location")[0]
    uri = f"{built.root}/{location.as_py()}"
    leaf = lance.dataset(uri)
    rows = leaf.to_table().to_pylist()
    added = pa.Table.from_pylist([dict(rows[0], id=rows[0]["id"] + 1000)], schema=leaf.schema)
    hidden = pa.Table.from_pylist([dict(rows[0], id=rows[0]["id"] + 2000)], schema=leaf.schema)
    if column == "read_branch":
        branch = leaf.create_branch(ref)
        branch.insert(added)
        version = branch.checkout_version((ref, None)).version
        lance.write_dataset(hidden, uri, mode="append")
        updates = {"read_branch": f"'{ref}'", "read_version": str(version)}
    else:
        tagged = lance.write_dataset(added, uri, mode="append")
        tagged.tags.create(ref, tagged.version)
        lance.write_dataset(hidden, uri, mode="append")
        updates = {"read_tag": f"'{ref}'", "read_version": "NULL"}
    manifest.update(updates, where=f"object_id = '{object_id}'")
    pinned = [*rows, *added.to_pylist()]
    built.rows = [r for r in built.rows if r not in rows] + pinned
    return pinned
