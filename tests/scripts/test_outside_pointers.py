"""``scripts/outside_pointers.py``: no file of the repository points to a place a clone does
not have (a design document or a spec in the folder next to the repository)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "outside_pointers.py"
# not spelled out: this file is searched too
DESIGN = "DESIGN" + ".md"
SHARED = "/work" + "/shared/"
UP = ".." + "/shared/"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


def test_the_repository_points_nowhere_outside_itself() -> None:
    run = _run()
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("0 pointers outside the repository")


def test_each_kind_of_pointer_is_found_and_hidden_folders_are_not_read(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "spec.md").write_text(f"See {DESIGN}, section 3.\n")
    (tmp_path / "mod.py").write_text(f"# the format: {UP}spec/000.txt\nx = 1\n")
    (tmp_path / "test").write_text(f"#!/bin/sh\ncat {SHARED}notes\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "a.py").write_text(f"# {DESIGN}\n")
    (tmp_path / "design.md").write_text("Our own design, in the repository.\n")
    (tmp_path / "blob.bin").write_bytes(bytes([0xFF, 0xFE, 0x00]) + DESIGN.encode())
    run = _run(str(tmp_path))
    assert run.returncode == 1
    assert run.stdout.splitlines() == [
        f"docs/spec.md:1: {DESIGN}",
        f"mod.py:1: {UP}",
        f"test:2: {SHARED}",
        "3 pointers outside the repository",
    ]
