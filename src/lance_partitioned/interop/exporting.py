"""``export``: a partitioned namespace's rows (optionally filtered) as a Hive Parquet tree, a
Delta table or one Lance dataset, streamed from :meth:`PartitionedNamespace.to_batches` with
bounded memory.

The Hive tree and the Delta table are partitioned by the source columns of the identity fields
of the namespace's current spec (other transforms' values are not columns: their rows are
written unpartitioned); NULL is ``__HIVE_DEFAULT_PARTITION__``. Importing the export gives the
namespace's rows back (:func:`lance_partitioned.import_`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa

from lance_partitioned import errors

__all__ = ["TARGETS", "ExportProgress", "ExportResult", "export"]

Target = Literal["parquet", "delta", "lance"]
TARGETS: tuple[str, ...] = ("parquet", "delta", "lance")


@dataclass(frozen=True)
class ExportProgress:
    """Rows written so far, reported after each batch."""

    rows: int


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export` wrote: ``rows`` to ``uri`` as ``to``, partitioned by
    ``partition_by`` (column names), in ``seconds``."""

    uri: str
    to: str
    rows: int
    partition_by: list[str]
    seconds: float


def export(
    uri: str,
    dst: str,
    *,
    to: Target = "parquet",
    filter: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    progress: Callable[[ExportProgress], None] | None = None,
) -> ExportResult:
    """Export the rows of the namespace at ``uri`` (matching ``filter``) to ``dst``.

    Parameters
    ----------
    uri : str
        The namespace's root.
    dst : str
        A directory that does not exist yet, or is empty.
    to : {"parquet", "delta", "lance"}
        A Hive Parquet tree, a Delta table (needs the ``interop`` extra) or one Lance dataset.
    filter : str, optional
        SQL over the namespace's columns: only matching rows are exported.
    storage_options : mapping, optional
        Storage options of the namespace.
    progress : callable, optional
        Called with an :class:`ExportProgress` after each batch.

    Raises
    ------
    InvalidInputError
        ``to`` is not a known target, or ``dst`` exists and is not empty.

    Examples
    --------
    >>> import tempfile, os, pyarrow as pa
    >>> import lance_partitioned as lp
    >>> uri, out = tempfile.mkdtemp(), os.path.join(tempfile.mkdtemp(), "tree")
    >>> _ = lp.write(uri, pa.table({"k": ["a", "b"], "v": [1, 2]}), partition_by="k")
    >>> lp.export(uri, out, to="parquet").rows
    2
    >>> sorted(os.listdir(out))
    ['k=a', 'k=b']
    """
    from lance_partitioned.interop.sources import bare_schema
    from lance_partitioned.namespace import PartitionedNamespace

    if to not in TARGETS:
        raise errors.InvalidInputError(f"to={to!r} is not one of {list(TARGETS)}")
    _check_destination(dst)
    started = time.perf_counter()
    ns = PartitionedNamespace.open(uri, storage_options=storage_options)
    names = ns.schema.names
    columns = [
        ns.namespace_schema.name_of(f.source_id)
        for f in ns.current_spec.fields
        if f.expression == "col"
    ]
    columns = [c for c in dict.fromkeys(columns) if c in names]
    reader = ns.to_batches(filter)
    written = [0]
    schema = bare_schema(reader.schema)
    counted = pa.RecordBatchReader.from_batches(
        schema, _counting(reader, schema, written, progress)
    )
    with errors.typed_storage_errors(dst, f"export to {to}"):
        if to == "parquet":
            _parquet(counted, dst, columns)
        elif to == "delta":
            _delta(counted, dst, columns)
        else:
            _lance(counted, dst)
    return ExportResult(dst, to, written[0], columns if to != "lance" else [], _since(started))


def _since(started: float) -> float:
    return time.perf_counter() - started


def _check_destination(dst: str) -> None:
    if "://" in dst or not os.path.exists(dst):
        return
    if not os.path.isdir(dst) or os.listdir(dst):
        raise errors.InvalidInputError(
            f"the export destination {dst!r} exists and is not an empty directory"
        )


def _counting(
    reader: pa.RecordBatchReader,
    schema: pa.Schema,
    written: list[int],
    progress: Callable[[ExportProgress], None] | None,
) -> Iterator[pa.RecordBatch]:
    for batch in reader:
        written[0] += batch.num_rows
        yield pa.RecordBatch.from_arrays(batch.columns, schema=schema)
        if progress is not None:
            progress(ExportProgress(written[0]))


def _parquet(reader: pa.RecordBatchReader, dst: str, columns: list[str]) -> None:
    import pyarrow.dataset as ds

    partitioning = None
    if columns:
        schema = pa.schema([reader.schema.field(c) for c in columns])
        partitioning = ds.partitioning(schema, flavor="hive")
    ds.write_dataset(
        reader,
        dst,
        format="parquet",
        partitioning=partitioning,
        existing_data_behavior="overwrite_or_ignore",
        max_partitions=1 << 20,
        basename_template="part-{i}.parquet",
    )


def _delta(reader: pa.RecordBatchReader, dst: str, columns: list[str]) -> Any:
    from lance_partitioned.interop.sources import require

    deltalake = require("deltalake")
    deltalake.write_deltalake(dst, reader, partition_by=columns or None, mode="error")


def _lance(reader: pa.RecordBatchReader, dst: str) -> None:
    import lance

    lance.write_dataset(reader, dst, mode="create")
