"""``describe`` and ``partitions``: what a namespace holds, from its ``__manifest`` and the
Lance manifests of its leaves (no data file is read)."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

import typer

from lance_partitioned.cli.app import DebugOpt, JsonOpt, StorageOpt, app, stdout
from lance_partitioned.cli.model import (
    AsOfOpt,
    FilterOpt,
    UriArg,
    leaves,
    open_namespace,
    schema_fields,
    schema_tree,
    spec_json,
)
from lance_partitioned.cli.render import (
    human_bytes,
    human_count,
    print_json,
    table,
    value_text,
)

__all__ = ["describe", "partitions"]


@app.command()
def describe(
    uri: UriArg,
    as_of: AsOfOpt = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Schema with field ids, every partition spec version, counts and the manifest version."""
    ns = open_namespace(uri, storage_option, as_of)
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
    from rich.console import Group
    from rich.text import Text

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
    as_of: AsOfOpt = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """One line per leaf: partition values, spec version, rows, bytes, fragments, read_version."""
    if sort not in (None, "rows", "bytes"):
        raise typer.BadParameter(f"{sort!r} is not rows or bytes", param_hint="--sort")
    ns = open_namespace(uri, storage_option, as_of)
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
            *(leaf["values_text"].get(n, "") for n in names),
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
