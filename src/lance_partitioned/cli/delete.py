"""``delete URI --where SQL``: delete rows by predicate in one atomic commit."""

from __future__ import annotations

from typing import Annotated

import typer

from lance_partitioned.cli.app import DebugOpt, JsonOpt, StorageOpt, app, stdout
from lance_partitioned.cli.model import UriArg, open_namespace
from lance_partitioned.cli.render import human_count, print_json

__all__: list[str] = []


@app.command("delete")
def delete_command(
    uri: UriArg,
    where: Annotated[
        str,
        typer.Option(
            "--where",
            "-w",
            help="SQL over the namespace columns: the rows to delete, e.g. \"country = 'FR'\".",
        ),
    ],
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Delete the rows matching --where in one __manifest commit. Leaves whose partition
    values decide that every row matches are dropped without being read; others get Lance
    deletion files. Older versions keep the rows until a cleanup removes them."""
    ns = open_namespace(uri, storage_option)
    result = ns.delete(where)
    out = {
        "manifest_version": result.version,
        "rows_deleted": result.rows_deleted,
        "leaves_dropped": result.leaves_dropped,
        "leaves_rewritten": result.leaves_rewritten,
        "attempts": result.attempts,
        "seconds": round(result.seconds, 3),
    }
    if json_output:
        print_json(out)
        return
    stdout().print(
        f"deleted {human_count(result.rows_deleted)} rows: {result.leaves_dropped} leaves "
        f"dropped, {result.leaves_rewritten} with deletion files; {result.seconds:.1f} s: "
        f"__manifest version {result.version}"
    )
