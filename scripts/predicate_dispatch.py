"""Count the ``isinstance`` dispatches on predicate node kinds outside the one visitor module.

A predicate node class is any class of ``src/lance_partitioned`` that derives (by name,
transitively) from ``Predicate`` of ``expressions/tree.py``; the base ``Predicate`` itself is
not a node kind (``isinstance(x, Predicate)`` checks an argument, it does not dispatch). A
call counts once, however many node classes its second argument names. The visitor module
(``expressions/visitor.py``), which holds the traversal, is left out. The tests of the
constants (``isinstance(p, AlwaysTrue)``: "nothing to filter") are counted apart too.

Usage: ``python scripts/predicate_dispatch.py [--all]`` (``--all`` lists every call).
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "lance_partitioned"
VISITOR = ROOT / "expressions" / "visitor.py"
_CONSTANTS = {"AlwaysTrue", "AlwaysFalse"}


def _base_names(node: ast.ClassDef) -> set[str]:
    names = set()
    for base in node.bases:
        if isinstance(base, ast.Name):
            names.add(base.id)
        elif isinstance(base, ast.Attribute):
            names.add(base.attr)
    return names


def node_classes(trees: dict[Path, ast.Module]) -> set[str]:
    """The names of the classes deriving from ``Predicate`` (the base excluded)."""
    bases: dict[str, set[str]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, set()).update(_base_names(node))
    found = {"Predicate"}
    while True:
        more = {name for name, of in bases.items() if of & found} - found
        if not more:
            return found - {"Predicate"}
        found |= more


def _ours(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names bound in a module to this package's classes, and its aliases of this
    package's modules (so that pyspark's own ``EqualTo`` filter is not counted)."""
    names = {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lance_partitioned"):
            for alias in node.names:
                (names if alias.name[:1].isupper() else modules).add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("lance_partitioned"):
                    modules.add(alias.asname or alias.name.split(".")[0])
    return names, modules


def _named(arg: ast.expr, names: set[str], modules: set[str]) -> list[str]:
    if isinstance(arg, ast.Tuple):
        return [name for item in arg.elts for name in _named(item, names, modules)]
    if isinstance(arg, ast.Name) and arg.id in names:
        return [arg.id]
    if isinstance(arg, ast.Attribute):
        root = arg.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in modules:
            return [arg.attr]
    return []


def dispatches(trees: dict[Path, ast.Module], kinds: set[str]) -> list[tuple[Path, int, str]]:
    """``(file, line, classes)`` of every ``isinstance(x, <node class>)`` outside the visitor."""
    found = []
    for path, tree in trees.items():
        if path == VISITOR:
            continue
        names, modules = _ours(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
            ):
                named = [n for n in _named(node.args[1], names, modules) if n in kinds]
                if named:
                    found.append((path, node.lineno, ", ".join(named)))
    return sorted(found)


def main(argv: list[str]) -> int:
    trees = {path: ast.parse(path.read_text(), str(path)) for path in sorted(ROOT.rglob("*.py"))}
    kinds = node_classes(trees)
    found = dispatches(trees, kinds)
    per_file = Counter(path for path, _, _ in found)
    for path, count in sorted(per_file.items()):
        print(f"{count:4d}  {path.relative_to(ROOT.parent)}")
    if "--all" in argv:
        for path, line, named in found:
            print(f"{path.relative_to(ROOT.parent)}:{line}: {named}")
    constants = sum(1 for _, _, named in found if set(named.split(", ")) <= _CONSTANTS)
    print(f"{len(found):4d}  isinstance dispatches on predicate nodes outside the visitor")
    print(f"{constants:4d}    of which constant tests only (AlwaysTrue/AlwaysFalse)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
