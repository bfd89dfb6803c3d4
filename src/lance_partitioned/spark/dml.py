"""Row-level changes on Spark: the per-leaf work runs in executor tasks, the driver commits.

The driver plans on one pinned ``__manifest`` snapshot (the predicate pruned as a read is,
:func:`lance_partitioned.dml.plan.leaf_tasks`) and runs one Spark task per leaf. Each task
opens its leaf at the snapshot's ``read_version`` and prepares the leaf's Lance operation
without committing it: a ``delete`` writes the deletion files and returns the ``Delete``
operation; an ``update`` also reads the matching rows, computes their new values and stages
them, under the current spec, as uncommitted fragments. Lance operations and fragment
metadata pickle, so each task returns them to the driver (a few hundred bytes per leaf: the
rows never travel). The driver hands them to the Python API's own planners
(:func:`lance_partitioned.dml.delete`, :func:`lance_partitioned.dml.update`), which commit
them in one :func:`lance_partitioned.transaction.commit_changes` and redo on the driver only
the leaves that moved meanwhile, as the Python path does.

Spark keeps the result of one successful attempt per task. Every attempt that stages
fragments records them in a staging journal (:mod:`.staging`) before returning; once the
commit is done (or failed) the driver deletes what the attempts it did not use staged, as the
write path does. (Deletion files of an unused attempt are never referenced: cleanup removes
them.)
"""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark import TaskContext

from lance_partitioned.dml.delete import PreparedDelete
from lance_partitioned.dml.delete import delete as delete_rows
from lance_partitioned.dml.plan import (
    DeleteCount,
    delete_operation,
    deletion_filter,
    is_whole_leaf,
    leaf_tasks,
)
from lance_partitioned.dml.results import DeleteResult, UpdateResult
from lance_partitioned.dml.update import LeafWork, check_assignments, leaf_work
from lance_partitioned.dml.update import update as update_rows
from lance_partitioned.ingest import WriteOptions
from lance_partitioned.maintenance.optimize import OptimizeResult, optimize, prepare_leaf
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.scan import ScanTask, plan_scan
from lance_partitioned.spark.staging import StagingJournal, data_files, delete_unreferenced
from lance_partitioned.spark.workers import freeze_worker_heap
from lance_partitioned.transaction import PendingWrite

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "LeafJob",
    "TaskHook",
    "distributed_delete",
    "distributed_optimize",
    "distributed_update",
    "job_for",
    "remove_unused",
    "run_leaf_tasks",
]

#: Called in every task after its work, with (task index, attempt): a test hook.
TaskHook = Callable[[int, int], None]
_ENGINE = {"engine": "spark"}
_CLOCK_MARGIN = datetime.timedelta(minutes=1)
#: Staging threads per Spark task, as a write's.
TASK_THREADS = 4

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class LeafJob:
    """What every leaf task of one change shares (pickled into the tasks)."""

    uri: str
    storage_options: tuple[tuple[str, str], ...]
    manifest_version: int
    job_id: str
    planned_at: float
    hook: TaskHook | None = None

    def manifest(self) -> Manifest:
        """The namespace's ``__manifest``."""
        return Manifest(self.uri, dict(self.storage_options))

    def snapshot(self) -> ManifestSnapshot:
        """The pinned snapshot every task works on."""
        return self.manifest().snapshot(self.manifest_version)


@dataclass(frozen=True)
class TaskResult:
    """One task attempt's result: its per-leaf values and the journal it wrote (if any)."""

    values: list[Any]
    journal: str | None


def run_leaf_tasks(
    spark: SparkSession,
    job: LeafJob,
    items: Sequence[T],
    work: Callable[[LeafJob, T], tuple[R, PendingWrite | Mapping[str, list[str]] | None]],
) -> tuple[list[R], set[str]]:
    """Run ``work`` on every item in its own Spark task; returns the values and the names of
    the journals of the attempts whose results are used. ``work`` returns its value and
    what it staged (a PendingWrite, or leaf location -> data file names)."""
    if not items:
        return [], set()

    def task(index: int, chunk: Iterable[T]) -> Iterable[TaskResult]:
        freeze_worker_heap()
        context = TaskContext.get()
        attempt = context.attemptNumber() if context is not None else 0
        values: list[Any] = []
        staged: dict[str, list[str]] = {}
        for item in chunk:
            value, pending = work(job, item)
            values.append(value)
            for location, names in staged_files(pending).items():
                staged.setdefault(location, []).extend(names)
        name = None
        if staged:
            journal = StagingJournal(job.manifest(), job.job_id)
            name = journal.record(index, attempt, staged)
            if journal.done():  # the driver finished without this attempt
                remove_unused(job, set())
        if job.hook is not None:
            job.hook(index, attempt)
        yield TaskResult(values, name)

    rdd = spark.sparkContext.parallelize(list(items), len(items))
    results = rdd.mapPartitionsWithIndex(task).collect()
    values = [value for result in results for value in result.values]
    return values, {r.journal for r in results if r.journal is not None}


def staged_files(pending: PendingWrite | Mapping[str, list[str]] | None) -> dict[str, list[str]]:
    """Leaf location -> the data file names staged there."""
    if pending is None:
        return {}
    if not isinstance(pending, PendingWrite):
        return {k: list(v) for k, v in pending.items()}
    staged: dict[str, list[str]] = {}
    for leaf in pending.leaves:
        staged.setdefault(leaf.location, []).extend(sorted(data_files(leaf.fragments)))
    return staged


