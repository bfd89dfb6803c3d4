"""MkDocs hook: the CLI reference page, generated from the command line itself.

At every build, ``cli-reference.md`` is made from the output of ``lance-partitioned --help``
and of ``--help`` of every command and subcommand, found by walking the Click group that
Typer builds from ``lance_partitioned.cli.app``. The page is never written to ``docs/``, so it
cannot drift from the CLI: a new command or option appears at the next build.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PAGE = "cli-reference.md"
PROG = "lance-partitioned"
WIDTH = "100"  # COLUMNS while rendering the help, so the page does not depend on the terminal

INTRO = """\
# CLI reference

The `--help` of every `lance-partitioned` command, generated from the command line itself at
each docs build. The [command line guide](cli.md) explains the commands with examples.
"""


def commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The command paths of a Click group, depth first in the order the CLI lists them."""
    yield path
    for name, command in getattr(group, "commands", {}).items():
        if not getattr(command, "hidden", False):
            yield from commands(command, (*path, name))


def help_text(path: tuple[str, ...]) -> str:
    """What ``lance-partitioned <path> --help`` prints, through the real entry point."""
    from lance_partitioned.cli import run

    out = io.StringIO()
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        with contextlib.redirect_stdout(out):
            code = run([*path, "--help"])
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    if code != 0:
        raise RuntimeError(f"{PROG} {' '.join(path)} --help exited with {code}")
    return out.getvalue().rstrip() + "\n"


def reference() -> str:
    """The Markdown of the CLI reference page."""
    import typer

    from lance_partitioned.cli import app

    parts = [INTRO]
    for path in commands(typer.main.get_command(app)):
        title = " ".join((PROG, *path))
        level = "#" * min(2 + max(len(path) - 1, 0), 4)
        parts.append(f"{level} `{title}`\n\n```text\n{help_text(path)}```\n")
    return "\n".join(parts)


def on_files(files: Any, config: Any) -> Any:
    """Add the generated page to the site (MkDocs event)."""
    from mkdocs.structure.files import File

    src = Path(config["config_file_path"]).parent / "src"
    if str(src) not in sys.path:
        sys.path.insert(0, str(src))  # the checkout's sources, as the tests use them
    files.append(File.generated(config, PAGE, content=reference()))
    return files
