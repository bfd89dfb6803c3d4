"""The CLI reference page is generated from the command line itself (docs/hooks)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import typer

from lance_partitioned.cli import app

ROOT = Path(__file__).resolve().parents[2]


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "cli_reference_hook", ROOT / "docs" / "hooks" / "cli_reference.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_command_and_subcommand_has_a_section() -> None:
    hook = _hook()
    page = hook.reference()
    group = typer.main.get_command(app)
    names = [" ".join(("lance-partitioned", *p)) for p in hook.commands(group)]
    assert "lance-partitioned scan" in names
    assert "lance-partitioned evolve add-column" in names
    subcommands = sum(
        len(command.commands)
        for command in group.commands.values()
        if isinstance(command, typer.core.TyperGroup)
    )
    assert len(names) == 1 + len(group.commands) + subcommands
    for name in names:
        assert f"`{name}`" in page, name
    assert "--storage-option KEY=VALUE" in page


@pytest.mark.console_script  # runs the installed lance-partitioned in a new interpreter
def test_a_section_is_what_the_console_script_prints(tmp_path: Path) -> None:
    hook = _hook()
    printed = subprocess.run(
        [str(Path(sys.executable).parent / "lance-partitioned"), "partitions", "--help"],
        env={**os.environ, "COLUMNS": hook.WIDTH},
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert printed.rstrip() + "\n" == hook.help_text(("partitions",))
    assert f"```text\n{hook.help_text(('partitions',))}```" in hook.reference()


def test_sphinx_roles_are_shown_as_code() -> None:
    spec = importlib.util.spec_from_file_location(
        "sphinx_roles_hook", ROOT / "docs" / "hooks" / "sphinx_roles.py"
    )
    assert spec is not None
    assert spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    html = ":class:<code>~a.b.C</code> and :meth:<code>open</code>, :not-a-role:<code>x</code>"
    assert (
        hook.strip_roles(html) == "<code>C</code> and <code>open</code>, :not-a-role:<code>x</code>"
    )


def test_the_synopsis_of_the_cli_guide_matches_the_cli() -> None:
    # docs/cli.md opens with a hand-written one-line synopsis per command: every command,
    # subcommand and option of the CLI is in it, and it names no option the CLI lacks
    from typer.core import TyperOption

    guide = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    synopsis = guide.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    shared = {"--json", "--storage-option", "--debug", "--help"}
    group = typer.main.get_command(app)
    assert len(synopsis) == len(group.commands)
    for name, command in group.commands.items():
        (line,) = [s for s in synopsis if s.startswith(f"lance-partitioned {name} ")]
        commands = [command, *getattr(command, "commands", {}).values()]
        options = {
            o
            for c in commands
            for p in c.params
            if isinstance(p, TyperOption)
            for o in p.opts
            if o.startswith("--")
        } - shared
        assert set(re.findall(r"--[a-z][a-z-]*", line)) == options, line
        for subcommand in getattr(command, "commands", {}):
            assert f" {subcommand} " in f"{line} ", (line, subcommand)
