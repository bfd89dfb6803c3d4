"""Data in: what ``create(schema=...)`` accepts, ``schema_mode`` and the warning for writes
that create very many small partitions (the one-call :func:`lance_partitioned.write` is in
:mod:`lance_partitioned.entry`).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from lance_partitioned import errors

if TYPE_CHECKING:
    from lance_partitioned.spec.schema import NamespaceSchema

__all__ = [
    "MAX_NEW_PARTITIONS",
    "MIN_AVERAGE_ROWS",
    "SchemaMode",
    "check_schema_mode",
    "new_columns",
    "partition_count_problem",
    "schema_of",
    "warn_partition_count",
]

SchemaMode = Literal["merge"]

#: A write creating more new partitions than this, averaging fewer rows than
#: :data:`MIN_AVERAGE_ROWS`, warns :class:`~lance_partitioned.errors.PartitionCountWarning`.
MAX_NEW_PARTITIONS = 1_000
MIN_AVERAGE_ROWS = 10_000

_ACCEPTED = (
    "a pyarrow.Schema (or any object with __arrow_c_schema__), a pandas DataFrame, a Polars "
    "DataFrame or LazyFrame, or a Polars Schema"
)
_VIEWS = {
    pa.string_view(): pa.string(),
    pa.large_string(): pa.string(),
    pa.binary_view(): pa.binary(),
    pa.large_binary(): pa.binary(),
}


def _plain(dtype: pa.DataType) -> pa.DataType:
    """``dtype`` with Arrow's view and large string and binary types (pandas' and Polars'
    strings) as ``string`` and ``binary``."""
    if dtype in _VIEWS:
        return _VIEWS[dtype]
    if pa.types.is_struct(dtype):
        return pa.struct([_plain_field(dtype.field(i)) for i in range(dtype.num_fields)])
    if pa.types.is_list(dtype):
        return pa.list_(_plain_field(dtype.value_field))
    if pa.types.is_large_list(dtype):
        return pa.large_list(_plain_field(dtype.value_field))
    if pa.types.is_list_view(dtype):
        return pa.list_(_plain_field(dtype.value_field))
    return dtype


def _plain_field(field: pa.Field) -> pa.Field:
    return pa.field(field.name, _plain(field.type), field.nullable, field.metadata)


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with view and large string and binary types as ``string`` and ``binary``
    (data of the former types is cast on write), without pandas metadata.

    >>> plain_schema(pa.schema([("s", pa.string_view())]))
    s: string
    """
    return pa.schema([_plain_field(f) for f in schema])


def schema_of(obj: Any) -> pa.Schema:
    """The Arrow schema ``create(schema=...)`` was given, or taken from a DataFrame.

    Accepts a ``pyarrow.Schema`` or any object with ``__arrow_c_schema__``, a pandas
    DataFrame (its index is left out), a Polars DataFrame, LazyFrame or Schema. Taken from
    a DataFrame, strings are ``string`` (not ``large_string`` or ``string_view``), binaries
    ``binary``.

    Raises
    ------
    SchemaInputTypeError
        Anything else (also a ``TypeError``), naming what is accepted.

    >>> import pandas as pd
    >>> schema_of(pd.DataFrame({"id": [1], "name": ["a"]}))
    id: int64
    name: string
    >>> try:
    ...     schema_of({"id": "int64"})
    ... except TypeError as exc:
    ...     print(str(exc)[:60])
    schema must be a pyarrow.Schema (or any object with __arrow_
    """
    if isinstance(obj, pa.Schema):
        return obj
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(obj, pandas.DataFrame):
        return plain_schema(pa.Schema.from_pandas(obj, preserve_index=False))
    polars = sys.modules.get("polars")
    if polars is not None:
        if isinstance(obj, (polars.DataFrame, polars.LazyFrame)):
            obj = obj.collect_schema()
        if isinstance(obj, polars.Schema):
            return plain_schema(polars.DataFrame(schema=obj).to_arrow().schema)
    if hasattr(obj, "__arrow_c_schema__") and not hasattr(obj, "__arrow_c_stream__"):
        try:
            return plain_schema(pa.schema(obj))
        except (TypeError, ValueError, pa.ArrowInvalid) as exc:
            raise errors.SchemaInputTypeError(
                f"schema: cannot read a schema from {type(obj).__name__} ({exc})"
            ) from exc
    raise errors.SchemaInputTypeError(
        f"schema must be {_ACCEPTED}, not {type(obj).__module__}.{type(obj).__qualname__}"
    )


def check_schema_mode(schema_mode: str | None) -> None:
    """``schema_mode`` is None or ``"merge"`` (a typed error otherwise)."""
    if schema_mode not in (None, "merge"):
        raise errors.InvalidInputError(
            f"schema_mode {schema_mode!r} is not supported: pass 'merge' to add the new "
            "columns of the data to the namespace schema, or leave it out"
        )


def new_columns(data_schema: pa.Schema, schema: NamespaceSchema) -> list[pa.Field]:
    """The top-level columns of ``data_schema`` that the namespace does not have, as the
    nullable fields :meth:`~lance_partitioned.PartitionedNamespace.add_columns` adds (strings
    as ``string``, see :func:`plain_schema`). A column the namespace dropped (deprecated) is
    not new: writing it stays an error."""
    live = set(schema.read_schema().names)
    known = set(schema.arrow_schema.names)
    return [
        pa.field(f.name, _plain(f.type), nullable=True)
        for f in data_schema
        if f.name not in live and f.name not in known
    ]


def partition_count_problem(rows: Sequence[int], spec: str) -> str | None:
    """What :func:`warn_partition_count` says about a write whose new partitions hold
    ``rows`` rows each (``spec``: the partition spec, as text), or None when nothing."""
    created = len(rows)
    if created <= MAX_NEW_PARTITIONS:
        return None
    average = sum(rows) / created
    if average >= MIN_AVERAGE_ROWS:
        return None
    return (
        f"this write created {created:,} new partitions averaging {average:,.1f} rows "
        f"(more than {MAX_NEW_PARTITIONS:,}, under {MIN_AVERAGE_ROWS:,} rows each): every "
        f"partition is a Lance table with its own files, so reads, writes and maintenance "
        f"slow down with their number. Partition by a coarser transform, e.g. "
        f"bucket(N, col) instead of col, or months(ts) instead of days(ts) (spec: {spec}); "
        f"update_partition_spec changes it for new data. What one partition costs per "
        f"operation: 'What a leaf costs' in docs/concepts.md"
    )


def warn_partition_count(rows: Sequence[int], spec: str, stacklevel: int = 3) -> None:
    """Warn :class:`~lance_partitioned.errors.PartitionCountWarning` when ``rows`` (the rows
    of each partition a write created) holds more than :data:`MAX_NEW_PARTITIONS` entries
    averaging under :data:`MIN_AVERAGE_ROWS` rows."""
    problem = partition_count_problem(rows, spec)
    if problem is not None:
        warnings.warn(problem, errors.PartitionCountWarning, stacklevel=stacklevel)
