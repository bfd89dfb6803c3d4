"""``history`` and ``tag``: the ``__manifest`` versions with what each commit did, and the
tags that name versions (see :mod:`lance_partitioned.history`)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lance_partitioned.cli.app import DebugOpt, JsonOpt, StorageOpt, app, stdout
from lance_partitioned.cli.model import UriArg, open_namespace
from lance_partitioned.cli.render import human_count, print_json, table

if TYPE_CHECKING:
    from lance_partitioned.history import Tag

__all__ = ["history", "tag_app"]


def _stamp(value: dt.datetime | None) -> str:
    """A commit time for a table: UTC, to the second.

    >>> _stamp(dt.datetime(2025, 1, 5, 10, 30, 5, 123, tzinfo=dt.timezone.utc))
    '2025-01-05 10:30:05'
    """
    if value is None:
        return "unknown"
    return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _count(value: int | None) -> str:
    return "" if value is None else human_count(value)


@app.command()
def history(
    uri: UriArg,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=1, help="Show only the latest N versions."),
    ] = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Every __manifest version, newest first: when, which operation, rows added, removed
    and updated, leaves touched, tags."""
    ns = open_namespace(uri, storage_option)
    found = ns.versions().to_pylist()
    found.reverse()
    total = len(found)
    if limit is not None:
        found = found[:limit]
    if json_output:
        print_json([{**row, "properties": dict(row["properties"])} for row in found])
        return
    from rich.table import Table
    from rich.text import Text

    out = Table(show_edge=False, pad_edge=False)
    out.add_column("version", justify="right", no_wrap=True)
    out.add_column("committed (UTC)", no_wrap=True)
    out.add_column("operation", overflow="fold")
    out.add_column("+rows", justify="right", no_wrap=True)
    out.add_column("-rows", justify="right", no_wrap=True)
    out.add_column("~rows", justify="right", no_wrap=True)
    out.add_column("leaves", justify="right", no_wrap=True)
    for row in found:
        what = Text(row["operation"] or "(another client)")
        if row["mode"]:
            what.append(f" {row['mode']}")
        if row["tags"]:
            noun = "tag" if len(row["tags"]) == 1 else "tags"
            what.append(f" ({noun} {', '.join(row['tags'])})", style="cyan")
        out.add_row(
            str(row["version"]),
            _stamp(row["timestamp"]),
            what,
            _count(row["rows_added"]),
            _count(row["rows_removed"]),
            _count(row["rows_updated"]),
            _count(row["partitions_touched"]),
        )
    console = stdout()
    console.print(out)
    shown = f"the latest {len(found)} of {total}" if len(found) < total else f"{total}"
    console.print(
        f"{shown} versions; +rows added, -rows removed, ~rows updated; blank: not recorded"
    )


tag_app = typer.Typer(
    help="Name __manifest versions: a tag keeps its version readable (open(version=TAG)).",
    no_args_is_help=True,
)
app.add_typer(tag_app, name="tag")


@tag_app.callback()
def tag(ctx: typer.Context, uri: UriArg) -> None:
    """Tags of the namespace at URI: tag URI create NAME, tag URI delete NAME, tag URI list."""
    ctx.obj = uri


def _tag_json(found: Tag) -> dict[str, Any]:
    return {"name": found.name, "version": found.version, "created_at": found.created_at}


def _moment(text: str) -> dt.datetime:
    """An ISO 8601 time (``2025-01-05``, ``2025-01-05T10:00:00+01:00``; no zone: UTC).

    >>> _moment("2025-01-05T10:00")
    datetime.datetime(2025, 1, 5, 10, 0)
    """
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not an ISO 8601 time such as 2025-01-05T10:00:00+00:00",
            param_hint="--at",
        ) from None


@tag_app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The tag: ASCII letters, digits, '.', '-', '_'.")],
    version: Annotated[
        int | None,
        typer.Option("--version", help="The __manifest version to tag (default: the latest)."),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(
            "--at", help="Tag the latest version committed at or before this ISO time (UTC)."
        ),
    ] = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Create tag NAME for the latest version, --version N or the version current --at TIME."""
    if version is not None and at is not None:
        raise typer.BadParameter("give --version or --at, not both", param_hint="--at")
    ns = open_namespace(str(ctx.obj), storage_option)
    made = ns.tags.create(name, version=_moment(at) if at is not None else version)
    if json_output:
        print_json(_tag_json(made))
        return
    stdout().print(f"tagged __manifest version {made.version} as {made.name!r}")


@tag_app.command("delete")
def delete(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="The tag to delete.")],
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Delete tag NAME (its version stays until a cleanup removes it)."""
    ns = open_namespace(str(ctx.obj), storage_option)
    ns.tags.delete(name)
    if json_output:
        print_json({"deleted": name})
        return
    stdout().print(f"deleted tag {name!r}")


@tag_app.command("list")
def list_tags(
    ctx: typer.Context,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Every tag with the version it names and when it was created."""
    ns = open_namespace(str(ctx.obj), storage_option)
    found = list(ns.tags.list().values())
    if json_output:
        print_json([_tag_json(t) for t in found])
        return
    console = stdout()
    rows = [[t.name, str(t.version), _stamp(t.created_at)] for t in found]
    console.print(table(None, ["tag", ("version", "right"), "created (UTC)"], rows))
    console.print(f"{len(found)} tag{'' if len(found) == 1 else 's'}")
