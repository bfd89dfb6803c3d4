"""``stats``: how rows and bytes spread over the partitions, and what that suggests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lance_partitioned.cli.app import DebugOpt, JsonOpt, StorageOpt, app, stdout
from lance_partitioned.cli.model import (
    AsOfOpt,
    FilterOpt,
    Leaf,
    UriArg,
    label,
    leaves,
    median,
    open_namespace,
    short_label,
)
from lance_partitioned.cli.render import bar, human_bytes, human_count, print_json, table

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["advice", "summary"]

#: Skew (largest over median) above which the spread of a partition spec is worth a look.
SKEW_ADVICE = 10.0
#: Many leaves with a median below this many rows: the spec is probably too fine.
SMALL_LEAF_ROWS = 10_000
SMALL_LEAF_COUNT = 100
#: The chart's width at most (the console's width when narrower).
CHART_WIDTH = 100


def _spread(values: Sequence[int]) -> dict[str, Any]:
    if not values:
        return {"min": 0, "median": 0.0, "max": 0, "skew": None}
    mid = median(values)
    return {
        "min": min(values),
        "median": mid,
        "max": max(values),
        "skew": None if mid == 0 else round(max(values) / mid, 2),
    }


def _brief(leaf: Leaf) -> dict[str, Any]:
    keys = "object_id spec_version values values_text rows bytes fragments small_fragments"
    return {key: leaf[key] for key in keys.split()}


def summary(found: Sequence[Leaf], top: int, min_small: int) -> dict[str, Any]:
    """The statistics of ``stats`` (its JSON output)."""
    by_rows = sorted(found, key=lambda leaf: (-leaf["rows"], label(leaf)))
    fragmented = [leaf for leaf in by_rows if leaf["small_fragments"] >= min_small]
    result: dict[str, Any] = {
        "leaves": len(found),
        "rows": sum(leaf["rows"] for leaf in found),
        "bytes": sum(leaf["bytes"] for leaf in found),
        "fragments": sum(leaf["fragments"] for leaf in found),
        "rows_per_leaf": _spread([leaf["rows"] for leaf in found]),
        "bytes_per_leaf": _spread([leaf["bytes"] for leaf in found]),
        "largest": [_brief(leaf) for leaf in by_rows[:top]],
        "smallest": [_brief(leaf) for leaf in reversed(by_rows[-top:])] if by_rows else [],
        "fragmented": [_brief(leaf) for leaf in fragmented],
        "small_fragments_threshold": min_small,
    }
    result["advice"] = advice(result)
    return result


def advice(stats: dict[str, Any]) -> list[str]:
    """What the statistics suggest, in words (no command is promised)."""
    out = []
    fragmented = stats["fragmented"]
    if fragmented:
        out.append(
            f"compact these {len(fragmented)} leaves: each holds "
            f"{stats['small_fragments_threshold']} or more small fragments, and rewriting "
            "them into fewer, larger fragments would make reads faster"
        )
    rows = stats["rows_per_leaf"]
    if stats["leaves"] >= 3 and rows["skew"] is not None and rows["skew"] > SKEW_ADVICE:
        out.append(
            f"the partitions are skewed: the largest holds {rows['skew']}x the median rows; "
            "a finer or hashed (bucket) partition field would spread the largest ones"
        )
    if stats["leaves"] >= SMALL_LEAF_COUNT and rows["median"] < SMALL_LEAF_ROWS:
        out.append(
            f"the partitions are small ({human_count(rows['median'])} rows at the median "
            f"over {stats['leaves']} leaves): a coarser partition spec would mean fewer, "
            "larger leaves and less per-leaf overhead"
        )
    return out or ["nothing to do: no skew and no fragmented leaves"]


def _leaf_table(title: str, items: Sequence[dict[str, Any]]) -> Table:
    rows = [
        [
            label(item),
            human_count(item["rows"]),
            human_bytes(item["bytes"]),
            f"{item['small_fragments']}/{item['fragments']}",
        ]
        for item in items
    ]
    columns: list[str | tuple[str, str]] = [
        "partition",
        ("rows", "right"),
        ("bytes", "right"),
        ("small/frags", "right"),
    ]
    return table(title, columns, rows)


def _chart(found: Sequence[Leaf], width: int, top: int) -> Table:
    """Rows per partition as horizontal bars (the ``top`` largest)."""
    from rich.table import Table
    from rich.text import Text

    chosen = sorted(found, key=lambda leaf: (-leaf["rows"], label(leaf)))[:top]
    most = max((leaf["rows"] for leaf in chosen), default=0)
    names = [short_label(leaf) for leaf in chosen]
    counts = [human_count(leaf["rows"]) for leaf in chosen]
    name_width = min(max((len(n) for n in names), default=0), max(12, width // 3))
    count_width = max((len(c) for c in counts), default=0)
    bar_width = max(5, width - name_width - count_width - 4)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, max_width=name_width, overflow="ellipsis")
    grid.add_column(no_wrap=True, width=bar_width)
    grid.add_column(justify="right", no_wrap=True)
    for name, count, leaf in zip(names, counts, chosen, strict=True):
        grid.add_row(name, Text(bar(leaf["rows"], most, bar_width), style="blue"), count)
    return grid


@app.command()
def stats(
    uri: UriArg,
    filter: FilterOpt = None,
    top: Annotated[
        int, typer.Option("--top", min=1, help="Leaves in each list and in the chart.")
    ] = 5,
    small_fragments: Annotated[
        int,
        typer.Option(
            "--small-fragments",
            min=1,
            help="Flag leaves with at least this many small fragments (under 1Mi rows).",
        ),
    ] = 8,
    as_of: AsOfOpt = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Rows and bytes per partition, skew, fragmented leaves, a bar chart, and advice."""
    ns = open_namespace(uri, storage_option, as_of)
    found = leaves(ns, filter)
    result = summary(found, top, small_fragments)
    if json_output:
        print_json(result)
        return
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    console = stdout()
    rows, size = result["rows_per_leaf"], result["bytes_per_leaf"]

    def skew(spread: dict[str, Any]) -> str:
        return "n/a" if spread["skew"] is None else f"{spread['skew']}x"

    overview = table(
        f"{result['leaves']} leaves, {human_count(result['rows'])} rows, "
        f"{human_bytes(result['bytes'])} in {result['fragments']} fragments",
        ["per leaf", ("min", "right"), ("median", "right"), ("max", "right"), ("skew", "right")],
        [
            [
                "rows",
                human_count(rows["min"]),
                human_count(rows["median"]),
                human_count(rows["max"]),
                skew(rows),
            ],
            [
                "bytes",
                human_bytes(size["min"]),
                human_bytes(size["median"]),
                human_bytes(size["max"]),
                skew(size),
            ],
        ],
    )
    parts: list[Any] = [overview, Text()]
    if found:
        parts += [Text(f"rows per partition (largest {top})", style="bold")]
        parts += [_chart(found, min(console.size.width, CHART_WIDTH), top), Text()]
        parts += [_leaf_table("largest", result["largest"]), Text()]
        parts += [_leaf_table("smallest", result["smallest"]), Text()]
    if result["fragmented"]:
        title = f"leaves with {small_fragments}+ small fragments"
        parts += [_leaf_table(title, result["fragmented"]), Text()]
    bullets = Table.grid(padding=(0, 1))
    bullets.add_column(no_wrap=True)
    bullets.add_column()
    for line in result["advice"]:
        bullets.add_row("-", line)  # wrapped lines stay indented under their bullet
    parts += [Text("advice", style="bold"), bullets]
    console.print(Group(*parts))
