"""The one visitor of nested Arrow types: how to descend into a type and how to rebuild it.

Every place that walks a schema (field ids, deprecation, evolution, the leaf schema) asks
this module which fields lie directly below a type and how to put the type back together:

=========================================  ===================================================
type                                       fields below (schema fields, each with an id)
=========================================  ===================================================
struct                                     its fields
list, large_list                           the element field
fixed_size_list of structs                 the element field
fixed_size_list of anything else           none: a Lance vector, its element is not a field
map                                        the entries field (a struct of key and value,
                                           whose id is implicit: pyarrow keeps no metadata
                                           on it)
dictionary                                 those of its value type
anything else                              none
=========================================  ===================================================

>>> import pyarrow as pa
>>> m = pa.map_(pa.utf8(), pa.int64())
>>> [f.name for f in children(m)], [f.name for f in children(children(m)[0].type)]
(['entries'], ['key', 'value'])
>>> rebuild(pa.list_(pa.int8()), [pa.field("item", pa.int16())])
ListType(list<item: int16>)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import pyarrow as pa

__all__ = ["Node", "children", "is_vector", "kind", "map_field", "rebuild", "walk"]


def is_vector(dtype: pa.DataType) -> bool:
    """A fixed-size list whose element Lance does not count as a field (not a struct).

    >>> import pyarrow as pa
    >>> is_vector(pa.list_(pa.float32(), 8)), is_vector(pa.list_(pa.struct([]), 2))
    (True, False)
    """
    return bool(pa.types.is_fixed_size_list(dtype) and not pa.types.is_struct(dtype.value_type))


def kind(dtype: pa.DataType) -> str:
    """``struct``, ``list`` (list, large_list, fixed-size list of structs), ``map`` or
    ``leaf`` (a dictionary is the kind of its value type).

    >>> import pyarrow as pa
    >>> kind(pa.large_list(pa.int8())), kind(pa.list_(pa.float32(), 4))
    ('list', 'leaf')
    """
    t = pa.types
    if t.is_dictionary(dtype):
        return kind(dtype.value_type)
    if t.is_struct(dtype):
        return "struct"
    if t.is_map(dtype):
        return "map"
    if t.is_list(dtype) or t.is_large_list(dtype):
        return "list"
    if t.is_fixed_size_list(dtype) and not is_vector(dtype):
        return "list"
    return "leaf"


def children(dtype: pa.DataType) -> list[pa.Field]:
    """The fields directly below ``dtype`` (see the module table).

    >>> import pyarrow as pa
    >>> children(pa.struct([("a", pa.int8()), ("b", pa.utf8())]))
    [pyarrow.Field<a: int8>, pyarrow.Field<b: string>]
    >>> children(pa.int64())
    []
    """
    if pa.types.is_dictionary(dtype):
        return children(dtype.value_type)
    which = kind(dtype)
    if which == "struct":
        return [dtype.field(i) for i in range(dtype.num_fields)]
    if which == "map":
        return [dtype.field(0)]
    if which == "list":
        return [dtype.value_field]
    return []


def rebuild(dtype: pa.DataType, fields: list[pa.Field]) -> pa.DataType:
    """``dtype`` with the fields below it replaced by ``fields`` (as many as :func:`children`).

    A map is rebuilt from its entries field (key and value, ``keys_sorted`` kept).

    >>> import pyarrow as pa
    >>> key = pa.field("key", pa.utf8(), nullable=False)
    >>> entries = pa.field("entries", pa.struct([key, ("value", pa.int8())]))
    >>> rebuild(pa.map_(pa.utf8(), pa.int64()), [entries])
    MapType(map<string, int8>)
    """
    t = pa.types
    if t.is_dictionary(dtype):
        return pa.dictionary(dtype.index_type, rebuild(dtype.value_type, fields), dtype.ordered)
    which = kind(dtype)
    if which == "struct":
        return pa.struct(fields)
    if which == "map":
        (entries,) = fields
        key, item = entries.type.field(0), entries.type.field(1)
        return pa.map_(key, item, keys_sorted=dtype.keys_sorted)
    if which == "list":
        (element,) = fields
        if t.is_large_list(dtype):
            return pa.large_list(element)
        if t.is_fixed_size_list(dtype):
            return pa.list_(element, dtype.list_size)
        return pa.list_(element)
    return dtype


def map_field(field: pa.Field, change: Callable[[pa.Field], pa.Field]) -> pa.Field:
    """``field`` rebuilt bottom-up: ``change`` applies to every field below it, then to it.

    ``change`` receives each field with its type already rebuilt from the changed fields below.

    >>> import pyarrow as pa
    >>> f = pa.field("m", pa.map_(pa.utf8(), pa.int8()))
    >>> widen = lambda f: f.with_type(pa.int16()) if f.type == pa.int8() else f
    >>> map_field(f, widen).type
    MapType(map<string, int16>)
    """
    below = children(field.type)
    if below:
        field = field.with_type(rebuild(field.type, [map_field(c, change) for c in below]))
    return change(field)


class Node(NamedTuple):
    """One field of a pre-order :func:`walk`.

    ``parent`` is the kind of the field's parent: ``schema`` (top level), ``struct``,
    ``list``, ``map`` (the field is a map's entries) or ``entries`` (a map's key or value);
    ``parent_index`` is the parent's position in the walk (-1 at the top level).
    """

    field: pa.Field
    path: tuple[str, ...]
    parent: str
    parent_index: int


def walk(fields: Iterable[pa.Field]) -> Iterator[Node]:
    """Every field of ``fields`` and below them, in pre-order.

    >>> import pyarrow as pa
    >>> schema = pa.schema([("m", pa.map_(pa.utf8(), pa.int8())), ("n", pa.int8())])
    >>> [(".".join(n.path), n.parent, n.parent_index) for n in walk(schema)]
    [('m', 'schema', -1), ('m.entries', 'map', 0), ('m.entries.key', 'entries', 1),
     ('m.entries.value', 'entries', 1), ('n', 'schema', -1)]
    """
    index = 0

    def visit(field: pa.Field, path: tuple[str, ...], parent: str, at: int) -> Iterator[Node]:
        nonlocal index
        here = index
        index += 1
        yield Node(field, path, parent, at)
        which = "entries" if parent == "map" else kind(field.type)
        for child in children(field.type):
            yield from visit(child, (*path, child.name), which, here)

    for field in fields:
        yield from visit(field, (field.name,), "schema", -1)
