"""The progress bars of ``write`` and ``optimize`` (on stderr, on a terminal only).

Imported by the commands when they run: Rich's progress module is not needed for ``--help``.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from lance_partitioned.cli.render import human_bytes, human_count

__all__ = ["leaves_progress", "rows_progress"]


class _RateColumn(ProgressColumn):
    """``12,345 rows/s`` or ``3.4 MiB/s``."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed or 0.0
        if self.what == "rows":
            value = task.completed
            text = f"{human_count(value / elapsed) if elapsed else 0} rows/s"
        else:
            value = task.fields.get("bytes", 0)
            text = f"{human_bytes(value / elapsed) if elapsed else '0 B'}/s"
        return Text(text, style="progress.data.speed")


def rows_progress(console: Console, disable: bool) -> Progress:
    """Rows written, rows and bytes per second, partitions, elapsed time (``write``)."""
    columns: list[ProgressColumn] = [
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed:,.0f} rows"),
        _RateColumn("rows"),
        _RateColumn("bytes"),
        TextColumn("{task.fields[partitions]} partitions"),
        TimeElapsedColumn(),
    ]
    return Progress(*columns, console=console, disable=disable or not console.is_terminal)


def leaves_progress(console: Console, disable: bool) -> Progress:
    """Leaves done of the total, elapsed time (``optimize``)."""
    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("leaves"),
        TimeElapsedColumn(),
    ]
    return Progress(*columns, console=console, disable=disable or not console.is_terminal)
