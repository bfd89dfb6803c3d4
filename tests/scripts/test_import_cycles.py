"""``scripts/import_cycles.py``: no import cycle between the library's modules, counting the
imports inside functions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "import_cycles.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


def test_the_library_has_no_import_cycle() -> None:
    run = _run()
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("no import cycle")


def _package(root: Path, files: dict[str, str]) -> Path:
    package = root / "pkg"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


def test_a_function_level_import_closes_a_cycle(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "",
            "facade.py": "from pkg.engines import scan\n",
            "engines/__init__.py": "from .scan import Source\n",
            "engines/scan.py": "def open():\n    from ..facade import Facade\n",
            "leaf.py": "import pkg.facade\n",
        },
    )
    run = _run(str(package))
    assert run.returncode == 1
    assert "cycle of 3 modules" in run.stdout
    assert "pkg.engines.scan -> pkg.facade" in run.stdout
    assert "pkg.leaf" not in run.stdout


def test_type_checking_imports_and_parent_packages_are_no_cycle(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "__init__.py": "from pkg import a\n",
            "a.py": (
                "from typing import TYPE_CHECKING\nfrom pkg import b\n"
                "if TYPE_CHECKING:\n    from pkg.b import B\n"
            ),
            "b.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n"
            ),
        },
    )
    assert _run(str(package)).returncode == 0
    run = _run("--type-checking", str(package))
    assert run.returncode == 1
    assert "pkg.a -> pkg.b" in run.stdout
