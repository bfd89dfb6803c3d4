"""A Spark merge's leaves that moved before the driver's commit, merged again there.

The executors searched every leaf at the pinned ``__manifest`` snapshot's ``read_version``.
When another writer commits to some of those leaves before the driver publishes the merge
(an append, a delete, an update, a compaction), the driver's commit plans again only those
leaves, as the Python merge does: their source slices (the rows the executors routed to
them, recomputed by a small Spark job that keeps only those leaves) come to the driver,
each is searched again at the leaf's new version, its updated rows staged and its Lance
delete prepared there. The other leaves' staged work is kept as it is.

The rows a merge inserts were staged, on executors, from the source rows that matched no
leaf at the pinned snapshot. When the leaves that moved now match a different set of source
rows (a concurrent writer added or removed a row with a source key) and the merge inserts,
those rows would be wrong: the merge fails with
:class:`~lance_partitioned.errors.ConcurrentModificationError` and changes nothing.
"""

from __future__ import annotations

import datetime
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lance_partitioned import errors, scan
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.dml.plan import DeleteCount, addresses, delete_operation
from lance_partitioned.ingest import WriteOptions, stage
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.spark.dml import _CLOCK_MARGIN, TASK_THREADS
from lance_partitioned.spark.staging import data_files, delete_unreferenced
from lance_partitioned.transaction import PendingWrite

if TYPE_CHECKING:
    from lance import LanceDataset
    from pyspark.sql import DataFrame

    from lance_partitioned.dml.merge_leaf import LeafMatches as _LeafMatches
    from lance_partitioned.spark.merge import _MergeJob

__all__ = ["Replanner"]

_ROW = "__lp_row"  # a source row's id
_LEAF = "__lp_leaf"  # the target leaf a copy of a source row goes to (its index, an int)


@dataclass
class _LeafResult:
    """One leaf's merge, prepared on an executor (or here, on the driver)."""

    object_id: str
    read_version: int
    deleted: np.ndarray | None  # row addresses to delete
    operation: Any  # the Lance delete prepared at read_version
    count: int
    updated: int
    by_source: int
    staged: PendingWrite | None
    routed: int = 0  # the source rows searched in the leaf

    @classmethod
    def prepare(
        cls,
        object_id: str,
        ds: LanceDataset,
        found: _LeafMatches,
        staged: PendingWrite | None,
        routed: int = 0,
    ) -> _LeafResult:
        """The result of merging leaf ``ds``: the Lance delete of ``found``'s rows
        prepared on it (deletion files written, nothing committed), with ``staged``."""
        where = addresses(found.deleted)
        count = DeleteCount()
        operation = delete_operation(ds, where, count)
        return cls(
            object_id,
            int(ds.version),
            where,
            operation,
            count.rows,
            found.updated,
            found.by_source,
            staged,
            routed,
        )


