"""``list_indices`` and ``index_stats``: what the namespace defines and what its leaves hold."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from lance_partitioned import errors
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.scan import ScanTask, plan_scan
from lance_partitioned.search.build import leaf_column, leaf_segments
from lance_partitioned.search.definitions import IndexDefinition, load_definitions

__all__ = ["IndexStats", "LeafIndexStats", "index_stats", "list_indices"]

LeafState = Literal["indexed", "flat", "missing"]


@dataclass(frozen=True)
class LeafIndexStats:
    """One leaf's state for one index: ``indexed`` (it has the index), ``flat`` (too small to
    train, or without the column: no index of its own; searched exactly, or, in an
    approximate search that goes through the namespace's ``IVF_PQ`` model, by its vectors'
    codes under that model, encoded in memory: :mod:`lance_partitioned.search.encode`) or
    ``missing`` (it should have it: built by ``optimize_indices``)."""

    object_id: str
    state: LeafState
    rows: int
    rows_indexed: int


@dataclass(frozen=True)
class IndexStats:
    """An index across the leaves its filter keeps.

    Attributes
    ----------
    name, index_type, column : str
        The index, its type and its column's current name.
    leaves_indexed, leaves_flat, leaves_missing : int
        Leaves per state (see :class:`LeafIndexStats`).
    rows_indexed, rows_unindexed : int
        Rows the leaf indexes cover, and the others (searched flat).
    leaves : tuple of LeafIndexStats
        Per leaf, in object id order.
    """

    name: str
    index_type: str
    column: str
    leaves_indexed: int
    leaves_flat: int
    leaves_missing: int
    rows_indexed: int
    rows_unindexed: int
    leaves: tuple[LeafIndexStats, ...] = ()


def list_indices(snapshot: ManifestSnapshot) -> list[dict[str, Any]]:
    """One dict per defined index: ``name``, ``index_type``, ``column`` (its current name),
    ``params``, ``filter``, ``min_rows``."""
    schema = snapshot.metadata.schema
    out = []
    for definition in load_definitions(snapshot.table_metadata).values():
        out.append(
            {
                "name": definition.name,
                "index_type": definition.index_type,
                "column": schema.field_by_id(definition.field_id).name,
                "params": dict(definition.params),
                "filter": definition.filter,
                "min_rows": definition.min_rows,
            }
        )
    return out


def _leaf(
    task: ScanTask, snapshot: ManifestSnapshot, definition: IndexDefinition
) -> LeafIndexStats:
    ds = task.open()
    rows = int(ds.count_rows())
    segments = leaf_segments(ds, definition.name)
    if segments:
        covered = {int(i) for segment in segments for i in segment.fragment_ids}
        indexed = sum(
            int(fragment.count_rows())
            for fragment in ds.get_fragments()
            if fragment.fragment_id in covered
        )
        return LeafIndexStats(task.object_id, "indexed", rows, indexed)
    column = leaf_column(ds.schema, snapshot.metadata.schema, definition.field_id)
    if column is None or rows == 0 or rows < definition.min_rows:
        return LeafIndexStats(task.object_id, "flat", rows, 0)
    return LeafIndexStats(task.object_id, "missing", rows, 0)


def index_stats(manifest: Manifest, snapshot: ManifestSnapshot, name: str) -> IndexStats:
    """The state of index ``name`` on every leaf its filter keeps (leaves opened in parallel).

    Raises
    ------
    InvalidInputError
        No index of that name is defined.
    """
    definitions = load_definitions(snapshot.table_metadata)
    if name not in definitions:
        raise errors.InvalidInputError(
            f"no index named {name!r}; the namespace defines {sorted(definitions)}"
        )
    definition = definitions[name]
    tasks = plan_scan(manifest, snapshot, definition.filter, [])
    with ThreadPoolExecutor(max_workers=max(1, min(manifest.max_workers, len(tasks) or 1))) as p:
        leaves = sorted(
            p.map(lambda task: _leaf(task, snapshot, definition), tasks),
            key=lambda leaf: leaf.object_id,
        )
    schema = snapshot.metadata.schema
    return IndexStats(
        name=name,
        index_type=definition.index_type,
        column=schema.field_by_id(definition.field_id).name,
        leaves_indexed=sum(leaf.state == "indexed" for leaf in leaves),
        leaves_flat=sum(leaf.state == "flat" for leaf in leaves),
        leaves_missing=sum(leaf.state == "missing" for leaf in leaves),
        rows_indexed=sum(leaf.rows_indexed for leaf in leaves),
        rows_unindexed=sum(leaf.rows - leaf.rows_indexed for leaf in leaves),
        leaves=tuple(leaves),
    )
