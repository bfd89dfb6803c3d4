"""List the calls that open a Lance table directly instead of through ``manifest.open_leaf``.

A direct call is ``lance.dataset(...)`` (``lance`` imported under any name) or a call of
``dataset`` imported ``from lance import dataset`` (under any name). The module that defines
:func:`~lance_partitioned.manifest.datasets.open_leaf` (``manifest/datasets.py``) is the one
place allowed to make it, so that every caller sees Lance's errors mapped one way. Examples in
docstrings are text, not calls, and do not count.

Usage: ``python scripts/lance_dataset_calls.py [package_dir]``; prints each call and its total,
and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "lance_partitioned"
ALLOWED = Path("manifest") / "datasets.py"


def _names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names ``lance`` is bound to, and those bound to ``lance.dataset`` itself."""
    modules: set[str] = set()
    functions: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "lance":
                    modules.add(alias.asname or "lance")
                elif alias.name.startswith("lance.") and alias.asname is None:
                    modules.add("lance")
        elif isinstance(node, ast.ImportFrom) and node.module == "lance" and node.level == 0:
            for alias in node.names:
                if alias.name == "dataset":
                    functions.add(alias.asname or "dataset")
    return modules, functions


def direct_calls(path: Path) -> list[int]:
    """The line of every direct ``lance.dataset`` call in the file at ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    modules, functions = _names(tree)
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "dataset"
            and isinstance(func.value, ast.Name)
            and func.value.id in modules
        ) or (isinstance(func, ast.Name) and func.id in functions):
            lines.append(node.lineno)
    return sorted(lines)


def calls_outside(package_dir: Path) -> list[tuple[str, int]]:
    """``(file, line)`` of every direct call under ``package_dir`` outside ``open_leaf``'s
    module, the file relative to ``package_dir``."""
    found = []
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(package_dir)
        if relative == ALLOWED:
            continue
        found.extend((relative.as_posix(), line) for line in direct_calls(path))
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("package_dir", nargs="?", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    found = calls_outside(args.package_dir)
    for name, line in found:
        print(f"{name}:{line}: lance.dataset(")
    print(f"{len(found)} lance.dataset( calls outside manifest/datasets.py (open_leaf)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