@dataclass
class Replanner:
    """Merges again, on the driver, the leaves that moved since the executors searched them.

    Attributes
    ----------
    job : _MergeJob
        The merge's job (its pinned snapshot, clauses and per-leaf scan tasks).
    keyed : DataFrame
        The source with its row ids (persisted by the merge), to route again.
    route : callable
        The merge's routing (:func:`.merge_route.routed`): ``keyed`` with one row per
        (source row, target leaf), the leaf's index in ``_LEAF``; its second argument, the
        leaves routed by a join with the versions whose keys to read.
    replanned : list of str
        The leaves merged again, in order (each once per version it was merged at).
    """

    job: _MergeJob
    keyed: DataFrame
    route: Callable[[DataFrame, Mapping[str, Sequence[scan.ScanTask]]], DataFrame]
    replanned: list[str] = field(default_factory=list)
    _found: dict[tuple[str, int], _LeafResult] = field(default_factory=dict)

    def results(self, snapshot: ManifestSnapshot, moved: list[str]) -> dict[str, _LeafResult]:
        """Each ``moved`` leaf merged again at its ``read_version`` in ``snapshot``."""
        wanted = {o: snapshot.read_version(o) for o in moved}
        todo = [o for o, v in wanted.items() if v is None or (o, v) not in self._found]
        if todo:
            tasks = {
                t.object_id: t
                for t in scan.plan_scan(self.job.leaf.manifest(), snapshot, None, columns=[])
                if t.object_id in todo
            }
            for object_id in todo:
                task = tasks.get(object_id)
                if task is None or task.read_version is None:
                    raise errors.ConcurrentModificationError(
                        f"leaf {object_id!r} was removed while this merge ran: nothing was "
                        "changed; run it again"
                    )
            # a join routes by the keys the leaf holds at the pinned and at the new version
            reads = {o: [self.job.tasks[o][0], tasks[o]] for o in todo}
            slices = self._slices(todo, reads)
            for object_id in todo:
                task = tasks[object_id]
                assert task.read_version is not None
                self._found[(object_id, task.read_version)] = self._merge(
                    task, slices.get(object_id)
                )
                self.replanned.append(object_id)
        return {o: self._found[(o, v)] for o, v in wanted.items() if v is not None}

    def finish(self, used: list[_LeafResult]) -> None:
        """Delete what the driver staged for merges of a leaf that were not committed
        (``used``: the leaf results the commit published; none when it failed)."""
        kept = {id(r) for r in used}
        manifest = self.job.leaf.manifest()
        since = datetime.datetime.fromtimestamp(self.job.leaf.planned_at) - _CLOCK_MARGIN
        for result in self._found.values():
            if id(result) not in kept and result.staged is not None:
                remove_staged(manifest, result.staged, since)

    # ------------------------------------------------------------------------- steps
    def _slices(
        self, leaves: list[str], reads: dict[str, list[scan.ScanTask]]
    ) -> dict[str, pa.Table]:
        """The source rows routed to each of ``leaves`` (a Spark job; only those rows
        reach the driver)."""
        from pyspark.sql import functions as F

        index = {o: i for i, o in enumerate(self.job.leaves)}
        with warnings.catch_warnings():
            # mapInArrow checks the pandas version and warns for pandas 3, which it never uses
            warnings.filterwarnings("ignore", "PySpark does not yet fully", FutureWarning)
            routed = self.route(self.keyed, reads)
            table = routed.where(F.col(_LEAF).isin([index[o] for o in leaves])).toArrow()
        column = np.asarray(table.column(_LEAF).to_numpy(zero_copy_only=False))
        return {
            self.job.leaves[int(i)]: table.filter(pa.array(column == i)) for i in np.unique(column)
        }

    def _merge(self, task: scan.ScanTask, slice_: pa.Table | None) -> _LeafResult:
        """One leaf merged at ``task.read_version`` (as an executor's task does)."""
        job = self.job
        manifest, pinned = job.leaf.manifest(), job.leaf.snapshot()
        schema = pinned.metadata.schema
        builder = job.builder(manifest)
        builder._insert = False  # (the inserted rows are staged already)
        safe = builder._safe_keys(pinned)
        old, deleting = job.tasks[task.object_id]
        columns = list(job.columns)
        if slice_ is None:
            slice_ = pa.table(
                {n: pa.array([], self.keyed_type(n)) for n in [*columns, _ROW]},
            )
        slice_ = slice_.filter(slice_.column(_ROW).is_valid())
        source = builder._source(schema, slice_.select(columns))
        ds = task.open()
        found = builder._clauses().search(ds, task, schema, source, deleting, safe)
        if job.insert:
            before = builder._clauses().search(old.open(), old, schema, source, deleting, safe)
            if not np.array_equal(np.unique(before.matched), np.unique(found.matched)):
                raise errors.ConcurrentModificationError(
                    f"leaf {task.object_id!r} changed while this merge ran, and its rows now "
                    "match other source rows than the ones the merge matched (it staged the "
                    "others as inserts): nothing was changed; run it again"
                )
        rows = builder._new_rows(source, [found], schema.read_schema())
        staged = None
        if rows.num_rows:
            options = WriteOptions(threads=TASK_THREADS)
            target = leaf_schema(schema)
            staged = stage(manifest, pinned, rows, mode="append", target=target, options=options)
        return _LeafResult.prepare(task.object_id, ds, found, staged)

    def keyed_type(self, name: str) -> pa.DataType:
        """The Arrow type of the source column ``name`` (for an empty slice)."""
        from pyspark.sql.pandas.types import to_arrow_type

        return to_arrow_type(self.keyed.schema[name].dataType)


def remove_staged(manifest: Manifest, staged: PendingWrite, since: datetime.datetime) -> None:
    """Delete the data files ``staged`` holds that no leaf version since ``since`` uses."""
    for leaf in staged.leaves:
        delete_unreferenced(manifest, leaf.location, data_files(leaf.fragments), since)
