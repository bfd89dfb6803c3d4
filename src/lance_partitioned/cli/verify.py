"""``verify``: an fsck of a namespace (see :mod:`lance_partitioned.verify`)."""

from __future__ import annotations

from typing import Annotated

import typer

from lance_partitioned.cli.app import (
    EXIT_OK,
    EXIT_PROBLEMS,
    DebugOpt,
    JsonOpt,
    StorageOpt,
    app,
    stdout,
    storage_options,
)
from lance_partitioned.cli.model import AsOfOpt, UriArg, as_of_version
from lance_partitioned.cli.render import human_bytes, human_count, print_json, table

__all__: list[str] = []


def _count(number: int, noun: str) -> str:
    """``1 problem``, ``2 problems``.

    >>> _count(1, "problem"), _count(2, "directory")
    ('1 problem', '2 directories')
    """
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{number} {noun if number == 1 else plural}"


@app.command("verify")
def verify_command(
    uri: UriArg,
    sample: Annotated[
        int, typer.Option("--sample", min=0, help="Rows read per leaf to re-check its values.")
    ] = 1000,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Roll the leaves of interrupted writes back to their read_version, as the "
            "next write would (removes nothing; safe while others write).",
        ),
    ] = False,
    as_of: AsOfOpt = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> int:
    """Check the namespace: leaves open at their read_version, schemas, partition values,
    names, metadata JSON; list orphan directories. Exit 1 when a problem is found (one that
    --repair repaired does not count)."""
    from lance_partitioned.verify import verify

    if repair and as_of is not None:
        raise typer.BadParameter(
            "--repair repairs the latest __manifest version: not with --as-of",
            param_hint="--repair",
        )
    storage = storage_options(storage_option)
    report = verify(
        uri,
        storage,
        sample_rows=sample,
        repair=repair,
        version=as_of_version(uri, storage, as_of),
    )
    code = EXIT_OK if report.healthy else EXIT_PROBLEMS
    orphans = report.orphans
    if json_output:
        print_json(
            {
                "healthy": report.healthy,
                "manifest_version": report.version,
                "leaves": report.leaves,
                "rows_sampled": report.rows_sampled,
                "problems": [
                    {"kind": p.kind, "object_id": p.object_id, "message": p.message}
                    for p in report.problems
                ],
                "orphans": None
                if orphans is None
                else [{"location": o.location, "bytes": o.bytes} for o in orphans],
                "repaired": [
                    {"kind": p.kind, "object_id": p.object_id, "message": p.message}
                    for p in report.repaired
                ],
                "indexes": [
                    {"kind": p.kind, "object_id": p.object_id, "message": p.message}
                    for p in report.indexes
                ],
            }
        )
        return code
    console = stdout()
    console.print(
        f"checked __manifest version {report.version}: {report.leaves} leaves, "
        f"{human_count(report.rows_sampled)} rows sampled"
    )
    if report.problems:
        rows = [[p.kind, p.object_id or "(table metadata)", p.message] for p in report.problems]
        title = _count(len(report.problems), "problem")
        console.print(table(title, ["kind", "object", "problem"], rows))
    if report.repaired:
        rows = [[p.kind, p.object_id or "", p.message] for p in report.repaired]
        title = f"{_count(len(report.repaired), 'problem')} repaired (leaves rolled back)"
        console.print(table(title, ["kind", "object", "problem"], rows))
    if report.indexes:
        rows = [[p.kind, p.object_id or "", p.message] for p in report.indexes]
        count = _count(len(report.indexes), "index finding")
        title = f"{count}: leaves not as defined (not problems)"
        console.print(table(title, ["kind", "object", "finding"], rows))
    if orphans:
        rows = [[o.location, human_bytes(o.bytes)] for o in orphans]
        title = f"{_count(len(orphans), 'directory')} that no leaf references (not problems)"
        console.print(table(title, ["directory", ("size", "right")], rows))
    elif orphans is None and as_of is not None:
        console.print("orphan directories: listed for the latest __manifest version only")
    elif orphans is None:
        console.print("orphan directories: not listed (the root is not a local directory)")
    console.print(
        "healthy" if report.healthy else f"{_count(len(report.problems), 'problem')} found",
        style="green" if report.healthy else "red",
    )
    return code
