"""Fixtures of the command-line tests: namespaces built with the Python API."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import Result, build, run_here


class Here:
    """``here("scan", root, ...)`` runs the command line in-process (see ``run_here``)."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys

    def __call__(self, *args: str | Path) -> Result:
        return run_here(self.capsys, *args)


@pytest.fixture
def here(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Here:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return Here(capsys)


@pytest.fixture(scope="module")
def namespace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A namespace the tests of one module only read (do not change it)."""
    root = tmp_path_factory.mktemp("cli") / "events"
    build(root)
    return root
