"""Column lists that name struct fields by Lance's dotted paths.

``columns=["id", "device.os"]`` reads the top-level column ``id`` and the field ``os`` of the
struct column ``device``, as pylance does: the result has a column named ``device.os`` (the
name as given) holding the field's values (NULL where the struct is NULL). A name is a
top-level column when the read schema has it; otherwise it is a path whose segments are cut
at dots, a segment in backticks keeping its dots (```device`.`x.y```, a doubled backtick
for a backtick in it).

>>> import pyarrow as pa
>>> device = pa.struct([("os", pa.utf8()), ("x.y", pa.int8())])
>>> read = pa.schema([("id", pa.int64()), ("device", device)])
>>> [(c.name, c.column, c.path) for c in resolve_columns(read, ["id", "device.`x.y`"])]
[('id', 'id', ()), ('device.`x.y`', 'device', ('x.y',))]
>>> batch = pa.record_batch([pa.array([1]), pa.array([{"os": "ios", "x.y": 2}], device)],
...                         names=["id", "device"])
>>> select_columns(batch, resolve_columns(read, ["device.os"])).to_pydict()
{'device.os': ['ios']}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors

__all__ = ["ColumnPath", "resolve_columns", "select_columns", "split_path"]


@dataclass(frozen=True)
class ColumnPath:
    """One entry of a column list: the output ``name``, the top-level ``column`` it reads and
    the struct ``path`` below it (empty for a top-level column); ``field`` is the output field."""

    name: str
    column: str
    path: tuple[str, ...]
    field: pa.Field


def split_path(text: str) -> tuple[str, ...] | None:
    """The segments of a dotted path, None when it is not well formed (an empty segment, an
    unclosed backtick).

    >>> split_path("device.os"), split_path("`a.b`.c"), split_path("a..b")
    (('device', 'os'), ('a.b', 'c'), None)
    """
    segments: list[str] = []
    i, n = 0, len(text)
    while True:
        if i < n and text[i] == "`":
            chars: list[str] = []
            i += 1
            while True:
                if i >= n:
                    return None
                if text[i] == "`":
                    if text.startswith("``", i):
                        chars.append("`")
                        i += 2
                        continue
                    i += 1
                    break
                chars.append(text[i])
                i += 1
            segment = "".join(chars)
        else:
            end = text.find(".", i)
            end = n if end < 0 else end
            segment = text[i:end]
            if not segment or "`" in segment:
                return None
            i = end
        segments.append(segment)
        if i == n:
            return tuple(segments)
        if text[i] != ".":
            return None
        i += 1


def _resolve(read: pa.Schema, name: str) -> ColumnPath | None:
    if name in read.names:
        return ColumnPath(name, name, (), read.field(name))
    segments = split_path(name)
    if segments is None or segments[0] not in read.names:
        return None
    field = read.field(segments[0])
    nullable = field.nullable
    for segment in segments[1:]:
        dtype = field.type
        if not pa.types.is_struct(dtype) or dtype.get_field_index(segment) < 0:
            return None
        field = dtype.field(segment)
        nullable = nullable or field.nullable
    return ColumnPath(
        name, segments[0], segments[1:], pa.field(name, field.type, nullable, field.metadata)
    )


def resolve_columns(read: pa.Schema, columns: Sequence[str]) -> list[ColumnPath]:
    """The entries of ``columns`` against the read schema.

    Raises
    ------
    InvalidInputError
        A name that is neither a column nor a path to a struct field.
    """
    if isinstance(columns, str):
        raise errors.InvalidInputError(
            f"columns must be a list of names, got the string {columns!r}"
        )
    found = [(name, _resolve(read, name)) for name in columns]
    missing = [name for name, path in found if path is None]
    if missing:
        raise errors.InvalidInputError(
            f"unknown column(s) {missing}: the namespace columns are {read.names} "
            "(a struct field is named by its dotted path, e.g. 'device.os'; backticks quote "
            "a name with a dot)"
        )
    return [path for _, path in found if path is not None]


def select_columns(batch: pa.RecordBatch, columns: Sequence[ColumnPath]) -> pa.RecordBatch:
    """The output columns of ``columns`` from a batch holding their top-level columns."""
    arrays = []
    for column in columns:
        array = batch.column(batch.schema.get_field_index(column.column))
        for segment in column.path:
            array = pc.struct_field(array, [array.type.get_field_index(segment)])
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema([c.field for c in columns]))
