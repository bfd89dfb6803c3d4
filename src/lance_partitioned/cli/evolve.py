"""``evolve URI <change>``: schema and partition evolution, one ``__manifest`` commit each."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lance_partitioned.cli.app import DebugOpt, JsonOpt, StorageOpt, app, stdout
from lance_partitioned.cli.model import UriArg, open_namespace, schema_fields, spec_json
from lance_partitioned.cli.render import print_json, type_text
from lance_partitioned.cli.write import parse_type

if TYPE_CHECKING:
    from lance_partitioned.namespace import PartitionedNamespace

__all__ = ["evolve_app"]

evolve_app = typer.Typer(
    help="Change the schema or the partition spec (new data only; nothing is rewritten).",
    no_args_is_help=True,
)
app.add_typer(evolve_app, name="evolve")

TypeArg = Annotated[
    str,
    typer.Argument(help="A type name (int64, utf8, date32, ...) or a JsonArrowDataType object."),
]


@evolve_app.callback()
def evolve(ctx: typer.Context, uri: UriArg) -> None:
    """Evolve the namespace at URI: evolve URI add-column NAME TYPE, ..."""
    ctx.obj = uri


def _apply(
    ctx: typer.Context,
    operation: str,
    pairs: list[str] | None,
    json_output: bool,
    change: Callable[[PartitionedNamespace], str],
) -> None:
    ns = open_namespace(str(ctx.obj), pairs)
    before = ns.version
    summary = change(ns)
    result: dict[str, Any] = {
        "operation": operation,
        "manifest_version": ns.version,
        "changed": ns.version != before,
        "schema": [
            {k: v for k, v in f.items() if k != "depth"} for f in schema_fields(ns.namespace_schema)
        ],
        "spec": spec_json(ns.current_spec, ns.namespace_schema, True),
    }
    if json_output:
        print_json(result)
        return
    note = "" if result["changed"] else " (nothing to change)"
    stdout().print(f"{summary}{note}: __manifest version {ns.version}")


@evolve_app.command("add-column")
def add_column(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The new column.")],
    type_: TypeArg,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Add a nullable column with a new field id."""
    import pyarrow as pa

    dtype = parse_type(type_)

    def change(ns: PartitionedNamespace) -> str:
        ns.add_columns([pa.field(name, dtype)])
        return f"added {name}: {type_text(dtype)} (field id {ns.namespace_schema.field_id(name)})"

    _apply(ctx, "add-column", storage_option, json_output, change)


@evolve_app.command("drop-column")
def drop_column(
    ctx: typer.Context,
    names: Annotated[list[str], typer.Argument(help="Columns to deprecate.")],
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Deprecate columns: kept in the schema and on disk, gone from reads and writes."""

    def change(ns: PartitionedNamespace) -> str:
        ns.drop_columns(names)
        return f"dropped {', '.join(names)} (deprecated, field ids kept)"

    _apply(ctx, "drop-column", storage_option, json_output, change)


@evolve_app.command("rename-column")
def rename_column(
    ctx: typer.Context,
    old: Annotated[str, typer.Argument(help="The current name.")],
    new: Annotated[str, typer.Argument(help="The new name.")],
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Rename a column; its field id, partition fields and data stay."""

    def change(ns: PartitionedNamespace) -> str:
        ns.rename_column(old, new)
        return f"renamed {old} to {new}"

    _apply(ctx, "rename-column", storage_option, json_output, change)


@evolve_app.command("promote-column")
def promote_column(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The column.")],
    type_: TypeArg,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Widen a column's type (int32 to int64, float32 to float64, ...)."""
    dtype = parse_type(type_)

    def change(ns: PartitionedNamespace) -> str:
        ns.alter_column_type(name, dtype)
        return f"promoted {name} to {type_text(dtype)}"

    _apply(ctx, "promote-column", storage_option, json_output, change)


@evolve_app.command("partition-spec")
def partition_spec(
    ctx: typer.Context,
    partition_by: Annotated[str, typer.Argument(help='The new spec, e.g. "month(ts), country".')],
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Start a new partition spec version for new data; existing leaves keep theirs."""

    def change(ns: PartitionedNamespace) -> str:
        spec = ns.update_partition_spec(partition_by)
        fields = ", ".join(f"{f.name} = {f.expression}" for f in spec.fields)
        return f"partition spec v{spec.version}: {fields or 'unpartitioned'}"

    _apply(ctx, "partition-spec", storage_option, json_output, change)
