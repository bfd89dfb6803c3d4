"""``PartitionedTable``: a namespace's heavy operations run by Spark (delta-spark's
``DeltaTable``).

>>> from lance_partitioned.spark import PartitionedTable
>>> PartitionedTable.forPath == PartitionedTable.for_path
True

Each change plans on the driver, runs its per-leaf work in Spark tasks and commits once on
the driver through :func:`lance_partitioned.transaction.commit_changes` (see
:mod:`lance_partitioned.spark.dml`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lance_partitioned import errors
from lance_partitioned.dml.results import DeleteResult, UpdateResult
from lance_partitioned.dml.update import assignments as to_assignments
from lance_partitioned.history.restore import RestoreResult
from lance_partitioned.maintenance.optimize import OptimizeResult
from lance_partitioned.manifest import Manifest
from lance_partitioned.namespace import PartitionedNamespace
from lance_partitioned.spark import dml as spark_dml
from lance_partitioned.spark.dml import TaskHook
from lance_partitioned.spark.merge import SparkMergeBuilder, keys_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["PartitionedTable"]


class PartitionedTable:
    """A Lance Partitioned Namespace seen from a SparkSession.

    Parameters
    ----------
    spark : SparkSession
        The session whose executors do the work.
    uri : str
        The namespace root.
    storage_options : mapping of str to str, optional
        Passed to every Lance call (on the driver and the executors).
    """

    def __init__(
        self, spark: SparkSession, uri: str, storage_options: Mapping[str, str] | None = None
    ) -> None:
        self._spark = spark
        self._uri = uri
        self._storage = {str(k): str(v) for k, v in (storage_options or {}).items()}
        self._manifest = Manifest(uri, self._storage)
        self.namespace()  # no namespace there: a typed error now
        self._task_hook: TaskHook | None = None  # tests: runs in every task after its work

    @classmethod
    def for_path(
        cls, spark: SparkSession, uri: str, storage_options: Mapping[str, str] | None = None
    ) -> PartitionedTable:
        """The namespace at ``uri`` (delta-spark's ``DeltaTable.forPath``)."""
        return cls(spark, uri, storage_options)

    forPath = for_path  # (delta-spark's name)

    @property
    def uri(self) -> str:
        """The namespace root."""
        return self._uri

    def namespace(self) -> PartitionedNamespace:
        """The namespace in the Python API, at its latest version."""
        return PartitionedNamespace.open(self._uri, storage_options=self._storage)

    # ------------------------------------------------------------------ reads
    def to_df(self) -> DataFrame:
        """The namespace's rows as a DataFrame (the ``lance_partitioned`` source)."""
        reader = self._spark.read.format("lance_partitioned")
        for key, value in self._storage.items():
            reader = reader.option(f"storage.{key}", value)
        return reader.load(self._uri)

    toDF = to_df  # (delta-spark's name)

    def history(self) -> DataFrame:
        """One row per ``__manifest`` version, oldest first (``versions()``), as a
        DataFrame (delta-spark's ``history()``)."""
        table = self.namespace().versions()
        return self._spark.createDataFrame(table)

    # ------------------------------------------------------------------ changes
    def delete(self, where: str) -> DeleteResult:
        """Delete the rows matching ``where`` (SQL over the namespace's columns and partition
        field names): each leaf's Lance delete prepared on executors, one commit."""
        with errors.typed_storage_errors(self._uri, "delete"):
            return spark_dml.distributed_delete(
                self._spark, self._manifest, where, hook=self._task_hook
            )

    def update(
        self,
        where: str,
        set: Mapping[str, str] | None = None,
        *,
        values: Mapping[str, Any] | None = None,
    ) -> UpdateResult:
        """Set columns of the rows matching ``where``: ``set`` maps each column to SQL over the
        row, ``values`` to a Python value (one of the two). Each leaf's rows are read,
        recomputed and staged on executors (a row whose partition changes moves); one
        commit."""
        assignments = to_assignments(set, values)
        with errors.typed_storage_errors(self._uri, "update"):
            return spark_dml.distributed_update(
                self._spark, self._manifest, where, assignments, hook=self._task_hook
            )

    def merge(
        self,
        source: DataFrame,
        on: str | Sequence[str] | None = None,
        condition: str | None = None,
        *,
        null_safe: bool = False,
    ) -> SparkMergeBuilder:
        """An upsert of the DataFrame ``source`` keyed by ``on`` (or a ``condition`` of
        equalities, ``"t.id = s.id"``): configure it with the ``when_*`` methods (or their
        camelCase names), then ``execute()``. The source is never collected: its partition
        values are computed and its rows grouped by target leaf on executors, each task merges
        one leaf; the driver commits once (see :mod:`lance_partitioned.spark.merge`)."""
        keys = keys_of(on, condition)
        return SparkMergeBuilder(
            self._spark, self._manifest, source, keys, null_safe=null_safe, hook=self._task_hook
        )

    def optimize(
        self, filter: str | None = None, *, target_rows_per_fragment: int = 1_048_576
    ) -> OptimizeResult:
        """Compact the leaves ``filter`` selects (as a scan would; None: every leaf), each
        leaf in a Spark task, published in one commit (delta-spark's
        ``optimize().executeCompaction()``)."""
        with errors.typed_storage_errors(self._uri, "optimize"):
            return spark_dml.distributed_optimize(
                self._spark, self._manifest, filter, target_rows_per_fragment, self._task_hook
            )

    def restore(self, version: int | str | dt.datetime) -> RestoreResult:
        """Make an earlier version's rows the current ones, in one new commit (delta-spark's
        ``restoreToVersion``; a version number, a tag or a time)."""
        return self.namespace().restore(version)

    restoreToVersion = restore  # (delta-spark's name)
