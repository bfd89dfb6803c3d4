"""What the commands show, computed once: the namespace opened from the command line, its
schema fields with ids, its specs, and its leaves with their sizes (dicts with stable JSON
keys, shared by the text and the ``--json`` outputs)."""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lance_partitioned.cli.render import type_text, value_text
from lance_partitioned.errors import SchemaError

if TYPE_CHECKING:
    import pyarrow as pa
    from rich.tree import Tree

    from lance_partitioned.namespace import PartitionedNamespace
    from lance_partitioned.spec.partitioning import PartitionSpec
    from lance_partitioned.spec.schema import NamespaceSchema

__all__ = [
    "AsOfOpt",
    "FilterOpt",
    "Leaf",
    "UriArg",
    "as_of_version",
    "label",
    "leaves",
    "median",
    "open_namespace",
    "schema_fields",
    "schema_tree",
    "short_label",
    "spec_json",
]

UriArg = Annotated[str, typer.Argument(help="The namespace root: a directory or object-store URI.")]
FilterOpt = Annotated[
    str | None,
    typer.Option(
        "--filter",
        "-f",
        help="SQL over the partition columns, e.g. \"country = 'US'\", or over the "
        "namespace's columns: the leaves a scan with it reads.",
    ),
]

AsOfOpt = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        metavar="VERSION|TAG|DATETIME",
        help="Read an older __manifest version: its number, a tag, or an ISO 8601 time (the "
        "latest version committed at or before it; no offset: UTC).",
    ),
]


def as_of_version(
    uri: str, storage: dict[str, str], text: str | None
) -> int | str | dt.datetime | None:
    """What ``--as-of`` names, as ``PartitionedNamespace.open(version=...)`` takes it: digits
    are a version number, an ISO 8601 time is a time (unless a tag has that very name), any
    other text a tag."""
    if text is None:
        return None
    text = text.strip()
    if text.isascii() and text.isdigit():
        return int(text)
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return text
    from lance_partitioned.manifest import Manifest
    from lance_partitioned.manifest.versions import list_tags

    return text if text in list_tags(Manifest(uri, storage)) else when


def open_namespace(
    uri: str, pairs: Sequence[str] | None, as_of: str | None = None
) -> PartitionedNamespace:
    """Open the namespace at ``uri`` with ``--storage-option`` pairs, at the ``__manifest``
    version ``--as-of`` names (None: the latest)."""
    from lance_partitioned.cli.app import storage_options
    from lance_partitioned.namespace import PartitionedNamespace

    storage = storage_options(pairs)
    version = as_of_version(uri, storage, as_of)
    return PartitionedNamespace.open(uri, storage_options=storage, version=version)


# ----------------------------------------------------------------------------- schema


def _meta(field: pa.Field, key: str) -> str | None:
    raw = (field.metadata or {}).get(key.encode())
    return None if raw is None else raw.decode()


def _children(field: pa.Field) -> list[pa.Field]:
    import pyarrow as pa

    dtype = field.type
    if pa.types.is_struct(dtype):
        return [dtype.field(i) for i in range(dtype.num_fields)]
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return [dtype.value_field]
    if pa.types.is_fixed_size_list(dtype) and pa.types.is_struct(dtype.value_type):
        return [dtype.value_field]
    if pa.types.is_map(dtype):
        return [dtype.key_field, dtype.item_field]
    return []


def schema_fields(schema: NamespaceSchema) -> list[dict[str, Any]]:
    """Every field at every depth, depth-first: path, field id, type, nullability and whether
    it is deprecated (itself or through an ancestor)."""
    from lance_partitioned.spec.schema import DEPRECATED_KEY, FIELD_ID_KEY

    out: list[dict[str, Any]] = []

    def visit(field: pa.Field, path: tuple[str, ...], deprecated: bool) -> None:
        raw_id = _meta(field, FIELD_ID_KEY)
        marked = (_meta(field, DEPRECATED_KEY) or "").strip().lower() == "true"
        gone = deprecated or marked
        out.append(
            {
                "path": ".".join((*path, field.name)),
                "name": field.name,
                "field_id": None if raw_id is None else int(raw_id),
                "type": type_text(field.type),
                "nullable": field.nullable,
                "deprecated": gone,
                "depth": len(path),
            }
        )
        for child in _children(field):
            visit(child, (*path, field.name), gone)

    for field in schema.arrow_schema:
        visit(field, (), False)
    return out


