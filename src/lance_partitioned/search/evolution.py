"""Index definitions under schema evolution: a dropped column takes its indexes with it.

:func:`lance_partitioned.evolution.drop_columns` removes the definitions of the indexes on
the dropped columns in the commit that publishes the drop (:func:`definitions_after_drop`),
then removes those indexes from every leaf in one more ``__manifest`` commit
(:func:`drop_leaf_indexes`). A crash between the two leaves Lance indexes of no definition on
leaves, on a column no read sees: harmless, and replaced by a later ``create_index`` of the
same name. Renamed columns keep their indexes (definitions hold field ids).

Data changes need nothing here: an update, merge or overwrite of a leaf leaves its index
covering fewer rows (or none), Lance searches the unindexed fragments exactly, and
``optimize()`` / ``optimize_indices()`` rebuild the index on those leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lance import LanceDataset, LanceOperation

from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.scan import plan_scan
from lance_partitioned.search.build import leaf_segments
from lance_partitioned.search.definitions import INDICES_KEY, dump_definitions, load_definitions
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.transaction import ChangePlan, LeafChange, commit_changes

__all__ = ["definitions_after_drop", "drop_leaf_indexes"]


def definitions_after_drop(
    snapshot: ManifestSnapshot, new: NamespaceMetadata, dropped: list[str]
) -> dict[str, str]:
    """The table metadata update removing the definitions on columns ``new`` deprecates
    (empty when there are none); their names are put in ``dropped`` (cleared first)."""
    dropped.clear()
    definitions = load_definitions(snapshot.table_metadata)
    for name, definition in definitions.items():
        if new.schema.is_deprecated(definition.field_id):
            dropped.append(name)
    if not dropped:
        return {}
    kept = {name: d for name, d in definitions.items() if name not in dropped}
    return {INDICES_KEY: dump_definitions(kept)}


def drop_leaf_indexes(manifest: Manifest, names: Sequence[str]) -> int:
    """Remove the Lance indexes ``names`` from every leaf, in one ``__manifest`` commit;
    returns the ``__manifest`` version after it."""
    wanted = list(names)

    def plan(snapshot: ManifestSnapshot) -> ChangePlan:
        tasks = plan_scan(manifest, snapshot, None, [])
        changes = [LeafChange(task.object_id, _remove(wanted)) for task in tasks]
        operation = Operation("drop_index", details={"index": ",".join(wanted)})
        return ChangePlan(changes=changes, properties=operation.counted().to_properties())

    return int(commit_changes(manifest, plan, leaf_threads=manifest.max_workers).version)


def _remove(names: list[str]) -> Callable[[LanceDataset], Any]:
    def prepare(ds: LanceDataset) -> Any:
        segments = [segment for name in names for segment in leaf_segments(ds, name)]
        if not segments:
            return None
        return LanceOperation.CreateIndex(new_indices=[], removed_indices=segments)

    return prepare
