"""``scripts/lance_dataset_calls.py``: the library opens Lance tables through ``open_leaf``
only (``manifest/datasets.py``), so that Lance's errors are mapped one way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "lance_dataset_calls.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


def test_the_library_opens_lance_tables_through_open_leaf_only() -> None:
    run = _run()
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("0 lance.dataset( calls outside")


def test_direct_calls_are_found_under_any_name(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "manifest").mkdir(parents=True)
    (package / "manifest" / "datasets.py").write_text("import lance\nlance.dataset('x')\n")
    (package / "a.py").write_text(
        '"""\n>>> lance.dataset("doc")\n"""\nimport lance as l\n\n\ndef f():\n'
        "    return l.dataset('x', version=1)\n"
    )
    (package / "b.py").write_text("from lance import dataset as ds\nds('y')\n")
    (package / "c.py").write_text("import lance.file\nlance.dataset('z')\n")
    run = _run(str(package))
    assert run.returncode == 1
    assert run.stdout.splitlines() == [
        "a.py:8: lance.dataset(",
        "b.py:2: lance.dataset(",
        "c.py:2: lance.dataset(",
        "3 lance.dataset( calls outside manifest/datasets.py (open_leaf)",
    ]