def schema_tree(schema: NamespaceSchema) -> Tree:
    """The schema as a Rich tree: ``name: type  #id``, deprecated fields marked."""
    from rich.text import Text
    from rich.tree import Tree

    root = Tree(Text("schema", style="bold"))
    stack: list[Tree] = [root]
    for info in schema_fields(schema):
        del stack[info["depth"] + 1 :]
        label = Text(f"{info['name']}: {info['type']}")
        if not info["nullable"]:
            label.append(" not null")
        label.append(f"  #{info['field_id']}", style="cyan")
        if info["deprecated"]:
            label.append("  (deprecated)", style="yellow")
            label.stylize("dim")
        stack.append(stack[-1].add(label))
    return root


def spec_json(spec: PartitionSpec, schema: NamespaceSchema, current: bool) -> dict[str, Any]:
    """One partition spec version with the name of each field's source column."""
    fields = []
    for spec_field in spec.fields:
        try:
            source = schema.name_of(spec_field.source_id)
        except SchemaError:  # a source id the schema lacks (verify reports it): unknown
            source = None
        fields.append(
            {
                "field_id": spec_field.field_id,
                "name": spec_field.name,
                "source_id": spec_field.source_id,
                "source": source,
                "expression": spec_field.expression,
                "result_type": type_text(spec_field.result_type),
            }
        )
    return {"version": spec.version, "current": current, "fields": fields}


# ----------------------------------------------------------------------------- leaves


Leaf = dict[str, Any]
"""One leaf as the commands show it: a dict with stable JSON keys (``values`` as stored,
``values_text`` as people read them: ``2025-08`` for a ``months`` value of 667)."""


def leaves(ns: PartitionedNamespace, filter: str | None = None) -> list[Leaf]:
    """Every leaf (matching ``filter``) with its partition values and sizes, ordered by spec
    version then partition values."""
    from lance_partitioned.manifest import Manifest
    from lance_partitioned.sizes import partition_sizes

    manifest = Manifest(ns.uri, ns.storage_options)
    # no leaf is shown without sizes
    table_ = partition_sizes(manifest, ns.snapshot, filter, unreadable="raise")
    specs = {spec.version: spec for spec in ns.partition_specs}
    out = []
    for row in table_.to_pylist():
        spec = specs.get(row["spec_version"])
        fields = [] if spec is None else spec.fields
        out.append(
            {
                "object_id": row["object_id"],
                "location": row["location"],
                "spec_version": row["spec_version"],
                "values": {f.name: row.get(f.name) for f in fields},
                "values_text": {
                    f.name: f.transform.to_human_string(row.get(f.name)) for f in fields
                },
                "rows": row["rows"],
                "bytes": row["bytes"],
                "fragments": row["fragments"],
                "small_fragments": row["small_fragments"],
                "read_version": row["read_version"],
            }
        )
    out.sort(key=_order)
    return out


def _order(leaf: Leaf) -> tuple[Any, ...]:
    values = tuple((v is None, value_text(v)) for v in leaf["values"].values())
    return (leaf["spec_version"], values, leaf["object_id"])


def short_label(leaf: Leaf) -> str:
    """``v1 2025-08/US``."""
    values = "/".join(leaf["values_text"].values())
    return f"v{leaf['spec_version']} {values or '(unpartitioned)'}"


def label(leaf: Leaf) -> str:
    """``v1 country=US, ts_month=2025-08``."""
    values = ", ".join(f"{k}={v}" for k, v in leaf["values_text"].items())
    return f"v{leaf['spec_version']} {values or '(unpartitioned)'}"


def median(values: Sequence[int]) -> float:
    """The median (0 for no values)."""
    return float(statistics.median(values)) if values else 0.0