def remove_unused(job: LeafJob, used: set[str]) -> int:
    """Delete what the job's attempts staged whose journals are not in ``used``, unless a
    leaf version committed since the job started references it; then the journals."""
    manifest = job.manifest()
    journal = StagingJournal(manifest, job.job_id)
    journal.finish()
    paths = journal.paths()
    staged: dict[str, set[str]] = {}
    for path in paths:
        if path.rsplit("/", 1)[-1] not in used:
            for location, names in journal.read(path).items():
                staged.setdefault(location, set()).update(names)
    since = datetime.datetime.fromtimestamp(job.planned_at) - _CLOCK_MARGIN
    deleted = sum(
        delete_unreferenced(manifest, location, names, since)
        for location, names in sorted(staged.items())
    )
    journal.clear(paths)
    return deleted


def job_for(manifest: Manifest, snapshot: ManifestSnapshot, hook: TaskHook | None) -> LeafJob:
    return LeafJob(
        uri=manifest.root,
        storage_options=tuple(sorted(manifest.storage_options.items())),
        manifest_version=snapshot.version,
        job_id=uuid.uuid4().hex,
        planned_at=time.time(),
        hook=hook,
    )


# ----------------------------------------------------------------------------- delete
def _delete_leaf(job: LeafJob, task: ScanTask) -> tuple[tuple[str, PreparedDelete], None]:
    ds = task.open()
    schema = job.snapshot().metadata.schema
    count = DeleteCount()
    operation = delete_operation(ds, deletion_filter(ds, task, schema), count)
    return (task.object_id, PreparedDelete(int(ds.version), operation, count)), None


def distributed_delete(
    spark: SparkSession, manifest: Manifest, where: str, hook: TaskHook | None = None
) -> DeleteResult:
    """Delete the rows matching ``where``: each leaf's Lance delete prepared in a Spark task,
    one commit by the driver (whole-leaf matches are dropped without a task)."""
    snapshot = manifest.snapshot()
    tasks = [t for t in leaf_tasks(manifest, snapshot, where) if not is_whole_leaf(t)]
    job = job_for(manifest, snapshot, hook)
    found, _ = run_leaf_tasks(spark, job, tasks, _delete_leaf)
    return delete_rows(manifest, where, prepared=dict(found), details=_ENGINE)


# ----------------------------------------------------------------------------- optimize
def _optimize_leaf(job: LeafJob, item: tuple[ScanTask, int]) -> tuple[Any, dict[str, list[str]]]:
    task, target = item
    leaf = prepare_leaf(job.manifest(), task, target)
    location = job.snapshot().location(task.object_id)
    new = [f for group in getattr(leaf.operation, "groups", ()) for f in group.new_fragments]
    return leaf, {location: sorted(data_files(new))} if location and new else {}


def distributed_optimize(
    spark: SparkSession,
    manifest: Manifest,
    filter: str | None,
    target_rows_per_fragment: int = 1_048_576,
    hook: TaskHook | None = None,
) -> OptimizeResult:
    """Compact the leaves ``filter`` selects, each in a Spark task; one commit (and the
    ``__manifest``'s own compaction) on the driver."""
    snapshot = manifest.snapshot()
    tasks = plan_scan(manifest, snapshot, filter)
    items = [(task, target_rows_per_fragment) for task in tasks]
    job = job_for(manifest, snapshot, hook)
    try:
        found, used = run_leaf_tasks(spark, job, items, _optimize_leaf)
        result = optimize(
            manifest, filter, target_rows_per_fragment=target_rows_per_fragment, prepared=found
        )
    except BaseException:
        remove_unused(job, set())
        raise
    remove_unused(job, used)
    return result


# ----------------------------------------------------------------------------- update
@dataclass(frozen=True)
class _UpdateItem:
    task: ScanTask
    assignments: tuple[tuple[str, str], ...]


def _update_leaf(
    job: LeafJob, item: _UpdateItem
) -> tuple[tuple[str, LeafWork], PendingWrite | None]:
    ds = item.task.open()
    manifest, snapshot = job.manifest(), job.snapshot()
    options = WriteOptions(threads=TASK_THREADS)
    work = leaf_work(manifest, snapshot, item.task, ds, dict(item.assignments), options)
    if work.rows:
        count = DeleteCount()
        schema = snapshot.metadata.schema
        operation = delete_operation(ds, deletion_filter(ds, item.task, schema), count)
        work.deletion = (operation, count.rows)
    return (item.task.object_id, work), work.staged


def distributed_update(
    spark: SparkSession,
    manifest: Manifest,
    where: str,
    assignments: Mapping[str, str],
    hook: TaskHook | None = None,
) -> UpdateResult:
    """Update the rows matching ``where``: each leaf's rows read, recomputed and staged (and
    their Lance delete prepared) in a Spark task; one commit by the driver."""
    snapshot = manifest.snapshot()
    checked = check_assignments(assignments, snapshot.metadata.schema.read_schema())
    items = [
        _UpdateItem(task, tuple(sorted(checked.items())))
        for task in leaf_tasks(manifest, snapshot, where)
    ]
    job = job_for(manifest, snapshot, hook)
    try:
        found, used = run_leaf_tasks(spark, job, items, _update_leaf)
        prepared = (snapshot, dict(found))
        result = update_rows(manifest, where, checked, prepared=prepared, details=_ENGINE)
    except BaseException:
        remove_unused(job, set())  # nothing staged is used
        raise
    remove_unused(job, used)
    return result
