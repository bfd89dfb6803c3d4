"""``update``: rewrite the rows matching a predicate with new values, in one commit.

The leaves are pruned as for a delete. In each leaf that may match, the matching rows are
read (at the leaf's ``read_version``, with the residual pushed down; the small leaves of an
update that moves no row are read whole and filtered together, one query per residual, as a
Lance filter is planned again for each leaf), their new values are
computed with DataFusion (each assignment is a SQL expression over the row), the old rows are
deleted (Lance deletion files) and the new rows are staged, under the current partition
spec, into the leaves of the partitions they now belong to. A row whose assignment changes a
partition source column therefore moves: deleted from its old leaf, inserted into its new
one, in the same ``__manifest`` commit — no duplicate, no loss.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from lance import LanceDataset

from lance_partitioned import errors, scan
from lance_partitioned.consistency import conform_for_write, leaf_schema
from lance_partitioned.dml.assign import assign, assignments, check_assignments
from lance_partitioned.dml.delete import describe
from lance_partitioned.dml.plan import (
    EARLY_ROWS,
    ROW_ADDRESS,
    DeleteCount,
    addresses,
    delete_operation,
    deletion_filter,
    is_whole_leaf,
    leaf_tasks,
    matched_rows,
)
from lance_partitioned.dml.results import UpdateResult
from lance_partitioned.expressions import AlwaysTrue, Predicate
from lance_partitioned.ingest import WriteOptions, stage, stage_into
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.scan import ScanTask
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.multicolumn import sources_of
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.transaction import (
    ChangePlan,
    LeafChange,
    PendingWrite,
    commit_changes,
)
from lance_partitioned.transaction.write import Tally, merge_pending

__all__ = [
    "LeafWork",
    "assign",
    "assignments",
    "check_assignments",
    "in_place",
    "leaf_work",
    "split_rows",
    "update",
]


@dataclass
class LeafWork:
    """What the update did for one leaf at one version: rows read and the staged rows.

    ``deletion`` is the uncommitted Lance delete of the matched rows prepared with them
    (elsewhere: a Spark executor) and the rows it deletes; it is committed while the leaf is
    still at ``read_version``, and prepared again on any other version. ``addresses`` are
    the row addresses of the matched rows: the delete prepared at ``read_version`` deletes
    exactly them, as pylance's own ``update`` does, without evaluating the predicate again.
    ``matched`` holds the rows read when they are assigned and staged with other leaves'
    (``staged`` is then None)."""

    read_version: int
    rows: int
    staged: PendingWrite | None
    moved: int
    change: LeafChange | None = None  # the same object on every attempt: its commit is kept
    deletion: tuple[Any, int] | None = None
    addresses: np.ndarray | None = None  # of the matched rows at read_version
    matched: pa.Table | None = None  # the matched rows, left to be staged in a batch
    task: ScanTask | None = None  # the leaf they are staged back into, with the batch
    # every row of a small leaf with its address, read without the residual: filtered with
    # the other leaves' of the batch (rows, addresses and matched are known after that)
    unfiltered: pa.Table | None = None


def leaf_work(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    task: ScanTask,
    ds: LanceDataset,
    checked: Mapping[str, str],
    options: WriteOptions,
    *,
    batch: bool = False,
    unfiltered: bool = False,
) -> LeafWork:
    """Read the rows of ``task``'s leaf (opened as ``ds``) that match, compute their new
    values and stage them under ``snapshot``'s current spec (nothing is committed);
    ``batch``: only read them (``matched``), to be assigned and staged with other leaves';
    ``unfiltered`` (with ``batch``): read every row of the leaf, for the batch to filter
    with the other leaves' (:meth:`_Batches.filter`)."""
    schema = snapshot.metadata.schema
    if batch and unfiltered:
        # one query filters every such leaf's rows: a Lance scan with a filter plans it
        # again per leaf, which costs more than reading a small leaf's few other rows
        whole = dataclasses.replace(task, residual=AlwaysTrue())
        work = LeafWork(int(ds.version), 0, None, 0, task=task)
        work.unfiltered = matched_rows(ds, whole, schema)
        return work
    found = matched_rows(ds, task, schema)
    matched = found.drop_columns([ROW_ADDRESS])
    work = LeafWork(int(ds.version), matched.num_rows, None, 0)
    if not matched.num_rows:
        return work
    work.addresses = addresses(found.column(ROW_ADDRESS))
    if batch:
        work.matched, work.task = matched, task
        return work
    changed = assign(matched, checked)
    work.staged = stage(
        manifest,
        snapshot,
        changed,
        mode="append",
        target=leaf_schema(schema),
        options=options,
    )
    work.moved = sum(leaf.rows for leaf in work.staged.leaves if leaf.object_id != task.object_id)
    return work


