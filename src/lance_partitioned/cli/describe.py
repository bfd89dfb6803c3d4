"""``describe`` and ``partitions``: what a namespace holds, from its ``__manifest`` and the
Lance manifests of its leaves (no data file is read)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Group
from rich.text import Text
from rich.tree import Tree

from lance_partitioned.cli.app import DebugOpt, JsonOpt, StorageOpt, app, stdout
from lance_partitioned.cli.render import (
    human_bytes,
    human_count,
    print_json,
    table,
    type_text,
    value_text,
)
from lance_partitioned.spec.schema import DEPRECATED_KEY, FIELD_ID_KEY

if TYPE_CHECKING:
    import pyarrow as pa

    from lance_partitioned.namespace import PartitionedNamespace
    from lance_partitioned.spec.partitioning import PartitionSpec
    from lance_partitioned.spec.schema import NamespaceSchema

__all__ = ["Leaf", "leaves", "open_namespace", "schema_fields", "spec_json"]

UriArg = Annotated[str, typer.Argument(help="The namespace root: a directory or object-store URI.")]
FilterOpt = Annotated[
    str | None,
    typer.Option("--filter", "-f", help="SQL over the partition columns, e.g. \"country = 'US'\"."),
]


def open_namespace(uri: str, pairs: Sequence[str] | None) -> PartitionedNamespace:
    """Open the namespace at ``uri`` with ``--storage-option`` pairs."""
    from lance_partitioned.cli.app import storage_options
    from lance_partitioned.namespace import PartitionedNamespace

    return PartitionedNamespace.open(uri, storage_options=storage_options(pairs))


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
        except Exception:  # a source id the schema lacks: shown as unknown
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
"""One leaf as the commands show it: a dict with stable JSON keys."""


def leaves(ns: PartitionedNamespace, filter: str | None = None) -> list[Leaf]:
    """Every leaf (matching ``filter``) with its partition values and sizes, ordered by spec
    version then partition values."""
    from lance_partitioned.sizes import partition_sizes

    table_ = partition_sizes(ns, filter)
    specs = {spec.version: spec for spec in ns.partition_specs}
    out = []
    for row in table_.to_pylist():
        spec = specs.get(row["spec_version"])
        names = [] if spec is None else spec.names
        out.append(
            {
                "object_id": row["object_id"],
                "location": row["location"],
                "spec_version": row["spec_version"],
                "values": {name: row.get(name) for name in names},
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
    """``v1 2025/US``."""
    values = "/".join(value_text(v) for v in leaf["values"].values())
    return f"v{leaf['spec_version']} {values or '(unpartitioned)'}"


def label(leaf: Leaf) -> str:
    """``v1 country=US, year=2025``."""
    values = ", ".join(f"{k}={value_text(v)}" for k, v in leaf["values"].items())
    return f"v{leaf['spec_version']} {values or '(unpartitioned)'}"


# ----------------------------------------------------------------------------- commands


@app.command()
def describe(
    uri: UriArg,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Schema with field ids, every partition spec version, counts and the manifest version."""
    ns = open_namespace(uri, storage_option)
    found = leaves(ns)
    specs = ns.partition_specs
    snapshot = ns.snapshot
    from lance_partitioned.manifest import Manifest

    when = Manifest(ns.uri, ns.storage_options).version_time(ns.version)
    per_spec = Counter(leaf["spec_version"] for leaf in found)
    counts = {
        "namespaces": snapshot.rows.num_rows - snapshot.tables.num_rows,
        "leaves": len(found),
        "rows": sum(leaf["rows"] for leaf in found),
        "bytes": sum(leaf["bytes"] for leaf in found),
        "fragments": sum(leaf["fragments"] for leaf in found),
    }
    if json_output:
        print_json(
            {
                "uri": ns.uri,
                "manifest_version": ns.version,
                "manifest_time": when,
                "schema": [
                    {k: v for k, v in f.items() if k != "depth"}
                    for f in schema_fields(ns.namespace_schema)
                ],
                "specs": [
                    spec_json(s, ns.namespace_schema, s is specs[-1])
                    | {"leaves": per_spec[s.version]}
                    for s in specs
                ],
                "counts": counts,
            }
        )
        return
    console = stdout()
    stamp = "unknown time" if when is None else when.isoformat(sep=" ", timespec="seconds")
    header = Text()
    header.append(ns.uri, style="bold")
    header.append(f"\n__manifest version {ns.version}, committed {stamp}")
    header.append(
        f"\n{counts['namespaces']} namespaces, {counts['leaves']} leaves, "
        f"{human_count(counts['rows'])} rows, {human_bytes(counts['bytes'])} "
        f"in {counts['fragments']} fragments"
    )
    parts: list[Any] = [header, Text(), schema_tree(ns.namespace_schema), Text()]
    for spec in specs:
        info = spec_json(spec, ns.namespace_schema, spec is specs[-1])
        title = f"partition spec v{spec.version}" + (" (current)" if info["current"] else "")
        title += f": {per_spec[spec.version]} leaves"
        rows = [
            [
                str(f["field_id"]),
                f["name"],
                f"{f['source']} #{f['source_id']}",
                f["expression"],
                f["result_type"],
            ]
            for f in info["fields"]
        ]
        parts.append(
            table(title, ["id", "name", "source", "expression", "result type"], rows)
            if rows
            else Text(f"{title}: unpartitioned")
        )
        parts.append(Text())
    console.print(Group(*parts[:-1]))


@app.command()
def partitions(
    uri: UriArg,
    filter: FilterOpt = None,
    sort: Annotated[
        str | None,
        typer.Option("--sort", help="Order by rows or bytes, largest first.", metavar="rows|bytes"),
    ] = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """One line per leaf: partition values, spec version, rows, bytes, fragments, read_version."""
    if sort not in (None, "rows", "bytes"):
        raise typer.BadParameter(f"{sort!r} is not rows or bytes", param_hint="--sort")
    ns = open_namespace(uri, storage_option)
    found = leaves(ns, filter)
    if sort is not None:
        found.sort(key=lambda leaf: -leaf[sort])
    if json_output:
        print_json(found)
        return
    names: list[str] = []
    for spec in ns.partition_specs:
        names.extend(n for n in spec.names if n not in names)
    rows = [
        [
            f"v{leaf['spec_version']}",
            *(value_text(leaf["values"][n]) if n in leaf["values"] else "" for n in names),
            human_count(leaf["rows"]),
            human_bytes(leaf["bytes"]),
            str(leaf["fragments"]),
            value_text(leaf["read_version"]),
        ]
        for leaf in found
    ]
    columns: list[str | tuple[str, str]] = [
        "spec",
        *names,
        ("rows", "right"),
        ("bytes", "right"),
        ("fragments", "right"),
        ("read_version", "right"),
    ]
    console = stdout()
    console.print(table(None, columns, rows))
    total = sum(leaf["rows"] for leaf in found)
    size = sum(leaf["bytes"] for leaf in found)
    console.print(f"{len(found)} leaves, {human_count(total)} rows, {human_bytes(size)}")


def median(values: Sequence[int]) -> float:
    """The median (0 for no values)."""
    return float(statistics.median(values)) if values else 0.0
