"""JsonArrowDataType / JsonArrowField <-> pyarrow (spec/types.py)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest
from lance_namespace_urllib3_client.models.json_arrow_field import JsonArrowField

from lance_partitioned.errors import InvalidInputError, SchemaError, UnknownTypeError
from lance_partitioned.spec.types import (
    field_from_json,
    field_to_json,
    type_from_json,
    type_to_json,
)


def _item(dtype: dict[str, Any], name: str = "item", nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "nullable": nullable, "type": dtype}


# Every type a Lance table can hold, with the exact JSON we write for it.
CASES: list[tuple[pa.DataType, dict[str, Any]]] = [
    (pa.null(), {"type": "null"}),
    (pa.bool_(), {"type": "bool"}),
    (pa.int8(), {"type": "int8"}),
    (pa.int16(), {"type": "int16"}),
    (pa.int32(), {"type": "int32"}),
    (pa.int64(), {"type": "int64"}),
    (pa.uint8(), {"type": "uint8"}),
    (pa.uint16(), {"type": "uint16"}),
    (pa.uint32(), {"type": "uint32"}),
    (pa.uint64(), {"type": "uint64"}),
    (pa.float16(), {"type": "float16"}),
    (pa.float32(), {"type": "float32"}),
    (pa.float64(), {"type": "float64"}),
    (
        pa.decimal128(10, 2),
        {"type": "decimal128", "length": 10002, "precision": 10, "scale": 2},
    ),
    (
        pa.decimal128(9, -2),
        {"type": "decimal128", "length": 8998, "precision": 9, "scale": -2},
    ),
    (
        pa.decimal256(76, 10),
        {"type": "decimal256", "length": 76010, "precision": 76, "scale": 10},
    ),
    (pa.decimal32(9, 3), {"type": "decimal32", "length": 9003, "precision": 9, "scale": 3}),
    (pa.decimal64(18, 0), {"type": "decimal64", "length": 18000, "precision": 18, "scale": 0}),
    (pa.string(), {"type": "utf8"}),
    (pa.large_string(), {"type": "large_utf8"}),
    (pa.binary(), {"type": "binary"}),
    (pa.large_binary(), {"type": "large_binary"}),
    (pa.binary(16), {"type": "fixed_size_binary", "length": 16}),
    (pa.date32(), {"type": "date32"}),
    (pa.date64(), {"type": "date64"}),
    (pa.time32("s"), {"type": "time32", "unit": "s"}),
    (pa.time32("ms"), {"type": "time32", "unit": "ms"}),
    (pa.time64("us"), {"type": "time64", "unit": "us"}),
    (pa.time64("ns"), {"type": "time64", "unit": "ns"}),
    (pa.timestamp("us", "UTC"), {"type": "timestamp", "unit": "us", "timezone": "UTC"}),
    (pa.timestamp("s"), {"type": "timestamp", "unit": "s"}),
    (
        pa.timestamp("ns", "America/New_York"),
        {"type": "timestamp", "unit": "ns", "timezone": "America/New_York"},
    ),
    (pa.timestamp("ms", "+01:00"), {"type": "timestamp", "unit": "ms", "timezone": "+01:00"}),
    (pa.duration("ms"), {"type": "duration", "unit": "ms"}),
    (pa.duration("ns"), {"type": "duration", "unit": "ns"}),
    (pa.list_(pa.int32()), {"type": "list", "fields": [_item({"type": "int32"})]}),
    (
        pa.large_list(pa.field("x", pa.utf8(), nullable=False)),
        {"type": "large_list", "fields": [_item({"type": "utf8"}, "x", False)]},
    ),
    (
        pa.list_(pa.float32(), 128),
        {"type": "fixed_size_list", "length": 128, "fields": [_item({"type": "float32"})]},
    ),
    (
        pa.struct([pa.field("a", pa.int64(), nullable=False), ("b", pa.utf8())]),
        {
            "type": "struct",
            "fields": [_item({"type": "int64"}, "a", False), _item({"type": "utf8"}, "b")],
        },
    ),
    (pa.struct([]), {"type": "struct", "fields": []}),
    (
        pa.map_(pa.utf8(), pa.int32()),
        {
            "type": "map",
            "fields": [
                _item(
                    {
                        "type": "struct",
                        "fields": [
                            _item({"type": "utf8"}, "key", False),
                            _item({"type": "int32"}, "value"),
                        ],
                    },
                    "entries",
                    False,
                )
            ],
        },
    ),
    (
        pa.map_(pa.int64(), pa.list_(pa.utf8()), keys_sorted=True),
        {
            "type": "map",
            "fields": [
                _item(
                    {
                        "type": "struct",
                        "fields": [
                            _item({"type": "int64"}, "key", False),
                            _item({"type": "list", "fields": [_item({"type": "utf8"})]}, "value"),
                        ],
                    },
                    "entries",
                    False,
                )
            ],
            "keys_sorted": True,
        },
    ),
]


@pytest.mark.parametrize(("dtype", "expected"), CASES, ids=[str(t) for t, _ in CASES])
def test_type_to_json_and_back(dtype: pa.DataType, expected: dict[str, Any]) -> None:
    encoded = type_to_json(dtype)
    assert encoded == expected
    assert json.loads(json.dumps(encoded)) == encoded
    decoded = type_from_json(expected)
    assert decoded.equals(dtype, check_metadata=True)


@pytest.mark.parametrize(("dtype", "expected"), CASES, ids=[str(t) for t, _ in CASES])
def test_json_is_a_valid_lance_namespace_model(
    dtype: pa.DataType, expected: dict[str, Any]
) -> None:
    # The generated lance-namespace client parses what we write. It keeps only the model's keys
    # (name, nullable, type, length, fields, metadata); what survives still decodes to the same
    # type unless the type has parameters the model cannot carry (units, time zone, key order).
    model = JsonArrowField.from_dict({"name": "c", "nullable": True, "type": type_to_json(dtype)})
    assert model is not None
    survivor = field_from_json(model.to_dict()).type
    text = json.dumps(expected)
    if any(k in text for k in ('"unit"', '"timezone"', '"keys_sorted"')):
        assert survivor.id == dtype.id
    else:
        assert survivor.equals(dtype, check_metadata=True)


def test_decimal_reads_lance_length_encoding() -> None:
    # Lance's converter writes only length = precision * 1000 + scale.
    assert type_from_json({"type": "decimal128", "length": 38010}) == pa.decimal128(38, 10)
    assert type_from_json({"type": "decimal256", "length": 75990}) == pa.decimal256(76, -10)
    assert type_from_json({"type": "decimal128", "precision": 5}) == pa.decimal128(5, 0)


def test_decimal_length_must_agree_with_precision_and_scale() -> None:
    with pytest.raises(UnknownTypeError, match=r"'decimal128'.*length"):
        type_from_json({"type": "decimal128", "length": 10003, "precision": 10, "scale": 2})


def test_decimal_scale_outside_lance_range_omits_length() -> None:
    assert type_to_json(pa.decimal256(76, 200)) == {
        "type": "decimal256",
        "precision": 76,
        "scale": 200,
    }


def test_missing_units_default_like_lance() -> None:
    assert type_from_json({"type": "timestamp"}) == pa.timestamp("us")
    assert type_from_json({"type": "duration"}) == pa.duration("us")
    assert type_from_json({"type": "time32"}) == pa.time32("ms")
    assert type_from_json({"type": "time64"}) == pa.time64("us")


def test_names_are_case_insensitive_and_boolean_is_bool() -> None:
    assert type_from_json({"type": "Int64"}) == pa.int64()
    assert type_from_json({"type": "boolean"}) == pa.bool_()
    assert type_from_json({"type": "UTF8"}) == pa.string()


def test_unknown_keys_are_ignored() -> None:
    assert type_from_json({"type": "int32", "future": {"x": 1}}) == pa.int32()


@pytest.mark.parametrize("name", ["varchar", "string", "dictionary", "union", "interval"])
def test_unknown_type_name_is_named(name: str) -> None:
    with pytest.raises(UnknownTypeError, match=repr(name)) as info:
        type_from_json({"type": name})
    assert isinstance(info.value, InvalidInputError)


@pytest.mark.parametrize(
    ("obj", "fragment"),
    [
        ({}, "no 'type'"),
        ({"type": 5}, "no 'type'"),
        ({"type": "fixed_size_binary"}, "'fixed_size_binary' needs a non-negative 'length'"),
        ({"type": "fixed_size_binary", "length": -1}, "non-negative 'length'"),
        ({"type": "fixed_size_binary", "length": True}, "must be an integer"),
        ({"type": "fixed_size_list", "fields": [_item({"type": "int8"})]}, "'length'"),
        ({"type": "decimal128"}, "'decimal128' needs 'precision'"),
        ({"type": "decimal128", "precision": 50, "scale": 2}, "invalid JsonArrowDataType"),
        ({"type": "timestamp", "unit": "days"}, "unknown unit 'days'"),
        ({"type": "time32", "unit": "us"}, "'time32'"),
        ({"type": "timestamp", "timezone": 1}, "'timezone' must be a string"),
        ({"type": "list"}, "'list' needs exactly 1"),
        ({"type": "list", "fields": []}, "'list' needs exactly 1"),
        ({"type": "struct"}, "'struct' needs a 'fields' list"),
        ({"type": "map", "fields": [_item({"type": "int32"}, "entries")]}, "two fields"),
        (
            {
                "type": "map",
                "fields": [
                    _item(
                        {
                            "type": "struct",
                            "fields": [_item({"type": "utf8"}, "k"), _item({"type": "int8"})],
                        },
                        "entries",
                        False,
                    )
                ],
            },
            "non-nullable",
        ),
    ],
)
def test_invalid_type_json_is_rejected(obj: dict[str, Any], fragment: str) -> None:
    with pytest.raises(UnknownTypeError) as info:
        type_from_json(obj)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "dtype",
    [
        pa.dictionary(pa.int32(), pa.string()),
        pa.dense_union([pa.field("a", pa.int8())]),
        pa.sparse_union([pa.field("a", pa.int8())]),
        pa.string_view(),
        pa.binary_view(),
        pa.month_day_nano_interval(),
        pa.run_end_encoded(pa.int32(), pa.utf8()),
        pa.list_view(pa.int32()),
        pa.uuid(),
    ],
    ids=str,
)
def test_arrow_type_without_encoding_is_named(dtype: pa.DataType) -> None:
    with pytest.raises(UnknownTypeError, match="has no JsonArrowDataType encoding") as info:
        type_to_json(dtype)
    assert str(dtype) in str(info.value)


def test_nested_unencodable_type_names_the_field() -> None:
    dtype = pa.struct([pa.field("tags", pa.dictionary(pa.int8(), pa.utf8()))])
    with pytest.raises(UnknownTypeError, match=r"field 'tags'.*dictionary"):
        type_to_json(dtype)
    with pytest.raises(UnknownTypeError, match=r"field 'outer': field 'tags'"):
        field_to_json(pa.field("outer", dtype))


def test_field_json_shape_and_metadata_verbatim() -> None:
    metadata = {"lance:field_id": "7", "comment": "Größe ✓", "empty": "", "json": '{"a": [1]}'}
    field = pa.field("größe", pa.int16(), nullable=False, metadata=metadata)
    encoded = field_to_json(field)
    assert encoded == {
        "name": "größe",
        "nullable": False,
        "type": {"type": "int16"},
        "metadata": metadata,
    }
    assert list(encoded) == ["name", "nullable", "type", "metadata"]
    decoded = field_from_json(encoded)
    assert decoded.equals(field, check_metadata=True)
    assert decoded.metadata == {k.encode(): v.encode() for k, v in metadata.items()}


def test_field_without_metadata_has_no_metadata_key() -> None:
    assert "metadata" not in field_to_json(pa.field("a", pa.int8()))
    assert (
        field_from_json({"name": "a", "nullable": True, "type": {"type": "int8"}}).metadata is None
    )
    empty = {"name": "a", "nullable": True, "type": {"type": "int8"}, "metadata": {}}
    assert not field_from_json(empty).metadata


def test_nested_names_nullability_and_metadata_round_trip() -> None:
    key = pa.field("k", pa.utf8(), nullable=False, metadata={"lance:field_id": "4"})
    value = pa.field(
        "v", pa.list_(pa.field("el", pa.int8(), False, {"x": "y"})), metadata={"a": "b"}
    )
    field = pa.field(
        "root",
        pa.struct(
            [
                pa.field("s", pa.struct([pa.field("inner", pa.date32(), False, {"m": "1"})])),
                pa.field("m", pa.map_(key, value), metadata={"lance:field_id": "2"}),
                pa.field("f", pa.list_(pa.field("i", pa.float64(), False, {"q": "r"}), 3)),
            ]
        ),
        nullable=False,
        metadata={"lance:field_id": "0"},
    )
    encoded = field_to_json(field)
    assert json.loads(json.dumps(encoded)) == encoded
    assert field_from_json(encoded).equals(field, check_metadata=True)
    struct_children = encoded["type"]["fields"]
    assert struct_children[0]["type"]["fields"][0]["metadata"] == {"m": "1"}
    entries = struct_children[1]["type"]["fields"][0]
    assert entries["type"]["fields"][0]["metadata"] == {"lance:field_id": "4"}
    assert entries["type"]["fields"][1]["type"]["fields"][0] == {
        "name": "el",
        "nullable": False,
        "type": {"type": "int8"},
        "metadata": {"x": "y"},
    }


def test_map_from_lance_rust_names_keys_and_values() -> None:
    # Lance's own tests write entries: struct<keys, values>; pyarrow keeps those names.
    obj = {
        "type": "map",
        "fields": [
            _item(
                {
                    "type": "struct",
                    "fields": [
                        _item({"type": "utf8"}, "keys", False),
                        _item({"type": "int32"}, "values"),
                    ],
                },
                "entries",
                False,
            )
        ],
    }
    dtype = type_from_json(obj)
    assert dtype.key_field.name == "keys"
    assert dtype.item_field.name == "values"
    assert type_to_json(dtype) == obj


def test_map_entries_name_is_normalised_by_pyarrow() -> None:
    # pyarrow always calls the entries field "entries" (documented loss).
    obj = {
        "type": "map",
        "fields": [
            _item(
                {
                    "type": "struct",
                    "fields": [
                        _item({"type": "utf8"}, "key", False),
                        _item({"type": "int8"}, "value"),
                    ],
                },
                "key_value",
                False,
            )
        ],
    }
    assert type_from_json(obj) == pa.map_(pa.utf8(), pa.int8())
    assert type_to_json(type_from_json(obj))["fields"][0]["name"] == "entries"


@pytest.mark.parametrize(
    ("obj", "fragment"),
    [
        ([], "must be an object"),
        ({"nullable": True, "type": {"type": "int8"}}, "no string 'name'"),
        ({"name": "a", "type": {"type": "int8"}}, "field 'a': 'nullable'"),
        ({"name": "a", "nullable": "yes", "type": {"type": "int8"}}, "field 'a': 'nullable'"),
        ({"name": "a", "nullable": True}, "field 'a' has no 'type'"),
        (
            {"name": "a", "nullable": True, "type": {"type": "int8"}, "metadata": {"k": 1}},
            "field 'a': 'metadata'",
        ),
        (
            {"name": "a", "nullable": True, "type": {"type": "int8"}, "metadata": ["k"]},
            "field 'a': 'metadata'",
        ),
    ],
)
def test_malformed_field_json_names_the_field(obj: Any, fragment: str) -> None:
    with pytest.raises(SchemaError) as info:
        field_from_json(obj)
    assert fragment in str(info.value)


def test_field_type_error_names_field_and_type() -> None:
    obj = {"name": "price", "nullable": True, "type": {"type": "money"}}
    with pytest.raises(
        UnknownTypeError, match=r"field 'price': unknown JsonArrowDataType name 'money'"
    ):
        field_from_json(obj)


def test_non_utf8_metadata_is_rejected() -> None:
    field = pa.field("a", pa.int8(), metadata={b"k": b"\xff\xfe"})
    with pytest.raises(SchemaError, match="field 'a': metadata key b'k' is not UTF-8"):
        field_to_json(field)
