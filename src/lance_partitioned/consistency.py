"""Spec 000's schema consistency rules between the namespace schema and leaf tables.

Writes (:func:`conform_for_write`):

- a namespace column missing from the data is written as NULL; an error if it is not nullable;
- a column of the data that the namespace lacks (or has deprecated) is an error naming it;
- a column of another type is cast to the namespace type; an error if the cast is impossible
  or loses information.

Nullability is checked on the values, not on the declared flag: pyarrow infers every column as
nullable, so a nullable-typed column without NULLs is accepted for a non-nullable column.

Leaf tables store every live column of the namespace schema. pylance strips ``lance:field_id``
from field metadata, so each leaf column carries its namespace field id under
:data:`LEAF_FIELD_ID_KEY` instead, which lets readers match renamed columns by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors
from lance_partitioned.spec import nested
from lance_partitioned.spec.schema import FIELD_ID_KEY, NamespaceSchema

__all__ = [
    "LEAF_FIELD_ID_KEY",
    "conform_batch",
    "conform_for_read",
    "conform_for_write",
    "leaf_field",
    "leaf_field_id",
    "leaf_schema",
]

LEAF_FIELD_ID_KEY = "lance-partitioned:field_id"


def _leaf_field(field: pa.Field) -> pa.Field:
    """``field`` and every field below it with the field id under the leaf's private key."""

    def private(f: pa.Field) -> pa.Field:
        metadata = {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
        field_id = metadata.pop(FIELD_ID_KEY, None)
        if field_id is not None:
            metadata[LEAF_FIELD_ID_KEY] = field_id
        return pa.field(f.name, f.type, f.nullable, metadata=metadata or None)

    return nested.map_field(field, private)


def leaf_schema(schema: NamespaceSchema) -> pa.Schema:
    """The Arrow schema of leaf tables written now: every live (non-deprecated) column.

    >>> ns = NamespaceSchema.from_arrow(pa.schema([pa.field("id", pa.int64(), False)]))
    >>> leaf_schema(ns).field("id").metadata
    {b'lance-partitioned:field_id': b'0'}
    """
    return pa.schema([_leaf_field(f) for f in schema.read_schema()])


def _cast(column: pa.ChunkedArray | pa.Array, field: pa.Field) -> pa.ChunkedArray:
    try:
        return cast(pa.ChunkedArray, pc.cast(column, field.type, safe=True))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise errors.CastError(
            f"column {field.name!r}: cannot convert {column.type} to the namespace type "
            f"{field.type} without loss ({exc})"
        ) from exc


def conform_for_write(data: pa.Table, schema: NamespaceSchema, target: pa.Schema) -> pa.Table:
    """Apply the write-side consistency rules; return ``data`` in the ``target`` leaf schema.

    Parameters
    ----------
    data : pyarrow.Table
        The data as the user gave it.
    schema : NamespaceSchema
        The namespace schema (deprecated columns count as absent).
    target : pyarrow.Schema
        The leaf schema, from :func:`leaf_schema`.

    >>> ns = NamespaceSchema.from_arrow(pa.schema([("id", pa.int64()), ("s", pa.string())]))
    >>> conform_for_write(pa.table({"id": pa.array([1], pa.int32())}), ns, leaf_schema(ns))
    pyarrow.Table
    id: int64
    s: string
    ----
    id: [[1]]
    s: [[null]]
    >>> try:
    ...     conform_for_write(pa.table({"x": [1]}), ns, leaf_schema(ns))
    ... except errors.SchemaMismatchError as exc:
    ...     print(exc)
    column 'x' is not in the namespace schema: the namespace columns are ['id', 's']
    """
    names = data.column_names
    if len(set(names)) != len(names):
        duplicate = next(n for n in names if names.count(n) > 1)
        raise errors.SchemaMismatchError(f"column {duplicate!r} appears twice in the data")
    live = set(target.names)
    for name in names:
        if name not in live:
            hint = (
                "it was dropped (deprecated) and counts as absent"
                if name in schema.arrow_schema.names
                else f"the namespace columns are {sorted(live)}"
            )
            raise errors.SchemaMismatchError(
                f"column {name!r} is not in the namespace schema: {hint}"
            )
    columns = []
    for field in target:
        if field.name in names:
            column = data.column(field.name)
            if column.type != field.type:
                column = _cast(column, field)
            if not field.nullable and column.null_count:
                raise errors.SchemaMismatchError(
                    f"column {field.name!r} is not nullable but the data has "
                    f"{column.null_count} NULL values"
                )
        else:
            if not field.nullable:
                raise errors.SchemaMismatchError(
                    f"column {field.name!r} is missing from the data and is not nullable"
                )
            column = pa.chunked_array([pa.nulls(data.num_rows, field.type)])
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=target)


