"""JsonArrowDataType and JsonArrowField: the JSON form of Arrow types used by spec 000.

The ``schema`` property of a partitioned namespace and every partition field's ``result_type``
use lance-namespace's ``JsonArrowDataType`` (``{"type": <name>, "length"?: int,
"fields"?: [JsonArrowField, ...]}``) and ``JsonArrowField`` (``{"name", "nullable", "type",
"metadata"?}``). The model has no keys for type parameters, so this module fixes them. Type
names and the use of ``length`` and ``fields`` follow Lance's own Rust converter
(``lance-namespace`` ``arrow_type_to_json`` / ``convert_json_arrow_type``); where that converter
drops a parameter (timestamp unit and time zone, time and duration units) we add a key.

The encoding (part of our contract with other clients)
------------------------------------------------------
================================  =================================================================
Arrow type                        JSON
================================  =================================================================
null, bool, int8 ... int64,       ``{"type": "<name>"}`` with the names ``null``, ``bool``,
uint8 ... uint64, float16/32/64,  ``int8``, ``int16``, ``int32``, ``int64``, ``uint8``, ``uint16``,
utf8, large_utf8, binary,         ``uint32``, ``uint64``, ``float16``, ``float32``, ``float64``,
large_binary, date32, date64      ``utf8``, ``large_utf8``, ``binary``, ``large_binary``,
                                  ``date32``, ``date64``
decimal32/64/128/256(p, s)        ``{"type": "decimal128", "length": p * 1000 + s,
                                  "precision": p, "scale": s}``; ``length`` is Lance's own
                                  encoding (written when ``-128 <= s <= 127``), ``precision`` and
                                  ``scale`` are ours and win when both are present (they must
                                  agree; a missing ``scale`` is 0); JSON with only ``length``
                                  decodes as Lance does
timestamp(unit, tz)               ``{"type": "timestamp", "unit": "us", "timezone": "UTC"}``;
                                  ``unit`` is one of ``s``, ``ms``, ``us``, ``ns``; ``timezone``
                                  is omitted when there is none; a missing ``unit`` reads as ``us``
                                  (what Lance assumes)
time32(unit), time64(unit)        ``{"type": "time64", "unit": "ns"}``; missing ``unit`` reads as
                                  ``ms`` (time32) or ``us`` (time64)
duration(unit)                    ``{"type": "duration", "unit": "ms"}``; missing ``unit``: ``us``
fixed_size_binary(n)              ``{"type": "fixed_size_binary", "length": n}``
list<f>, large_list<f>            ``{"type": "list", "fields": [f]}`` (``large_list``): ``f`` is
                                  the element field, with its name (usually ``item``),
                                  nullability and metadata
fixed_size_list<f>[n]             ``{"type": "fixed_size_list", "length": n, "fields": [f]}``
struct<f1, f2, ...>               ``{"type": "struct", "fields": [f1, f2, ...]}``
map<k, v>                         ``{"type": "map", "fields": [entries]}`` where ``entries`` is
                                  the non-nullable field ``entries: struct<k, v>`` as Arrow nests
                                  it; ``"keys_sorted": true`` is added only when the keys are
                                  sorted
================================  =================================================================

Type names are read case-insensitively, and ``boolean`` is read as ``bool`` (as Lance does).
Keys a reader does not know are ignored. pyarrow cannot keep a name other than ``entries``, or
any metadata, on a map's entries field: those are dropped on read. Dictionary, union, view,
interval, run-end-encoded and extension types have no encoding and raise
:class:`~lance_partitioned.errors.UnknownTypeError`, as does any unknown type name.

Field metadata is kept verbatim as ``str -> str`` (pyarrow stores bytes: UTF-8 both ways) and
written only when there is some.

>>> import pyarrow as pa
>>> type_to_json(pa.timestamp("us", "UTC"))
{'type': 'timestamp', 'unit': 'us', 'timezone': 'UTC'}
>>> type_from_json({"type": "int64"})
DataType(int64)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import pyarrow as pa

from lance_partitioned.errors import SchemaError, UnknownTypeError

__all__ = ["field_from_json", "field_to_json", "type_from_json", "type_to_json"]

_PRIMITIVES: dict[str, Callable[[], Any]] = {
    "null": pa.null,
    "bool": pa.bool_,
    "int8": pa.int8,
    "int16": pa.int16,
    "int32": pa.int32,
    "int64": pa.int64,
    "uint8": pa.uint8,
    "uint16": pa.uint16,
    "uint32": pa.uint32,
    "uint64": pa.uint64,
    "float16": pa.float16,
    "float32": pa.float32,
    "float64": pa.float64,
    "utf8": pa.string,
    "large_utf8": pa.large_string,
    "binary": pa.binary,
    "large_binary": pa.large_binary,
    "date32": pa.date32,
    "date64": pa.date64,
}
_PRIMITIVE_NAMES: dict[Any, str] = {factory(): name for name, factory in _PRIMITIVES.items()}
_ALIASES = {"boolean": "bool"}
_DECIMALS: dict[str, Callable[[int, int], Any]] = {
    "decimal32": pa.decimal32,
    "decimal64": pa.decimal64,
    "decimal128": pa.decimal128,
    "decimal256": pa.decimal256,
}
_DEFAULT_UNITS = {"timestamp": "us", "time32": "ms", "time64": "us", "duration": "us"}
_UNITS = ("s", "ms", "us", "ns")


# --------------------------------------------------------------------------- Arrow -> JSON


def type_to_json(dtype: pa.DataType) -> dict[str, Any]:
    """Encode an Arrow type as a JsonArrowDataType object.

    Parameters
    ----------
    dtype : pyarrow.DataType
        Any type a Lance table can hold (see the module docstring for the encoding).

    Returns
    -------
    dict
        A JSON-serializable JsonArrowDataType object.

    Raises
    ------
    UnknownTypeError
        If ``dtype`` (or a type nested in it) has no encoding, e.g. a dictionary or union type.

    Examples
    --------
    >>> import pyarrow as pa
    >>> type_to_json(pa.decimal128(10, 2))
    {'type': 'decimal128', 'length': 10002, 'precision': 10, 'scale': 2}
    >>> type_to_json(pa.list_(pa.int32()))
    {'type': 'list', 'fields': [{'name': 'item', 'nullable': True, 'type': {'type': 'int32'}}]}
    """
    if isinstance(dtype, pa.BaseExtensionType):
        raise UnknownTypeError(f"Arrow extension type {dtype} has no JsonArrowDataType encoding")
    name = _PRIMITIVE_NAMES.get(dtype)
    if name is not None:
        return {"type": name}
    types = pa.types
    for decimal_name in _DECIMALS:
        if getattr(types, f"is_{decimal_name}")(dtype):
            return _decimal_to_json(decimal_name, dtype.precision, dtype.scale)
    if types.is_timestamp(dtype):
        out: dict[str, Any] = {"type": "timestamp", "unit": dtype.unit}
        if dtype.tz is not None:
            out["timezone"] = dtype.tz
        return out
    if types.is_time32(dtype) or types.is_time64(dtype) or types.is_duration(dtype):
        kind = "duration" if types.is_duration(dtype) else f"time{dtype.bit_width}"
        return {"type": kind, "unit": dtype.unit}
    if types.is_fixed_size_binary(dtype):
        return {"type": "fixed_size_binary", "length": dtype.byte_width}
    if types.is_map(dtype):
        out = {"type": "map", "fields": [field_to_json(dtype.field(0))]}
        if dtype.keys_sorted:
            out["keys_sorted"] = True
        return out
    if types.is_list(dtype) or types.is_large_list(dtype):
        kind = "list" if types.is_list(dtype) else "large_list"
        return {"type": kind, "fields": [field_to_json(dtype.value_field)]}
    if types.is_fixed_size_list(dtype):
        return {
            "type": "fixed_size_list",
            "length": dtype.list_size,
            "fields": [field_to_json(dtype.value_field)],
        }
    if types.is_struct(dtype):
        return {
            "type": "struct",
            "fields": [field_to_json(dtype.field(i)) for i in range(dtype.num_fields)],
        }
    raise UnknownTypeError(f"Arrow type {dtype} has no JsonArrowDataType encoding")


def _decimal_to_json(name: str, precision: int, scale: int) -> dict[str, Any]:
    out: dict[str, Any] = {"type": name}
    if -128 <= scale <= 127:
        out["length"] = precision * 1000 + scale
    out["precision"] = precision
    out["scale"] = scale
    return out


def field_to_json(field: pa.Field) -> dict[str, Any]:
    """Encode an Arrow field as a JsonArrowField object.

    Parameters
    ----------
    field : pyarrow.Field
        The field; its metadata must be UTF-8.

    Returns
    -------
    dict
        ``{"name", "nullable", "type"}`` plus ``"metadata"`` when the field has any.

    Raises
    ------
    UnknownTypeError
        If the field's type has no encoding (the message names the field and the type).
    SchemaError
        If a metadata key or value is not UTF-8.

    Examples
    --------
    >>> import pyarrow as pa
    >>> field_to_json(pa.field("id", pa.int64(), nullable=False, metadata={"lance:field_id": "0"}))
    {'name': 'id', 'nullable': False, 'type': {'type': 'int64'},
     'metadata': {'lance:field_id': '0'}}
    """
    try:
        dtype = type_to_json(field.type)
    except UnknownTypeError as exc:
        raise UnknownTypeError(f"field {field.name!r}: {exc}") from exc
    out: dict[str, Any] = {"name": field.name, "nullable": field.nullable, "type": dtype}
    metadata = _decode_metadata(field.metadata, f"field {field.name!r}")
    if metadata:
        out["metadata"] = metadata
    return out


def _decode_metadata(metadata: Mapping[bytes, bytes] | None, owner: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (metadata or {}).items():
        try:
            out[key.decode("utf-8")] = value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(f"{owner}: metadata key {key!r} is not UTF-8 text") from exc
    return out


# --------------------------------------------------------------------------- JSON -> Arrow


def type_from_json(obj: Mapping[str, Any]) -> pa.DataType:
    """Decode a JsonArrowDataType object into an Arrow type.

    Parameters
    ----------
    obj : Mapping
        A JsonArrowDataType object, as written by :func:`type_to_json` or by Lance.

    Returns
    -------
    pyarrow.DataType

    Raises
    ------
    UnknownTypeError
        If the type name is unknown or its parameters are missing or invalid (the message
        names the type).
    SchemaError
        If a nested JsonArrowField is malformed.

    Examples
    --------
    >>> type_from_json({"type": "timestamp", "unit": "us", "timezone": "UTC"})
    TimestampType(timestamp[us, tz=UTC])
    >>> type_from_json({"type": "decimal128", "length": 10002})
    Decimal128Type(decimal128(10, 2))
    >>> type_from_json({"type": "varchar"})
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.UnknownTypeError: unknown JsonArrowDataType name 'varchar'
    """
    if not isinstance(obj, Mapping):
        raise UnknownTypeError(f"JsonArrowDataType must be an object, got {obj!r}")
    name = obj.get("type")
    if not isinstance(name, str):
        raise UnknownTypeError(f"JsonArrowDataType {dict(obj)!r} has no 'type' name")
    key = name.lower()
    key = _ALIASES.get(key, key)
    factory = _PRIMITIVES.get(key)
    if factory is not None:
        return factory()
    builder = _BUILDERS.get(key)
    if builder is None:
        raise UnknownTypeError(f"unknown JsonArrowDataType name {name!r}")
    try:
        return builder(key, obj)
    except (ValueError, TypeError) as exc:  # pyarrow's own checks (ArrowInvalid is a ValueError)
        raise UnknownTypeError(f"invalid JsonArrowDataType {name!r}: {exc}") from exc


def _int_param(obj: Mapping[str, Any], key: str, name: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise UnknownTypeError(f"JsonArrowDataType {name!r}: {key!r} must be an integer")
    return value


def _length(obj: Mapping[str, Any], name: str) -> int:
    length = _int_param(obj, "length", name)
    if length is None or length < 0:
        raise UnknownTypeError(f"JsonArrowDataType {name!r} needs a non-negative 'length'")
    return length


def _decimal(name: str, obj: Mapping[str, Any]) -> pa.DataType:
    length = _int_param(obj, "length", name)
    precision = _int_param(obj, "precision", name)
    scale = _int_param(obj, "scale", name)
    if precision is None:
        if scale is not None or length is None:
            raise UnknownTypeError(f"JsonArrowDataType {name!r} needs 'precision' (or 'length')")
        precision = (length + 128) // 1000  # Lance's decoding, which allows negative scales
        scale = length - precision * 1000
    elif scale is None:
        scale = 0
    if length is not None and length != precision * 1000 + scale:
        raise UnknownTypeError(
            f"JsonArrowDataType {name!r}: 'length' {length} disagrees with precision "
            f"{precision} and scale {scale}"
        )
    return _DECIMALS[name](precision, scale)


def _unit(name: str, obj: Mapping[str, Any]) -> str:
    unit = obj.get("unit", _DEFAULT_UNITS[name])
    if unit not in _UNITS:
        raise UnknownTypeError(f"JsonArrowDataType {name!r}: unknown unit {unit!r}")
    return cast(str, unit)


def _timestamp(name: str, obj: Mapping[str, Any]) -> pa.DataType:
    timezone = obj.get("timezone")
    if timezone is not None and not isinstance(timezone, str):
        raise UnknownTypeError(f"JsonArrowDataType {name!r}: 'timezone' must be a string")
    return pa.timestamp(_unit(name, obj), tz=timezone or None)


def _time_or_duration(name: str, obj: Mapping[str, Any]) -> pa.DataType:
    factory = {"time32": pa.time32, "time64": pa.time64, "duration": pa.duration}[name]
    return factory(_unit(name, obj))


def _fixed_size_binary(name: str, obj: Mapping[str, Any]) -> pa.DataType:
    return pa.binary(_length(obj, name))


def _children(name: str, obj: Mapping[str, Any], count: int | None) -> list[pa.Field]:
    fields = obj.get("fields")
    if not isinstance(fields, list) or (count is not None and len(fields) != count):
        wanted = "a 'fields' list" if count is None else f"exactly {count} element in 'fields'"
        raise UnknownTypeError(f"JsonArrowDataType {name!r} needs {wanted}")
    return [field_from_json(child) for child in fields]


def _list(name: str, obj: Mapping[str, Any]) -> pa.DataType:
    (item,) = _children(name, obj, 1)
    if name == "fixed_size_list":
        return pa.list_(item, _length(obj, name))
    return pa.list_(item) if name == "list" else pa.large_list(item)


def _struct(name: str, obj: Mapping[str, Any]) -> pa.DataType:
    return pa.struct(_children(name, obj, None))


def _map(name: str, obj: Mapping[str, Any]) -> pa.DataType:
    (entries,) = _children(name, obj, 1)
    if not pa.types.is_struct(entries.type) or entries.type.num_fields != 2:
        raise UnknownTypeError(
            f"JsonArrowDataType 'map': entries field {entries.name!r} must be a struct of "
            f"exactly two fields (key, value), got {entries.type}"
        )
    keys_sorted = obj.get("keys_sorted", False)
    if not isinstance(keys_sorted, bool):
        raise UnknownTypeError("JsonArrowDataType 'map': 'keys_sorted' must be a boolean")
    return pa.map_(entries.type.field(0), entries.type.field(1), keys_sorted=keys_sorted)


_BUILDERS: dict[str, Callable[[str, Mapping[str, Any]], pa.DataType]] = {
    **dict.fromkeys(_DECIMALS, _decimal),
    "timestamp": _timestamp,
    "time32": _time_or_duration,
    "time64": _time_or_duration,
    "duration": _time_or_duration,
    "fixed_size_binary": _fixed_size_binary,
    "list": _list,
    "large_list": _list,
    "fixed_size_list": _list,
    "struct": _struct,
    "map": _map,
}


def field_from_json(obj: Mapping[str, Any]) -> pa.Field:
    """Decode a JsonArrowField object into an Arrow field.

    Parameters
    ----------
    obj : Mapping
        ``{"name": str, "nullable": bool, "type": JsonArrowDataType, "metadata"?: {str: str}}``.

    Returns
    -------
    pyarrow.Field
        With the metadata kept verbatim.

    Raises
    ------
    SchemaError
        If the object is malformed (the message names the field).
    UnknownTypeError
        If its type cannot be decoded (the message names the field and the type).

    Examples
    --------
    >>> f = field_from_json({"name": "country", "nullable": True, "type": {"type": "utf8"},
    ...                      "metadata": {"lance:field_id": "2"}})
    >>> f
    pyarrow.Field<country: string>
    >>> f.metadata
    {b'lance:field_id': b'2'}
    """
    if not isinstance(obj, Mapping):
        raise SchemaError(f"JsonArrowField must be an object, got {obj!r}")
    name = obj.get("name")
    if not isinstance(name, str):
        raise SchemaError(f"JsonArrowField {dict(obj)!r} has no string 'name'")
    nullable = obj.get("nullable")
    if not isinstance(nullable, bool):
        raise SchemaError(f"field {name!r}: 'nullable' must be true or false, got {nullable!r}")
    if "type" not in obj:
        raise SchemaError(f"field {name!r} has no 'type'")
    metadata = obj.get("metadata")
    if metadata is not None and not (
        isinstance(metadata, Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise SchemaError(f"field {name!r}: 'metadata' must map strings to strings")
    try:
        dtype = type_from_json(obj["type"])
    except UnknownTypeError as exc:
        raise UnknownTypeError(f"field {name!r}: {exc}") from exc
    return pa.field(name, dtype, nullable=nullable, metadata=dict(metadata) if metadata else None)
