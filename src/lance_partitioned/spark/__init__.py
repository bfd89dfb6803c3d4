"""The PySpark data source ``lance_partitioned`` (PySpark's Python Data Source API).

Installing the package makes the format available in every session: PySpark registers the
``DefaultSource`` of each top-level module named ``pyspark_*`` it finds
(:mod:`pyspark_lance_partitioned`). For a session started before the package was installed,
call :func:`register`::

    import lance_partitioned.spark
    lance_partitioned.spark.register(spark)
    df.write.format("lance_partitioned").mode("append").option("partition_by", "event_date")
    ...   .save(uri)
    spark.read.format("lance_partitioned").load(uri).where("event_date = DATE'2025-01-05'")

(Spark refuses the default save mode, ``errorifexists``, for Python data sources: say
``append`` or ``overwrite``.)

Partition pruning
-----------------
Filters reach the data source only when ``spark.sql.python.filterPushdown.enabled`` is true
(PySpark's default is false; ``register(spark, filter_pushdown=True)`` sets it). Then a query
prunes leaves on the ``__manifest`` and pushes its residual filter into Lance; without it
every leaf is read and Spark filters the rows.

PySpark 4.3 caches the planned read on the loaded relation and reuses it for a later query
on the same DataFrame whose filters it does not hand to the source (no filter at all, or only
``OR``/UDF filters): with pushdown on, such a query silently reads the leaves an earlier
filtered query kept. So with pushdown on, load the DataFrame again for each query
(``spark.read.format("lance_partitioned").load(uri).where(...)``) instead of reusing one
loaded DataFrame (or a view of it). With pushdown off (the default) every query on a loaded
DataFrame reads the same full, consistent snapshot.

>>> from lance_partitioned.spark import LancePartitionedDataSource
>>> LancePartitionedDataSource.name()
'lance_partitioned'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lance_partitioned.spark.source import LancePartitionedDataSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["FILTER_PUSHDOWN_CONF", "LancePartitionedDataSource", "register"]

#: The session setting that makes PySpark hand filters to Python data sources.
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: SparkSession, *, filter_pushdown: bool = False) -> None:
    """Register the ``lance_partitioned`` format with ``spark``.

    Parameters
    ----------
    spark : SparkSession
        The session.
    filter_pushdown : bool
        Also set ``spark.sql.python.filterPushdown.enabled`` to true for this session, so
        queries prune partitions; read "Partition pruning" above first. False (default)
        leaves the setting as it is.
    """
    spark.dataSource.register(LancePartitionedDataSource)
    if filter_pushdown:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
