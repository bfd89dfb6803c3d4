"""Opened leaf datasets kept per (local path, fixed version) for the reads of this process.

A scan opens every leaf it reads; with the shared session (:mod:`.sessions`) opening is
cheap, but a freshly opened ``LanceDataset`` loads its scalar indexes' metadata again on its
first filtered query: a point query that a ``BTREE`` answers in about 0.15 ms per leaf then
costs twice that. So :func:`cached_leaf` keeps the :data:`MAX_LEAVES` leaf versions opened
most recently and hands the same ``LanceDataset`` (safe to scan from several threads) to every
read of that version.

A leaf version never changes (:mod:`.sessions`), but a cleanup may remove it, or damage may
remove the leaf, or a table may be deleted and written again at the same path: on the local
file system a hit is used only while the version's Lance manifest file is still the one seen
when the leaf was opened (one ``stat``: inode, time, size), so such a read opens the leaf again
and reads what is there or fails as it did (outdated reader or damaged namespace), and while
the object is still at that version (a caller that commits through the ``LanceDataset`` it was
handed moves it on). On an object store that check would cost a request per leaf, so a hit is
used as the shared session (:mod:`.sessions`) uses its cached manifests: unchecked (leaf
locations hold random ids, so a path is never written again by a new table).

:func:`remember_leaf` keeps the ``LanceDataset`` that a leaf commit of this process returned:
the next read of that version (a scan, a delete's or an optimize's plan right after a write)
opens nothing. On an object store that is a ``HEAD`` and a ``GET`` of the version's manifest
saved per leaf (``benchmarks/objectstore.py``: an optimize of 731 leaves just written asked
for 1,616 requests, 1,482 of them those). :func:`known_leaf` hands it to the next leaf commit
on that version, which Lance then makes without listing the versions and reading the
manifest again (an append to a leaf: 3 requests instead of 5).

:func:`exclusive` is a handle of the same leaf version for a call that pylance runs with the
dataset held exclusively (an index build, ``read_transaction``): another thread using the
shared object meanwhile would fail with ``RuntimeError: Already mutably borrowed``.

:func:`leaf_schema` is a dataset's Arrow schema, converted once per ``LanceDataset`` object
(pylance converts it again at each ``.schema``: as long as Lance's count of a point query
answered by a ``BTREE``).
"""

from __future__ import annotations

import copy
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable

import pyarrow as pa
from lance import LanceDataset

from lance_partitioned.manifest import local_path

__all__ = [
    "MAX_LEAVES",
    "cached_leaf",
    "clear",
    "exclusive",
    "known_leaf",
    "leaf_schema",
    "remember_leaf",
]

#: Leaf versions kept opened (least recently used dropped first).
MAX_LEAVES = 1024

_U64_MAX = (1 << 64) - 1
_Key = tuple[str, int, tuple[tuple[str, str], ...]]
# the stamp of a local leaf's manifest file (None: a leaf on an object store, unchecked)
_opened: OrderedDict[_Key, tuple[LanceDataset, tuple[int, int, int] | None]] = OrderedDict()
_lock = threading.Lock()


def _stamp(path: str, version: int) -> tuple[int, int, int] | None:
    """The identity of the Lance manifest file of ``version`` in the table at the local
    ``path`` (either of Lance's version file naming schemes): inode, modification time and
    size; None when it is not there. A table deleted and written again at the same path has
    the same versions in other files."""
    versions = os.path.join(path, "_versions")
    for name in (f"{_U64_MAX - version:020d}.manifest", f"{version}.manifest"):
        try:
            found = os.stat(os.path.join(versions, name))
        except OSError:
            continue
        return found.st_ino, found.st_mtime_ns, found.st_size
    return None


