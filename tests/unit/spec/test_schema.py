"""The namespace schema: field ids, deprecation, lookups, JSON (spec/schema.py)."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pyarrow as pa
import pytest
from lance.schema import LanceSchema

from lance_partitioned.errors import SchemaError, UnknownTypeError
from lance_partitioned.spec.schema import DEPRECATED_KEY, FIELD_ID_KEY, NamespaceSchema
from tests.appendix import APPENDIX_A, APPENDIX_E_SCHEMA

# The "schema" objects of spec 000, Appendices A and E (verbatim in tests/appendix.py).
APPENDIX_A_SCHEMA = APPENDIX_A["schema"]


def _f(name: str, dtype: pa.DataType, field_id: int | str | None, **extra: str) -> pa.Field:
    metadata = dict(extra)
    if field_id is not None:
        metadata[FIELD_ID_KEY] = str(field_id)
    return pa.field(name, dtype, metadata=metadata or None)


def _dropped(name: str, dtype: pa.DataType, field_id: int) -> pa.Field:
    return pa.field(name, dtype, metadata={FIELD_ID_KEY: str(field_id), DEPRECATED_KEY: "true"})


def _ids(schema: NamespaceSchema) -> list[tuple[str, int]]:
    return [(schema.name_of(i), i) for i in range(schema.max_field_id + 1) if _has_id(schema, i)]


def _has_id(schema: NamespaceSchema, field_id: int) -> bool:
    try:
        schema.field_by_id(field_id)
    except SchemaError:
        return False
    return True


# --------------------------------------------------------------------------- appendices


@pytest.mark.parametrize("obj", [APPENDIX_A_SCHEMA, APPENDIX_E_SCHEMA], ids=["A", "E"])
def test_appendix_schema_round_trips_key_for_key(obj: dict[str, Any]) -> None:
    schema = NamespaceSchema.from_json(obj)
    assert schema.to_json() == obj
    assert json.loads(json.dumps(schema.to_json())) == obj
    assert NamespaceSchema.from_json(schema.to_json()) == schema


def test_appendix_a_lookups() -> None:
    schema = NamespaceSchema.from_json(APPENDIX_A_SCHEMA)
    assert schema.names == ["id", "event_date", "country"]
    assert [schema.field_id(n) for n in schema.names] == [0, 1, 2]
    assert schema.max_field_id == 2
    assert schema.field_by_id(1).type == pa.date32()
    assert schema.name_of(2) == "country"
    assert schema.top_level_field("id").nullable is False
    assert schema.top_level_field("country").nullable is True
    assert not any(schema.is_deprecated(i) for i in range(3))
    assert schema.read_schema().equals(schema.arrow_schema, check_metadata=True)


def test_appendix_e_deprecated_column() -> None:
    schema = NamespaceSchema.from_json(APPENDIX_E_SCHEMA)
    assert schema.names == ["id", "event_date"]
    assert schema.max_field_id == 2
    assert schema.is_deprecated(2)
    assert not schema.is_deprecated(1)
    assert schema.name_of(2) == "legacy_field"
    assert schema.field_by_id(2).metadata[b"lance:deprecated"] == b"true"
    assert schema.arrow_schema.names == ["id", "event_date", "legacy_field"]
    read = schema.read_schema()
    assert read.names == ["id", "event_date"]
    assert read.field("id").metadata == {b"lance:field_id": b"0"}
    with pytest.raises(SchemaError, match=r"'legacy_field'.*dropped: field id 2"):
        schema.field_id("legacy_field")
    with pytest.raises(SchemaError, match="'legacy_field'"):
        schema.top_level_field("legacy_field")


# --------------------------------------------------------------------------- from_arrow


def test_from_arrow_assigns_pre_order_ids() -> None:
    schema = NamespaceSchema.from_arrow(
        pa.schema(
            [
                ("id", pa.int64()),
                ("s", pa.struct([("a", pa.int32()), ("b", pa.utf8())])),
                ("x", pa.float64()),
            ]
        )
    )
    assert _ids(schema) == [("id", 0), ("s", 1), ("s.a", 2), ("s.b", 3), ("x", 4)]
    assert schema.field_by_id(2).metadata == {b"lance:field_id": b"2"}
    assert schema.max_field_id == 4


NESTED = pa.schema(
    [
        ("id", pa.int64()),
        ("s", pa.struct([("a", pa.int32()), ("b", pa.list_(pa.struct([("c", pa.int8())])))])),
        ("m", pa.map_(pa.utf8(), pa.struct([("v", pa.int32())]))),
        ("vec", pa.list_(pa.float32(), 4)),
        ("fs", pa.list_(pa.struct([("p", pa.int8())]), 2)),
        ("ll", pa.large_list(pa.utf8())),
        ("t", pa.timestamp("us", "UTC")),
    ]
)
NESTED_IDS = [
    ("id", 0),
    ("s", 1),
    ("s.a", 2),
    ("s.b", 3),
    ("s.b.item", 4),
    ("s.b.item.c", 5),
    ("m", 6),
    ("m.entries", 7),
    ("m.entries.key", 8),
    ("m.entries.value", 9),
    ("m.entries.value.v", 10),
    ("vec", 11),
    ("fs", 12),
    ("fs.item", 13),
    ("fs.item.p", 14),
    ("ll", 15),
    ("ll.item", 16),
    ("t", 17),
]


def test_from_arrow_nested_ids_list_map_and_vectors() -> None:
    schema = NamespaceSchema.from_arrow(NESTED)
    assert _ids(schema) == NESTED_IDS
    assert schema.max_field_id == 17
    # A fixed-size list of a non-struct is one leaf: its element carries no id.
    assert schema.field_by_id(11).type.value_field.metadata is None


def test_from_arrow_ids_match_lance() -> None:
    def walk(fields: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, int]]:
        out = []
        for f in fields:
            out.append((".".join((*prefix, f.name())), f.id()))
            out.extend(walk(f.children(), (*prefix, f.name())))
        return out

    assert walk(LanceSchema.from_pyarrow(NESTED).fields()) == NESTED_IDS


def test_from_arrow_keeps_metadata_nullability_and_schema_metadata() -> None:
    source = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False, metadata={"comment": "key"}),
            pa.field(
                "s", pa.struct([pa.field("a", pa.int8(), nullable=False, metadata={"u": "v"})])
            ),
        ],
        metadata={"owner": "team-a"},
    )
    schema = NamespaceSchema.from_arrow(source)
    arrow = schema.arrow_schema
    assert arrow.metadata == {b"owner": b"team-a"}
    assert arrow.field("id").nullable is False
    assert arrow.field("id").metadata == {b"comment": b"key", b"lance:field_id": b"0"}
    child = arrow.field("s").type.field(0)
    assert child.nullable is False
    assert child.metadata == {b"u": b"v", b"lance:field_id": b"2"}
    assert schema.to_json()["metadata"] == {"owner": "team-a"}


def test_from_arrow_with_every_id_keeps_them() -> None:
    source = pa.schema([_f("a", pa.int8(), 5), _f("b", pa.struct([_f("c", pa.int8(), 9)]), 7)])
    schema = NamespaceSchema.from_arrow(source)
    assert schema == NamespaceSchema(source)
    assert _ids(schema) == [("a", 5), ("b", 7), ("b.c", 9)]
    assert schema.field_id("b") == 7
    assert schema.max_field_id == 9


def test_from_arrow_mixed_ids_rejected() -> None:
    source = pa.schema([_f("a", pa.int8(), 0), _f("b", pa.struct([_f("c", pa.int8(), None)]), 1)])
    with pytest.raises(SchemaError, match=r"field 'b.c' has no lance:field_id but field 'a'"):
        NamespaceSchema.from_arrow(source)


def test_from_arrow_empty_schema() -> None:
    schema = NamespaceSchema.from_arrow(pa.schema([]))
    assert schema.max_field_id == -1
    assert schema.names == []
    assert schema.to_json() == {"fields": []}


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("bad", ["abc", "1.0", "-1", "01", " 1", "", "\uff11"])
def test_non_integer_or_negative_id_rejected(bad: str) -> None:
    with pytest.raises(SchemaError, match=rf"field 'a' needs a non-negative integer.*{bad!r}"):
        NamespaceSchema(pa.schema([_f("a", pa.int8(), bad)]))


def test_missing_id_rejected_naming_the_nested_field() -> None:
    source = pa.schema([_f("s", pa.struct([_f("a", pa.int8(), 1), _f("b", pa.int8(), None)]), 0)])
    with pytest.raises(SchemaError, match=r"field 's.b' needs .*got none"):
        NamespaceSchema(source)
    items = pa.schema([_f("tags", pa.list_(pa.utf8()), 0)])
    with pytest.raises(SchemaError, match=r"field 'tags.item'"):
        NamespaceSchema(items)


def test_duplicate_ids_rejected_naming_both_fields() -> None:
    source = pa.schema([_f("a", pa.int8(), 0), _f("s", pa.struct([_f("b", pa.int8(), 0)]), 1)])
    with pytest.raises(SchemaError, match=r"field 's.b' reuses lance:field_id 0 of field 'a'"):
        NamespaceSchema(source)


def test_implicit_map_entries_id_is_taken() -> None:
    # entries of the map (id 0) is id 1: a key with id 1 collides with it.
    key = pa.field("key", pa.utf8(), nullable=False, metadata={FIELD_ID_KEY: "1"})
    value = _f("value", pa.int8(), 2)
    source = pa.schema([_f("m", pa.map_(key, value), 0)])
    with pytest.raises(SchemaError, match=r"'m.entries.key' reuses lance:field_id 1 .*'m.entries'"):
        NamespaceSchema(source)


def test_vector_element_cannot_carry_an_id() -> None:
    element = pa.field("item", pa.float32(), metadata={FIELD_ID_KEY: "1"})
    source = pa.schema([_f("vec", pa.list_(element, 4), 0)])
    with pytest.raises(SchemaError, match=r"field 'vec' is a fixed-size list of float"):
        NamespaceSchema(source)


def test_duplicate_live_names_rejected_but_dropped_name_may_return() -> None:
    with pytest.raises(SchemaError, match="two live fields are named 'a'"):
        NamespaceSchema(pa.schema([_f("a", pa.int8(), 0), _f("a", pa.utf8(), 1)]))
    nested = pa.struct([_f("x", pa.int8(), 1), _f("x", pa.int8(), 2)])
    with pytest.raises(SchemaError, match=r"two live fields are named 's\.x'"):
        NamespaceSchema(pa.schema([_f("s", nested, 0)]))
    # Drop "s" (a struct) then add a new "s": the new one and its children are live.
    old = _dropped("s", pa.struct([_f("a", pa.int8(), 1)]), 0)
    new = _f("s", pa.struct([_f("a", pa.utf8(), 3)]), 2)
    schema = NamespaceSchema(pa.schema([old, new]))
    assert schema.names == ["s"]
    assert schema.field_id("s") == 2
    assert schema.top_level_field("s").type == pa.struct([_f("a", pa.utf8(), 3)])
    assert schema.is_deprecated(1)
    assert not schema.is_deprecated(3)
    assert schema.read_schema().names == ["s"]


def test_deprecated_list_item_rejected() -> None:
    item = pa.field("item", pa.int8(), metadata={FIELD_ID_KEY: "1", DEPRECATED_KEY: "true"})
    with pytest.raises(SchemaError, match=r"field 'l.item' is marked lance:deprecated"):
        NamespaceSchema(pa.schema([_f("l", pa.list_(item), 0)]))


def test_unencodable_type_rejected() -> None:
    source = pa.schema([_f("d", pa.dictionary(pa.int8(), pa.utf8()), 0)])
    with pytest.raises(UnknownTypeError, match=r"field 'd'.*dictionary"):
        NamespaceSchema(source)


# --------------------------------------------------------------------------- deprecation


def test_nested_deprecation_and_read_schema() -> None:
    inner = pa.struct([_f("keep", pa.int8(), 2), _dropped("gone", pa.int8(), 3)])
    dropped_struct = _dropped("old", pa.struct([_f("c", pa.int8(), 5)]), 4)
    source = pa.schema(
        [_f("s", inner, 1), dropped_struct, _f("id", pa.int64(), 0)], metadata={"k": "v"}
    )
    schema = NamespaceSchema(source)
    assert schema.max_field_id == 5
    assert schema.is_deprecated(3)
    assert schema.is_deprecated(4)
    assert schema.is_deprecated(5)  # through its ancestor
    assert not schema.is_deprecated(2)
    assert schema.name_of(3) == "s.gone"
    assert schema.names == ["s", "id"]
    read = schema.read_schema()
    assert read.names == ["s", "id"]
    assert read.field("s").type == pa.struct([_f("keep", pa.int8(), 2)])
    assert read.field("s").type.field(0).metadata == {b"lance:field_id": b"2"}
    assert read.field("s").metadata == {b"lance:field_id": b"1"}
    assert read.metadata == {b"k": b"v"}
    assert schema.arrow_schema.equals(source, check_metadata=True)


def test_deprecated_value_is_case_insensitive_true_only() -> None:
    source = pa.schema(
        [
            pa.field("a", pa.int8(), metadata={FIELD_ID_KEY: "0", DEPRECATED_KEY: "True"}),
            pa.field("b", pa.int8(), metadata={FIELD_ID_KEY: "1", DEPRECATED_KEY: "false"}),
        ]
    )
    schema = NamespaceSchema(source)
    assert schema.is_deprecated(0)
    assert not schema.is_deprecated(1)
    assert schema.names == ["b"]


# --------------------------------------------------------------------------- lookups


def test_lookups_by_id_and_dotted_name() -> None:
    schema = NamespaceSchema.from_arrow(NESTED)
    assert schema.name_of(5) == "s.b.item.c"
    assert schema.field_by_id(5).name == "c"
    assert schema.field_by_id(7).name == "entries"
    assert schema.field_by_id(8).type == pa.utf8()
    assert schema.field_id("ll") == 15
    assert schema.top_level_field("m").type.key_type == pa.utf8()
    assert schema.names == [f.name for f in NESTED]


@pytest.mark.parametrize("method", ["field_by_id", "name_of", "is_deprecated"])
def test_unknown_id_is_named(method: str) -> None:
    schema = NamespaceSchema.from_json(APPENDIX_A_SCHEMA)
    with pytest.raises(SchemaError, match="field id 42 is not in the namespace schema"):
        getattr(schema, method)(42)


@pytest.mark.parametrize("method", ["field_id", "top_level_field"])
def test_unknown_column_is_named(method: str) -> None:
    schema = NamespaceSchema.from_json(APPENDIX_A_SCHEMA)
    with pytest.raises(SchemaError, match=r"column 'nope' is not in the namespace schema$"):
        getattr(schema, method)("nope")


def test_nested_name_is_not_a_top_level_column() -> None:
    schema = NamespaceSchema.from_arrow(NESTED)
    with pytest.raises(SchemaError, match=r"column 's\.a'"):
        schema.field_id("s.a")


# --------------------------------------------------------------------------- JSON form


def test_map_entries_id_written_in_json_and_checked_on_read() -> None:
    schema = NamespaceSchema.from_arrow(pa.schema([("m", pa.map_(pa.utf8(), pa.int8()))]))
    obj = schema.to_json()
    entries = obj["fields"][0]["type"]["fields"][0]
    assert entries["name"] == "entries"
    assert entries["metadata"] == {FIELD_ID_KEY: "1"}
    assert NamespaceSchema.from_json(obj) == schema
    assert NamespaceSchema.from_json(obj).to_json() == obj
    # Without the entries id (pyarrow-style JSON) it is implied.
    del entries["metadata"]
    assert NamespaceSchema.from_json(obj) == schema
    entries["metadata"] = {FIELD_ID_KEY: "5"}
    with pytest.raises(SchemaError, match=r"map field 'm': .*lance:field_id = 1"):
        NamespaceSchema.from_json(obj)
    entries["metadata"] = {FIELD_ID_KEY: "1", "note": "x"}
    with pytest.raises(SchemaError, match="map field 'm'"):
        NamespaceSchema.from_json(obj)


def test_schema_metadata_verbatim() -> None:
    obj = {**APPENDIX_A_SCHEMA, "metadata": {"owner": "Zoë", "lance:x": '{"a": 1}'}}
    schema = NamespaceSchema.from_json(obj)
    assert schema.to_json() == obj
    assert schema.arrow_schema.metadata == {
        b"owner": "Zoë".encode(),
        b"lance:x": b'{"a": 1}',
    }


@pytest.mark.parametrize(
    ("obj", "fragment"),
    [
        ({}, "needs a 'fields' list"),
        ({"fields": {}}, "needs a 'fields' list"),
        ({"fields": [], "metadata": {"k": 1}}, "'metadata' must map strings"),
        ({"fields": [{"name": "a", "type": {"type": "int8"}}]}, "field 'a': 'nullable'"),
    ],
)
def test_malformed_json_rejected(obj: Any, fragment: str) -> None:
    with pytest.raises(SchemaError) as info:
        NamespaceSchema.from_json(obj)
    assert fragment in str(info.value)


def test_unknown_type_in_json_names_field_and_type() -> None:
    obj = copy.deepcopy(APPENDIX_A_SCHEMA)
    obj["fields"][2]["type"] = {"type": "varchar"}
    with pytest.raises(UnknownTypeError, match=r"field 'country': unknown .*'varchar'"):
        NamespaceSchema.from_json(obj)


# --------------------------------------------------------------------------- value object


def test_equality_and_hash_follow_the_json_form() -> None:
    a = NamespaceSchema.from_json(APPENDIX_A_SCHEMA)
    b = NamespaceSchema.from_json(copy.deepcopy(APPENDIX_A_SCHEMA))
    assert a == b
    assert hash(a) == hash(b)
    assert len({a, b}) == 1
    assert a != NamespaceSchema.from_json(APPENDIX_E_SCHEMA)
    changed = copy.deepcopy(APPENDIX_A_SCHEMA)
    changed["fields"][0]["nullable"] = True
    assert a != NamespaceSchema.from_json(changed)
    assert a != APPENDIX_A_SCHEMA  # a dict is not a NamespaceSchema


def test_metadata_order_does_not_matter() -> None:
    one = pa.schema([pa.field("a", pa.int8(), metadata={FIELD_ID_KEY: "0", "x": "1"})])
    two = pa.schema([pa.field("a", pa.int8(), metadata={"x": "1", FIELD_ID_KEY: "0"})])
    assert NamespaceSchema(one) == NamespaceSchema(two)
    assert hash(NamespaceSchema(one)) == hash(NamespaceSchema(two))


def test_immutable_and_to_json_returns_a_copy() -> None:
    schema = NamespaceSchema.from_json(APPENDIX_A_SCHEMA)
    with pytest.raises(AttributeError, match="immutable"):
        schema._schema = pa.schema([])  # type: ignore[misc]
    obj = schema.to_json()
    obj["fields"].clear()
    assert schema.to_json() == APPENDIX_A_SCHEMA


def test_pickle_and_copy() -> None:
    schema = NamespaceSchema.from_arrow(NESTED)
    for clone in (pickle.loads(pickle.dumps(schema)), copy.copy(schema), copy.deepcopy(schema)):
        assert clone == schema
        assert _ids(clone) == NESTED_IDS


def test_repr_shows_the_json() -> None:
    schema = NamespaceSchema.from_json(APPENDIX_A_SCHEMA)
    assert repr(schema).startswith("NamespaceSchema({")
    assert '"name": "event_date"' in repr(schema)


def test_map_inside_a_vector_carries_no_ids() -> None:
    # A fixed-size list of maps is a leaf for Lance: nothing below it gets an id.
    schema = NamespaceSchema.from_arrow(
        pa.schema([("v", pa.list_(pa.map_(pa.utf8(), pa.int8()), 2))])
    )
    assert schema.max_field_id == 0
    entries = schema.to_json()["fields"][0]["type"]["fields"][0]["type"]["fields"][0]
    assert entries["name"] == "entries"
    assert "metadata" not in entries
    assert NamespaceSchema.from_json(schema.to_json()) == schema
