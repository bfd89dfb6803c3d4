"""Fixtures of the command-line tests: namespaces built with the Python API.

The tests run the command line in this process (``tests.cli.helpers.cli``, through Typer's
``CliRunner``); the few marked ``console_script`` run the real ``lance-partitioned`` script in
a subprocess (``tests.cli.helpers.console_script``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import build


@pytest.fixture(scope="module")
def namespace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A namespace the tests of one module only read (do not change it)."""
    root = tmp_path_factory.mktemp("cli") / "events"
    build(root)
    return root
