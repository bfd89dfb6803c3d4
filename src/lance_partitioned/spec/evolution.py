"""Schema evolution and partition evolution: the rules of spec 000, as pure functions.

Every function takes the :class:`~lance_partitioned.spec.metadata.NamespaceMetadata` of a
namespace and returns the metadata after the change (equal to the input when the change is a
no-op), or raises a typed error and changes nothing. Committing the result is the job of
:mod:`lance_partitioned.evolution`.

Schema evolution (spec 000, "Schema Evolution Rules"):

- **add**: a new nullable field gets ids above every id ever assigned (deprecated ones
  included), its children too, in pre-order; ``"s.c"`` adds child ``c`` to the struct ``s``;
- **drop**: the field stays with ``"lance:deprecated": "true"`` and becomes nullable;
- **rename**: the name changes, the field id does not;
- **type promotion**: widening only (:func:`can_promote`).

A column is named by its top-level name, or by a dotted path through structs (``"s.a"``); an
exact top-level name wins over a path. A top-level column may not be named like a
``__manifest`` column, nor like a partition field whose source is another live column.

Partition evolution (spec 000, "Partition Evolution"): a new spec version, with field ids
reused for the same ``(source_id, name, expression)`` and new ones above every id ever
assigned. A spec equal to the current one is a no-op; an empty spec (unpartitioned) is allowed.

>>> schema = NamespaceSchema.from_arrow(pa.schema([("id", pa.int64()), ("d", pa.date32())]))
>>> meta = NamespaceMetadata(schema, (PartitionSpec(1, ()),))
>>> meta = add_columns(meta, [pa.field("amount", pa.float32())])
>>> meta = drop_columns(meta, ["amount"])
>>> meta = add_columns(meta, [pa.field("amount", pa.float64())])
>>> [(f.name, f.metadata[b"lance:field_id"]) for f in meta.schema.arrow_schema]
[('id', b'0'), ('d', b'1'), ('amount', b'2'), ('amount', b'3')]
>>> meta.schema.names
['id', 'd', 'amount']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.spec import nested
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.partitioning import (
    RESERVED_NAMES,
    PartitionField,
    PartitionSpec,
    bind_spec,
)
from lance_partitioned.spec.promotion import can_promote
from lance_partitioned.spec.schema import DEPRECATED_KEY, FIELD_ID_KEY, NamespaceSchema
from lance_partitioned.spec.shorthand import parse_partition_by
from lance_partitioned.spec.transforms import Day, Month, Months, Year, Years

__all__ = [
    "add_columns",
    "alter_column_type",
    "can_promote",
    "drop_columns",
    "rename_column",
    "update_partition_spec",
]

_ID = FIELD_ID_KEY.encode()
_DEPRECATED = DEPRECATED_KEY.encode()
_Path = tuple[int, ...]  # indices: top-level position, then struct child positions

# ---------------------------------------------------------------------------- paths


def _field_id(field: pa.Field) -> int:
    return int((field.metadata or {})[_ID])


def _live(schema: NamespaceSchema, field: pa.Field) -> bool:
    return not schema.is_deprecated(_field_id(field))


def _resolve(schema: NamespaceSchema, name: str) -> _Path:
    """The index path of the live field called ``name`` (top-level, or dotted through structs).

    Raises
    ------
    SchemaError
        No live field has that name or path.
    """
    if not isinstance(name, str) or not name:
        raise errors.SchemaError(f"a column name must be a non-empty string, got {name!r}")
    top = schema.arrow_schema
    for i, field in enumerate(top):
        if field.name == name and _live(schema, field):
            return (i,)
    parts = name.split(".")
    candidates: list[tuple[_Path, pa.DataType]] = [
        ((i,), f.type) for i, f in enumerate(top) if f.name == parts[0] and _live(schema, f)
    ]
    for part in parts[1:]:
        candidates = [
            ((*path, j), dtype.field(j).type)
            for path, dtype in candidates
            if pa.types.is_struct(dtype)
            for j in range(dtype.num_fields)
            if dtype.field(j).name == part and _live(schema, dtype.field(j))
        ]
    if len(parts) > 1 and candidates:
        return candidates[0][0]
    dropped = any(f.name == name for f in top)
    why = " (it was dropped: deprecated columns cannot be changed)" if dropped else ""
    raise errors.SchemaError(f"column {name!r} is not in the namespace schema{why}")


def _get(schema: pa.Schema, path: _Path) -> pa.Field:
    field = schema.field(path[0])
    for index in path[1:]:
        field = field.type.field(index)
    return field


def _children(field: pa.Field) -> list[pa.Field]:
    return [field.type.field(i) for i in range(field.type.num_fields)]


def _replace(
    fields: list[pa.Field], path: _Path, change: Callable[[pa.Field], pa.Field]
) -> list[pa.Field]:
    """``fields`` with the field at ``path`` replaced by ``change(field)``."""
    head, rest = path[0], path[1:]
    field = fields[head]
    if rest:
        new = field.with_type(pa.struct(_replace(_children(field), rest, change)))
    else:
        new = change(field)
    return [*fields[:head], new, *fields[head + 1 :]]


def _rebuild(
    metadata: NamespaceMetadata, path: _Path, change: Callable[[pa.Field], pa.Field]
) -> NamespaceMetadata:
    arrow = metadata.schema.arrow_schema
    fields = _replace(list(arrow), path, change)
    return metadata.with_schema(NamespaceSchema(pa.schema(fields, metadata=arrow.metadata)))


def _dotted(schema: NamespaceSchema, path: _Path) -> str:
    return schema.name_of(_field_id(_get(schema.arrow_schema, path)))


def _siblings(schema: NamespaceSchema, path: _Path) -> list[pa.Field]:
    """The fields next to the one at ``path`` (itself included)."""
    if len(path) == 1:
        return list(schema.arrow_schema)
    return _children(_get(schema.arrow_schema, path[:-1]))


# ---------------------------------------------------------------------------- names


def _check_top_level_name(metadata: NamespaceMetadata, name: str, field_id: int | None) -> None:
    """A top-level column name must not be a ``__manifest`` column, nor the name of a partition
    field whose source is another live column (``field_id``: the column taking the name)."""
    if name in RESERVED_NAMES:
        raise errors.SchemaError(
            f"column name {name!r} is reserved for a __manifest column "
            f"({', '.join(sorted(RESERVED_NAMES))})"
        )
    schema = metadata.schema
    for spec in metadata.specs:
        for spec_field in spec.fields:
            if spec_field.name != name or spec_field.source_id == field_id:
                continue
            if schema.is_deprecated(spec_field.source_id):
                continue
            raise errors.SchemaError(
                f"column name {name!r} would collide with partition field {name!r} of "
                f"{spec.key}, which partitions column {schema.name_of(spec_field.source_id)!r}"
            )


def _check_sibling(schema: NamespaceSchema, siblings: Sequence[pa.Field], name: str) -> None:
    for sibling in siblings:
        if sibling.name == name and _live(schema, sibling):
            raise errors.SchemaError(f"a live column named {name!r} already exists there")


# ---------------------------------------------------------------------------- add


def _shift_ids(field: pa.Field, offset: int) -> pa.Field:
    """``field`` with every ``lance:field_id`` below it increased by ``offset``."""

    def shift(f: pa.Field) -> pa.Field:
        metadata = dict(f.metadata or {})
        if _ID in metadata:
            metadata[_ID] = str(int(metadata[_ID]) + offset).encode()
        return f.with_metadata(metadata)

    return nested.map_field(field, shift)


def _nested(field: pa.Field) -> list[pa.Field]:
    """The fields directly below ``field`` that carry ids (a vector's element carries none)."""
    below = nested.children(field.type)
    if pa.types.is_map(field.type):
        return nested.children(below[0].type)  # key and value: the entries' id is implicit
    return below


def _reject_reserved_metadata(field: pa.Field, label: str) -> None:
    for key in (_ID, _DEPRECATED):
        if key in (field.metadata or {}):
            raise errors.SchemaError(
                f"new column {label!r} carries {key.decode()!r} metadata: field ids and "
                "deprecation are assigned by the namespace"
            )
    for child in _nested(field):
        _reject_reserved_metadata(child, f"{label}.{child.name}")


def add_columns(metadata: NamespaceMetadata, fields: Sequence[pa.Field]) -> NamespaceMetadata:
    """Add nullable columns (or struct children, named ``"parent.child"``) with new field ids.

    Ids are assigned in order, each field and its children in pre-order, starting above
    every id ever assigned. A name of a dropped (deprecated) column may be reused: the new
    column gets a new id.

    Raises
    ------
    SchemaError
        A field is not nullable, carries ``lance:field_id``/``lance:deprecated`` metadata,
        takes the name of a live column (or one added earlier in ``fields``) or a reserved or
        colliding name, or names a parent that is not a live struct.
    UnknownTypeError
        A type without a JsonArrowDataType encoding.

    Examples
    --------
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("s", pa.struct([("a", pa.int8())]))]))
    >>> meta = add_columns(NamespaceMetadata(schema, (PartitionSpec(1, ()),)),
    ...                    [pa.field("s.b", pa.utf8()), pa.field("n", pa.int32())])
    >>> [(meta.schema.name_of(i), i) for i in range(meta.schema.max_field_id + 1)]
    [('s', 0), ('s.a', 1), ('s.b', 2), ('n', 3)]
    """
    for field in fields:
        if not isinstance(field, pa.Field):
            raise errors.SchemaError(f"add_columns expects pyarrow.Field, got {field!r}")
        metadata = _add_one(metadata, field)
    return metadata


def _add_one(metadata: NamespaceMetadata, field: pa.Field) -> NamespaceMetadata:
    schema = metadata.schema
    name = field.name
    if not name:
        raise errors.SchemaError("a new column needs a non-empty name")
    if not field.nullable:
        raise errors.SchemaError(
            f"new column {name!r} must be nullable: rows written before it was added read NULL"
        )
    _reject_reserved_metadata(field, name)
    parent: _Path | None = None
    child_name = name
    if "." in name and not any(f.name == name for f in schema.arrow_schema):
        prefix, child_name = name.rsplit(".", 1)
        try:
            parent = _resolve(schema, prefix)
        except errors.SchemaError as exc:
            raise errors.SchemaError(f"cannot add {name!r}: {exc}") from exc
        if not pa.types.is_struct(_get(schema.arrow_schema, parent).type):
            raise errors.SchemaError(
                f"cannot add {name!r}: {prefix!r} is not a struct (children can only be added "
                "to structs)"
            )
    assigned = NamespaceSchema.from_arrow(pa.schema([field.with_name(child_name)]))
    new_field = _shift_ids(assigned.arrow_schema.field(0), schema.max_field_id + 1)
    if parent is None:
        _check_sibling(schema, list(schema.arrow_schema), name)
        _check_top_level_name(metadata, name, _field_id(new_field))
        arrow = schema.arrow_schema
        return metadata.with_schema(
            NamespaceSchema(pa.schema([*arrow, new_field], metadata=arrow.metadata))
        )
    _check_sibling(schema, _children(_get(schema.arrow_schema, parent)), child_name)
    return _rebuild(metadata, parent, lambda f: f.with_type(pa.struct([*_children(f), new_field])))


# ---------------------------------------------------------------------------- drop


def drop_columns(metadata: NamespaceMetadata, names: Sequence[str]) -> NamespaceMetadata:
    """Deprecate columns: kept in the schema with ``"lance:deprecated": "true"``, made nullable.

    Their data stays in the leaves; they leave the read schema and count as absent on write.
    Partition fields of older spec versions may keep using them.

    Raises
    ------
    SchemaError
        A name is not a live column, is listed twice, is a source column of the current
        partition spec (update the spec first), or is the last live column (or the last live
        child of a struct: drop the struct).

    Examples
    --------
    >>> schema = NamespaceSchema.from_arrow(pa.schema(
    ...     [pa.field("id", pa.int64(), nullable=False), ("legacy", pa.utf8())]))
    >>> meta = drop_columns(NamespaceMetadata(schema, (PartitionSpec(1, ()),)), ["legacy"])
    >>> meta.schema.to_json()["fields"][1]
    {'name': 'legacy', 'nullable': True, 'type': {'type': 'utf8'},
     'metadata': {'lance:field_id': '1', 'lance:deprecated': 'true'}}
    """
    if isinstance(names, str):
        raise errors.SchemaError(f"drop_columns expects a list of names, got the string {names!r}")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise errors.SchemaError(f"column {name!r} is listed twice")
        seen.add(name)
        metadata = _drop_one(metadata, name)
    return metadata


def _drop_one(metadata: NamespaceMetadata, name: str) -> NamespaceMetadata:
    schema = metadata.schema
    path = _resolve(schema, name)
    field = _get(schema.arrow_schema, path)
    field_id = _field_id(field)
    below = _ids_below(field)
    for spec_field in metadata.current_spec.fields:
        if spec_field.source_id in below:
            raise errors.SchemaError(
                f"cannot drop column {name!r}: partition field {spec_field.name!r} of the "
                f"current {metadata.current_spec.key} is computed from it; update the partition "
                "spec first (older spec versions may keep using a dropped column)"
            )
    if not any(_live(schema, s) and _field_id(s) != field_id for s in _siblings(schema, path)):
        where = "the namespace" if len(path) == 1 else f"struct {name.rsplit('.', 1)[0]!r}"
        raise errors.SchemaError(
            f"cannot drop column {name!r}: it is the last live column of {where}"
        )
    marked = {**(field.metadata or {}), _DEPRECATED: b"true"}
    return _rebuild(metadata, path, lambda f: f.with_nullable(True).with_metadata(marked))


def _ids_below(field: pa.Field) -> set[int]:
    """The ids of ``field`` and of every field nested in it."""
    ids = {_field_id(field)}
    if pa.types.is_map(field.type):
        ids.add(_field_id(field) + 1)  # the entries field (implicit id)
    for child in _nested(field):
        ids |= _ids_below(child)
    return ids


# ---------------------------------------------------------------------------- rename


def rename_column(metadata: NamespaceMetadata, old: str, new: str) -> NamespaceMetadata:
    """Rename a live column (or a struct child, ``"s.a"``); its field id does not change.

    ``new`` is the new name of the field itself; for a struct child, ``"s.b"`` and ``"b"``
    both rename ``s.a`` to ``s.b``. Partition fields keep pointing at the column by id.
    Renaming to the current name is a no-op.

    Raises
    ------
    SchemaError
        ``old`` is not a live column; ``new`` is empty, taken by a live sibling, a
        ``__manifest`` column name, or the name of a partition field computed from another
        live column.

    Examples
    --------
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("id", pa.int64()), ("country", pa.utf8())]))
    >>> spec = PartitionSpec(1, (PartitionField(1, "country", 1, "col", pa.utf8()),))
    >>> meta = rename_column(NamespaceMetadata(schema, (spec,)), "country", "region")
    >>> meta.schema.names, meta.schema.field_id("region"), meta.current_spec.fields[0].source_id
    (['id', 'region'], 1, 1)
    """
    schema = metadata.schema
    path = _resolve(schema, old)
    if not isinstance(new, str) or not new:
        raise errors.SchemaError(f"the new name of column {old!r} must be a non-empty string")
    field = _get(schema.arrow_schema, path)
    if len(path) > 1 and new.startswith(_dotted(schema, path[:-1]) + "."):
        new = new[len(_dotted(schema, path[:-1])) + 1 :]
    if new == field.name:
        return metadata
    _check_sibling(schema, _siblings(schema, path), new)
    if len(path) == 1:
        _check_top_level_name(metadata, new, _field_id(field))
    return _rebuild(metadata, path, lambda f: f.with_name(new))


# ---------------------------------------------------------------------------- promote


def alter_column_type(
    metadata: NamespaceMetadata, name: str, new_type: pa.DataType
) -> NamespaceMetadata:
    """Promote a live column (or struct child) to a wider type; the same type is a no-op.

    Leaves keep their data: readers cast it to the new type. Partition values stay valid:
    the ``hash`` of ``bucket`` encodes every integer as int64, every float as float64.
    ``date32`` to ``timestamp`` is refused when a partition field computes anything but
    ``year``, ``month`` or ``day`` from the column (identity and bucket values would change).

    Raises
    ------
    SchemaError
        ``name`` is not a live column, or the change is not in :func:`can_promote`.
    PartitionSpecError
        A partition expression cannot be applied to the new type.

    Examples
    --------
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("user_id", pa.int32())]))
    >>> meta = NamespaceMetadata(schema, (PartitionSpec(1, ()),))
    >>> alter_column_type(meta, "user_id", pa.int64()).schema.names
    ['user_id']
    >>> alter_column_type(meta, "user_id", pa.int16())
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.SchemaError: cannot change column 'user_id' from int32 to int16: ...
    """
    schema = metadata.schema
    path = _resolve(schema, name)
    if not isinstance(new_type, pa.DataType):
        raise errors.SchemaError(
            f"the new type of column {name!r} must be a pyarrow.DataType, got {new_type!r}"
        )
    field = _get(schema.arrow_schema, path)
    if field.type == new_type:
        return metadata
    if not can_promote(field.type, new_type):
        raise errors.SchemaError(
            f"cannot change column {name!r} from {field.type} to {new_type}: only exact "
            "widening promotions are allowed (int8→int16→int32→int64, uint widening, "
            "float16→float32→float64, decimal precision at the same scale, utf8→large_utf8, "
            "binary→large_binary, date32→timestamp[s|ms|us])"
        )
    if pa.types.is_date32(field.type):
        field_id = _field_id(field)
        for spec in metadata.specs:
            for spec_field in spec.fields:
                if spec_field.source_id == field_id and not isinstance(
                    spec_field.transform, (Year, Month, Day, Years, Months)
                ):
                    raise errors.SchemaError(
                        f"cannot change column {name!r} from date32 to {new_type}: partition "
                        f"field {spec_field.name!r} of {spec.key} ({spec_field.expression!r}) "
                        "would compute other values from a timestamp"
                    )
    return _rebuild(metadata, path, lambda f: f.with_type(new_type))


# ---------------------------------------------------------------------------- partition specs


def update_partition_spec(
    metadata: NamespaceMetadata, partition_by: str | Sequence[PartitionField]
) -> NamespaceMetadata:
    """Add a new partition spec version, or return ``metadata`` when it equals the current one.

    Parameters
    ----------
    metadata : NamespaceMetadata
        The namespace as it is.
    partition_by : str or sequence of PartitionField
        The ``partition_by`` shorthand (ids assigned by the reuse rule; ``""`` for an
        unpartitioned spec), or bound fields: a field with the ``(source_id, name,
        expression)`` of an earlier field must carry that field's id, any other field an
        id above every partition field id ever assigned.

    Raises
    ------
    PartitionByParseError
        The shorthand cannot be parsed.
    PartitionSpecError
        A rule of spec 000 is broken (reuse rule, one ``result_type`` per name, a deprecated
        source column, a reserved name), an id is reused or not above every id assigned,
        or a field takes the name of a live column other than its source.

    Examples
    --------
    >>> schema = NamespaceSchema.from_arrow(pa.schema(
    ...     [("id", pa.int64()), ("event_date", pa.date32()), ("country", pa.utf8())]))
    >>> v1 = update_partition_spec(NamespaceMetadata(schema, (PartitionSpec(1, ()),)),
    ...                            "event_date")
    >>> v2 = update_partition_spec(v1, "year(event_date) AS event_year, country")
    >>> [(f.field_id, f.name) for f in v2.current_spec.fields], v2.current_spec.version
    ([(2, 'event_year'), (3, 'country')], 3)
    >>> update_partition_spec(v2, "year(event_date) AS event_year, country") is v2
    True
    """
    schema = metadata.schema
    if isinstance(partition_by, str):
        unbound = parse_partition_by(partition_by, schema)
        if metadata.current_spec.same_fields(unbound):
            return metadata
        spec = bind_spec(unbound, existing=metadata.specs, schema=schema)
    else:
        fields = tuple(partition_by)
        spec = PartitionSpec(metadata.current_spec.version + 1, fields)
        if fields == metadata.current_spec.fields:
            return metadata
        _check_new_ids(metadata.specs, spec)
    for spec_field in spec.fields:
        _check_partition_name(schema, spec, spec_field)
    return metadata.with_spec(spec)


def _check_new_ids(existing: Sequence[PartitionSpec], spec: PartitionSpec) -> None:
    known = {(f.source_id, f.name, f.expression) for s in existing for f in s.fields}
    assigned = max((f.field_id for s in existing for f in s.fields), default=0)
    for spec_field in spec.fields:
        identity = (spec_field.source_id, spec_field.name, spec_field.expression)
        if identity not in known and spec_field.field_id <= assigned:
            raise errors.PartitionSpecError(
                f"{spec.key} field {spec_field.name!r}: a new partition field needs a field_id "
                f"above every id ever assigned ({assigned}), got {spec_field.field_id}"
            )


def _check_partition_name(
    schema: NamespaceSchema, spec: PartitionSpec, spec_field: PartitionField
) -> None:
    if spec_field.name in schema.names and schema.field_id(spec_field.name) != (
        spec_field.source_id
    ):
        raise errors.PartitionSpecError(
            f"{spec.key} field {spec_field.name!r}: the name is that of another live column; "
            f"a partition field may only share its name with its source column "
            f"{schema.name_of(spec_field.source_id)!r}"
        )
