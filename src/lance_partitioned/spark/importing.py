"""``import_`` on Spark: a Hive-style tree read by Spark, written by the distributed path.

The source tree (Parquet, CSV or JSON files under ``key=value`` directories) is read with
``spark.read`` (Spark's partition discovery: the directory keys become columns, typed by
Spark's inference; ``__HIVE_DEFAULT_PARTITION__`` is NULL) and written with
``df.write.format("lance_partitioned")``: executors stage the rows of their partitions of the
source, the driver commits once. The namespace is created when absent, partitioned by the
tree's directory keys (in their order) unless ``partition_by`` is given.

Unlike :func:`lance_partitioned.import_`, which commits the source's files in groups and
resumes an interrupted import where it stopped, this import is one commit: run again after a
failure, it starts over (nothing of a failed run is visible).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from lance_partitioned import errors
from lance_partitioned.interop.importing import ImportResult
from lance_partitioned.interop.units import quoted
from lance_partitioned.manifest import Manifest

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["hive_keys", "import_"]

#: spark.read options per format, unless ``options`` says otherwise.
_READ_DEFAULTS: dict[str, dict[str, str]] = {
    "parquet": {},
    "csv": {"header": "true", "inferSchema": "true"},
    "json": {},
}


def hive_keys(files: Sequence[str]) -> list[str]:
    """The partition keys of a Hive-style tree, from its files' paths: the ``key=value``
    directories right above each file, which every file must have alike.

    >>> hive_keys(["s3://b/t/day=2025-01-01/country=US/part-0.parquet"])
    ['day', 'country']
    >>> hive_keys(["/t/part-0.parquet"])
    []
    """
    found: list[str] | None = None
    for path in files:
        keys: list[str] = []
        for segment in reversed(path.rstrip("/").split("/")[:-1]):
            if "=" not in segment:
                break
            keys.insert(0, segment.split("=", 1)[0])
        if found is not None and keys != found:
            raise errors.InvalidInputError(
                f"the files of a Hive-style tree have the same partition directories: "
                f"{path!r} has {keys}, others have {found}"
            )
        found = keys
    return found or []


def import_(
    spark: SparkSession,
    source: str,
    uri: str,
    *,
    format: str = "parquet",
    partition_by: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    options: Mapping[str, str] | None = None,
) -> ImportResult:
    """Import the Hive-style tree ``source`` into the namespace ``uri`` with Spark.

    Parameters
    ----------
    spark : SparkSession
        The session (the ``lance_partitioned`` format is registered with it here).
    source : str
        The tree's root directory or object-store URI (as ``spark.read`` takes it).
    uri : str
        The namespace's root (created when absent).
    format : {"parquet", "csv", "json"}
        The files' format. CSV is read with a header row and Spark's type inference
        (``options`` overrides them); JSON is one object per line.
    partition_by : str, optional
        The partition spec of a namespace this call creates (default: the tree's directory
        keys, in order). For an existing namespace it must equal the current spec.
    storage_options : mapping, optional
        Storage options of the namespace (Lance's, as ``storage.<key>`` writer options).
    options : mapping, optional
        More ``spark.read`` options.

    Returns
    -------
    ImportResult
        ``units`` is the number of files read; ``commits`` is 1.

    Raises
    ------
    InvalidInputError
        ``format`` is not one of the three, or the files disagree on their directories.
    PartitionSpecError
        ``partition_by`` differs from an existing namespace's spec.
    """
    from lance_partitioned.entry import check_partition_by
    from lance_partitioned.namespace import PartitionedNamespace

    if format not in _READ_DEFAULTS:
        raise errors.InvalidInputError(
            f"format must be one of {sorted(_READ_DEFAULTS)}, not {format!r}"
        )
    started = time.perf_counter()
    frame: DataFrame = (
        spark.read.format(format).options(**{**_READ_DEFAULTS[format], **(options or {})})
    ).load(source)
    files = frame.inputFiles()
    storage = dict(storage_options or {})
    exists = Manifest(uri, storage).exists()
    before = 0
    spec: str | None = None
    if exists:
        ns = PartitionedNamespace.open(uri, storage_options=storage)
        if partition_by is not None:
            check_partition_by(ns, partition_by)
        before = ns.count_rows()
    else:
        keys = ", ".join(quoted(k) for k in hive_keys(files))
        spec = partition_by if partition_by is not None else keys or None
    from lance_partitioned.spark.source import LancePartitionedDataSource

    spark.dataSource.register(LancePartitionedDataSource)
    writer = frame.write.format("lance_partitioned").mode("append")
    if spec is not None:
        writer = writer.option("partition_by", spec)
    for key, value in storage.items():
        writer = writer.option(f"storage.{key}", value)
    writer.save(uri)
    ns = PartitionedNamespace.open(uri, storage_options=storage)
    fields = ns.current_spec.fields
    return ImportResult(
        version=ns.version,
        rows=ns.count_rows() - before,
        units=len(files),
        units_skipped=0,
        commits=1,
        partition_by=", ".join(f"{f.name} = {f.expression}" for f in fields),
        seconds=time.perf_counter() - started,
    )
