"""``search``: one pruned nearest-neighbour search per row of a Spark DataFrame of queries.

The queries are searched on the executors with ``mapInArrow``: each task opens the namespace
once, at the ``__manifest`` version the driver read (every task sees the same data), and runs
:meth:`~lance_partitioned.PartitionedNamespace.search` for each query of its batches. The
result has one row per (query, hit): the query id as ``_query_id``, then the columns
``ns.search`` returns (the selected namespace columns, ``_distance`` and ``_partition``), in
the order ``ns.search`` gives them for each query.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.spark.types import spark_arrow_schema, spark_schema_for, to_spark_batch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["QUERY_ID", "search"]

QUERY_ID = "_query_id"
"""The output column holding the id of the query a hit answers."""


def search(
    spark: SparkSession,
    uri: str,
    queries: DataFrame,
    *,
    column: str,
    k: int = 10,
    filter: str | None = None,
    id_column: str = "id",
    vector_column: str | None = None,
    columns: Sequence[str] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> DataFrame:
    """The top ``k`` hits of each query of ``queries`` in the namespace at ``uri``.

    Parameters
    ----------
    spark : SparkSession
        The session (the result is a DataFrame of it).
    uri : str
        The namespace root.
    queries : DataFrame
        One query per row: an id column (``id_column``) and an array-of-numbers column
        (``vector_column``, default: ``column``).
    column : str
        The namespace's vector column searched.
    k : int
        Hits per query.
    filter : str, optional
        Prunes leaves and filters rows, as for ``ns.search``.
    columns : sequence of str, optional
        The namespace columns returned (default: every column).
    storage_options : dict, optional
        Passed to every Lance call, on the driver and the executors.

    Returns
    -------
    DataFrame
        ``_query_id``, the selected columns, ``_distance`` and ``_partition``: one row per
        (query, hit), lazily computed.

    Raises
    ------
    InvalidInputError
        ``queries`` lacks the id or vector column, or ``ns.search`` refuses the arguments
        (checked on the driver with one search).
    """
    from pyspark.sql.types import StructField, StructType

    from lance_partitioned.namespace import PartitionedNamespace

    vectors = vector_column or column
    for name in (id_column, vectors):
        if name not in queries.columns:
            raise errors.InvalidInputError(
                f"spark.search: the queries have no column {name!r} (they have {queries.columns})"
            )
    options = dict(storage_options) if storage_options else None
    ns = PartitionedNamespace.open(uri, storage_options=options)
    field = ns.schema.field(column) if column in ns.schema.names else None
    if field is None or not pa.types.is_fixed_size_list(field.type):
        raise errors.InvalidInputError(f"spark.search: {column!r} is not a vector column")
    probe = ns.search(
        np.zeros(field.type.list_size, np.float32),
        column=column,
        k=1,
        filter=filter,
        columns=columns,
    )
    hits = spark_schema_for(probe.schema)
    id_field = queries.schema[id_column]
    schema = StructType([StructField(QUERY_ID, id_field.dataType, True), *hits.fields])
    arrow = spark_arrow_schema(schema)
    version = ns.version
    wanted = list(columns) if columns is not None else None

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        opened = PartitionedNamespace.open(uri, storage_options=options, version=version)
        for batch in batches:
            ids = batch.column(id_column)
            vectors_in = batch.column(vectors).to_pylist()
            for i, vector in enumerate(vectors_in):
                if vector is None:
                    continue
                found = opened.search(
                    np.asarray(vector, np.float32),
                    column=column,
                    k=k,
                    filter=filter,
                    columns=wanted,
                )
                query = pa.repeat(ids[i], found.num_rows)
                table = found.add_column(0, QUERY_ID, query)
                for out in table.to_batches():
                    yield to_spark_batch(out, arrow)

    selected = queries.select(id_column, vectors)
    return selected.mapInArrow(run, schema)
