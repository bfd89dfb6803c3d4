"""``optimize``: compact the leaves of a namespace and publish them in one ``__manifest`` commit.

Every append adds at least one fragment (and one Lance version) to each leaf it touches, and
one fragment to the ``__manifest``; a namespace fed by a daily pipeline soon reads hundreds of
small files per leaf. :func:`optimize` rewrites them with Lance's own compaction:

1. the leaves are selected with the filter pruned exactly as a scan prunes it
   (:func:`lance_partitioned.scan.plan_scan`: a leaf the filter covers only in part is
   compacted whole);
2. each selected leaf is opened at its ``read_version`` and Lance's compaction planner
   (``lance.optimize.Compaction.plan``) says whether it has something to compact: more than one
   fragment below ``target_rows_per_fragment``, or deletions worth materialising. Leaves with
   nothing to compact (and leaves with Lance indices, which a rewrite would have to remap)
   are not compacted. Such a leaf that lacks an index the namespace defines
   (:mod:`lance_partitioned.search`), or has rows its index does not cover, gets that index
   built or rebuilt instead: a Lance ``CreateIndex``, published in the same commit;
3. the compaction tasks run (new data files, invisible) and become one Lance ``Rewrite``
   operation per leaf, which is what ``Compaction.commit`` commits (without index remapping:
   there are no indices);
4. :func:`lance_partitioned.transaction.commit_changes` commits each leaf's ``Rewrite`` on its
   ``read_version`` and moves every ``read_version`` in one ``__manifest`` compare-and-swap:
   readers see the compacted namespace all at once or not at all. When a concurrent writer
   moved the ``__manifest`` meanwhile, the planner is called again: compactions are cached by
   (leaf, ``read_version``), so only the leaves that moved are compacted again, and a
   compaction of a version that is no longer the leaf's ``read_version`` is never published;
5. with ``compact_manifest``, the ``__manifest``'s own fragments are compacted too
   (:meth:`lance_partitioned.manifest.table.Manifest.compact`): a conflict with a concurrent
   commit is retried a few times, then left for the next optimize.

Older ``__manifest`` versions still read what they read: they name older leaf versions, which
stay until ``cleanup`` removes them.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("k", pa.string())]),
...     partition_by="k")
>>> for i in range(3):
...     _ = ns.write(pa.table({"id": [2 * i, 2 * i + 1], "k": ["a", "b"]}))
>>> result = ns.optimize()
>>> result.leaves_compacted, result.fragments_before, result.fragments_after, result.rows
(2, 6, 2, 6)
>>> sorted(ns.to_table()["id"].to_pylist())
[0, 1, 2, 3, 4, 5]
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from lance import LanceDataset, LanceOperation
from lance.optimize import Compaction, CompactionOptions

from lance_partitioned import errors
from lance_partitioned.manifest import CommitConflict, Manifest, ManifestSnapshot
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.manifest.table import ManifestCompaction
from lance_partitioned.scan import Filter, ScanTask, plan_scan
from lance_partitioned.search.build import definitions_by_leaf, refresh_leaf
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.transaction import ChangePlan, LeafChange, commit_changes

__all__ = [
    "LeafCompaction",
    "OptimizeProgress",
    "OptimizeResult",
    "optimize",
    "prepare_leaf",
]

log = logging.getLogger(__name__)

_MANIFEST_ATTEMPTS = 3


@dataclass(frozen=True)
class OptimizeProgress:
    """Reported once per selected leaf, when its compaction is prepared (or found needless).

    Attributes
    ----------
    object_id : str
        The leaf.
    compacted : bool
        Whether the leaf has something to compact (False: it is left as it is).
    fragments_before, fragments_after : int
        The leaf's fragments at its ``read_version``, and after the compaction.
    leaves_done, leaves_total : int
        Leaves prepared so far, and selected, in this attempt.
    """

    object_id: str
    compacted: bool
    fragments_before: int
    fragments_after: int
    leaves_done: int
    leaves_total: int


@dataclass(frozen=True)
class LeafCompaction:
    """One selected leaf at the ``read_version`` optimize found: its size before and after.

    A leaf with nothing to compact has the same figures before and after.
    """

    object_id: str
    read_version: int
    fragments_before: int
    fragments_after: int
    rows: int
    bytes_before: int
    bytes_after: int
    compacted: bool


@dataclass(frozen=True)
class OptimizeResult:
    """What :func:`optimize` did.

    Attributes
    ----------
    version : int
        The latest ``__manifest`` version after the optimize (its own commits included).
    leaves_compacted : int
        Leaves whose compaction was published.
    leaves_skipped : int
        Selected leaves with nothing to compact (left untouched).
    fragments_before, fragments_after : int
        Fragments of the selected leaves before and after.
    rows : int
        Rows of the selected leaves (the same after: compaction keeps every live row).
    bytes_before, bytes_after : int
        Data file bytes of the selected leaves (deleted rows are not rewritten).
    manifest_fragments_before, manifest_fragments_after : int
        Fragments of the ``__manifest`` table before and after its compaction (equal when
        there was nothing to compact; both 0 when ``compact_manifest`` was False or its
        compaction kept conflicting with concurrent commits).
    attempts : int
        ``__manifest`` commit attempts of the leaf compactions (1 without conflicts).
    seconds : float
        Wall time.
    leaves : tuple of LeafCompaction
        Per selected leaf, in object id order.
    leaves_indexed : int
        Leaves not compacted whose missing or incomplete indexes (those the namespace
        defines, see :mod:`lance_partitioned.search`) were built in the same commit.
    leaves_dropped : int
        Selected leaves without a live row (every row deleted, or moved to another partition
        by an update or a merge), removed from the ``__manifest`` in the same commit instead
        of being compacted: a partition emptied by row-level changes disappears from
        ``partitions()`` as it would from a Delta or Iceberg table. Older versions still
        read them until ``cleanup``.
    """

    version: int
    leaves_compacted: int
    leaves_skipped: int
    fragments_before: int
    fragments_after: int
    rows: int
    bytes_before: int
    bytes_after: int
    manifest_fragments_before: int
    manifest_fragments_after: int
    attempts: int
    seconds: float
    leaves: tuple[LeafCompaction, ...] = field(default=(), repr=False)
    leaves_indexed: int = 0
    leaves_dropped: int = 0


def _signature(fragments: Sequence[Any]) -> tuple[tuple[Any, ...], ...]:
    """What a compaction of a leaf depends on: its fragments (metadata), their files and
    deletions (a restored copy of a version has the same signature as that version)."""
    out = []
    for meta in fragments:
        deletion = meta.deletion_file
        out.append(
            (
                meta.id,
                tuple(f.path for f in meta.files),
                None if deletion is None else (deletion.id, deletion.read_version),
            )
        )
    return tuple(out)


def _file_bytes(fragments: Sequence[Any]) -> int:
    """Data file bytes of fragment metadata (as Lance records them)."""
    return sum(int(f.file_size_bytes or 0) for fragment in fragments for f in fragment.files)


def _live_rows(fragments: Sequence[Any]) -> int:
    rows = 0
    for meta in fragments:
        deleted = meta.deletion_file.num_deleted_rows if meta.deletion_file else 0
        rows += int(meta.physical_rows or 0) - int(deleted or 0)
    return rows


@dataclass
class _Leaf:
    """One leaf at one ``read_version``: its size, and its prepared compaction (if any)."""

    object_id: str
    read_version: int
    signature: tuple[tuple[Any, ...], ...]
    fragments: int
    rows: int
    bytes: int
    operation: Any = None  # the Lance Rewrite, None: nothing to compact
    fragments_after: int = 0
    bytes_after: int = 0
    change: LeafChange | None = None  # one object per (leaf, read_version): commits reused
    compacted_at: int = -1  # the leaf version whose fragments `operation` rewrites
    indexes: list[Any] = field(default_factory=list)  # index definitions it must have
    indexed: bool = False  # `operation` builds its indexes (a CreateIndex), not a Rewrite

    def __post_init__(self) -> None:
        if self.compacted_at < 0:
            self.compacted_at = self.read_version

    def summary(self) -> LeafCompaction:
        return LeafCompaction(
            self.object_id,
            self.read_version,
            self.fragments,
            self.fragments_after,
            self.rows,
            self.bytes,
            self.bytes_after,
            self.operation is not None and not self.indexed,
        )


def _compact(ds: LanceDataset, options: CompactionOptions) -> tuple[Any, list[Any], list[Any]]:
    """Plan and run Lance's compaction of ``ds`` without committing it: the ``Rewrite``
    operation (None: nothing to compact), and the fragments it replaces and adds."""
    plan = Compaction.plan(ds, options)
    if not plan.tasks:
        return None, [], []
    # pylance's stub calls it old_fragments; the RewriteResult has original_fragments
    pairs = [
        (list(r.original_fragments), list(r.new_fragments))  # type: ignore[attr-defined]
        for r in (task.execute(ds) for task in plan.tasks)
    ]
    groups = [LanceOperation.RewriteGroup(old, new) for old, new in pairs]
    old = [f for fragments, _ in pairs for f in fragments]
    new = [f for _, fragments in pairs for f in fragments]
    return LanceOperation.Rewrite(groups=groups, rewritten_indices=[]), old, new


class _Planner:
    """The ``plan`` callback of :func:`commit_changes`: the compactions of the selected leaves
    of each snapshot, cached by (leaf, ``read_version``)."""

    def __init__(
        self,
        manifest: Manifest,
        filter: Filter,
        options: CompactionOptions,
        progress: Callable[[OptimizeProgress], None] | None,
        threads: int,
    ) -> None:
        self.manifest = manifest
        self.filter = filter
        self.options = options
        self.progress = progress
        self.threads = threads
        self.cache: dict[tuple[str, int], _Leaf] = {}
        self._schema: NamespaceSchema | None = None  # each plan's; read when asked for before
        self.indexes: dict[str, list[Any]] = {}
        self.selected: list[_Leaf] = []
        self.emptied: list[str] = []
        self.lock = threading.Lock()
        self._done = 0
        self._total = 0

    @property
    def schema(self) -> NamespaceSchema:
        """The namespace schema of the snapshot planned last (before any plan, as
        :func:`prepare_leaf` does: of the latest snapshot, read then)."""
        if self._schema is None:
            self._schema = self.manifest.snapshot().metadata.schema
        return self._schema

    def __call__(self, snapshot: ManifestSnapshot) -> ChangePlan:
        tasks = plan_scan(self.manifest, snapshot, self.filter)
        self._schema = snapshot.metadata.schema
        self.indexes = definitions_by_leaf(self.manifest, snapshot)
        known = {task.object_id: self._cached(task) for task in tasks}
        todo = [task for task in tasks if known[task.object_id] is None]
        self._done, self._total = len(tasks) - len(todo), len(tasks)
        if todo:
            width = max(1, min(self.threads, len(todo)))
            with ThreadPoolExecutor(max_workers=width) as pool:
                for task, leaf in zip(todo, pool.map(self._prepare_task, todo), strict=True):
                    known[task.object_id] = leaf
                    if task.read_version is not None:
                        self.cache[(task.object_id, task.read_version)] = leaf
        self.selected = [leaf for leaf in known.values() if leaf is not None]
        # a leaf without a live row (every row deleted, or moved out by an update or merge)
        # leaves the __manifest instead of being compacted; a commit to it meanwhile re-plans
        self.emptied = [leaf.object_id for leaf in self.selected if leaf.rows == 0]
        compacted = [leaf for leaf in self.selected if leaf.operation is not None and leaf.rows > 0]
        changes = []
        for leaf in compacted:
            if leaf.change is None:
                leaf.change = LeafChange(leaf.object_id, self._prepare_callback(leaf))
            changes.append(leaf.change)
        return ChangePlan(
            changes=changes, drops=self.emptied, properties=self._properties(compacted)
        )

    def _cached(self, task: ScanTask) -> _Leaf | None:
        """The leaf as already prepared at the task's ``read_version``. A row without one
        (another client's: read the latest leaf version) is never cached: its compaction is
        planned on whatever version is the latest now."""
        if task.read_version is None:
            return None
        return self.cache.get((task.object_id, task.read_version))

    def _prepare_task(self, task: ScanTask) -> _Leaf:
        ds = task.open()
        fragments = [f.metadata for f in ds.get_fragments()]
        leaf = _Leaf(
            task.object_id,
            int(ds.version),
            _signature(fragments),
            len(fragments),
            _live_rows(fragments),
            _file_bytes(fragments),
        )
        leaf.fragments_after, leaf.bytes_after = leaf.fragments, leaf.bytes
        leaf.indexes = self.indexes.get(task.object_id, [])
        if leaf.rows == 0:
            pass  # no live row: dropped from the __manifest (__call__), nothing to compact
        elif ds.describe_indices():
            log.info("leaf %s has Lance indices: not compacted", task.object_id)
        else:
            self._run(leaf, ds)
        if leaf.operation is None and leaf.rows > 0:
            self._index(leaf, ds)
        self._report(leaf)
        return leaf

    def _index(self, leaf: _Leaf, ds: LanceDataset) -> None:
        """Make ``leaf.operation`` the build of the indexes it lacks (if any)."""
        if leaf.indexes:
            leaf.operation = refresh_leaf(ds, leaf.indexes, self.schema, self.manifest)
            leaf.indexed = leaf.operation is not None

    def _run(self, leaf: _Leaf, ds: LanceDataset) -> None:
        try:
            operation, old, new = _compact(ds, self.options)
        except (OSError, ValueError) as exc:
            typed = errors.storage_error(exc, ds.uri, "optimize")
            if typed is not None:
                raise typed from exc
            raise errors.CorruptNamespaceError(
                f"cannot compact leaf {leaf.object_id!r} at {ds.uri!r} (version "
                f"{leaf.read_version}): {exc}"
            ) from exc
        leaf.operation = operation
        leaf.fragments_after = leaf.fragments - len(old) + len(new)
        leaf.bytes_after = leaf.bytes - _file_bytes(old) + _file_bytes(new)

    def _report(self, leaf: _Leaf) -> None:
        if self.progress is None:
            return
        with self.lock:
            self._done += 1
            event = OptimizeProgress(
                leaf.object_id,
                leaf.operation is not None,
                leaf.fragments,
                leaf.fragments_after,
                self._done,
                self._total,
            )
            self.progress(event)

    def _prepare_callback(self, leaf: _Leaf) -> Callable[[LanceDataset], Any]:
        def prepare(ds: LanceDataset) -> Any:
            # ds is the leaf at the version compacted (a version never changes: nothing to
            # compare), or a restored copy of it: the same fragments. Anything else would be a
            # compaction of other content: redo it on ds.
            if int(ds.version) == leaf.compacted_at:
                return leaf.operation
            signature = _signature([f.metadata for f in ds.get_fragments()])
            if signature != leaf.signature:
                log.warning("leaf %s is not as planned: compacting it again", leaf.object_id)
                leaf.signature = signature
                if leaf.indexed:
                    self._index(leaf, ds)
                else:
                    self._run(leaf, ds)
                leaf.compacted_at = int(ds.version)
            return leaf.operation

        return prepare

    def _properties(self, changed: Sequence[_Leaf]) -> dict[str, str]:
        """A compaction: no row added, removed or updated; the leaves it rewrote (and those
        whose indexes it built)."""
        indexed = [leaf for leaf in changed if leaf.indexed]
        compacted = [leaf for leaf in changed if not leaf.indexed]
        details = {
            "leaves_compacted": str(len(compacted)),
            "leaves_dropped": str(len(self.emptied)),
            "fragments_before": str(sum(leaf.fragments for leaf in compacted)),
            "fragments_after": str(sum(leaf.fragments_after for leaf in compacted)),
            "rows": str(sum(leaf.rows for leaf in compacted)),
        }
        if indexed:
            details["leaves_indexed"] = str(len(indexed))
        operation = Operation("optimize", details=details)
        touched = len(compacted) + len(indexed) + len(self.emptied)
        return operation.counted(partitions=touched).to_properties()


def prepare_leaf(
    manifest: Manifest, task: ScanTask, target_rows_per_fragment: int = 1_048_576
) -> Any:
    """Compact one leaf without committing (new fragments written, the ``Rewrite``
    prepared): what :func:`optimize` takes as ``prepared``."""
    options = CompactionOptions(target_rows_per_fragment=target_rows_per_fragment)
    return _Planner(manifest, None, options, None, 1)._prepare_task(task)


def _compact_manifest(manifest: Manifest) -> ManifestCompaction | None:
    """Compact the ``__manifest`` table, retrying a conflict a few times (then giving up:
    nothing is lost, the next optimize compacts it)."""
    properties = Operation("optimize_manifest").counted().to_properties()
    for attempt in range(_MANIFEST_ATTEMPTS):
        try:
            return manifest.compact(properties=properties)
        except CommitConflict as exc:
            log.info("__manifest compaction conflict on attempt %d: %s", attempt + 1, exc)
    log.warning("the __manifest kept changing: its compaction is left for the next optimize")
    return None


def optimize(
    manifest: Manifest,
    filter: Filter = None,
    *,
    target_rows_per_fragment: int = 1_048_576,
    compact_manifest: bool = True,
    progress: Callable[[OptimizeProgress], None] | None = None,
    threads: int | None = None,
    prepared: Sequence[Any] = (),
) -> OptimizeResult:
    """Compact the leaves selected by ``filter`` and publish them in one ``__manifest`` commit
    (see the module docstring).

    Parameters
    ----------
    manifest : Manifest
        The namespace's ``__manifest``.
    filter : str or Predicate, optional
        Selects leaves as a scan with this filter would (None: every leaf).
    target_rows_per_fragment : int
        Lance's compaction target: fragments with fewer rows are merged up to this size.
    compact_manifest : bool
        Also compact the ``__manifest`` table's own fragments.
    progress : callable, optional
        Called with an :class:`OptimizeProgress` once per selected leaf.
    threads : int, optional
        Leaves compacted in parallel (default: ``manifest.max_workers``).
    prepared : sequence
        Leaves already compacted elsewhere (Spark executors: :func:`prepare_leaf`), each
        used while its leaf is still at the version it was compacted on.

    Raises
    ------
    ConcurrentModificationError
        The ``__manifest`` kept changing under the optimize; nothing of it is visible.
    """
    if target_rows_per_fragment < 1:
        raise errors.InvalidInputError(
            f"target_rows_per_fragment must be at least 1, got {target_rows_per_fragment}"
        )
    started = time.perf_counter()
    width = threads or manifest.max_workers
    options = CompactionOptions(target_rows_per_fragment=target_rows_per_fragment)
    planner = _Planner(manifest, filter, options, progress, width)
    planner.cache.update(((leaf.object_id, leaf.read_version), leaf) for leaf in prepared)
    committed = commit_changes(manifest, planner, leaf_threads=width)
    published = set(committed.changed)
    indexed = {leaf.object_id for leaf in planner.selected if leaf.indexed} & published
    published -= indexed
    dropped = set(committed.dropped)
    leaves = [leaf.summary() for leaf in planner.selected if leaf.object_id not in dropped]
    compacted = [leaf for leaf in leaves if leaf.object_id in published]
    version = committed.version
    before = after = 0
    if compact_manifest:
        done = _compact_manifest(manifest)
        if done is not None:
            before, after = done.fragments_before, done.fragments_after
            version = version if done.version is None else done.version
    return OptimizeResult(
        version=version,
        leaves_compacted=len(compacted),
        leaves_skipped=len(leaves) - len(compacted) - len(indexed),
        fragments_before=sum(leaf.fragments_before for leaf in leaves),
        fragments_after=sum(
            leaf.fragments_after if leaf.object_id in published else leaf.fragments_before
            for leaf in leaves
        ),
        rows=sum(leaf.rows for leaf in leaves),
        bytes_before=sum(leaf.bytes_before for leaf in leaves),
        bytes_after=sum(
            leaf.bytes_after if leaf.object_id in published else leaf.bytes_before
            for leaf in leaves
        ),
        manifest_fragments_before=before,
        manifest_fragments_after=after,
        attempts=committed.attempts,
        seconds=time.perf_counter() - started,
        leaves=tuple(leaves),
        leaves_indexed=len(indexed),
        leaves_dropped=len(dropped),
    )
