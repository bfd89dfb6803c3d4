"""Index builds on the leaves of a namespace, published in one ``__manifest`` commit.

:func:`create_index` plans one :class:`~lance_partitioned.transaction.LeafChange` per leaf
that a scan with the index's ``filter`` reads (the scan planner,
:func:`lance_partitioned.scan.plan_scan`). Each change builds the leaf's index with pylance's
``create_index_uncommitted`` (index files written, nothing committed) and returns a Lance
``CreateIndex`` operation, which also removes an index of the same name already on the leaf;
:func:`lance_partitioned.transaction.commit_changes` commits every leaf's operation and
publishes the new ``read_version``\\ s in one ``__manifest`` compare-and-swap. Until then
readers see no index (a reader searching meanwhile gets the same rows, flat).

The definition is then recorded in the ``__manifest`` table metadata
(:mod:`.definitions`), a second commit: pylance commits table metadata and rows in separate
Lance operations. A crash between the two leaves the leaves indexed and no definition: the
next ``create_index`` of that name replaces those leaf indexes.

A vector index is built on a leaf with at least ``min_rows`` rows (default
:data:`~.definitions.IVF_MIN_ROWS`); smaller leaves are left flat (no index of their
own: searched exactly, or through codes encoded in memory under the shared model in an
approximate search, :mod:`.encode`) and counted as such by
:func:`~lance_partitioned.search.stats.index_stats`. By default its IVF centroids (and PQ
codebook) are trained once for the namespace and shared by every leaf (:mod:`.training`);
``shared_training=False`` trains each leaf's own. Scalar and full-text indexes are built on
every leaf with rows.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from lance import LanceDataset, LanceOperation
from lance.dataset import Index

from lance_partitioned import errors
from lance_partitioned.consistency import leaf_field
from lance_partitioned.manifest import CommitConflict, Manifest, ManifestSnapshot
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.runtime.leaf_cache import exclusive
from lance_partitioned.scan import plan_scan
from lance_partitioned.search.definitions import (
    INDEX_TYPES,
    INDICES_KEY,
    IVF_MIN_ROWS,
    IndexDefinition,
    dump_definitions,
    load_definitions,
)
from lance_partitioned.search.training import (
    MODEL_KEY,
    SharedModel,
    load_model,
    sample_size,
    sample_vectors,
    save_model,
    train_model,
)
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.transaction import Backoff, ChangePlan, LeafChange, commit_changes

__all__ = [
    "IndexBuildProgress",
    "IndexBuildResult",
    "create_index",
    "definitions_by_leaf",
    "drop_index",
    "leaf_column",
    "model_of",
    "new_definition",
    "optimize_indices",
    "prepare_leaf_index",
    "refresh_leaf",
    "shared_model",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexBuildProgress:
    """Reported once per leaf when its index is built (or left flat)."""

    object_id: str
    built: bool
    leaves_done: int
    leaves_total: int


@dataclass(frozen=True)
class IndexBuildResult:
    """What an index build did.

    Attributes
    ----------
    name : str
        The index.
    version : int
        The ``__manifest`` version after the build (its definition recorded).
    leaves_indexed : int
        Leaves whose index this build published.
    leaves_flat : int
        Leaves left as they are: too small to train or empty (searched flat), or already
        up to date (``optimize_indices``).
    seconds : float
        Wall time.
    """

    name: str
    version: int
    leaves_indexed: int
    leaves_flat: int
    seconds: float


def leaf_column(leaf: pa.Schema, schema: NamespaceSchema, field_id: int) -> str | None:
    """The name of the leaf column holding namespace field ``field_id`` (None: absent, or the
    field is dropped)."""
    if schema.is_deprecated(field_id):
        return None
    for target in schema.read_schema():
        found = leaf_field(leaf, target) if _field_id(target) == field_id else None
        if found is not None:
            return str(found.name)
    return None


def _field_id(field: pa.Field) -> int | None:
    raw = (field.metadata or {}).get(b"lance:field_id")
    return None if raw is None else int(raw)


def leaf_segments(ds: LanceDataset, name: str) -> list[Index]:
    """The segments of the Lance index ``name`` on ``ds`` (as ``CreateIndex`` removes them)."""
    out = []
    for described in ds.describe_indices():
        if described.name != name:
            continue
        for segment in described.segments:
            out.append(
                Index(
                    uuid=str(segment.uuid),
                    name=name,
                    fields=list(described.fields),
                    dataset_version=int(ds.version),
                    fragment_ids=set(segment.fragment_ids),  # type: ignore[arg-type]
                    index_version=int(segment.index_version),
                )
            )
    return out


def _sized(
    definition: IndexDefinition, rows: int, dim: int | None, model: SharedModel | None = None
) -> dict[str, Any]:
    """Pylance parameters for one leaf: the definition's, with IVF defaults sized per leaf
    (``num_partitions`` the square root of its rows, at most one per 256 rows;
    ``num_sub_vectors`` dim/16, else the largest divisor of dim up to dim/2), or the shared
    ``model``'s centroids and codebook."""
    params = dict(definition.params)
    if definition.kind != "vector":
        return params
    if model is not None:
        params.update(model.params())
    params.setdefault("num_partitions", max(1, min(int(math.sqrt(rows)), rows // 256)))
    if definition.index_type == "IVF_PQ" and dim and "num_sub_vectors" not in params:
        for divisor in (16, 8, 4, 2, 1):
            if dim % divisor == 0 and dim // divisor >= 1:
                params["num_sub_vectors"] = dim // divisor
                break
    return params


def build_leaf(
    ds: LanceDataset,
    definition: IndexDefinition,
    column: str,
    model: SharedModel | None = None,
) -> Any:
    """The ``CreateIndex`` operation that (re)builds ``definition`` on the leaf at ``ds``
    without committing it (with the shared ``model`` when given); None when the leaf is left
    flat (or empty)."""
    rows = ds.count_rows()
    if rows == 0 or rows < definition.min_rows:
        return None
    fragments = [fragment.fragment_id for fragment in ds.get_fragments()]
    field = ds.schema.field(column)
    dim = field.type.list_size if pa.types.is_fixed_size_list(field.type) else None
    params = _sized(definition, rows, dim, model)
    # the build holds its dataset object exclusively: not the leaf cache's shared one
    own = exclusive(ds)
    try:
        built = own.create_index_uncommitted(
            column,
            definition.index_type,
            name=definition.name,
            replace=True,
            fragment_ids=fragments,
            **params,
        )
        if definition.index_type == "INVERTED":  # its segment is staged until merged
            built = own.merge_existing_index_segments([built])
    except (OSError, ValueError, TypeError, RuntimeError) as exc:
        raise errors.InvalidInputError(
            f"cannot build index {definition.name!r} ({definition.index_type}) on column "
            f"{column!r} of leaf {ds.uri!r}: {exc}"
        ) from exc
    return LanceOperation.CreateIndex(
        new_indices=[built], removed_indices=leaf_segments(ds, definition.name)
    )


def definition_for(
    snapshot: ManifestSnapshot,
    column: str,
    index_type: str,
    name: str | None,
    filter: str | None,
    params: Mapping[str, Any],
) -> IndexDefinition:
    """A validated definition for ``create_index``'s arguments."""
    kind = str(index_type).upper()
    if kind not in INDEX_TYPES:
        raise errors.InvalidInputError(
            f"index type {index_type!r} is not one of {', '.join(INDEX_TYPES)}"
        )
    schema = snapshot.metadata.schema
    try:
        field_id = schema.field_id(column)
    except errors.SchemaError as exc:
        raise errors.InvalidInputError(f"create_index: no column {column!r}: {exc}") from exc
    extra = dict(params)
    vector = kind in ("IVF_PQ", "IVF_HNSW_SQ", "IVF_FLAT")
    min_rows = int(extra.pop("min_rows", IVF_MIN_ROWS if vector else 1))
    if min_rows < 1:
        raise errors.InvalidInputError(f"min_rows must be at least 1, got {min_rows}")
    shared = bool(extra.pop("shared_training", True))
    if not vector and not shared:
        raise errors.InvalidInputError("shared_training applies to vector indexes only")
    return IndexDefinition(
        name=name or f"{column}_idx",
        field_id=field_id,
        column=column,
        index_type=kind,
        params=extra,
        filter=filter,
        min_rows=min_rows,
        extra={"shared_training": False} if not shared else {},
    )


class _Planner:
    """The ``plan`` callback of :func:`commit_changes` for builds: one change per kept leaf
    (cached by leaf and ``read_version``), which builds when the protocol prepares it."""

    def __init__(
        self,
        manifest: Manifest,
        definition: IndexDefinition,
        progress: Callable[[IndexBuildProgress], None] | None,
        only_missing: bool = False,
        operation: str = "create_index",
        prebuilt: Mapping[str, tuple[int | None, Any]] | None = None,
        model: SharedModel | None = None,
    ) -> None:
        self.manifest = manifest
        self.model = model
        self.prebuilt = dict(prebuilt or {})
        self.definition = definition
        self.progress = progress
        self.only_missing = only_missing
        self.operation = operation
        self.changes: dict[tuple[str, int | None], LeafChange] = {}
        self.built: set[str] = set()
        self.flat: set[str] = set()
        self.lock = threading.Lock()
        self.total = 0
        self.schema = manifest.snapshot().metadata.schema

    def __call__(self, snapshot: ManifestSnapshot) -> ChangePlan:
        tasks = plan_scan(self.manifest, snapshot, self.definition.filter, [])
        self.schema = snapshot.metadata.schema
        self.total = len(tasks)
        changes = []
        for task in tasks:
            key = (task.object_id, task.read_version)
            if key not in self.changes:
                found = self.prebuilt.get(task.object_id)
                ready = found is not None and found[0] == task.read_version
                self.changes[key] = LeafChange(
                    task.object_id, self._prepare(task.object_id, found if ready else None)
                )
            changes.append(self.changes[key])
        details = {"index": self.definition.name, "index_type": self.definition.index_type}
        operation = Operation(self.operation, details=details)
        return ChangePlan(changes=changes, properties=operation.counted().to_properties())

    def _prepare(
        self, object_id: str, prebuilt: tuple[int | None, Any] | None
    ) -> Callable[[LanceDataset], Any]:
        def prepare(ds: LanceDataset) -> Any:
            column = leaf_column(ds.schema, self.schema, self.definition.field_id)
            if prebuilt is not None:  # built elsewhere on this leaf's read_version
                operation = prebuilt[1]
            elif column is None:
                operation = None  # the leaf predates the column: nothing to index
            elif self.only_missing and not _needs_build(ds, self.definition):
                operation = None
            else:
                operation = build_leaf(ds, self.definition, column, self.model)
            with self.lock:
                if operation is None:
                    self.flat.add(object_id)
                    self.built.discard(object_id)
                else:
                    self.built.add(object_id)
                    self.flat.discard(object_id)
                if self.progress is not None:
                    done = len(self.built) + len(self.flat)
                    self.progress(
                        IndexBuildProgress(object_id, operation is not None, done, self.total)
                    )
            return operation

        return prepare


def _needs_build(ds: LanceDataset, definition: IndexDefinition) -> bool:
    """Whether the leaf lacks the index or has rows the index does not cover."""
    if ds.count_rows() < definition.min_rows:
        return False
    segments = leaf_segments(ds, definition.name)
    if not segments:
        return True
    covered: set[int] = set()
    for segment in segments:
        covered.update(int(i) for i in segment.fragment_ids)
    return any(fragment.fragment_id not in covered for fragment in ds.get_fragments())


def record_definitions(
    manifest: Manifest,
    change: Callable[[dict[str, IndexDefinition]], dict[str, IndexDefinition]],
    operation: str,
) -> int:
    """Commit ``change`` applied to the latest definitions as a table metadata update, retried
    on a conflict; returns the new ``__manifest`` version."""
    backoff = Backoff()
    properties = Operation(operation, mode="metadata").counted().to_properties()
    for attempt in range(backoff.attempts):
        snapshot = manifest.snapshot()
        updated = change(load_definitions(snapshot.table_metadata))
        value = dump_definitions(updated)
        try:
            return manifest.commit_table_metadata(
                snapshot.version, {INDICES_KEY: value}, properties=properties
            )
        except CommitConflict:
            backoff.sleep(attempt)
    raise errors.ConcurrentModificationError(
        "the __manifest kept changing while the index definitions were recorded"
    )


def new_definition(
    snapshot: ManifestSnapshot,
    column: str,
    index_type: str,
    name: str | None,
    filter: str | None,
    replace: bool,
    params: Mapping[str, Any],
) -> IndexDefinition:
    """The definition ``create_index`` builds, checked against the indexes ``snapshot``
    defines (an existing name needs ``replace``)."""
    definition = definition_for(snapshot, column, index_type, name, filter, params)
    existing = load_definitions(snapshot.table_metadata)
    if definition.name in existing and not replace:
        raise errors.InvalidInputError(
            f"an index named {definition.name!r} already exists; pass replace=True to rebuild it"
        )
    return definition


def prepare_leaf_index(
    ds: LanceDataset,
    definition: IndexDefinition,
    schema: NamespaceSchema,
    model: SharedModel | None = None,
) -> Any:
    """The uncommitted ``CreateIndex`` of ``definition`` on the leaf at ``ds`` (as a build
    plans it, with the shared ``model`` when given), or None when the leaf is left flat or
    lacks the column."""
    column = leaf_column(ds.schema, schema, definition.field_id)
    return None if column is None else build_leaf(ds, definition, column, model)


def shared_model(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    definition: IndexDefinition,
    threads: int | None = None,
) -> tuple[IndexDefinition, SharedModel | None]:
    """Train and save the namespace-wide model of a vector ``definition`` on a sample of the
    leaves of ``snapshot`` it will index (see :mod:`.training`); returns the definition
    naming the model file, and the model. Unchanged, and None, for other indexes, with
    ``shared_training=False``, or when no leaf has ``min_rows`` rows (or too few vectors to
    train on): the leaves then train their own."""
    if definition.kind != "vector" or definition.extra.get("shared_training") is False:
        return definition, None
    leaves = []
    schema = snapshot.metadata.schema
    for task in plan_scan(manifest, snapshot, definition.filter, []):
        ds = task.open()
        column = leaf_column(ds.schema, schema, definition.field_id)
        rows = ds.count_rows() if column is not None else 0
        if rows > 0 and rows >= definition.min_rows and column is not None:
            leaves.append((ds, column, rows))
    if not leaves:
        return definition, None
    ds, column, _ = leaves[0]
    field = ds.schema.field(column)
    dim = field.type.list_size if pa.types.is_fixed_size_list(field.type) else None
    total = sum(rows for _, _, rows in leaves)
    params = _sized(definition, total, dim)
    partitions = int(params["num_partitions"])
    size = sample_size(definition.index_type, partitions, definition.params)
    sample = sample_vectors(leaves, min(size, total), threads or manifest.max_workers)
    trained = train_model(
        sample, definition.index_type, partitions, params, params.get("num_sub_vectors")
    )
    if trained is None:
        return definition, None
    saved = save_model(manifest, definition.name, trained)
    log.info("index %s: trained one model on %d sampled vectors", definition.name, len(sample))
    extra = {**definition.extra, MODEL_KEY: saved.path}
    return dataclasses.replace(definition, extra=extra), saved


def model_of(manifest: Manifest, definition: IndexDefinition) -> SharedModel | None:
    """The shared model a definition names (None: its leaves train their own)."""
    path = definition.extra.get(MODEL_KEY)
    return None if not path else load_model(manifest, str(path))


def create_index(
    manifest: Manifest,
    column: str,
    index_type: str,
    *,
    name: str | None = None,
    filter: str | None = None,
    replace: bool = False,
    progress: Callable[[IndexBuildProgress], None] | None = None,
    threads: int | None = None,
    prebuilt: Mapping[str, tuple[int | None, Any]] | None = None,
    trained: tuple[IndexDefinition, SharedModel | None] | None = None,
    **params: Any,
) -> IndexBuildResult:
    """Build an index on every leaf ``filter`` keeps and publish it (see the module docstring).

    ``prebuilt`` maps a leaf's object id to (``read_version``, the operation
    :func:`prepare_leaf_index` returned on it elsewhere, e.g. on a Spark executor): used as
    is while the leaf is still at that version, rebuilt here when it moved. ``trained``:
    the definition and shared model :func:`shared_model` returned for these arguments (the
    model is trained here otherwise).

    Raises
    ------
    InvalidInputError
        An unknown index type or column, an index of that name already defined (without
        ``replace``), or parameters pylance refuses.
    """
    started = time.perf_counter()
    snapshot = manifest.snapshot()
    definition = new_definition(snapshot, column, index_type, name, filter, replace, params)
    definition, model = trained or shared_model(manifest, snapshot, definition, threads)
    planner = _Planner(manifest, definition, progress, prebuilt=prebuilt, model=model)
    committed = commit_changes(manifest, planner, leaf_threads=threads or manifest.max_workers)
    version = record_definitions(
        manifest, lambda found: {**found, definition.name: definition}, "create_index"
    )
    published = set(committed.changed)
    return IndexBuildResult(
        definition.name,
        version,
        len(published),
        planner.total - len(published),
        time.perf_counter() - started,
    )


def optimize_indices(
    manifest: Manifest,
    name: str | None = None,
    *,
    threads: int | None = None,
) -> list[IndexBuildResult]:
    """Bring every defined index (or ``name``) up to date: leaves that lack it or have
    fragments it does not cover get it rebuilt, each index in one ``__manifest`` commit."""
    definitions = load_definitions(manifest.snapshot().table_metadata)
    if name is not None and name not in definitions:
        raise errors.InvalidInputError(f"no index named {name!r}")
    results = []
    for definition in definitions.values():
        if name is not None and definition.name != name:
            continue
        started = time.perf_counter()
        model = model_of(manifest, definition)
        planner = _Planner(manifest, definition, None, True, "optimize_indices", model=model)
        committed = commit_changes(manifest, planner, leaf_threads=threads or manifest.max_workers)
        results.append(
            IndexBuildResult(
                definition.name,
                committed.version,
                len(committed.changed),
                len(planner.flat),
                time.perf_counter() - started,
            )
        )
    return results


def drop_index(manifest: Manifest, name: str, *, threads: int | None = None) -> int:
    """Remove the index ``name`` from every leaf (one ``__manifest`` commit) and its definition;
    returns the ``__manifest`` version."""
    definitions = load_definitions(manifest.snapshot().table_metadata)
    if name not in definitions:
        raise errors.InvalidInputError(f"no index named {name!r}")

    def plan(snapshot: ManifestSnapshot) -> ChangePlan:
        tasks = plan_scan(manifest, snapshot, None, [])
        changes = [LeafChange(task.object_id, _remove(name)) for task in tasks]
        operation = Operation("drop_index", details={"index": name})
        return ChangePlan(changes=changes, properties=operation.counted().to_properties())

    commit_changes(manifest, plan, leaf_threads=threads or manifest.max_workers)

    def without(found: dict[str, IndexDefinition]) -> dict[str, IndexDefinition]:
        return {key: value for key, value in found.items() if key != name}

    return record_definitions(manifest, without, "drop_index")


def _remove(name: str) -> Callable[[LanceDataset], Any]:
    def prepare(ds: LanceDataset) -> Any:
        segments = leaf_segments(ds, name)
        if not segments:
            return None
        return LanceOperation.CreateIndex(new_indices=[], removed_indices=segments)

    return prepare


def definitions_by_leaf(
    manifest: Manifest, snapshot: ManifestSnapshot
) -> dict[str, list[IndexDefinition]]:
    """The index definitions of ``snapshot`` that apply to each of its leaves (those whose
    filter keeps the leaf, as a scan prunes it)."""
    out: dict[str, list[IndexDefinition]] = {}
    for definition in load_definitions(snapshot.table_metadata).values():
        for task in plan_scan(manifest, snapshot, definition.filter, []):
            out.setdefault(task.object_id, []).append(definition)
    return out


def refresh_leaf(
    ds: LanceDataset,
    definitions: list[IndexDefinition],
    schema: NamespaceSchema,
    manifest: Manifest | None = None,
) -> Any:
    """One ``CreateIndex`` operation (not committed) that builds, or rebuilds over every
    fragment, each of ``definitions`` the leaf at ``ds`` lacks or that leaves rows of it
    unindexed; None when every one is up to date (or the leaf is too small). A definition's
    shared model is read from the namespace of ``manifest``."""
    new: list[Any] = []
    removed: list[Any] = []
    for definition in definitions:
        column = leaf_column(ds.schema, schema, definition.field_id)
        if column is None or not _needs_build(ds, definition):
            continue
        model = None
        if definition.extra.get(MODEL_KEY):
            if manifest is None:
                raise errors.InternalError(
                    f"index {definition.name!r} has a shared model: refresh_leaf needs the "
                    "namespace's manifest to read it"
                )
            model = model_of(manifest, definition)
        operation = build_leaf(ds, definition, column, model)
        if operation is not None:
            new.extend(operation.new_indices)
            removed.extend(operation.removed_indices)
    if not new:
        return None
    return LanceOperation.CreateIndex(new_indices=new, removed_indices=removed)
