"""The index part of :func:`lance_partitioned.verify.verify`: does every leaf hold the indexes
its namespace defines?

Each leaf that an index definition applies to (its ``filter`` keeps the leaf, as a scan
prunes it) is opened at its ``read_version`` and its Lance indexes compared with the
definitions:

- ``index_missing``: the leaf has the column, at least ``min_rows`` rows and no index of the
  definition's name (a leaf written after ``create_index``, or a leaf whose rows were
  overwritten): ``optimize()`` builds it;
- ``index_column``: the leaf has an index of the definition's name on another column than the
  definition's (a Lance index made outside the namespace): ``create_index(..., replace=True)``
  rebuilds it.

These are findings of their own (:attr:`lance_partitioned.verify.Report.indexes`), not
problems: reads and searches are right either way (a leaf without its index is searched flat).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from lance_partitioned import errors
from lance_partitioned.manifest import Manifest
from lance_partitioned.scan import ScanTask, plan_scan
from lance_partitioned.search.build import definitions_by_leaf, leaf_column
from lance_partitioned.search.definitions import IndexDefinition
from lance_partitioned.spec.schema import NamespaceSchema

__all__ = ["check_indexes"]


Finding = tuple[str, str | None, str]
"""``(kind, object_id, message)``: what :func:`lance_partitioned.verify.verify` reports as a
:class:`~lance_partitioned.verify.Problem` in ``Report.indexes``."""


def check_indexes(manifest: Manifest, version: int, threads: int) -> list[Finding]:
    """The ``index_missing`` and ``index_column`` findings of ``__manifest`` version
    ``version`` (leaves opened on ``threads`` threads), sorted by leaf; a definition that
    cannot be read is one ``index_definition`` finding."""
    try:
        snapshot = manifest.snapshot(version)
        by_leaf = definitions_by_leaf(manifest, snapshot)
    except errors.LancePartitionedError as exc:
        return [("index_definition", None, f"the index definitions: {exc}")]
    if not by_leaf:
        return []
    tasks = [task for task in plan_scan(manifest, snapshot, None, []) if task.object_id in by_leaf]
    schema = snapshot.metadata.schema
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(tasks) or 1))) as pool:
        found = pool.map(lambda task: _check(task, by_leaf[task.object_id], schema), tasks)
        return sorted((p for problems in found for p in problems), key=lambda p: (p[1] or "", p[2]))


def _check(
    task: ScanTask, definitions: list[IndexDefinition], schema: NamespaceSchema
) -> list[Finding]:
    try:
        ds = task.open()
        described = {d.name: list(d.field_names) for d in ds.describe_indices()}
        rows = int(ds.count_rows())
    except (OSError, ValueError, RuntimeError, errors.LancePartitionedError):
        return []  # the leaf itself is reported by the rest of verify
    out: list[Finding] = []
    for definition in definitions:
        if schema.is_deprecated(definition.field_id):
            continue
        column = leaf_column(ds.schema, schema, definition.field_id)
        fields = described.get(definition.name)
        if fields is None:
            if column is not None and rows > 0 and rows >= definition.min_rows:
                out.append(
                    (
                        "index_missing",
                        task.object_id,
                        f"index {definition.name!r} ({definition.index_type}) is missing on "
                        f"this leaf of {rows} rows: optimize() builds it",
                    )
                )
        elif column is None or fields != [column]:
            out.append(
                (
                    "index_column",
                    task.object_id,
                    f"index {definition.name!r} is on column(s) {fields} of this leaf, not on "
                    f"{column or definition.column!r} as defined: create_index(..., "
                    "replace=True) rebuilds it",
                )
            )
    return out
