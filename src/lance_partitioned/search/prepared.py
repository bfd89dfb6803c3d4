"""The kept leaves of a vector search, classified once per scan plan.

Before its numpy passes, a global vector search classifies every kept leaf
(:mod:`lance_partitioned.search.query`): opened from the leaf cache, its columns mapped to the
namespace's, its IVF_PQ codes looked up (:mod:`.ivfpq`) or its vectors (:mod:`.flat`), a
small leaf's codes encoded (:mod:`.encode`), the leaves of the shared model grouped. That is
Python work per leaf (about 30 microseconds each: 3 ms of a search keeping 100 leaves) whose
answer depends on the leaf versions only, never on the query vector. So it is kept per scan
plan, the :class:`~lance_partitioned.scan.tasks.ScanTasks` object that
:func:`lance_partitioned.scan.plans.planned` keeps per ``__manifest`` snapshot, SQL filter and
columns, and per search parameters (column, metric, whether ``nprobes`` is given,
``fast_search``): a search repeated on the same snapshot classifies nothing.

A write gives a new snapshot and so a new plan: its leaves are classified again (a kept entry
is used only for the very plan object it was made from). Only plans whose every leaf is read
at a fixed local version (the leaf cache's datasets) are kept. The entries are the
:data:`MAX_ENTRIES` used most recently, each used again only while no search cache dropped
anything since it was made (:mod:`.kept`), so they hold no codes or vectors past those
caches' caps beyond the next search.

>>> plan = object()
>>> keep(plan, ("emb",), "arranged", kept.generation())
>>> found(plan, ("emb",))
'arranged'
>>> found(object(), ("emb",)) is None
True
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any

from lance_partitioned.search import kept

__all__ = ["MAX_ENTRIES", "clear", "found", "keep"]

#: Arrangements kept (least recently used dropped first).
MAX_ENTRIES = 8

_lock = threading.Lock()
# (id of the plan, parameters) -> (the plan, the search caches' generation, the arrangement)
_kept: OrderedDict[tuple[int, Hashable], tuple[object, int, Any]] = OrderedDict()


def found(plan: object, parameters: Hashable) -> Any:
    """The arrangement kept for ``plan`` (the same object) and ``parameters``, else None."""
    key = (id(plan), parameters)
    with _lock:
        entry = _kept.get(key)
        if entry is None:
            return None
        if entry[0] is not plan or entry[1] != kept.generation():
            del _kept[key]
            return None
        _kept.move_to_end(key)
        return entry[2]


def keep(plan: object, parameters: Hashable, arranged: Any, generation: int) -> None:
    """Keep ``arranged`` (never changed afterwards) for ``plan`` and ``parameters``;
    ``generation``: :func:`.kept.generation` before it was made."""
    with _lock:
        _kept[(id(plan), parameters)] = (plan, generation, arranged)
        while len(_kept) > MAX_ENTRIES:
            _kept.popitem(last=False)


def clear() -> None:
    """Forget every arrangement."""
    with _lock:
        _kept.clear()