# ---------------------------------------------------------------------------------- reads


def leaf_field_id(field: pa.Field) -> int | None:
    """The namespace field id a leaf column carries (None: a leaf of another client)."""
    raw = (field.metadata or {}).get(LEAF_FIELD_ID_KEY.encode())
    return None if raw is None else int(raw)


def _namespace_id(field: pa.Field) -> int | None:
    """The id of a target field: a namespace field's, or a leaf field's (leaf upgrades)."""
    metadata = field.metadata or {}
    raw = metadata.get(FIELD_ID_KEY.encode(), metadata.get(LEAF_FIELD_ID_KEY.encode()))
    return None if raw is None else int(raw)


def _match(source: Sequence[pa.Field], target: pa.Field) -> pa.Field | None:
    """The source field holding ``target``: same field id, else (no id at all) same name."""
    wanted = _namespace_id(target)
    if wanted is not None:
        for candidate in source:
            if leaf_field_id(candidate) == wanted:
                return candidate
    for candidate in source:
        if candidate.name == target.name and leaf_field_id(candidate) is None:
            return candidate
    return None


def leaf_field(leaf: pa.Schema, target: pa.Field) -> pa.Field | None:
    """The leaf field that stores namespace field ``target`` (None: the leaf lacks it).

    Leaf columns are matched by the field id they carry under :data:`LEAF_FIELD_ID_KEY`, so a
    renamed column is still found; a leaf written by another client (no ids) is matched by name.

    >>> ns = NamespaceSchema.from_arrow(pa.schema([("id", pa.int64())]))
    >>> leaf = leaf_schema(ns)
    >>> renamed = ns.read_schema().field("id").with_name("key")
    >>> leaf_field(leaf, renamed).name
    'id'
    """
    return _match(list(leaf), target)


def conform_for_read(
    column: pa.Array | pa.ChunkedArray | None, source: pa.Field | None, target: pa.Field, rows: int
) -> pa.Array | pa.ChunkedArray:
    """Apply the read-side rules to one leaf column: NULL when absent, nested fields matched
    by id, other types cast to the namespace type (:class:`~.errors.CastError` if impossible).

    >>> target = pa.field("n", pa.int64(), metadata={"lance:field_id": "0"})
    >>> conform_for_read(None, None, target, 2).to_pylist()
    [None, None]
    >>> source = pa.field("n", pa.int32(), metadata={LEAF_FIELD_ID_KEY: "0"})
    >>> conform_for_read(pa.array([1, None], pa.int32()), source, target, 2).type
    DataType(int64)
    """
    if column is None or source is None:
        return pa.nulls(rows, target.type)
    if isinstance(column, pa.ChunkedArray):
        chunks = [conform_for_read(c, source, target, len(c)) for c in column.chunks]
        return pa.chunked_array(chunks, type=target.type)
    if pa.types.is_struct(target.type) and pa.types.is_struct(column.type):
        children = list(source.type)
        arrays, fields = [], []
        for child in target.type:
            match = _match(children, child)
            values = None if match is None else column.field(children.index(match))
            arrays.append(conform_for_read(values, match, child, len(column)))
            fields.append(child)
        mask = column.is_null() if column.null_count else None
        return pa.StructArray.from_arrays(arrays, fields=fields, mask=mask)
    if column.type == target.type:
        return column
    return _cast(column, target)


def conform_batch(
    batch: pa.RecordBatch, sources: Sequence[pa.Field | None], schema: pa.Schema
) -> pa.RecordBatch:
    """A leaf batch in ``schema``: field ``i`` read from leaf field ``sources[i]`` (found with
    :func:`leaf_field`; None: absent, read as NULL) by :func:`conform_for_read`.

    >>> ns = NamespaceSchema.from_arrow(pa.schema([("a", pa.int64()), ("b", pa.string())]))
    >>> read = ns.read_schema()
    >>> leaf = pa.record_batch({"a": pa.array([1], pa.int32())})
    >>> sources = [leaf_field(leaf.schema, f) for f in read]
    >>> conform_batch(leaf, sources, read).to_pylist()
    [{'a': 1, 'b': None}]
    """
    arrays = [
        conform_for_read(
            None if source is None else batch.column(source.name), source, target, batch.num_rows
        )
        for source, target in zip(sources, schema, strict=True)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