def cached_leaf(
    uri: str,
    version: int,
    storage_options: tuple[tuple[str, str], ...],
    open_leaf: Callable[[], LanceDataset],
) -> LanceDataset:
    """The leaf at ``uri``, ``version``: the one opened before while its version is still
    there, else ``open_leaf()`` (its errors raised as they are), kept for the next read."""
    path = local_path(uri)
    key = (uri if path is None else path, version, storage_options)
    stamp = None if path is None else _stamp(path, version)
    with _lock:
        found = _opened.get(key)
        if found is not None:
            _opened.move_to_end(key)
    # a caller may have committed through the object (it moved on), or the table was
    # written again at the same path: then open it again
    if found is not None and found[0].version == version and found[1] == stamp:
        return found[0]
    dataset = open_leaf()
    if path is not None and stamp is None:
        return dataset
    _keep(key, dataset, stamp)
    return dataset


def known_leaf(
    uri: str, version: int, storage_options: tuple[tuple[str, str], ...]
) -> LanceDataset | None:
    """The leaf at ``uri``, ``version`` when this process has it opened (:func:`cached_leaf`,
    :func:`remember_leaf`), else None: nothing is opened. A leaf commit on top of ``version``
    goes through it: Lance then reads neither the versions nor the manifest again."""
    path = local_path(uri)
    key = (uri if path is None else path, version, storage_options)
    with _lock:
        found = _opened.get(key)
    if found is None or found[0].version != version:
        return None
    if path is not None and found[1] != _stamp(path, version):
        return None
    return found[0]


def remember_leaf(
    uri: str, version: int, storage_options: tuple[tuple[str, str], ...], dataset: LanceDataset
) -> None:
    """Keep ``dataset``, which a leaf commit just returned at ``version``, for the next
    :func:`cached_leaf` of that version (the leaf is not opened again)."""
    if int(dataset.version) != version:
        return
    path = local_path(uri)
    stamp = None if path is None else _stamp(path, version)
    if path is not None and stamp is None:
        return
    _keep((uri if path is None else path, version, storage_options), dataset, stamp)


def _keep(key: _Key, dataset: LanceDataset, stamp: tuple[int, int, int] | None) -> None:
    with _lock:
        _opened[key] = (dataset, stamp)
        _opened.move_to_end(key)
        while len(_opened) > MAX_LEAVES:
            _opened.popitem(last=False)


def exclusive(dataset: LanceDataset) -> LanceDataset:
    """A handle of ``dataset``'s version that no other thread holds, made without I/O.

    pylance holds its dataset object exclusively while it builds an index
    (``create_index_uncommitted``, ``merge_existing_index_segments``) or reads a transaction
    (``read_transaction``); a scan, a count or even ``.version`` of the same object in another
    thread meanwhile fails with ``RuntimeError: Already mutably borrowed``. The objects of this
    cache are shared by every read and commit of the process, so such calls go through a copy
    (a new handle of the same opened version, a microsecond).

    >>> import tempfile, lance, pyarrow as pa
    >>> ds = lance.write_dataset(pa.table({"x": [1, 2]}), tempfile.mkdtemp())
    >>> mine = exclusive(ds)
    >>> mine is not ds, mine.version == ds.version, mine.count_rows()
    (True, True, 2)
    """
    return copy.copy(dataset)


_schemas: weakref.WeakKeyDictionary[LanceDataset, tuple[int, pa.Schema]] = (
    weakref.WeakKeyDictionary()
)


def leaf_schema(dataset: LanceDataset) -> pa.Schema:
    """``dataset.schema``, converted once per dataset object and version (a version's schema
    is fixed; an object that a commit through it moved to another version, an
    ``alter_columns`` say, is converted again).

    >>> import tempfile, lance, pyarrow as pa
    >>> ds = lance.write_dataset(pa.table({"a": [1]}), tempfile.mkdtemp())
    >>> leaf_schema(ds) is leaf_schema(ds)
    True
    >>> ds.alter_columns({"path": "a", "name": "b"})
    >>> leaf_schema(ds).names
    ['b']
    """
    version = int(dataset.version)
    with _lock:
        found = _schemas.get(dataset)
    if found is not None and found[0] == version:
        return found[1]
    schema = dataset.schema
    with _lock:
        _schemas[dataset] = (version, schema)
    return schema


def clear() -> None:
    """Forget every opened leaf."""
    with _lock:
        _opened.clear()
