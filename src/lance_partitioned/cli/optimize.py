"""``optimize URI``: compact the leaves (and the ``__manifest``) in one atomic commit."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from lance_partitioned.cli.app import DebugOpt, JsonOpt, StorageOpt, app, stderr, stdout
from lance_partitioned.cli.model import UriArg, open_namespace
from lance_partitioned.cli.render import human_bytes, human_count, print_json

__all__: list[str] = []


@app.command("optimize")
def optimize_command(
    uri: UriArg,
    filter: Annotated[
        str | None,
        typer.Option(
            "--filter",
            "-f",
            help="Compact only the leaves a scan with this SQL filter reads, e.g. "
            "\"ts >= TIMESTAMP '2025-01-01 00:00:00+00:00'\".",
        ),
    ] = None,
    target_rows: Annotated[
        int,
        typer.Option(
            "--target-rows-per-fragment", min=1, help="Merge smaller fragments up to this size."
        ),
    ] = 1_048_576,
    no_manifest: Annotated[
        bool, typer.Option("--no-manifest", help="Do not compact the __manifest table itself.")
    ] = False,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Compact small fragments of the selected leaves with Lance's compaction and publish
    them in one __manifest commit; concurrent writers lose nothing. Older versions stay
    readable until a cleanup removes them."""
    from lance_partitioned.cli.progress import leaves_progress

    ns = open_namespace(uri, storage_option)
    with leaves_progress(stderr(), disable=json_output) as bar:
        task = bar.add_task("compacting", total=None)

        def progress(report: Any) -> None:
            bar.update(task, completed=report.leaves_done, total=report.leaves_total)

        result = ns.optimize(
            filter,
            target_rows_per_fragment=target_rows,
            compact_manifest=not no_manifest,
            progress=progress,
        )
    out = {
        "manifest_version": result.version,
        "leaves_compacted": result.leaves_compacted,
        "leaves_skipped": result.leaves_skipped,
        "leaves_dropped": result.leaves_dropped,
        "fragments_before": result.fragments_before,
        "fragments_after": result.fragments_after,
        "rows": result.rows,
        "bytes_before": result.bytes_before,
        "bytes_after": result.bytes_after,
        "manifest_fragments_before": result.manifest_fragments_before,
        "manifest_fragments_after": result.manifest_fragments_after,
        "attempts": result.attempts,
        "seconds": round(result.seconds, 3),
    }
    if json_output:
        print_json(out)
        return
    selected = result.leaves_compacted + result.leaves_skipped
    stdout().print(
        f"compacted {result.leaves_compacted} of {selected} leaves "
        f"({human_count(result.rows)} rows): fragments {result.fragments_before:,} -> "
        f"{result.fragments_after:,}, data {human_bytes(result.bytes_before)} -> "
        f"{human_bytes(result.bytes_after)}; {result.leaves_dropped} empty leaves dropped; "
        f"__manifest fragments "
        f"{result.manifest_fragments_before} -> {result.manifest_fragments_after}; "
        f"{result.seconds:.1f} s: __manifest version {result.version}"
    )
