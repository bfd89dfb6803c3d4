"""Print every import cycle between the modules of ``src/lance_partitioned``.

Usage: ``python scripts/import_cycles.py [--type-checking] [package_dir]``; prints each cycle
and exits 1 when there is one.

Every ``import`` and ``from ... import`` statement counts, at module level or inside a
function (a lazy import still ties two modules together); imports under
``if TYPE_CHECKING:`` never run and count only with ``--type-checking``. Relative imports are
resolved; importing a package imports its ``__init__``, and ``from package import name``
imports the submodule ``package.name`` when one exists. A cycle is a strongly connected
component of more than one module.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "lance_partitioned"


def _modules(package_dir: Path) -> dict[str, Path]:
    """Dotted module name of every ``.py`` file under ``package_dir``."""
    out: dict[str, Path] = {}
    base = package_dir.parent
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, type_checking: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree`` (but those under ``if TYPE_CHECKING:`` unless
    ``type_checking``)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not type_checking:
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _targets(
    module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]
) -> set[str]:
    """The project modules one import statement runs.

    ``import a.b.c`` runs the ``__init__`` of ``a`` and ``a.b``, then ``a.b.c``. A package
    that contains ``module`` is already running when ``module`` runs, so only an explicit
    import of it counts: ``import a.b`` or ``from a.b import name`` where ``name`` is not
    a submodule (it must already be defined in ``a/b/__init__.py``).
    """
    explicit: list[str] = []
    if isinstance(node, ast.Import):
        explicit = [alias.name for alias in node.names]
    else:
        if node.level:
            package = module if is_package else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            source = f"{package}.{node.module}" if node.module else package
        else:
            source = node.module or ""
        submodules = [f"{source}.{alias.name}" for alias in node.names]
        explicit = [name for name in submodules if name in known]
        if len(explicit) < len(submodules) or source not in known:
            explicit.append(source)
    out: set[str] = set()
    for name in explicit:
        parts = name.split(".")
        for end in range(1, len(parts) + 1):
            prefix = ".".join(parts[:end])
            implicit = end < len(parts)
            if prefix in known and not (implicit and module.startswith(prefix + ".")):
                out.add(prefix)
    out.discard(module)
    return out


def import_graph(package_dir: Path, type_checking: bool = False) -> dict[str, set[str]]:
    """Module → the project modules it imports (at any level of the file)."""
    modules = _modules(package_dir)
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in _imports(tree, type_checking):
            edges |= _targets(name, is_package, node, known)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0

    def connect(start: str) -> None:
        nonlocal counter
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            connect(module)
    return sorted(found)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("package_dir", nargs="?", type=Path, default=ROOT)
    parser.add_argument(
        "--type-checking", action="store_true", help="count imports under TYPE_CHECKING too"
    )
    args = parser.parse_args(argv)
    graph = import_graph(args.package_dir, args.type_checking)
    found = cycles(graph)
    for component in found:
        members = set(component)
        print(f"cycle of {len(component)} modules:")
        for module in component:
            inside = sorted(graph[module] & members)
            print(f"  {module} -> {', '.join(inside)}")
    if found:
        return 1
    print(f"no import cycle among {len(graph)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
