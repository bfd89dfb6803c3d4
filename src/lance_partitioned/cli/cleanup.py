"""``cleanup``: remove what no retained version needs (see
:mod:`lance_partitioned.maintenance.cleanup`)."""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING, Annotated

import typer

from lance_partitioned.cli.app import (
    EXIT_OK,
    DebugOpt,
    JsonOpt,
    StorageOpt,
    UsageError,
    app,
    stderr,
    stdout,
)
from lance_partitioned.cli.model import UriArg, open_namespace
from lance_partitioned.cli.render import human_bytes, print_json, table

if TYPE_CHECKING:
    from lance_partitioned.maintenance.cleanup import CleanupProgress

__all__ = ["parse_duration"]

_UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)([wdhms]))")


def parse_duration(text: str) -> dt.timedelta:
    """A retention such as ``7d``, ``12h``, ``1d12h``, ``90m``, ``2w``, ``30s`` or ``0``.

    >>> parse_duration("7d"), parse_duration("1d12h"), parse_duration("0")
    (datetime.timedelta(days=7), datetime.timedelta(days=1, seconds=43200), datetime.timedelta(0))
    >>> parse_duration("999999999w")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lance_partitioned.cli.app.UsageError: --older-than '999999999w' is longer than a calendar ...
    >>> parse_duration("7 days")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lance_partitioned.cli.app.UsageError: --older-than '7 days' is not a duration like 7d, ...
    """
    compact = text.strip().lower()
    if compact == "0":
        return dt.timedelta(0)
    parts = _DURATION.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise UsageError(
            f"--older-than {text!r} is not a duration like 7d, 12h, 1d12h, 90m, 30s or 0"
        )
    try:
        return dt.timedelta(seconds=sum(float(n) * _UNITS[u] for n, u in parts))
    except OverflowError as exc:
        raise UsageError(f"--older-than {text!r} is longer than a calendar can count") from exc


def _count(number: int, noun: str, plural: str | None = None) -> str:
    """``1 leaf``, ``2 leaves``.

    >>> _count(1, "leaf", "leaves"), _count(2, "leaf", "leaves"), _count(0, "version")
    ('1 leaf', '2 leaves', '0 versions')
    """
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


@app.command("cleanup")
def cleanup_command(
    uri: UriArg,
    older_than: Annotated[
        str,
        typer.Option(
            "--older-than",
            help="Retention: keep every version current within it and everything younger "
            "(7d, 12h, 90m, 0).",
        ),
    ] = "7d",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what would be removed; remove nothing.")
    ] = False,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> int:
    """Remove old __manifest versions, leaf versions no kept version reads, dropped leaf
    directories and files of writers that never committed, once older than --older-than;
    first roll back the leaves that an interrupted write left ahead of their read_version.
    Tagged versions and the latest always stay. Safe while others write, as long as no
    writer runs longer than the retention."""
    retention = parse_duration(older_than)
    ns = open_namespace(uri, storage_option)
    progress = None
    console = stderr()
    if not json_output and console.is_terminal:

        def progress(report: CleanupProgress) -> None:
            console.print(f"leaf {report.leaves_done}/{report.leaves_total}", end="\r")

    result = ns.cleanup(retention, dry_run=dry_run, progress=progress)
    if progress is not None:
        console.print(" " * 24, end="\r")
    kinds = {
        "manifest_versions": result.manifest_versions,
        "leaf_versions": result.leaf_versions,
        "leaf_directories": result.leaf_directories,
        "staged_files": result.staged_files,
    }
    if json_output:
        print_json(
            {
                "dry_run": result.dry_run,
                "cutoff": result.cutoff.isoformat(),
                "removed": {
                    name: {"count": r.count, "files": r.files, "bytes": r.bytes}
                    for name, r in kinds.items()
                },
                "files": result.files,
                "bytes": result.bytes,
                "kept_manifest_versions": list(result.kept_manifest_versions),
                "removed_manifest_versions": list(result.removed_manifest_versions),
                "kept_leaf_versions": result.kept_leaf_versions,
                "leaves": result.leaves,
                "rolled_back": list(result.rolled_back),
            }
        )
        return EXIT_OK
    verb = "would remove" if dry_run else "removed"
    rows = [
        [name.replace("_", " "), str(r.count), str(r.files), human_bytes(r.bytes)]
        for name, r in kinds.items()
    ]
    rows.append(["total", "", str(result.files), human_bytes(result.bytes)])
    out = stdout()
    out.print(
        f"cleanup of {ns.uri} (older than {result.cutoff:%Y-%m-%d %H:%M:%S} UTC"
        f"{', dry run' if dry_run else ''}): {verb} {result.files} files, "
        f"{human_bytes(result.bytes)}"
    )
    out.print(
        table(None, ["kind", ("count", "right"), ("files", "right"), ("size", "right")], rows)
    )
    kept = result.kept_manifest_versions
    listed = ", ".join(map(str, kept[:10])) + (", …" if len(kept) > 10 else "")
    leaf_versions = _count(result.kept_leaf_versions, "leaf version")
    out.print(
        f"kept {_count(len(kept), '__manifest version')} ({listed}) and {leaf_versions} "
        f"of {_count(result.leaves, 'leaf', 'leaves')}"
    )
    if result.rolled_back:
        leaves = _count(len(result.rolled_back), "leaf", "leaves")
        out.print(
            f"{'would roll' if dry_run else 'rolled'} back {leaves} over the versions an "
            f"interrupted write left: {', '.join(result.rolled_back)}"
        )
    return EXIT_OK
