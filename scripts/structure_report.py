"""Print the structure checks of the "house a newcomer can live in" issue in one table.

The checks, each computed from the source by the script named (an AST walk, nothing run):

- import cycles between the modules of ``src/lance_partitioned``, function-level imports
  counted (``scripts/import_cycles.py``); target 0;
- ``isinstance`` dispatches on predicate nodes outside the one visitor
  (``scripts/predicate_dispatch.py``), with how many of them only test the constants;
- the lines of ``namespace.py``, the facade;
- direct ``lance.dataset(`` calls outside ``manifest/datasets.py``, the module of
  ``open_leaf`` (``scripts/lance_dataset_calls.py``); target 0;
- the loose modules: those at the top of the package, beside its subpackages;
- pointers from a file of the repository to a place outside it, a design document or a
  spec that a clone does not have (``scripts/outside_pointers.py``); target 0.

Usage: ``python scripts/structure_report.py [package_dir [repo_dir]]``; ``repo_dir`` (the
files searched for pointers outside) is this repository when ``package_dir`` is not given,
else ``package_dir``. Exits 1 when a check with a target of 0 is not met.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parent
ROOT = SCRIPTS.parent / "src" / "lance_partitioned"


def _script(name: str) -> ModuleType:
    """The module of ``scripts/<name>.py`` (``scripts/`` is no package)."""
    spec = importlib.util.spec_from_file_location(f"_structure_{name}", SCRIPTS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and annotations look their module up
    spec.loader.exec_module(module)
    return module


def checks(
    package_dir: Path, repo_dir: Path | None = None
) -> list[tuple[str, str, str, bool | None]]:
    """``(check, value, target, met)`` rows for the package at ``package_dir`` and the files
    of ``repo_dir`` (default ``package_dir``) (``met`` None: a number to read, with no
    target)."""
    import_cycles = _script("import_cycles")
    predicate_dispatch = _script("predicate_dispatch")
    lance_dataset_calls = _script("lance_dataset_calls")
    outside_pointers = _script("outside_pointers")

    cycles = import_cycles.cycles(import_graph := import_cycles.import_graph(package_dir))
    trees = {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in package_dir.rglob("*.py")}
    predicate_dispatch.VISITOR = package_dir / "expressions" / "visitor.py"
    found = predicate_dispatch.dispatches(trees, predicate_dispatch.node_classes(trees))
    constants = sum(
        1 for _, _, named in found if set(named.split(", ")) <= predicate_dispatch._CONSTANTS
    )
    namespace = package_dir / "namespace.py"
    lines = len(namespace.read_text(encoding="utf-8").splitlines()) if namespace.exists() else 0
    calls = lance_dataset_calls.calls_outside(package_dir)
    loose = [p for p in package_dir.glob("*.py") if not p.name.startswith("__")]
    pointers = outside_pointers.pointers(repo_dir or package_dir)
    return [
        (
            f"import cycles among {len(import_graph)} modules (function-level imports counted)",
            str(len(cycles)),
            "0",
            not cycles,
        ),
        (
            "isinstance dispatches on predicate nodes outside the visitor",
            f"{len(found)} ({constants} only test AlwaysTrue/AlwaysFalse)",
            "-",
            None,
        ),
        ("lines of namespace.py", str(lines), "-", None),
        (
            "lance.dataset( calls outside open_leaf (manifest/datasets.py)",
            str(len(calls)),
            "0",
            not calls,
        ),
        (
            "loose modules (top level of the package, __init__/__main__ aside)",
            str(len(loose)),
            "-",
            None,
        ),
        (
            "pointers outside the repository (scripts/outside_pointers.py)",
            str(len(pointers)),
            "0",
            not pointers,
        ),
    ]


def main(argv: list[str]) -> int:
    package_dir = Path(argv[0]) if argv else ROOT
    repo_dir = Path(argv[1]) if len(argv) > 1 else None if argv else ROOT.parents[1]
    rows = checks(package_dir, repo_dir)
    header = ("check", "value", "target", "met")
    table = [
        header,
        *((c, v, t, "-" if ok is None else "yes" if ok else "NO") for c, v, t, ok in rows),
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return 0 if all(ok is not False for *_, ok in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
