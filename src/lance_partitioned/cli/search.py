"""``index URI create|list|stats|drop`` and ``search URI``: indexes on every leaf, one pruned
top-k across them."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from lance_partitioned.cli.app import DebugOpt, JsonOpt, StorageOpt, app, stdout
from lance_partitioned.cli.model import UriArg, open_namespace
from lance_partitioned.cli.render import print_json, table, value_text

__all__: list[str] = []

index_app = typer.Typer(
    help="Indexes on every leaf: vector (IVF_PQ, IVF_HNSW_SQ, IVF_FLAT), scalar (BTREE, "
    "BITMAP, LABEL_LIST, ZONEMAP) and full text (INVERTED).",
    no_args_is_help=True,
)
app.add_typer(index_app, name="index")


@index_app.callback()
def index(ctx: typer.Context, uri: UriArg) -> None:
    """Indexes of the namespace at URI: index URI create COLUMN TYPE, index URI list,
    index URI stats NAME, index URI drop NAME."""
    ctx.obj = uri


def _params(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a value that is JSON (``16``, ``true``) is parsed as such.

    >>> _params(["metric=cosine", "num_partitions=16"])
    {'metric': 'cosine', 'num_partitions': 16}
    """
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--param")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


@index_app.command("create")
def create(
    ctx: typer.Context,
    column: Annotated[str, typer.Argument(help="The column to index.")],
    index_type: Annotated[str, typer.Argument(help="IVF_PQ, BTREE, INVERTED, …")],
    name: Annotated[
        str | None, typer.Option("--name", help="The index name (default: COLUMN_idx).")
    ] = None,
    filter: Annotated[
        str | None,
        typer.Option("--filter", "-f", help="Index only the leaves a scan with this filter reads."),
    ] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Rebuild an existing index.")] = False,
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param", "-p", help="KEY=VALUE for pylance (metric=cosine, num_partitions=16, …)."
        ),
    ] = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Build index NAME on COLUMN of every leaf, published in one __manifest commit."""
    ns = open_namespace(str(ctx.obj), storage_option)
    result = ns.create_index(
        column, index_type, name=name, filter=filter, replace=replace, **_params(param)
    )
    out = {
        "name": result.name,
        "manifest_version": result.version,
        "leaves_indexed": result.leaves_indexed,
        "leaves_flat": result.leaves_flat,
        "seconds": round(result.seconds, 3),
    }
    if json_output:
        print_json(out)
        return
    stdout().print(
        f"index {result.name!r}: {result.leaves_indexed} leaves indexed, {result.leaves_flat} "
        f"flat; {result.seconds:.1f} s: __manifest version {result.version}"
    )


@index_app.command("list")
def list_command(
    ctx: typer.Context,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """The indexes the namespace defines."""
    ns = open_namespace(str(ctx.obj), storage_option)
    found = ns.list_indices()
    if json_output:
        print_json(found)
        return
    rows = [
        [d["name"], d["index_type"], d["column"], json.dumps(d["params"]), value_text(d["filter"])]
        for d in found
    ]
    stdout().print(table(None, ["name", "type", "column", "params", "filter"], rows))


@index_app.command("stats")
def stats(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The index.")],
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Leaves indexed, flat or missing, and rows indexed or not, for index NAME."""
    ns = open_namespace(str(ctx.obj), storage_option)
    found = ns.index_stats(name)
    out = {
        "name": found.name,
        "index_type": found.index_type,
        "column": found.column,
        "leaves_indexed": found.leaves_indexed,
        "leaves_flat": found.leaves_flat,
        "leaves_missing": found.leaves_missing,
        "rows_indexed": found.rows_indexed,
        "rows_unindexed": found.rows_unindexed,
    }
    if json_output:
        print_json(out)
        return
    stdout().print(
        f"index {found.name!r} ({found.index_type} on {found.column}): leaves "
        f"{found.leaves_indexed} indexed, {found.leaves_flat} flat, {found.leaves_missing} "
        f"missing; rows {found.rows_indexed:,} indexed, {found.rows_unindexed:,} not"
    )


@index_app.command("drop")
def drop(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The index.")],
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Remove index NAME from every leaf and its definition."""
    ns = open_namespace(str(ctx.obj), storage_option)
    ns.drop_index(name)
    if json_output:
        print_json({"dropped": name, "manifest_version": ns.version})
        return
    stdout().print(f"dropped index {name!r}: __manifest version {ns.version}")


def _vector(text: str) -> Any:
    """``@file.npy`` (a 1-d array) or ``1.0,2.0,…``."""
    import numpy as np

    if text.startswith("@"):
        try:
            return np.load(text[1:]).reshape(-1)
        except (OSError, ValueError) as exc:
            raise typer.BadParameter(
                f"cannot read {text[1:]!r}: {exc}", param_hint="--vector"
            ) from exc
    try:
        return np.asarray([float(x) for x in text.split(",")], dtype=np.float32)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither @FILE.npy nor comma-separated numbers", param_hint="--vector"
        ) from None


@app.command("search")
def search_command(
    uri: UriArg,
    vector: Annotated[
        str | None,
        typer.Option("--vector", help="The query vector: @file.npy or comma-separated numbers."),
    ] = None,
    text: Annotated[str | None, typer.Option("--text", help="A full-text query.")] = None,
    column: Annotated[
        str | None,
        typer.Option("--column", help="The column to search (default: the indexed one)."),
    ] = None,
    k: Annotated[int, typer.Option("--k", "-k", min=1, help="Rows to return.")] = 10,
    filter: Annotated[
        str | None,
        typer.Option("--filter", "-f", help="SQL filter; prunes leaves, prefilters rows."),
    ] = None,
    columns: Annotated[
        str | None, typer.Option("--columns", "-c", help="Comma-separated columns to return.")
    ] = None,
    nprobes: Annotated[int | None, typer.Option("--nprobes", help="IVF partitions probed.")] = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """The top K rows nearest to --vector, matching --text, or both (RRF), across every leaf
    the filter keeps."""
    if vector is None and text is None:
        raise typer.BadParameter("give --vector, --text or both", param_hint="--vector")
    ns = open_namespace(uri, storage_option)
    found = ns.search(
        None if vector is None else _vector(vector),
        text=text,
        column=column,
        k=k,
        filter=filter,
        columns=None if columns is None else [c.strip() for c in columns.split(",")],
        nprobes=nprobes,
    )
    records = found.to_pylist()
    if json_output:
        print_json(records)
        return
    rows = [[value_text(record[name]) for name in found.column_names] for record in records]
    stdout().print(table(None, found.column_names, rows))
