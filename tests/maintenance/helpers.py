"""Helpers for cleanup tests: remember what every ``__manifest`` version reads, check that the
retained ones still read it, make files look old, list what is on disk."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa

import lance_partitioned as lp
from lance_partitioned.manifest import MANIFEST_DIR, Manifest

UTC = dt.timezone.utc


def now() -> dt.datetime:
    return dt.datetime.now(UTC)


def clock_barrier(directory: Path) -> dt.datetime:
    """A moment that every file written from now on is newer than: file systems stamp
    files with a coarse clock that may lag the precise one by a few milliseconds, so touch a
    probe file until its time has passed the moment."""
    moment = now()
    probe = directory / "clock-probe"
    while True:
        probe.write_bytes(b"")
        if dt.datetime.fromtimestamp(probe.stat().st_mtime, UTC) > moment:
            probe.unlink()
            return moment


def rows_of(ns: lp.PartitionedNamespace) -> list[tuple[Any, ...]]:
    """Every row of ``ns`` (at its version) as sorted tuples of every column, None-safe."""
    table = ns.to_table()
    columns = sorted(table.column_names)
    records = zip(*(table.column(c).to_pylist() for c in columns), strict=True)
    return sorted((tuple(map(repr, r)) for r in records), key=str)


def remember(root: str, seen: dict[int, list[tuple[Any, ...]]]) -> None:
    """Record the rows of every ``__manifest`` version not recorded yet (1, create, has no
    partition spec: skipped)."""
    latest = lp.PartitionedNamespace.open(root).version
    for version in range(2, latest + 1):
        if version not in seen:
            seen[version] = rows_of(lp.PartitionedNamespace.open(root, version=version))


def manifest_versions(root: str) -> list[int]:
    """The ``__manifest`` versions that exist."""
    ds = lance.dataset(f"{root}/{MANIFEST_DIR}")
    return sorted(int(v["version"]) for v in ds.versions())


def check_retained(root: str, seen: dict[int, list[tuple[Any, ...]]]) -> list[int]:
    """Every existing ``__manifest`` version (but 1) reads what it read when it was written.
    Returns the versions checked."""
    existing = [v for v in manifest_versions(root) if v >= 2]
    for version in existing:
        ns = lp.PartitionedNamespace.open(root, version=version)
        assert rows_of(ns) == seen[version], f"__manifest version {version} reads other rows"
    return existing


def files(root: str | Path) -> dict[str, int]:
    """Every file under ``root``: relative path -> size."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = os.path.getsize(path)
    return out


def age(path: str | Path, days: float) -> None:
    """Make every file under ``path`` (or the file itself) ``days`` old."""
    moment = now().timestamp() - days * 86400
    targets = [Path(path)] if Path(path).is_file() else list(Path(path).rglob("*"))
    for target in targets:
        if target.is_file():
            os.utime(target, (moment, moment))


def leaf_versions(root: str, location: str) -> list[int]:
    ds = lance.dataset(f"{root}/{location}")
    return sorted(int(v["version"]) for v in ds.versions())


def pinned(root: str) -> dict[str, set[int]]:
    """Leaf location -> the read_versions that every existing ``__manifest`` version pins."""
    manifest = Manifest(root)
    out: dict[str, set[int]] = {}
    for version in manifest_versions(root):
        for entry in manifest.read_raw(version).entries:
            if entry.object_type == "table" and entry.read_version is not None:
                out.setdefault(entry.location or "", set()).add(entry.read_version)
    return out


def tag(root: str, name: str, version: int) -> None:
    """Tag a ``__manifest`` version (a Lance tag, as ``ns.tags.create`` makes)."""
    lance.dataset(f"{root}/{MANIFEST_DIR}").tags.create(name, version)


def table(ids: list[int], keys: list[str | None]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array(keys, pa.string())})


def six_versions(uri: str) -> None:
    """A Lance dataset at ``uri`` whose versions 1-3 append, 4 deletes a row (a deletion
    file), 5 overwrites and 6 appends."""
    ds = lance.write_dataset(pa.table({"a": [1, 2]}), uri)
    for value in (3, 4):
        ds = lance.write_dataset(pa.table({"a": [value]}), uri, mode="append")
    ds.delete("a = 2")
    lance.write_dataset(pa.table({"a": [10]}), uri, mode="overwrite")
    lance.write_dataset(pa.table({"a": [11]}), uri, mode="append")


def values_at(uri: str, version: int) -> list[int]:
    """Column ``a`` of the dataset at ``uri``, ``version``, sorted."""
    return sorted(lance.dataset(uri, version=version).to_table().column("a").to_pylist())
