"""The query-independent part of a search, kept per ``__manifest`` snapshot.

Before it looks at the query, :func:`lance_partitioned.search.query.search` parses the
index definitions of the snapshot's table metadata (JSON), resolves the asked columns against
the read schema, plans the leaves (:func:`lance_partitioned.scan.plans.planned`) and ranks
the kept leaves by object id (the merge's tie order). For a tenant-filtered search answered
from memory that is a tenth of the search's CPU time, and it depends only on the snapshot,
the filter's SQL text and the columns. So :func:`setup` keeps it on the snapshot object, as
the plans are kept (gone with it; a write gives a new snapshot): the :data:`MAX_SETUPS` used
most recently. Filters given as expression trees are set up each time.

>>> class Snapshot:  # (any object with a __dict__)
...     pass
>>> snapshot, made = Snapshot(), []
>>> first = kept(snapshot, ("f", None), lambda: made.append(1) or "setup")
>>> kept(snapshot, ("f", None), lambda: made.append(1) or "other"), made
('setup', [1])
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

import pyarrow as pa

from lance_partitioned.expressions import Predicate
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.scan import ScanTask, output_fields
from lance_partitioned.scan.plans import planned
from lance_partitioned.search.definitions import IndexDefinition, load_definitions

__all__ = ["MAX_SETUPS", "Setup", "kept", "setup"]

#: Set-ups kept per snapshot (least recently used dropped first).
MAX_SETUPS = 64

_ATTRIBUTE = "_search_setups"
_create_lock = threading.Lock()
_T = TypeVar("_T")


class _Kept:
    """A small LRU map, safe to use from several threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: OrderedDict[Hashable, Any] = OrderedDict()


def kept(owner: Any, key: Hashable, make: Callable[[], _T]) -> _T:
    """The value kept on ``owner`` (in its ``__dict__``) for ``key``, else ``make()`` (kept;
    its errors raised, nothing kept)."""
    store = owner.__dict__.get(_ATTRIBUTE)
    if store is None:
        with _create_lock:
            store = owner.__dict__.get(_ATTRIBUTE)
            if store is None:
                store = _Kept()
                owner.__dict__[_ATTRIBUTE] = store  # (a frozen dataclass: beside its caches)
    with store.lock:
        if key in store.items:
            store.items.move_to_end(key)
            found: _T = store.items[key]
            return found
    made = make()
    with store.lock:
        store.items[key] = made
        while len(store.items) > MAX_SETUPS:
            store.items.popitem(last=False)
    return made


class Setup:
    """A search's query-independent inputs (never changed once made).

    Attributes
    ----------
    definitions : dict[str, IndexDefinition]
        The snapshot's index definitions.
    fields : list[pyarrow.Field]
        The output fields of the asked columns.
    tasks : Sequence[ScanTask]
        The kept leaves (the scan plan).
    ranks : dict[str, int]
        Each kept leaf's place in object-id order, by object id.
    by_rank : dict[int, ScanTask]
        The kept leaves by that place.
    """

    def __init__(
        self, manifest: Manifest, snapshot: ManifestSnapshot, filter: Any, columns: Any
    ) -> None:
        schema = snapshot.metadata.schema
        self.definitions: dict[str, IndexDefinition] = load_definitions(snapshot.table_metadata)
        self.fields: list[pa.Field] = output_fields(schema, columns)
        self.tasks: Sequence[ScanTask] = planned(
            manifest, snapshot, filter, [f.name for f in self.fields]
        )
        ids = sorted(task.object_id for task in self.tasks)
        self.ranks = {object_id: rank for rank, object_id in enumerate(ids)}
        self.by_rank = {self.ranks[task.object_id]: task for task in self.tasks}


def setup(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    filter: str | Predicate | None,
    columns: Sequence[str] | None,
) -> Setup:
    """The :class:`Setup` of a search on ``snapshot``, the same object again for the same
    SQL text (or None) and columns."""
    if filter is not None and not isinstance(filter, str):
        return Setup(manifest, snapshot, filter, columns)
    options = tuple(sorted(manifest.storage_options.items()))
    key = (manifest.root, options, filter, None if columns is None else tuple(columns))
    return kept(snapshot, key, lambda: Setup(manifest, snapshot, filter, columns))
