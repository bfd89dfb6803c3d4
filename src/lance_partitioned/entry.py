"""The one-call entry point: :func:`write` a DataFrame or Arrow data to a partitioned
namespace, creating it when absent (as deltalake's ``write_deltalake``).

>>> import tempfile, pandas as pd
>>> import lance_partitioned as lp
>>> uri = tempfile.mkdtemp()
>>> frame = pd.DataFrame({"id": [1, 2, 3], "country": ["US", "FR", "US"]})
>>> lp.write(uri, frame[frame.id != 2], partition_by="country").rows_written
2
>>> lp.write(uri, frame.assign(amount=1.5), schema_mode="merge").rows_written
3
>>> lp.PartitionedNamespace.open(uri).schema.names
['id', 'country', 'amount']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lance_partitioned import errors
from lance_partitioned.writing import SchemaMode, check_schema_mode, plain_schema

if TYPE_CHECKING:
    from lance_partitioned.dml.results import WriteResult
    from lance_partitioned.ingest import WriteOptions, WriteProgress
    from lance_partitioned.spec.partitioning import PartitionField
    from lance_partitioned.transaction import WriteMode

__all__ = ["write"]


def write(
    uri: str,
    data: Any,
    *,
    partition_by: str | Sequence[PartitionField] | None = None,
    mode: WriteMode = "append",
    schema_mode: SchemaMode | None = None,
    where: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    options: WriteOptions | None = None,
    progress: Callable[[WriteProgress], None] | None = None,
) -> WriteResult:
    """Write ``data`` to the partitioned namespace at ``uri``, creating it when absent (as
    deltalake's ``write_deltalake``).

    Parameters
    ----------
    uri : str
        Root directory or object-store URI.
    data
        What :meth:`~lance_partitioned.PartitionedNamespace.write` accepts: a pyarrow
        ``Table``, ``RecordBatch`` or ``RecordBatchReader``, a pandas or Polars DataFrame, a
        Polars LazyFrame, any object with ``__arrow_c_stream__``, an iterable of batches.
    partition_by : str or list of PartitionField, optional
        The partition spec of a namespace this call creates (required then: the namespace's
        schema is the data's). For an existing namespace it may be given and must equal the
        current spec (:class:`~lance_partitioned.errors.PartitionSpecError` otherwise).
    mode, schema_mode, where, options, progress
        As for :meth:`~lance_partitioned.PartitionedNamespace.write`.
    storage_options : mapping, optional
        Storage options of every Lance call.

    Raises
    ------
    InvalidInputError
        No namespace at ``uri`` and no ``partition_by``.
    """
    from lance_partitioned.ingest import as_reader, drop_pandas_index
    from lance_partitioned.manifest import Manifest
    from lance_partitioned.namespace import PartitionedNamespace

    check_schema_mode(schema_mode)
    if Manifest(str(uri), dict(storage_options or {})).exists():
        ns = PartitionedNamespace.open(uri, storage_options=storage_options)
        if partition_by is not None:
            check_partition_by(ns, partition_by)
    else:
        if partition_by is None:
            raise errors.InvalidInputError(
                f"no namespace exists at {uri!r}: the first write creates it and needs "
                "partition_by (e.g. partition_by='months(ts), country', or '' for an "
                "unpartitioned namespace)"
            )
        reader = drop_pandas_index(as_reader(data), ())
        ns = PartitionedNamespace.create(
            uri,
            schema=plain_schema(reader.schema),
            partition_by=partition_by,
            storage_options=storage_options,
        )
        data = reader
    return ns.write(
        data,
        mode=mode,
        options=options,
        progress=progress,
        where=where,
        schema_mode=schema_mode,
    )


def check_partition_by(
    ns: Any, partition_by: str | Sequence[PartitionField], *, option: bool = False
) -> None:
    """Refuse a ``partition_by`` given to a write into an existing namespace unless it is the
    current partition spec (the write path, imports and the Spark writer, whose ``option``
    wording this is with ``option=True``).

    Raises
    ------
    PartitionSpecError
        ``partition_by`` describes other fields than the current spec's.
    """
    from lance_partitioned.spec.shorthand import parse_partition_by

    spec = ns.current_spec
    if isinstance(partition_by, str):
        same = spec.same_fields(parse_partition_by(partition_by, ns.namespace_schema))
    else:
        same = tuple(partition_by) == spec.fields
    if same:
        return
    described = ", ".join(f"{f.name} = {f.expression}" for f in spec.fields)
    given = f"option partition_by={partition_by!r}" if option else f"partition_by={partition_by!r}"
    fix = (
        f"drop the option to write with the current spec, or evolve it first with "
        f"PartitionedNamespace.open({ns.uri!r}).update_partition_spec({partition_by!r})"
        if option
        else "leave it out to write with the current spec, or change the spec first with "
        "update_partition_spec"
    )
    raise errors.PartitionSpecError(
        f"{given} differs from the current partition spec v{spec.version} of {ns.uri!r} "
        f"({described or 'unpartitioned'}); {fix}"
    )
