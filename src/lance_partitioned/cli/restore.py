"""``restore``: make the rows of an earlier version the current ones, in a new commit."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import typer

from lance_partitioned.cli.app import DebugOpt, JsonOpt, StorageOpt, app, stdout
from lance_partitioned.cli.model import UriArg, open_namespace
from lance_partitioned.cli.render import human_count, print_json

__all__ = ["restore"]


def version_like(text: str, tags: object) -> int | str | dt.datetime:
    """``VERSION|TAG|DATETIME``: digits are a version number, a tag's name that tag, anything
    else an ISO 8601 time (no zone: UTC).

    >>> version_like("3", {}), version_like("good", {"good": 1})
    (3, 'good')
    >>> version_like("2025-01-05T10:00:00+01:00", {})
    datetime.datetime(2025, 1, 5, 10, 0, tzinfo=datetime.timezone(datetime.timedelta(seconds=3600)))
    """
    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    if isinstance(tags, dict) and stripped in tags:
        return stripped
    try:
        return dt.datetime.fromisoformat(stripped)
    except ValueError:
        return stripped  # a tag name: an unknown one is a typed error naming the tags


@app.command()
def restore(
    uri: UriArg,
    version: Annotated[
        str,
        typer.Argument(
            metavar="VERSION|TAG|DATETIME",
            help="A __manifest version number, a tag, or an ISO time (the version current "
            "then; no zone: UTC).",
        ),
    ],
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Restore the rows of an earlier version, in a new commit (the versions in between stay)."""
    ns = open_namespace(uri, storage_option)
    result = ns.restore(version_like(version, ns.tags.list()))
    if json_output:
        print_json(
            {
                "manifest_version": result.version,
                "restored_version": result.restored_version,
                "rows": result.rows,
                "partitions_written": result.partitions_written,
                "partitions_removed": result.partitions_removed,
                "seconds": round(result.seconds, 3),
            }
        )
        return
    stdout().print(
        f"restored the rows of __manifest version {result.restored_version}: "
        f"{human_count(result.rows)} rows in {result.partitions_written} partitions, "
        f"__manifest version {result.version}"
    )
