"""``create_index`` on Spark: every leaf's index built in an executor task, one commit.

The driver checks the definition and plans the leaves the index's ``filter`` keeps on one
pinned ``__manifest`` snapshot (the scan planner, as the Python path does), trains a vector
index's shared IVF centroids and PQ codebook once on a sample of those leaves and saves them
in the namespace (:func:`lance_partitioned.search.build.shared_model`), then runs one
Spark task per leaf, each handed the model (a few hundred kilobytes). Each task opens its
leaf at the snapshot's ``read_version`` and builds the leaf's index with pylance's
``create_index_uncommitted``
(:func:`lance_partitioned.search.build.prepare_leaf_index`): the index files are written,
nothing is committed, and the task returns the Lance ``CreateIndex`` operation (index
metadata: uuid, fields, fragment ids, files; a few hundred bytes, it pickles). The driver
hands those operations to :func:`lance_partitioned.search.build.create_index`, which commits
every leaf's operation and publishes them in ONE
:func:`lance_partitioned.transaction.commit_changes` call, then records the definition,
exactly as ``ns.create_index`` does; a leaf that moved since the snapshot is rebuilt there,
on the driver.

The index files of an attempt whose result is not used (a failed or retried task, a
speculative loser, a leaf rebuilt on the driver) are referenced by no leaf version: they are
left to :func:`lance_partitioned.maintenance.cleanup.cleanup`, which removes index
directories no retained leaf version reads, once older than its retention.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lance_partitioned.manifest import Manifest
from lance_partitioned.scan import ScanTask, plan_scan
from lance_partitioned.search.build import (
    IndexBuildResult,
    new_definition,
    prepare_leaf_index,
    shared_model,
)
from lance_partitioned.search.build import create_index as build_index
from lance_partitioned.search.definitions import IndexDefinition
from lance_partitioned.search.training import SharedModel
from lance_partitioned.spark.dml import LeafJob, TaskHook, job_for, run_leaf_tasks

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["create_index", "distributed_create_index"]


def create_index(
    spark: SparkSession,
    uri: str,
    column: str,
    index_type: str,
    *,
    name: str | None = None,
    filter: str | None = None,
    replace: bool = False,
    storage_options: Mapping[str, str] | None = None,
    **params: Any,
) -> IndexBuildResult:
    """Build an index on every leaf of the namespace at ``uri`` in Spark tasks; the driver
    publishes them in one ``__manifest`` commit.

    Parameters
    ----------
    spark : SparkSession
        The session whose executors build the leaf indexes.
    uri : str
        The namespace root.
    column, index_type, name, filter, replace, **params
        As for :meth:`~lance_partitioned.PartitionedNamespace.create_index`.
    storage_options : dict, optional
        Passed to every Lance call, on the driver and the executors.

    Returns
    -------
    IndexBuildResult
        As ``ns.create_index`` returns.

    Raises
    ------
    InvalidInputError
        An unknown index type or column, an existing index name without ``replace``
        (checked on the driver before any task runs), or parameters pylance refuses.
    """
    manifest = Manifest(uri, dict(storage_options or {}))
    return distributed_create_index(
        spark,
        manifest,
        column,
        index_type,
        name=name,
        filter=filter,
        replace=replace,
        **params,
    )


def distributed_create_index(
    spark: SparkSession,
    manifest: Manifest,
    column: str,
    index_type: str,
    *,
    name: str | None = None,
    filter: str | None = None,
    replace: bool = False,
    hook: TaskHook | None = None,
    **params: Any,
) -> IndexBuildResult:
    """:func:`create_index` on an open ``__manifest`` (``hook``: called in every task after
    its work, with (task index, attempt); a test hook)."""
    snapshot = manifest.snapshot()
    definition = new_definition(snapshot, column, index_type, name, filter, replace, params)
    trained = shared_model(manifest, snapshot, definition)
    definition, model = trained
    tasks = plan_scan(manifest, snapshot, definition.filter, [])
    job = job_for(manifest, snapshot, hook)
    items = [(task, definition, model) for task in tasks]
    found, _ = run_leaf_tasks(spark, job, items, _build_leaf)
    prebuilt = {object_id: (version, operation) for object_id, version, operation in found}
    return build_index(
        manifest,
        column,
        index_type,
        name=name,
        filter=filter,
        replace=replace,
        prebuilt=prebuilt,
        trained=trained,
        **params,
    )


def _build_leaf(
    job: LeafJob, item: tuple[ScanTask, IndexDefinition, SharedModel | None]
) -> tuple[tuple[str, int | None, Any], None]:
    task, definition, model = item
    ds = task.open()
    operation = prepare_leaf_index(ds, definition, job.snapshot().metadata.schema, model)
    return (task.object_id, task.read_version, operation), None
