"""Auto-registration of the ``lance_partitioned`` PySpark data source.

PySpark imports every top-level module whose name starts with ``pyspark_`` when a session
first looks up a Python data source, and registers its ``DefaultSource`` under
``DefaultSource.name()`` (``pyspark/sql/worker/lookup_data_sources.py``). Installing
lance-partitioned therefore makes ``spark.read.format("lance_partitioned")`` work with no
extra call.

>>> DefaultSource.name()
'lance_partitioned'
"""

from __future__ import annotations

from lance_partitioned.spark.source import LancePartitionedDataSource as DefaultSource

__all__ = ["DefaultSource"]
