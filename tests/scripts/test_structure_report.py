"""``scripts/structure_report.py``: the structure checks of the library in one table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "structure_report.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


def test_the_library_meets_the_structure_checks() -> None:
    run = _run()
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {
        line.split("|")[1].strip(): line.split("|")[2].strip()
        for line in run.stdout.splitlines()[2:]
    }
    assert len(rows) == 6
    assert rows["lance.dataset( calls outside open_leaf (manifest/datasets.py)"] == "0"
    cycles = next(value for check, value in rows.items() if check.startswith("import cycles"))
    assert cycles == "0"
    assert int(rows["lines of namespace.py"]) > 0
    assert rows["pointers outside the repository (scripts/outside_pointers.py)"] == "0"
    loose = next(value for check, value in rows.items() if check.startswith("loose modules"))
    assert int(loose) > 0


def test_a_direct_open_and_a_cycle_fail_the_report(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("import lance\nfrom pkg import b\nlance.dataset('x')\n")
    (package / "b.py").write_text("def f():\n    from pkg import a\n")
    run = _run(str(package))
    assert run.returncode == 1
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in run.stdout.splitlines()]
    assert ["lance.dataset( calls outside open_leaf (manifest/datasets.py)", "1", "0", "NO"] in rows
    cycles = next(row for row in rows if row[0].startswith("import cycles"))
    assert cycles[1:] == ["1", "0", "NO"]


def test_a_pointer_outside_the_repository_fails_the_report(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "loose.py").write_text("")
    design, up = "DESIGN" + ".md", ".." + "/shared/"  # not spelled out: this file is searched
    (package / "layout.py").write_text(f'"""The layout: see {up}{design}."""\n')
    (tmp_path / "README.md").write_text(f"The design: {design}.\n")
    run = _run(str(package), str(tmp_path))
    assert run.returncode == 1, run.stdout + run.stderr
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in run.stdout.splitlines()]
    pointers = next(row for row in rows if row[0].startswith("pointers outside"))
    assert pointers[1:] == ["2", "0", "NO"]
    loose = next(row for row in rows if row[0].startswith("loose modules"))
    assert loose[1] == "2"
