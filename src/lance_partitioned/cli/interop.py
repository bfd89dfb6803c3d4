"""``import SRC DST`` and ``export URI DST``: data in from Hive trees, Lance, Delta and
Iceberg tables, data out as a Hive Parquet tree, a Delta table or one Lance dataset
(:mod:`lance_partitioned.interop`); ``convert URI --to DIALECT``: the partition specs
rewritten in the other dialect (:mod:`lance_partitioned.convert`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from lance_partitioned.cli.app import (
    DebugOpt,
    JsonOpt,
    StorageOpt,
    app,
    stderr,
    stdout,
    storage_options,
)
from lance_partitioned.cli.model import UriArg
from lance_partitioned.cli.render import human_count, print_json

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

__all__: list[str] = []


@app.command("import")
def import_command(
    src: Annotated[
        str,
        typer.Argument(
            help="A Hive-style tree of Parquet, CSV or JSON files, a Lance dataset, a Delta "
            "table, or an Iceberg table (its metadata JSON file or table directory)."
        ),
    ],
    dst: Annotated[str, typer.Argument(help="The namespace root (created when absent).")],
    partition_by: Annotated[
        str | None,
        typer.Option(
            "--partition-by",
            help="The partition spec of a new namespace (default: the source's partitioning).",
        ),
    ] = None,
    format: Annotated[
        str,
        typer.Option("--format", help="hive, spec001, lance, delta, iceberg or auto (detected)."),
    ] = "auto",
    commit_rows: Annotated[
        int,
        typer.Option(
            "--commit-rows",
            min=1,
            help="Commit the source's files in groups of about this many rows.",
        ),
    ] = 4_000_000,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    source_option: Annotated[
        list[str] | None,
        typer.Option(
            "--source-option",
            metavar="KEY=VALUE",
            help="A storage option of an object-store SRC (repeatable), e.g. aws_region=us-east-1.",
        ),
    ] = None,
    debug: DebugOpt = False,
) -> None:
    """Import SRC into the partitioned namespace DST, streamed, one commit per group of
    source files. Resumable: the files done are recorded in the same commit as their rows,
    so the same command run again after a failure finishes without duplicates."""
    from lance_partitioned.interop import import_

    with _units_progress(stderr(), disable=json_output) as bar:
        task = bar.add_task("importing", total=None, rows=0)

        def progress(report: Any) -> None:
            bar.update(
                task, completed=report.units_done, total=report.units_total, rows=report.rows
            )

        result = import_(
            src,
            dst,
            partition_by=partition_by,
            format=format,
            storage_options=storage_options(storage_option),
            source_options=storage_options(source_option),
            progress=progress,
            commit_rows=commit_rows,
        )
    out = {
        "manifest_version": result.version,
        "rows": result.rows,
        "units": result.units,
        "units_skipped": result.units_skipped,
        "commits": result.commits,
        "partition_by": result.partition_by,
        "seconds": round(result.seconds, 3),
    }
    if json_output:
        print_json(out)
        return
    skipped = f", {result.units_skipped} already imported" if result.units_skipped else ""
    stdout().print(
        f"imported {human_count(result.rows)} rows from {result.units} files{skipped} in "
        f"{result.commits} commits (version {result.version}, {result.seconds:.1f}s)"
    )


def _units_progress(console: Console, disable: bool, units: bool = True) -> Progress:
    """Source files done of the total (``units``), rows, elapsed time."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns: list[ProgressColumn] = [SpinnerColumn(), TextColumn("{task.description}")]
    if units:
        columns += [BarColumn(), MofNCompleteColumn(), TextColumn("files,")]
    columns += [TextColumn("{task.fields[rows]:,} rows"), TimeElapsedColumn()]
    return Progress(
        *columns,
        console=console,
        disable=disable or not console.is_terminal,
    )


@app.command("export")
def export_command(
    uri: UriArg,
    dst: Annotated[str, typer.Argument(help="A new (or empty) destination directory.")],
    to: Annotated[
        str,
        typer.Option("--to", help="parquet (a Hive tree), delta or lance."),
    ] = "parquet",
    filter: Annotated[
        str | None,
        typer.Option("--filter", "-f", help="Export only the rows matching this SQL filter."),
    ] = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Export the rows of the namespace at URI (matching --filter) to DST: a Hive Parquet tree
    or a Delta table partitioned by the identity partition columns, or one Lance dataset."""
    from lance_partitioned.interop import export

    with _units_progress(stderr(), disable=json_output, units=False) as bar:
        task = bar.add_task("exporting", total=None, rows=0)

        def progress(report: Any) -> None:
            bar.update(task, rows=report.rows)

        result = export(
            uri,
            dst,
            to=to,  # type: ignore[arg-type]
            filter=filter,
            storage_options=storage_options(storage_option),
            progress=progress,
        )
    out = {
        "destination": result.uri,
        "to": result.to,
        "rows": result.rows,
        "partition_by": result.partition_by,
        "seconds": round(result.seconds, 3),
    }
    if json_output:
        print_json(out)
        return
    by = f" partitioned by {', '.join(result.partition_by)}" if result.partition_by else ""
    stdout().print(
        f"exported {human_count(result.rows)} rows to {result.uri} ({result.to}{by}, "
        f"{result.seconds:.1f}s)"
    )


@app.command("convert")
def convert_command(
    uri: UriArg,
    to: Annotated[
        str,
        typer.Option("--to", help="published (the text merged upstream) or spec000."),
    ],
    no_rebucket: Annotated[
        bool,
        typer.Option(
            "--no-rebucket",
            help="Refuse, listing them, bucket fields with leaves, instead of re-bucketing "
            "their leaves (the dialects' bucket hashes differ).",
        ),
    ] = False,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Rewrite every partition spec version of the namespace at URI, and its __manifest
    partition columns, in the dialect --to; every version before stays readable."""
    from lance_partitioned.cli.model import open_namespace

    ns = open_namespace(uri, storage_option)
    before = ns.version
    result = ns.convert(to, rebucket=not no_rebucket)
    out = {
        "dialect": result.dialect,
        "manifest_version": result.version,
        "changed": result.version != before,
        "columns": result.columns,
        "rows": result.rows,
        "rebucketed_leaves": result.rebucketed,
    }
    if json_output:
        print_json(out)
        return
    if not out["changed"]:
        stdout().print(f"already {result.dialect}: __manifest version {result.version}")
        return
    moved = ", ".join(f"{a} -> {b}" for a, b in result.columns.items()) or "no columns"
    stdout().print(
        f"converted to {result.dialect} ({moved}; {result.rows} __manifest rows; "
        f"{result.rebucketed} leaves re-bucketed): "
        f"__manifest version {result.version}"
    )
