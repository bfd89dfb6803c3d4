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
Prune with the ``filter`` option: ``spark.read.format("lance_partitioned").option("filter",
"country = 'FR'").load(uri)``. It is applied when the namespace is loaded (leaves that
cannot match are never read) and is part of the relation, so every query, view, cache or
join of that DataFrame sees exactly its rows. Spark's own ``where`` clauses reach the data
source only when ``spark.sql.python.filterPushdown.enabled`` is true (PySpark's default is
false; ``register(spark, filter_pushdown=True)`` sets it), and PySpark 4.3 then keeps the
read planned for one query on the object shared by every scan of the same ``load()``: a
later query on the DataFrame, a view queried twice, ``cache()`` after a filtered query and
a union or self-join of one load can return wrong rows. ``docs/spark.md`` lists these
cases and every option.

Catalog tables (``CREATE TABLE ... USING lance_partitioned``, ``saveAsTable``, ``INSERT
INTO``, ``writeTo``) are not supported: PySpark passes their location to no Python data
source. Use ``load(uri)``/``save(uri)`` or temporary views with ``OPTIONS (path ...)``.

>>> from lance_partitioned.spark import LancePartitionedDataSource
>>> LancePartitionedDataSource.name()
'lance_partitioned'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# imported here, not on first use: importing the submodule ``search`` (as the executors'
# functions do) would otherwise bind the package's ``search`` to the module, not the function
from lance_partitioned.spark.search import search

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lance_partitioned.spark.importing import import_
    from lance_partitioned.spark.index import create_index
    from lance_partitioned.spark.source import LancePartitionedDataSource
    from lance_partitioned.spark.table import PartitionedTable

__all__ = [
    "FILTER_PUSHDOWN_CONF",
    "LancePartitionedDataSource",
    "PartitionedTable",
    "create_index",
    "import_",
    "register",
    "search",
]

# The public names, imported when first used: each Python worker Spark starts imports this
# package to unpickle the data source (lance_partitioned.spark.source), and importing the
# Hive import, the index builder and the table API there too cost it about 1.5 s of CPU.
_LAZY = {
    "LancePartitionedDataSource": "lance_partitioned.spark.source",
    "PartitionedTable": "lance_partitioned.spark.table",
    "create_index": "lance_partitioned.spark.index",
    "import_": "lance_partitioned.spark.importing",
}


def __getattr__(name: str) -> Any:
    """The public name ``name``, its module imported on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
    from lance_partitioned.spark.source import LancePartitionedDataSource

    spark.dataSource.register(LancePartitionedDataSource)
    if filter_pushdown:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
