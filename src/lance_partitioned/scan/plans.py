"""Scan plans kept per ``__manifest`` snapshot, for searches and reads.

A tenant-filtered search of one leaf spends as much time planning (parsing the filter,
projecting it on each partition spec, filtering the ``__manifest`` rows) as Lance spends
searching the leaf, and a point query answered by a ``BTREE`` on each leaf about a sixth. A
snapshot never changes, and the plan of a filter given as SQL text depends only on the
snapshot, the text and the columns, so :func:`planned` keeps the :data:`MAX_PLANS` plans made
most recently on the snapshot object itself (gone with it; a ``refresh()`` reads a new
snapshot). Filters given as expression trees are planned each time.

>>> plans = _Plans()
>>> plans.get(("f", ("a",)), lambda: ["task"])
['task']
>>> plans.get(("f", ("a",)), lambda: ["other"])
['task']
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.scan.plan import Filter, plan_scan
from lance_partitioned.scan.tasks import ScanTasks

__all__ = ["MAX_PLANS", "planned"]

#: Plans kept per snapshot (least recently used dropped first).
MAX_PLANS = 64

_ATTRIBUTE = "_search_plans"
_Key = tuple[object, ...]


class _Plans:
    """A small LRU map of plans, safe to use from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plans: OrderedDict[_Key, ScanTasks] = OrderedDict()

    def get(self, key: _Key, plan: Callable[[], ScanTasks]) -> ScanTasks:
        """The plan kept for ``key``, else ``plan()`` (kept; its errors raised, nothing kept)."""
        with self._lock:
            found = self._plans.get(key)
            if found is not None:
                self._plans.move_to_end(key)
                return found  # (a ScanTasks is immutable: built blocks are kept, never changed)
        made = plan()
        with self._lock:
            self._plans[key] = made
            while len(self._plans) > MAX_PLANS:
                self._plans.popitem(last=False)
        return made


_create_lock = threading.Lock()


def _plans_of(snapshot: ManifestSnapshot) -> _Plans:
    plans = snapshot.__dict__.get(_ATTRIBUTE)
    if plans is None:
        with _create_lock:
            plans = snapshot.__dict__.get(_ATTRIBUTE)
            if plans is None:
                plans = _Plans()
                # the snapshot is a frozen dataclass: kept beside its cached properties
                snapshot.__dict__[_ATTRIBUTE] = plans
    assert isinstance(plans, _Plans)
    return plans


def planned(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    filter: Filter = None,
    columns: Sequence[str] | None = None,
) -> ScanTasks:
    """``plan_scan(manifest, snapshot, filter, columns)``, the same plan again for the same
    SQL text (or None) and columns on the same snapshot object."""
    if filter is not None and not isinstance(filter, str):
        return plan_scan(manifest, snapshot, filter, columns)
    options = tuple(sorted(manifest.storage_options.items()))
    key = (manifest.root, options, filter, None if columns is None else tuple(columns))
    return _plans_of(snapshot).get(key, lambda: plan_scan(manifest, snapshot, filter, columns))
