"""How lance-partitioned plugs into ``lance_namespace`` without importing its REST client.

Our errors derive from ``lance_namespace.errors`` and ``import lance_partitioned`` registers
the ``"partitioned"`` implementation of ``lance_namespace.connect``. But ``import
lance_namespace`` imports the generated REST client with it (about 1.5 s of CPU), which
neither needs. So:

- :func:`errors_module` loads ``lance_namespace/errors.py`` (pure Python, no imports of its
  own) as the module ``lance_namespace.errors``, without running the package's
  ``__init__``. When the package is imported later, its ``from lance_namespace.errors import
  ...`` finds that module in ``sys.modules``: the classes are the same objects either way.
- :func:`register` registers ``"partitioned"`` at once when ``lance_namespace`` is already
  imported, or else when it is first imported (a finder on ``sys.meta_path`` that wraps the
  package's loader; it also binds ``lance_namespace.errors``, which an import through
  ``sys.modules`` does not).

>>> import sys
>>> errors_module() is sys.modules["lance_namespace.errors"]
True
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

__all__ = ["IMPLEMENTATION", "errors_module", "register"]

PACKAGE = "lance_namespace"
ERRORS = "lance_namespace.errors"
#: The short name and class of our ``lance_namespace.connect`` implementation.
IMPLEMENTATION = ("partitioned", "lance_partitioned.adapter.PartitionedLanceNamespace")


def errors_module() -> ModuleType:
    """``lance_namespace.errors``, loaded without the rest of ``lance_namespace`` when the
    package is not imported yet."""
    loaded = sys.modules.get(ERRORS)
    if loaded is not None:
        return loaded
    spec = None if PACKAGE in sys.modules else importlib.util.find_spec(PACKAGE)
    locations = None if spec is None else spec.submodule_search_locations
    path = Path(locations[0]) / "errors.py" if locations else None
    if path is None or not path.is_file():  # an unusual install: import it the usual way
        return importlib.import_module(ERRORS)
    errors_spec = importlib.util.spec_from_file_location(ERRORS, path)
    if errors_spec is None or errors_spec.loader is None:
        return importlib.import_module(ERRORS)
    module = importlib.util.module_from_spec(errors_spec)
    sys.modules[ERRORS] = module
    try:
        errors_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[ERRORS]
        raise
    return module


def _finish(package: ModuleType) -> None:
    """What an import of ``lance_namespace`` does after lance-partitioned was imported."""
    errors = sys.modules.get(ERRORS)
    if errors is not None and getattr(package, "errors", None) is None:
        package.errors = errors  # type: ignore[attr-defined]
    package.register_namespace_impl(*IMPLEMENTATION)


class _OnImport:
    """A ``sys.meta_path`` finder: finds ``lance_namespace`` as the other finders do, and runs
    :func:`_finish` once its module has been executed (not an ``importlib.abc.MetaPathFinder``
    subclass: ``importlib.abc`` imports ``importlib.resources``, 30 ms)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname != PACKAGE:
            return None
        spec: ModuleSpec | None = None
        for finder in sys.meta_path:  # the others, in order (a spec is not always imported:
            find = getattr(finder, "find_spec", None)  # find_spec() alone asks us too)
            if finder is not self and find is not None:
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _finish(module)
            if self in sys.meta_path:  # imported: nothing more to do
                sys.meta_path.remove(self)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def register() -> None:
    """Make ``lance_namespace.connect("partitioned", ...)`` work, now or at its import."""
    package = sys.modules.get(PACKAGE)
    if package is not None:
        _finish(package)
    elif not any(isinstance(finder, _OnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _OnImport())
