"""The entry points, the command list, usage errors and the error hierarchy's exit codes."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tests.cli.helpers import cli, console_script, one_line_error


def test_the_console_script_resolves_to_main() -> None:
    (script,) = entry_points(group="console_scripts", name="lance-partitioned")
    assert script.value == "lance_partitioned.cli:main"
    from lance_partitioned.cli import main

    assert script.load() is main


@pytest.mark.console_script
def test_help_lists_the_commands_and_no_stub_of_a_missing_operation() -> None:
    result = console_script("--help")
    assert result.code == 0, result.err
    listed = {
        line.split()[0] for line in result.out.split("Commands:")[1].splitlines() if line.strip()
    }
    assert listed == {
        "create",
        "describe",
        "partitions",
        "scan",
        "write",
        "evolve",
        "verify",
        "stats",
        "optimize",
        "history",
        "tag",
        "cleanup",
        "delete",
        "restore",
        "index",
        "search",
        "import",
        "convert",
        "export",
    }


def test_a_missing_path_is_one_line_with_exit_2(tmp_path: Path) -> None:
    missing = one_line_error(cli("describe", tmp_path / "nowhere"))
    assert "no partitioned namespace at" in missing
    assert "nowhere" in missing
    assert ".rs:" not in missing  # Lance's Rust source locations are cut


def test_usage_errors_are_one_line_with_exit_2(tmp_path: Path) -> None:
    unknown = one_line_error(cli("frobnicate", tmp_path))
    assert "No such command 'frobnicate'" in unknown
    option = one_line_error(cli("describe", tmp_path, "--storage-option", "novalue"))
    assert "'novalue' is not KEY=VALUE" in option
    missing_argument = one_line_error(cli("describe"))
    assert "Missing argument" in missing_argument
    nothing = cli()  # no command at all: the help, on stderr, with its line breaks
    assert nothing.code == 2
    assert nothing.out == ""
    assert nothing.err.startswith("Usage: lance-partitioned [OPTIONS] COMMAND")
    assert "\n  verify " in nothing.err


def test_not_a_partitioned_namespace(tmp_path: Path) -> None:
    import lance
    import pyarrow as pa

    lance.write_dataset(pa.table({"object_id": ["x"]}), str(tmp_path / "__manifest"))
    line = one_line_error(cli("partitions", tmp_path))
    assert "not a partitioned namespace" in line


@pytest.mark.console_script
def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    result = console_script("describe", tmp_path / "nowhere", "--debug")
    assert result.code == 2
    assert "Traceback (most recent call last)" in result.err
    assert "NamespaceNotFoundError" in result.err
    assert result.err.strip().splitlines()[-1].startswith("lance-partitioned: error: ")
