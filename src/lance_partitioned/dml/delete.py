"""``delete``: remove the rows matching a predicate, in one ``__manifest`` commit.

Per leaf, the predicate is simplified against the leaf's partition values: a leaf it cannot
match is untouched, a leaf whose every row matches is dropped from the ``__manifest``
(metadata only: no data file is read or written; older ``__manifest`` versions still see it
until cleanup), and any other leaf gets Lance's row-level delete (deletion files) with the
residual pushed down. All of it becomes visible in one commit through
:func:`lance_partitioned.transaction.commit_changes`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lance import LanceDataset

from lance_partitioned.dml.plan import (
    DeleteCount,
    delete_operation,
    deletion_filter,
    is_whole_leaf,
    leaf_rows,
    leaf_tasks,
)
from lance_partitioned.dml.results import DeleteResult
from lance_partitioned.expressions import Predicate, to_sql
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.scan import ScanTask
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.transaction import ChangePlan, LeafChange, commit_changes
from lance_partitioned.transaction.write import Tally

__all__ = [
    "PreparedDelete",
    "delete",
    "delete_changes",
    "deleted_rows",
    "describe",
    "prepared",
]


def describe(where: str | Predicate) -> str:
    """The predicate as text, for the commit's transaction properties."""
    return where if isinstance(where, str) else to_sql(where)


@dataclass
class PreparedDelete:
    """A leaf's Lance delete, prepared on the planner's side at one leaf version (deletion
    files written, nothing committed), reused while the leaf stays at that version."""

    version: int
    operation: Any
    count: DeleteCount
    change: Any = None  # its LeafChange, the same object on every attempt


def prepared(
    task: ScanTask, schema: NamespaceSchema, cache: dict[str, PreparedDelete]
) -> PreparedDelete:
    """The delete of ``task``'s matching rows at its ``read_version``, from ``cache`` when it
    was prepared at that version."""
    known = cache.get(task.object_id)
    if known is not None and known.version == task.read_version:
        return known  # (without opening the leaf again)
    ds = task.open()
    if known is not None and known.version == ds.version:
        return known
    count = DeleteCount()
    operation = delete_operation(ds, deletion_filter(ds, task, schema), count)
    cache[task.object_id] = found = PreparedDelete(int(ds.version), operation, count)
    return found


def _prepare(
    task: ScanTask, schema: NamespaceSchema, cache: dict[str, PreparedDelete]
) -> Callable[[LanceDataset], Any]:
    def prepare(ds: LanceDataset) -> Any:
        known = cache.get(task.object_id)
        if known is not None and known.version == ds.version:
            return known.operation
        count = DeleteCount()
        operation = delete_operation(ds, deletion_filter(ds, task, schema), count)
        cache[task.object_id] = PreparedDelete(int(ds.version), operation, count)
        return operation

    return prepare


def delete_changes(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    where: str | Predicate,
    cache: dict[str, PreparedDelete],
    spec_versions: Container[int] | None = None,
    written: Container[str] = (),
    examined: dict[str, int] | None = None,
) -> tuple[list[LeafChange], dict[str, int]]:
    """The leaf changes and the drops (leaf object id -> its rows) that delete the rows
    matching ``where`` on ``snapshot`` (only in leaves of ``spec_versions``, when given).

    The Lance delete of each leaf the predicate does not decide is prepared here (in
    ``cache``, by leaf and version, so a retry redoes only leaves that moved): a leaf where
    no row matches gets no change, and a delete that matches nothing commits nothing.

    A leaf the same commit also writes (``written``) is never dropped: it gets a Lance
    delete of all its rows instead, and the write appends on top of it.

    ``examined`` receives every leaf the predicate may reach (object id -> its
    ``read_version``), those where no row matches too: a plan that must see every row it
    deletes (an overwrite) puts them in its ``reads``, so that an append to one of them
    meanwhile makes it plan again."""
    changes: list[LeafChange] = []
    drops: dict[str, int] = {}
    schema = snapshot.metadata.schema
    partial: list[ScanTask] = []
    for task in leaf_tasks(manifest, snapshot, where):
        if spec_versions is not None and task.spec_version not in spec_versions:
            continue
        if examined is not None and task.read_version is not None:
            examined[task.object_id] = task.read_version
        if is_whole_leaf(task) and task.object_id not in written:
            drops[task.object_id] = leaf_rows(task)
        else:
            partial.append(task)
    # each leaf is opened, scanned and its deletion files written on the per-leaf pool (one
    # after another, a delete across 100 leaves on an object store waited for every request)
    width = max(1, min(manifest.max_workers, len(partial)))
    with ThreadPoolExecutor(width) as pool:
        found = list(pool.map(lambda task: prepared(task, schema, cache), partial))
    for task, leaf in zip(partial, found, strict=True):
        if leaf.operation is not None:
            if leaf.change is None:
                leaf.change = LeafChange(task.object_id, _prepare(task, schema, cache))
            changes.append(leaf.change)
    return changes, drops


def deleted_rows(
    changes: Iterable[LeafChange], cache: Mapping[str, PreparedDelete]
) -> Callable[[], dict[str, int]]:
    """The rows that the Lance delete of each of ``changes`` removed, read when called:
    after the leaf commits, ``cache`` holds the delete each leaf commit prepared."""
    object_ids = [change.object_id for change in changes]

    def read() -> dict[str, int]:
        return {oid: cache[oid].count.rows for oid in object_ids if oid in cache}

    return read


def delete(
    manifest: Manifest,
    where: str | Predicate,
    prepared: Mapping[str, PreparedDelete] | None = None,
    details: Mapping[str, str] | None = None,
) -> DeleteResult:
    """Delete the rows matching ``where`` (SQL or a Predicate) in one commit.

    ``prepared`` holds Lance deletes already prepared elsewhere (Spark executors), by leaf
    object id: each is used while its leaf is still at the version it was prepared on, and
    a leaf that moved meanwhile is prepared again here. ``details`` are recorded on the
    commit with the predicate.

    Raises :class:`~lance_partitioned.errors.InvalidInputError` for a predicate that does
    not parse or names an unknown column; nothing is changed then.
    """
    started = time.perf_counter()
    cache: dict[str, PreparedDelete] = dict(prepared or {})
    dropped: dict[str, int] = {}
    operation = Operation("delete", details={"predicate": describe(where), **(details or {})})

    def plan(snapshot: ManifestSnapshot) -> ChangePlan:
        changes, drops = delete_changes(manifest, snapshot, where, cache)
        dropped.clear()
        dropped.update(drops)
        tally = Tally(operation, removed=drops, deleted=deleted_rows(changes, cache))
        return ChangePlan(changes=changes, drops=list(drops), properties=tally.properties)

    result = commit_changes(manifest, plan)
    changed = set(result.changed)
    return DeleteResult(
        version=result.version,
        rows_deleted=sum(dropped.values())
        + sum(p.count.rows for oid, p in cache.items() if oid in changed),
        leaves_dropped=len(result.dropped),
        leaves_rewritten=len(changed),
        attempts=result.attempts,
        seconds=time.perf_counter() - started,
    )