def in_place(metadata: NamespaceMetadata, checked: Mapping[str, str]) -> bool:
    """Whether no row of a leaf of the current spec can move: no assignment sets a column
    that a partition field of the current spec is computed from (or holds it)."""
    schema = metadata.schema
    for spec_field in metadata.current_spec.fields:
        for source_id in sources_of(spec_field):
            try:
                source = schema.name_of(source_id)
            except errors.SchemaError:
                return False
            if any(source == name or source.startswith(name + ".") for name in checked):
                return False
    return True


def _prepare(
    task: ScanTask, schema: NamespaceSchema, count: DeleteCount, work: LeafWork
) -> Callable[[LanceDataset], Any]:
    def prepare(ds: LanceDataset) -> Any:
        if work.deletion is not None and ds.version == work.read_version:
            count.rows = work.deletion[1]
            return work.deletion[0]
        if work.addresses is not None and ds.version == work.read_version:
            return delete_operation(ds, work.addresses, count)
        return delete_operation(ds, deletion_filter(ds, task, schema), count)

    return prepare


#: Bytes of matched rows held at most to be assigned and staged in one batch; the leaves
#: read past it are staged one by one, as they are read.
BATCH_BYTES = 128 << 20


class _Batches:
    """The leaves whose rows stay in place, assigned in one DataFusion query and staged in
    one write, each leaf's rows back into that leaf (their partition values are neither
    computed nor looked up: no assignment changes them), each leaf's files written on the
    pool: the per-leaf cost of a query and of a staging pass paid once. The rows read for
    it are held within :data:`BATCH_BYTES`."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options
        self.held = 0
        self.lock = threading.Lock()
        self.done: tuple[list[LeafWork], PendingWrite] | None = None

    def reserve(self, nbytes: int) -> bool:
        """Whether ``nbytes`` more of matched rows may wait for the batch."""
        with self.lock:
            if self.held + nbytes > BATCH_BYTES:
                return False
            self.held += nbytes
            return True

    def clear(self) -> None:
        with self.lock:
            self.held = 0
            self.done = None

    def filter(self, works: list[LeafWork]) -> None:
        """Filter the rows of the ``works`` read unfiltered by their leaf's residual, one
        query for the leaves of the same residual (as a leaf's own scan would filter them,
        :func:`~lance_partitioned.dml.plan.matched_rows` for a residual Lance does not
        take): each work then has its matched rows, their count and addresses."""
        groups: dict[str, list[list[LeafWork]]] = {}
        for w in works:
            if w.unfiltered is None or w.task is None:
                continue
            # (by text and by value: equal predicates may print apart, and 1 == True)
            similar = groups.setdefault(repr(w.task.residual), [])
            for group in similar:
                if group[0].task is not None and group[0].task.residual == w.task.residual:
                    group.append(w)
                    break
            else:
                similar.append([w])
        for similar in groups.values():
            for group in similar:
                self._filter(group)

    def _filter(self, group: list[LeafWork]) -> None:
        tables = [w.unfiltered for w in group if w.unfiltered is not None]
        task = group[0].task
        if task is None or len(tables) != len(group):
            raise errors.InternalError("a leaf's rows wait for the batch filter without them")
        rows = pa.concat_tables(tables).combine_chunks()
        leaf = _unused_name(rows.schema, "__lp_leaf")
        index = np.repeat(np.arange(len(tables), dtype=np.int32), [t.num_rows for t in tables])
        kept = rows.slice(0, 0)
        codes = np.zeros(0, dtype=np.int32)
        if rows.num_rows:
            (batch,) = rows.append_column(leaf, pa.array(index)).to_batches(max_chunksize=None)
            found = scan.post_filter(batch, task.residual)
            codes = found.column(leaf).to_numpy(zero_copy_only=False)
            kept = pa.Table.from_batches([found.select(rows.schema.names)], schema=rows.schema)
        for w, part in zip(group, split_rows(kept, codes, len(group)), strict=True):
            held = w.unfiltered.nbytes if w.unfiltered is not None else 0
            w.unfiltered = None
            w.rows = part.num_rows
            if part.num_rows:
                w.addresses = addresses(part.column(ROW_ADDRESS))
                w.matched = part.drop_columns([ROW_ADDRESS])
            with self.lock:  # (the rows not kept are no longer held)
                self.held -= held - (w.matched.nbytes if w.matched is not None else 0)

    def staged(
        self,
        manifest: Manifest,
        snapshot: ManifestSnapshot,
        works: list[LeafWork],
        checked: Mapping[str, str],
    ) -> PendingWrite | None:
        """The batch of ``works`` waiting for it, staged (the same object for the same
        works: their leaf commits are kept on a retry)."""
        waiting = [w for w in works if w.matched is not None]
        if not waiting:
            return None
        if self.done is not None and _same_works(self.done[0], waiting):
            return self.done[1]
        self.done = None
        tables = [w.matched for w in waiting if w.matched is not None]
        rows = pa.concat_tables(tables).combine_chunks()  # one batch, not one per leaf
        # each row's leaf (its index in `waiting`) goes through the query with it: the
        # query need not keep the rows in order
        leaf = _unused_name(rows.schema, "__lp_leaf")
        counts = [table.num_rows for table in tables]
        index = np.repeat(np.arange(len(tables), dtype=np.int32), counts)
        changed = assign(rows.append_column(leaf, pa.array(index)), checked)
        codes = changed.column(leaf).to_numpy()
        target = leaf_schema(snapshot.metadata.schema)
        changed = conform_for_write(changed.drop_columns([leaf]), snapshot.metadata.schema, target)
        parts = []
        for w, part in zip(waiting, split_rows(changed, codes, len(tables)), strict=True):
            if w.task is None:
                raise errors.InternalError("a leaf's rows wait for the batch without their leaf")
            parts.append((w.task.object_id, dict(w.task.partition_values), part))
        staged = stage_into(
            manifest,
            snapshot,
            parts,
            target=target,
            options=self.options,
        )
        self.done = (waiting, staged)  # (the works held: compared by identity)
        return staged


def split_rows(table: pa.Table, codes: np.ndarray, count: int) -> list[pa.Table]:
    """``table``'s rows in ``count`` parts, row ``i`` in part ``codes[i]``, each part's rows
    in their order in ``table`` (slices when the codes do not decrease).

    >>> t = pa.table({"v": [10, 20, 30, 40]})
    >>> [p.column("v").to_pylist() for p in split_rows(t, np.array([1, 0, 1, 0]), 3)]
    [[20, 40], [10, 30], []]
    """
    if len(codes) > 1 and bool(np.any(codes[1:] < codes[:-1])):
        order = np.argsort(codes, kind="stable")
        table, codes = table.take(pa.array(order)), codes[order]
    bounds = np.searchsorted(codes, np.arange(count + 1)).tolist()
    return [table.slice(bounds[i], bounds[i + 1] - bounds[i]) for i in range(count)]


def _unused_name(schema: pa.Schema, name: str) -> str:
    """``name``, suffixed until no column of ``schema`` has it."""
    found, n = name, 0
    while found in schema.names:
        n += 1
        found = f"{name}_{n}"
    return found


def _same_works(a: list[LeafWork], b: list[LeafWork]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def update(
    manifest: Manifest,
    where: str | Predicate,
    assignments: Mapping[str, str],
    *,
    options: WriteOptions | None = None,
    prepared: tuple[ManifestSnapshot, Mapping[str, LeafWork]] | None = None,
    details: Mapping[str, str] | None = None,
) -> UpdateResult:
    """Set ``assignments`` (column -> SQL over the row) on the rows matching ``where``.

    ``prepared`` is the per-leaf work already done elsewhere (Spark executors) on a
    snapshot: each leaf's work is used while the leaf is still at the version it was done
    on and the namespace metadata is the snapshot's; the others are done again here.
    ``details`` are recorded on the commit."""
    started = time.perf_counter()
    options = options or WriteOptions(threads=manifest.max_workers)
    first = manifest.snapshot() if prepared is None else prepared[0]
    checked = check_assignments(assignments, first.metadata.schema.read_schema())
    # a bad predicate fails before anything is read
    planned_tasks = {first.version: list(leaf_tasks(manifest, first, where))}
    cache: dict[str, LeafWork] = {} if prepared is None else dict(prepared[1])
    batches = _Batches(options)
    counts: dict[str, DeleteCount] = {}
    done: list[LeafWork] = []
    planned = [first.metadata]
    merged: dict[tuple[int, ...], PendingWrite | None] = {}
    operation = Operation(
        "update",
        details={
            "predicate": describe(where),
            "assignments": repr(sorted(checked.items())),
            **(details or {}),
        },
    )

    # the leaves are read and staged on the per-leaf pool, each leaf's rows staged by its
    # own worker (one thread each: the pool is the parallelism)
    leaf_options = dataclasses.replace(options, threads=1)

    def work(task: ScanTask, snapshot: ManifestSnapshot) -> LeafWork:
        known = cache.get(task.object_id)
        if known is not None and known.read_version == task.read_version:
            return known  # (without opening the leaf again)
        ds = task.open()
        if known is not None and known.read_version == ds.version:
            return known
        batch = (
            prepared is None
            and task.spec_version == snapshot.metadata.current_spec.version
            and in_place(snapshot.metadata, checked)
        )
        small = task.row_count is not None and task.row_count <= EARLY_ROWS
        unfiltered = batch and small and not is_whole_leaf(task)
        found = leaf_work(
            manifest, snapshot, task, ds, checked, leaf_options, batch=batch, unfiltered=unfiltered
        )
        held = found.matched if found.unfiltered is None else found.unfiltered
        if held is not None and not batches.reserve(held.nbytes):
            found = leaf_work(manifest, snapshot, task, ds, checked, leaf_options)
        cache[task.object_id] = found
        return found

    def all_work(snapshot: ManifestSnapshot) -> list[tuple[ScanTask, LeafWork]]:
        tasks = planned_tasks.pop(snapshot.version, None)
        if tasks is None:
            tasks = list(leaf_tasks(manifest, snapshot, where))
        width = max(1, min(options.threads, len(tasks)))
        if width == 1:
            return [(task, work(task, snapshot)) for task in tasks]
        with ThreadPoolExecutor(width) as pool:
            return list(zip(tasks, pool.map(lambda t: work(t, snapshot), tasks), strict=True))

    def plan(snapshot: ManifestSnapshot) -> ChangePlan:
        nonlocal checked
        if snapshot.metadata != planned[0]:
            # the schema or the partition spec changed meanwhile: the rows are read and
            # staged again (in the new leaf schema, under the new spec)
            try:
                checked = check_assignments(assignments, snapshot.metadata.schema.read_schema())
            except errors.InvalidInputError as exc:
                raise errors.ConcurrentSchemaChangeError(
                    f"the namespace schema changed at __manifest version {snapshot.version} "
                    f"while this update ran, and its assignments no longer apply ({exc}): "
                    "nothing was changed"
                ) from exc
            planned[0] = snapshot.metadata
            cache.clear()
            batches.clear()
        changes: list[LeafChange] = []
        reads: dict[str, int] = {}
        writes: list[PendingWrite] = []
        done.clear()
        schema = snapshot.metadata.schema
        pairs = all_work(snapshot)
        batches.filter([found for _, found in pairs])
        for task, found in pairs:
            if not found.rows:
                continue
            done.append(found)
            if task.read_version is not None:  # (a foreign leaf without one: its latest)
                reads[task.object_id] = found.read_version
            if found.change is None:
                count = counts.setdefault(task.object_id, DeleteCount())
                found.change = LeafChange(task.object_id, _prepare(task, schema, count, found))
            changes.append(found.change)
            if found.staged is not None and found.staged.leaves:
                writes.append(found.staged)
        batch = batches.staged(manifest, snapshot, done, checked)
        if batch is not None and batch.leaves:
            writes.append(batch)
        key = tuple(id(w) for w in writes)
        if key not in merged:  # the same staged writes merge into the same object
            merged.clear()
            merged[key] = merge_pending(writes) if writes else None
        staged = merged[key]
        tally = Tally(
            operation,
            written=[] if staged is None else staged.leaves,
            deleted=lambda: {change.object_id: counts[change.object_id].rows for change in changes},
            updated=sum(w.rows for w in done),
        )
        return ChangePlan(changes=changes, writes=staged, reads=reads, properties=tally.properties)

    result = commit_changes(manifest, plan, leaf_threads=options.threads)
    return UpdateResult(
        version=result.version,
        rows_updated=0 if result.skipped else sum(w.rows for w in done),
        rows_moved=0 if result.skipped else sum(w.moved for w in done),
        leaves_read=len(done),
        attempts=result.attempts,
        seconds=time.perf_counter() - started,
    )
