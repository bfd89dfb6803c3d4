"""Partition sources by field id: a top-level column or a field of a struct column.

A partition field names its source by ``source_id``, the ``lance:field_id`` of the field.
Lance gives the fields of a struct their own ids, so a struct child (``device.os``) is a
source as a top-level column is, as long as every field above it is a struct (a list's
element or a map's key has no single value per row). This module is the one place that turns
a source id into what the rest of the package reads: its path, its spelling in filters and
column lists (:mod:`lance_partitioned.columnpaths`), its values in written data (NULL where a
struct above it is NULL) and, for pruning, the conditions on it that the filter parser leaves
as SQL.

>>> import pyarrow as pa
>>> from lance_partitioned.spec.schema import NamespaceSchema
>>> device = pa.struct([("os", pa.utf8()), ("v.x", pa.int32())])
>>> schema = NamespaceSchema.from_arrow(pa.schema([("id", pa.int64()), ("device", device)]))
>>> source_id_at(schema, ("device", "os")), source_name(schema, 3)
(2, 'device.`v.x`')
>>> data = pa.table({"id": [1, 2], "device": pa.array([{"os": "ios", "v.x": 1}, None], device)})
>>> source_values(data, schema, 2).to_pylist()
['ios', None]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned.errors import LancePartitionedError, SchemaError
from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.expressions.visitor import leaves, map_leaves
from lance_partitioned.spec.schema import FIELD_ID_KEY, NamespaceSchema

__all__ = [
    "lift_struct_conditions",
    "quote_path",
    "source_id_at",
    "source_name",
    "source_values",
    "struct_source_paths",
]


def quote_path(path: tuple[str, ...]) -> str:
    """The dotted spelling of ``path``: a top-level name as it is, else the segments joined
    with dots, a segment in backticks when it holds a dot or a backtick (doubled).

    >>> quote_path(("a.b",)), quote_path(("s", "a.b")), quote_path(("s", "a"))
    ('a.b', 's.`a.b`', 's.a')
    """
    if len(path) == 1:
        return path[0]
    return ".".join(
        f"`{segment.replace('`', '``')}`"
        if not segment or "." in segment or "`" in segment
        else segment
        for segment in path
    )


def source_name(schema: NamespaceSchema, source_id: int) -> str:
    """How filters and column lists name the source ``source_id`` (:func:`quote_path`).

    Raises
    ------
    SchemaError
        If no field has that id.
    """
    return quote_path(schema.path_of(source_id))


def source_id_at(schema: NamespaceSchema, path: tuple[str, ...]) -> int:
    """The id of the live field at ``path``: a top-level column or a struct child (every
    field above it a struct).

    Raises
    ------
    SchemaError
        If there is no such live field, or a field above it is not a struct.
    """
    if len(path) == 1:
        return schema.field_id(path[0])
    read = schema.read_schema()
    if path[0] not in read.names:
        schema.field_id(path[0])  # raises, saying whether it was dropped
    field = read.field(path[0])
    for depth, segment in enumerate(path[1:], start=1):
        above = quote_path(path[:depth])
        if not pa.types.is_struct(field.type):
            raise SchemaError(
                f"{above!r} is of type {field.type}, not a struct: only the fields of a struct "
                "can be a partition source"
            )
        index = field.type.get_field_index(segment)
        if index < 0:
            names = [f.name for f in field.type]
            raise SchemaError(f"the struct {above!r} has no field {segment!r} (fields: {names})")
        field = field.type.field(index)
    return int((field.metadata or {})[FIELD_ID_KEY.encode()])


def struct_source_paths(schema: NamespaceSchema, source_ids: Iterable[int]) -> dict[int, str]:
    """The live struct children among ``source_ids``, by id, with their dotted names."""
    out: dict[int, str] = {}
    for source_id in source_ids:
        try:
            path = schema.path_of(source_id)
            if len(path) < 2 or schema.is_deprecated(source_id):
                continue
            if source_id_at(schema, path) == source_id:
                out[source_id] = quote_path(path)
        except SchemaError:
            continue
    return out


def source_values(
    data: pa.Table | pa.RecordBatch, schema: NamespaceSchema, source_id: int
) -> pa.Array | pa.ChunkedArray:
    """The values of source ``source_id`` in ``data`` (which holds its top-level column): a
    struct child's values are NULL where a struct above it is NULL.

    Raises
    ------
    SchemaError
        If no field has that id.
    """
    path = schema.path_of(source_id)
    array: pa.Array | pa.ChunkedArray = data.column(path[0])
    for segment in path[1:]:
        array = pc.struct_field(array, [array.type.get_field_index(segment)])
    return array


def lift_struct_conditions(
    predicate: Predicate, schema: NamespaceSchema, source_ids: Iterable[int]
) -> Predicate:
    """``predicate`` (NOT-free, bound to the read schema) with each SQL condition on struct
    children among ``source_ids`` (which the filter parser keeps as :class:`Unknown`) parsed
    into conditions on their dotted names, which prune as conditions on a top-level source
    do. A condition that does not parse whole stays as it was (it never prunes).

    >>> import pyarrow as pa
    >>> from lance_partitioned.expressions import bind, parse_sql
    >>> device = pa.struct([("os", pa.utf8())])
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("device", device)]))
    >>> read = schema.read_schema()
    >>> p = bind(parse_sql("device.os IN ('ios', 'android')", read), read)
    >>> p
    Unknown(sql="(`device`.`os` IN ('ios', 'android'))", columns=('device',))
    >>> lift_struct_conditions(p, schema, [1])
    In(term='device.os', values=('ios', 'android'))
    """
    from lance_partitioned.expressions import bind, parse_sql
    from lance_partitioned.expressions.visitors import rewrite_not

    sources = struct_source_paths(schema, source_ids)
    if not sources:
        return predicate
    read = schema.read_schema()
    flat = {f"__lp_source_{i}": name for i, name in sources.items()}
    rendered = {"`" + "`.`".join(schema.path_of(i)) + "`": f"`__lp_source_{i}`" for i in sources}
    extra = [pa.field(f"__lp_source_{i}", schema.field_by_id(i).type) for i in sources]
    wide = pa.schema([*read, *extra])

    def lift(leaf: Predicate) -> Predicate:
        if not isinstance(leaf, t.Unknown):
            return leaf
        sql = leaf.sql
        for nested_sql, flat_sql in rendered.items():
            sql = sql.replace(nested_sql, flat_sql)
        if sql == leaf.sql:
            return leaf
        try:
            lifted = bind(rewrite_not(parse_sql(sql, wide)), wide)
        except LancePartitionedError:
            return leaf
        if leaves(lifted, t.Unknown):
            return leaf
        return map_leaves(lifted, lambda p: _renamed(p, flat))

    return map_leaves(predicate, lift)


def _renamed(leaf: Predicate, names: dict[str, str]) -> Predicate:
    term = getattr(leaf, "term", None)
    if term is None or term not in names:
        return leaf
    return dataclasses.replace(leaf, term=names[term])  # type: ignore[type-var]
