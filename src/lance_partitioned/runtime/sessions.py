"""One Lance session per namespace for the leaves it reads at fixed versions.

A leaf version never changes: its Lance manifest and the metadata of its data files
(footers, column layouts) stay what they were when it was committed. Lance caches both in a
``lance.Session``, keyed by the path and version; without a shared one every
``lance.dataset(uri, version=v)`` starts empty and reads them again (on S3 a ``HEAD`` and a
``GET`` of the version's manifest, then each data file's footer, before the first page). Scans
and :meth:`~lance_partitioned.PartitionedNamespace.partitions` of every handle on a namespace
in this process therefore share the session :func:`leaf_session` returns: a second read of the
same version asks the store for data pages only.

Leaf locations hold random ids, so a namespace deleted and created again at the same root
never reuses a cached path. The ``__manifest`` table itself has a fixed path and keeps one
session per :class:`~lance_partitioned.manifest.Manifest` object (see
:mod:`lance_partitioned.manifest.table`).

Memory is bounded: each session holds at most :data:`METADATA_CACHE_BYTES` of metadata and
:data:`INDEX_CACHE_BYTES` of index pages, and the :data:`MAX_SESSIONS` namespaces read most
recently keep theirs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping

import lance

__all__ = ["INDEX_CACHE_BYTES", "MAX_SESSIONS", "METADATA_CACHE_BYTES", "leaf_session"]

METADATA_CACHE_BYTES = 256 << 20
INDEX_CACHE_BYTES = 256 << 20
MAX_SESSIONS = 8

_Key = tuple[str, tuple[tuple[str, str], ...]]
_sessions: OrderedDict[_Key, lance.Session] = OrderedDict()  # type: ignore[name-defined]
_lock = threading.Lock()


def leaf_session(root: str, storage_options: Mapping[str, str] | None = None) -> lance.Session:  # type: ignore[name-defined]
    """The Lance session shared by the leaf reads of the namespace at ``root`` (with these
    storage options) in this process.

    >>> leaf_session("/tmp/ns") is leaf_session("/tmp/ns/")
    True
    >>> leaf_session("/tmp/ns") is leaf_session("/tmp/other")
    False
    """
    key = (root.rstrip("/"), tuple(sorted((storage_options or {}).items())))
    with _lock:
        session = _sessions.get(key)
        if session is None:
            session = lance.Session(  # type: ignore[attr-defined]
                index_cache_size_bytes=INDEX_CACHE_BYTES,
                metadata_cache_size_bytes=METADATA_CACHE_BYTES,
            )
            _sessions[key] = session
            while len(_sessions) > MAX_SESSIONS:
                _sessions.popitem(last=False)
        else:
            _sessions.move_to_end(key)
        return session
