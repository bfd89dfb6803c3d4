"""Where an import source lives: a local directory or an object-store prefix (``s3://`` with
Lance's storage option names, others with ``pyarrow.fs``'s default credentials), listed and
read through one ``pyarrow.fs`` file system.

>>> import tempfile, pathlib
>>> root = tempfile.mkdtemp()
>>> _ = (pathlib.Path(root) / "k=a").mkdir()
>>> _ = (pathlib.Path(root) / "k=a" / "f.parquet").write_bytes(b"")
>>> tree = SourceTree.open(root)
>>> tree.files(), tree.directories(), tree.local
(['k=a/f.parquet'], ['k=a'], True)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs

from lance_partitioned import errors

__all__ = ["SourceTree"]


@dataclass(frozen=True)
class SourceTree:
    """A source directory: its URI (an absolute path when local), file system and the path of
    its root in that file system."""

    uri: str
    fs: pafs.FileSystem
    base: str
    local: bool

    @classmethod
    def open(cls, src: Any, storage_options: Mapping[str, str] | None = None) -> SourceTree:
        """The tree at ``src`` (a path, ``file://`` or an object-store URI).

        Raises
        ------
        StorageError
            The file system cannot be set up from ``storage_options``.
        """
        from lance_partitioned.maintenance.files import Store
        from lance_partitioned.manifest import local_path

        text = os.fspath(src).rstrip("/")
        local = local_path(text)
        if local is not None:
            path = os.path.abspath(local)
            return cls(path, pafs.LocalFileSystem(), path, True)
        store = Store(text, storage_options)
        return cls(text, store.fs, store.base, False)

    def _infos(self, kind: pafs.FileType) -> list[str]:
        selector = pafs.FileSelector(self.base, allow_not_found=True, recursive=True)
        try:
            infos = self.fs.get_file_info(selector)
        except (OSError, ValueError) as exc:
            typed = errors.storage_error(exc, self.uri, "list the import source")
            raise typed or errors.StorageError(
                f"cannot list the import source {self.uri!r}: {exc}"
            ) from exc
        cut = len(self.base.rstrip("/")) + 1
        return sorted(info.path[cut:] for info in infos if info.type == kind)

    def files(self) -> list[str]:
        """Every file under the root, ``/``-separated and relative to it, sorted."""
        return self._infos(pafs.FileType.File)

    def directories(self) -> list[str]:
        """Every directory under the root, relative to it, sorted."""
        return self._infos(pafs.FileType.Directory)

    def uri_of(self, relative: str) -> str:
        """The URI (or local path) of ``relative`` under the root."""
        return os.path.join(self.uri, relative) if self.local else f"{self.uri}/{relative}"

    def relative(self, path: str) -> str:
        """A path of the file system (as ``pyarrow.dataset`` names a fragment) relative to
        the root."""
        if self.local:
            return os.path.relpath(path, self.base)
        return path[len(self.base.rstrip("/")) + 1 :]
