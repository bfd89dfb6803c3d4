"""Start-up cost of the command-line process: keep pandas out of ``import lance``.

``import lance`` imports ``pyarrow.dataset``, and the module initialisation of pyarrow's
``_dataset`` builds a scalar, which makes pyarrow's lazy pandas shim import pandas: about
0.4 s of the CLI's start-up for a library that no command uses. :func:`install` (called by
:func:`lance_partitioned.cli.main`, the console script, never on ``import``) makes pandas
unimportable while, and only while, ``pyarrow.dataset`` is first imported. pyarrow's shim then
records "no pandas" for its quiet checks; anything that needs pandas still imports it on
demand (``Table.to_pandas``, ``Table.from_pandas``), and Lance imports pandas lazily itself.

>>> finder = _PandasFreeArrowDataset()
>>> finder.find_spec("json") is None
True
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType

_TRIGGER = "pyarrow.dataset"


class _PandasFreeArrowDataset(importlib.abc.MetaPathFinder):
    """Refuse ``pandas`` while ``pyarrow.dataset`` runs its first import, then step aside."""

    def __init__(self) -> None:
        self._blocking = False

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        """Block pandas during the trigger's import; wrap the trigger's loader."""
        if self._blocking and (fullname == "pandas" or fullname.startswith("pandas.")):
            raise ModuleNotFoundError(f"{fullname} is not imported at start-up", name=fullname)
        if fullname != _TRIGGER:
            return None
        self._remove()  # one import only: from here on the import system is untouched
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        loader = spec.loader if spec is not None else None
        if spec is None or not isinstance(loader, importlib.abc.Loader):
            return spec
        spec.loader = _Blocking(loader, self)
        return spec

    def _remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


class _Blocking(importlib.abc.Loader):
    """A loader that runs another one with pandas blocked."""

    def __init__(self, loader: importlib.abc.Loader, finder: _PandasFreeArrowDataset) -> None:
        self._loader = loader
        self._finder = finder

    def __getattr__(self, name: str) -> object:
        return getattr(self._loader, name)  # get_source, get_filename, ...: the wrapped loader's

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        """Delegate."""
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        """Run the wrapped loader with the finder (back on ``sys.meta_path``) blocking."""
        self._finder._blocking = True
        sys.meta_path.insert(0, self._finder)
        try:
            self._loader.exec_module(module)
        finally:
            self._finder._blocking = False
            self._finder._remove()


def install() -> None:
    """Keep pandas out of this process's first ``import pyarrow.dataset`` (no-op once it ran).

    Nothing happens when ``pyarrow.dataset`` or pandas is already imported.
    """
    if _TRIGGER in sys.modules or "pandas" in sys.modules:
        return
    if any(isinstance(f, _PandasFreeArrowDataset) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _PandasFreeArrowDataset())
