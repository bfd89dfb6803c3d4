"""The ``lance_partitioned`` PySpark data source: options, schema, reader and writer.

>>> LancePartitionedDataSource.name()
'lance_partitioned'
>>> opts = SourceOptions.parse({"path": "/data/events", "version": "3", "storage.region": "eu"})
>>> opts.uri, opts.version, opts.storage_options
('/data/events', 3, (('region', 'eu'),))

Options (case-insensitive names, snake_case like lance-spark):

======================  =====  =========================================================
``partition_by``        write  the spec of a new namespace (``"event_date, bucket(16,
                               user_id)"``; ``""``: unpartitioned); on an existing one,
                               must equal its current spec
``overwrite``           write  ``"partitions"`` with ``.mode("overwrite")``: replace only
                               the partitions present in the DataFrame
``max_rows_per_file``   write  rows per Lance data file
``version``             read   the ``__manifest`` version to read (time travel)
``batch_size``          read   rows per Arrow batch read from Lance
``max_partition_bytes`` read   target bytes per Spark partition (default 128 MiB, as
                               ``spark.sql.files.maxPartitionBytes``); accepts ``"64m"``
``min_partitions``      read   split the scan into at least this many Spark partitions when
                               it is big enough (default: the driver's CPU count)
``storage.<key>``       both   passed to Lance as storage option ``<key>`` (Spark lower-
                               cases option names, so ``<key>`` arrives in lower case)
======================  =====  =========================================================
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceWriter
from pyspark.sql.types import StructType

from lance_partitioned import errors

__all__ = ["LancePartitionedDataSource", "SourceOptions", "parse_bytes"]

NAME = "lance_partitioned"
DEFAULT_MAX_PARTITION_BYTES = 128 << 20
_STORAGE_PREFIX = "storage."
_BYTES = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}


def parse_bytes(text: str, option: str) -> int:
    """A byte size as Spark writes them: ``134217728``, ``"128m"``, ``"128MB"``, ``"1g"``.

    >>> parse_bytes("134217728b", "x"), parse_bytes("64m", "x"), parse_bytes("1 GiB", "x")
    (134217728, 67108864, 1073741824)
    """
    match = _BYTES.match(str(text))
    if match is None or int(match.group(1)) <= 0:
        raise errors.InvalidInputError(
            f"option {option}={text!r} is not a positive byte size (like 134217728 or '128m')"
        )
    return int(match.group(1)) << _UNITS[match.group(2).lower()]


def _positive_int(options: Mapping[str, str], name: str, minimum: int = 1) -> int | None:
    raw = options.get(name)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise errors.InvalidInputError(f"option {name}={raw!r} must be an integer >= {minimum}")
    return value


@dataclass(frozen=True)
class SourceOptions:
    """The data source options, parsed and checked (see the module docstring)."""

    uri: str
    storage_options: tuple[tuple[str, str], ...] = ()
    partition_by: str | None = None
    overwrite: str | None = None
    version: int | None = None
    batch_size: int | None = None
    max_rows_per_file: int | None = None
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    min_partitions: int | None = None

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Parse Spark's option map (keys are compared in lower case)."""
        lowered = {str(k).lower(): v for k, v in options.items()}
        uri = lowered.get("path")
        if not uri:
            raise errors.InvalidInputError(
                "no namespace URI: pass it to .load(uri) / .save(uri) or as option 'path'"
            )
        overwrite = lowered.get("overwrite")
        if overwrite is not None:
            overwrite = str(overwrite).strip().lower()
            if overwrite != "partitions":
                raise errors.InvalidInputError(
                    f"option overwrite={overwrite!r} is not supported: use 'partitions' (with "
                    ".mode('overwrite')) to replace only the partitions present in the "
                    "DataFrame, or leave it out to replace everything"
                )
        storage = tuple(
            sorted(
                (key[len(_STORAGE_PREFIX) :], str(value))
                for key, value in lowered.items()
                if key.startswith(_STORAGE_PREFIX)
            )
        )
        max_bytes = lowered.get("max_partition_bytes")
        return cls(
            uri=str(uri),
            storage_options=storage,
            partition_by=lowered.get("partition_by"),
            overwrite=overwrite,
            version=_positive_int(lowered, "version"),
            batch_size=_positive_int(lowered, "batch_size"),
            max_rows_per_file=_positive_int(lowered, "max_rows_per_file"),
            max_partition_bytes=(
                DEFAULT_MAX_PARTITION_BYTES
                if max_bytes is None
                else parse_bytes(max_bytes, "max_partition_bytes")
            ),
            min_partitions=_positive_int(lowered, "min_partitions"),
        )

    def default_min_partitions(self) -> int:
        """``min_partitions``, or the CPU count of this (driver) machine."""
        return self.min_partitions or os.cpu_count() or 1


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
        """The namespace read schema as a Spark schema (every column nullable)."""
        from lance_partitioned.namespace import PartitionedNamespace
        from lance_partitioned.spark.types import spark_schema_for

        options = self._parsed()
        ns = PartitionedNamespace.open(
            options.uri, storage_options=dict(options.storage_options), version=options.version
        )
        self.pinned_version = ns.version
        return spark_schema_for(ns.schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader of ``schema``'s columns at the pinned ``__manifest`` version."""
        from lance_partitioned.spark.reader import make_reader

        options = self._parsed()
        version = getattr(self, "pinned_version", None) or options.version
        return make_reader(options, schema, version, filtering=_spark_pushes_filters())

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """Plan a write on the driver (creates the namespace on the first write)."""
        from lance_partitioned.spark.writer import plan_write

        return plan_write(self._parsed(), schema, overwrite)
