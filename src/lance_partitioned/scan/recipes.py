"""What a scan task reads from its leaf, worked out once per leaf version.

Before a leaf is read or counted (:mod:`lance_partitioned.scan.read`), its columns are mapped
to the namespace's (field ids: renames, casts, absent columns), the residual filter's columns
found and the residual translated to Lance SQL (or left to an in-memory filter): Python work
of about a tenth of a millisecond per leaf, the cost of Lance's own count of a point query a
``BTREE`` answers in it (issue 29: ``count_rows("user_id = 4242")`` over 23 leaves). Its
answer depends only on the task (leaf version, residual), the namespace schema, the columns
asked and the leaf's schema, never on the data, so :func:`leaf_read` keeps it for the
:data:`MAX_ENTRIES` reads made most recently: the plan of a SQL filter is kept per snapshot
(:mod:`lance_partitioned.scan.plans`), so a repeated query hands the same task objects, and
the leaf cache (:mod:`lance_partitioned.runtime.leaf_cache`) the same ``LanceDataset`` of a
fixed leaf version. An entry is used only for those very objects (a leaf opened again, or at
its latest version, is worked out again). No query result is kept.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import lance
import pyarrow as pa

from lance_partitioned.columnpaths import ColumnPath
from lance_partitioned.consistency import leaf_field
from lance_partitioned.expressions import AlwaysTrue, Predicate
from lance_partitioned.runtime.leaf_cache import leaf_schema
from lance_partitioned.scan.filters import leaf_filter, residual_fields
from lance_partitioned.scan.plan import output_columns
from lance_partitioned.scan.task import ScanTask
from lance_partitioned.spec.schema import NamespaceSchema

__all__ = ["MAX_ENTRIES", "LeafRead", "clear", "leaf_read"]

#: Recipes kept (least recently used dropped first).
MAX_ENTRIES = 4096


@dataclass(frozen=True)
class LeafRead:
    """How one leaf is read for a task and columns.

    Attributes
    ----------
    outputs : list of ColumnPath
        The asked columns, resolved against the namespace read schema.
    needed : pyarrow.Schema
        The namespace fields read: the outputs', then the residual's others.
    sources : list of pyarrow.Field or None
        The leaf field holding each of ``needed`` (None: the leaf lacks it).
    by_name : dict
        ``needed`` name -> its source.
    pushdown : str or None
        The residual as Lance SQL (None: no residual, or one evaluated in memory).
    post : Predicate or None
        The residual evaluated in memory after conforming (None: none).
    scan_columns : list of str
        The leaf columns Lance reads.
    out_schema : pyarrow.Schema
        The schema of the batches handed out.
    """

    outputs: list[ColumnPath]
    needed: pa.Schema
    sources: list[pa.Field | None]
    by_name: dict[str, pa.Field | None]
    pushdown: str | None
    post: Predicate | None
    scan_columns: list[str]
    out_schema: pa.Schema


def _work_out(
    task: ScanTask,
    schema: NamespaceSchema,
    columns: Sequence[str] | None,
    dataset: lance.LanceDataset,
) -> LeafRead:
    outputs = output_columns(schema, columns)
    read = schema.read_schema()
    fields = [read.field(name) for name in dict.fromkeys(c.column for c in outputs)]
    leaf = leaf_schema(dataset)
    predicate = task.residual
    always = isinstance(predicate, AlwaysTrue)
    filtered = [] if always else residual_fields(predicate, read)
    names = {f.name for f in fields}
    needed = pa.schema([*fields, *(f for f in filtered if f.name not in names)])
    sources = [leaf_field(leaf, f) for f in needed]
    by_name = dict(zip(needed.names, sources, strict=True))
    pushdown = (
        None
        if always
        else leaf_filter(dataset, predicate, filtered, [by_name[f.name] for f in filtered])
    )
    return LeafRead(
        outputs=outputs,
        needed=needed,
        sources=sources,
        by_name=by_name,
        pushdown=pushdown,
        post=None if pushdown is not None or always else predicate,
        scan_columns=sorted({s.name for s in sources if s is not None}),
        out_schema=pa.schema([c.field for c in outputs]),
    )


_Key = tuple[int, int, tuple[str, ...] | None]
_Entry = tuple[ScanTask, NamespaceSchema, "weakref.ref[lance.LanceDataset]", LeafRead]
_kept: OrderedDict[_Key, _Entry] = OrderedDict()
_lock = threading.Lock()


def leaf_read(
    task: ScanTask,
    schema: NamespaceSchema,
    columns: Sequence[str] | None,
    dataset: lance.LanceDataset,
) -> LeafRead:
    """How ``dataset`` (``task.open()``) is read for ``task`` and ``columns``: kept for the
    same task, schema and dataset objects (a fixed leaf version), else worked out."""
    key = (id(task), id(schema), None if columns is None else tuple(columns))
    with _lock:
        found = _kept.get(key)
        same = found is not None and found[0] is task and found[1] is schema
        if same and found is not None and found[2]() is dataset:
            _kept.move_to_end(key)
            return found[3]
    made = _work_out(task, schema, columns, dataset)
    fixed = task.read_version is not None and task.read_tag is None and task.read_branch is None
    if fixed:
        with _lock:
            _kept[key] = (task, schema, weakref.ref(dataset), made)
            while len(_kept) > MAX_ENTRIES:
                _kept.popitem(last=False)
    return made


def clear() -> None:
    """Forget every recipe."""
    with _lock:
        _kept.clear()
