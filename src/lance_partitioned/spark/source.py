"""The ``lance_partitioned`` PySpark data source: schema, reader and writer (the options it
takes: :mod:`lance_partitioned.spark.options`).

>>> LancePartitionedDataSource.name()
'lance_partitioned'
"""

from __future__ import annotations

import sys

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from lance_partitioned import errors
from lance_partitioned.spark.options import STREAM_OPTIONS, SourceOptions, parse_bytes
from lance_partitioned.spark.workers import freeze_worker_heap

__all__ = ["LancePartitionedDataSource", "SourceOptions", "parse_bytes"]

NAME = "lance_partitioned"


def _spark_pushes_filters() -> bool:
    """Whether Spark will call ``pushFilters`` on the reader being created.

    Spark creates the reader from one of two planning workers: with
    ``spark.sql.python.filterPushdown.enabled`` (off by default) it calls ``pushFilters``,
    without it, it refuses any reader that implements ``pushFilters``. The worker module
    calling ``DataSource.reader`` tells which; a reader created elsewhere filters.
    """
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.endswith("data_source_pushdown_filters.py"):
            return True
        if filename.endswith("plan_data_source_read.py"):
            return False
        frame = frame.f_back  # type: ignore[assignment]
    return True


class LancePartitionedDataSource(DataSource):
    """The PySpark data source ``lance_partitioned`` for Lance partitioned namespaces.

    ``schema()`` pins the ``__manifest`` version it reads, so every action on a loaded
    DataFrame reads that one version, whatever is written meanwhile; load again to see
    new data.
    """

    @classmethod
    def name(cls) -> str:
        """The format name: ``spark.read.format("lance_partitioned")``."""
        return NAME

    def _parsed(self) -> SourceOptions:
        return SourceOptions.parse(self.options)

    def schema(self) -> StructType:
        """The namespace read schema (or the ``columns`` option's) as a Spark schema (every
        column nullable)."""
        import pyarrow as pa

        from lance_partitioned.namespace import PartitionedNamespace
        from lance_partitioned.scan import bound_filter
        from lance_partitioned.spark.types import spark_schema_for

        freeze_worker_heap()
        options = self._parsed()
        ns = PartitionedNamespace.open(
            options.uri, storage_options=dict(options.storage_options), version=options.version
        )
        self.pinned_version = ns.version
        schema = ns.schema
        if options.filter is not None:
            bound_filter(options.filter, schema)  # a bad filter fails at load(), not later
        if options.columns is not None:
            from lance_partitioned.columnpaths import resolve_columns

            paths = resolve_columns(schema, options.columns)  # names a struct field by path
            schema = pa.schema([path.field for path in paths])
        return spark_schema_for(schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader of ``schema``'s columns at the pinned ``__manifest`` version."""
        from lance_partitioned.spark.reader import make_reader

        freeze_worker_heap()
        options = self._parsed()
        streaming = sorted(k for k in self.options if str(k).lower() in STREAM_OPTIONS)
        if streaming:
            raise errors.InvalidInputError(
                f"option {streaming[0]!r} is for streaming reads (spark.readStream): a batch "
                "read takes version, versionAsOf or timestampAsOf"
            )
        version = getattr(self, "pinned_version", None) or options.version
        return make_reader(options, schema, version, filtering=_spark_pushes_filters())

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The Structured Streaming source: the rows each ``__manifest`` version appends."""
        from lance_partitioned.spark.stream_source import make_stream_reader

        freeze_worker_heap()
        return make_stream_reader(self.options, schema, getattr(self, "pinned_version", None))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """The Structured Streaming sink: one exactly-once commit per micro-batch."""
        from lance_partitioned.spark.writer import plan_stream_write

        freeze_worker_heap()
        return plan_stream_write(self._parsed(), schema, overwrite)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """Plan a write on the driver (creates the namespace on the first write)."""
        from lance_partitioned.spark.writer import plan_write

        freeze_worker_heap()
        return plan_write(self._parsed(), schema, overwrite)
