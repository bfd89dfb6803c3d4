"""Listing and deleting the files under a namespace root, on a local disk or an object store.

Lance lists no file sizes or modification times, which a cleanup needs (bytes removed, and the
age that tells a crashed writer's leftovers from an in-flight writer's staging), so this goes
through ``pyarrow.fs``; Lance storage options for S3 are translated to
``pyarrow.fs.S3FileSystem`` arguments. Every storage failure becomes a typed
:class:`~lance_partitioned.errors.StorageError`.

>>> import tempfile, pathlib
>>> root = tempfile.mkdtemp()
>>> _ = (pathlib.Path(root) / "leaf" / "data").mkdir(parents=True)
>>> _ = (pathlib.Path(root) / "leaf" / "data" / "f.lance").write_bytes(b"1234")
>>> store = Store(root)
>>> [(f.path, f.size) for f in store.files("leaf")]
[('leaf/data/f.lance', 4)]
>>> store.directories()
['leaf']
>>> store.delete(["leaf/data/f.lance", "leaf/data/gone.lance"])
>>> store.prune_empty("leaf")
>>> store.directories()
[]
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import lance.file
import pyarrow.fs as pafs

from lance_partitioned import errors
from lance_partitioned.maintenance.bulk import bulk_deleter
from lance_partitioned.manifest import local_path

__all__ = ["Store", "StoredFile"]

_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class StoredFile:
    """One file: its path relative to the root (``/``-separated), size and modification time
    (UTC; None when the store does not say)."""

    path: str
    size: int
    mtime: dt.datetime | None


def _s3(bucket_path: str, options: Mapping[str, str]) -> pafs.FileSystem:
    """An S3 file system from Lance's (object_store's) storage option names."""
    lowered = {key.lower(): value for key, value in options.items()}

    def pick(*names: str) -> str | None:
        for name in names:
            if lowered.get(name):
                return lowered[name]
        return None

    endpoint = pick("aws_endpoint", "endpoint", "aws_endpoint_url", "endpoint_url")
    scheme = None
    if endpoint is not None and "://" in endpoint:
        scheme, endpoint = endpoint.split("://", 1)
    virtual = pick("aws_virtual_hosted_style_request", "virtual_hosted_style_request") or ""
    kwargs: dict[str, object] = {
        "access_key": pick("aws_access_key_id", "access_key_id"),
        "secret_key": pick("aws_secret_access_key", "secret_access_key"),
        "session_token": pick("aws_session_token", "session_token", "token"),
        "region": pick("aws_region", "region"),
        "endpoint_override": endpoint,
        "scheme": scheme,
        "force_virtual_addressing": virtual.lower() in _TRUE,
    }
    return pafs.S3FileSystem(**{k: v for k, v in kwargs.items() if v is not None})


def _storage_failure(exc: BaseException, path: str, action: str) -> errors.StorageError:
    typed = errors.storage_error(exc, path, action)
    if typed is not None:
        return typed
    return errors.StorageError(f"cannot {action} at {path!r}: {exc}")


class Store:
    """The files under ``root`` (a local path, ``file://``, or an object-store URI).

    Parameters
    ----------
    root : str
        The namespace root.
    storage_options : dict, optional
        Lance storage options (for S3: ``aws_endpoint``, ``aws_access_key_id``, ``aws_region``,
        …); other object stores use ``pyarrow.fs``'s default credentials.
    """

    def __init__(self, root: str, storage_options: Mapping[str, str] | None = None) -> None:
        self.root = root.rstrip("/")
        local = local_path(self.root)
        try:
            if local is not None:
                self.fs: pafs.FileSystem = pafs.LocalFileSystem()
                self.base = os.path.abspath(local)
            elif self.root.startswith(("s3://", "s3a://")):
                self.base = self.root.split("://", 1)[1]
                self.fs = _s3(self.base, storage_options or {})
            else:
                self.fs, self.base = pafs.FileSystem.from_uri(self.root)
        except (OSError, ValueError) as exc:
            raise _storage_failure(exc, self.root, "open the storage") from exc
        self.local = local is not None
        self._session = (
            None
            if self.local
            else lance.file.LanceFileSession(
                self.root, storage_options=dict(storage_options) if storage_options else None
            )
        )
        self._bulk = None if self.local else bulk_deleter(self.root, storage_options or {})

    @property
    def bulk(self) -> bool:
        """Whether :meth:`delete` deletes many files a request (S3 with ``obstore``): a
        caller then gathers what it deletes into few calls."""
        return self._bulk is not None

    def _full(self, path: str) -> str:
        return f"{self.base}/{path}" if path else self.base

    def files(self, prefix: str = "") -> list[StoredFile]:
        """Every file under ``prefix`` (relative to the root), recursively; [] when absent."""
        selector = pafs.FileSelector(self._full(prefix), allow_not_found=True, recursive=True)
        try:
            infos = self.fs.get_file_info(selector)
        except (OSError, ValueError) as exc:
            raise _storage_failure(exc, f"{self.root}/{prefix}", "list the files") from exc
        out = []
        cut = len(self.base) + 1
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            mtime = info.mtime
            if mtime is not None and mtime.tzinfo is None:
                mtime = mtime.replace(tzinfo=dt.timezone.utc)
            out.append(StoredFile(info.path[cut:], int(info.size or 0), mtime))
        return sorted(out, key=lambda f: f.path)

    def directories(self, prefix: str = "") -> list[str]:
        """The names of the directories (object-store prefixes) directly under ``prefix``."""
        selector = pafs.FileSelector(self._full(prefix), allow_not_found=True)
        try:
            infos = self.fs.get_file_info(selector)
        except (OSError, ValueError) as exc:
            raise _storage_failure(exc, f"{self.root}/{prefix}", "list the directories") from exc
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)

    def delete(self, paths: Iterable[str]) -> None:
        """Delete files (relative to the root); one already gone is not an error.

        On S3 with ``obstore``, up to 1,000 files a request
        (:mod:`~lance_partitioned.maintenance.bulk`), in no particular order within the call;
        on other object stores one by one, in order, through Lance's own object store
        (``pyarrow.fs`` would leave an empty "directory" marker object behind the last file of
        a prefix)."""
        if self._bulk is not None:
            doomed = list(paths)
            try:
                self._bulk(doomed)
            except Exception as exc:  # obstore's errors are its own classes
                raise _storage_failure(exc, self.root, f"delete {len(doomed)} files") from exc
            return
        for path in paths:
            try:
                if self._session is None:
                    self.fs.delete_file(self._full(path))
                else:
                    self._session.delete_file(path)
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as exc:
                if not self._exists(path):
                    continue
                raise _storage_failure(exc, f"{self.root}/{path}", "delete a file") from exc

    def _exists(self, path: str) -> bool:
        with contextlib.suppress(OSError, ValueError):
            return bool(self.fs.get_file_info(self._full(path)).type != pafs.FileType.NotFound)
        return True

    def prune_empty(self, prefix: str) -> None:
        """Remove the empty directories under ``prefix`` and ``prefix`` itself when it is
        empty (local disks only: object stores have no directories). A directory that another
        writer fills meanwhile stays."""
        if not self.local:
            return
        top = self._full(prefix)
        for folder, _, _ in sorted(os.walk(top), key=lambda w: -len(w[0])):
            with contextlib.suppress(OSError):
                os.rmdir(folder)  # only when empty
