"""Test helpers: copy a namespace, read it back leaf by leaf, straight through pylance; a small
real file system (a tmpfs) for storage failures."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa

import lance_partitioned as lp
from lance_partitioned import transaction


def copy_namespace(source: Path, target: str | os.PathLike[str]) -> lp.PartitionedNamespace:
    """The namespace at ``source`` (a directory), copied to ``target`` and opened there: a
    namespace's paths are relative, so the copy is the same namespace (tests that change one
    copy a namespace built once per module instead of building it again)."""
    shutil.copytree(source, target, dirs_exist_ok=True)
    return lp.PartitionedNamespace.open(str(target))


def read_leaves(ns: lp.PartitionedNamespace) -> pa.Table:
    """Every row of every leaf at its manifest read_version, via lance.dataset only (with the
    namespace's storage options)."""
    parts = ns.partitions()
    tables = []
    for location, version in zip(
        parts.column("location").to_pylist(),
        parts.column("read_version").to_pylist(),
        strict=True,
    ):
        leaf = lance.dataset(
            f"{ns.uri}/{location}", version=version, storage_options=ns.storage_options or None
        )
        tables.append(leaf.to_table())
    if not tables:
        return ns.schema.empty_table()
    return pa.concat_tables(tables, promote_options="permissive")


def sorted_rows(table: pa.Table, by: str = "id") -> list[dict[str, object]]:
    return table.sort_by(by).to_pylist()


class Boom(RuntimeError):
    """The injected crash."""


def crash_after_leaf_commits(count: int, committed: list[str]) -> Callable[..., Any]:
    """A stand-in for ``transaction.commit_leaf`` that commits ``count`` leaves for real
    (recording their object ids in ``committed``), then raises :class:`Boom`: a writer that
    dies between its leaf commits and its ``__manifest`` commit."""
    real_commit_leaf = transaction.commit_leaf

    def commit_leaf(*args: Any, **kwargs: Any) -> Any:
        if len(committed) == count:
            raise Boom(f"injected crash after {count} leaf commits")
        result = real_commit_leaf(*args, **kwargs)
        committed.append(args[1].object_id)
        return result

    return commit_leaf


def _mount_tmpfs(path: Path, size: str) -> bool:
    """Mount a tmpfs of ``size`` at ``path`` (root only); False when it cannot be done."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@contextlib.contextmanager
def small_filesystem(size: str) -> Iterator[Path | None]:
    """A real file system of ``size`` (a tmpfs), or None when this process cannot mount."""
    mount = Path(tempfile.gettempdir()) / f"lp-tmpfs-{uuid.uuid4().hex}"
    if not _mount_tmpfs(mount, size):
        yield None
        return
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        mount.rmdir()
