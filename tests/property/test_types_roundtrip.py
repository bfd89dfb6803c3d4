"""Properties: every Arrow type we encode survives JSON, and so does a namespace schema."""

from __future__ import annotations

import json
import pickle
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from lance.schema import LanceSchema

from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.types import (
    field_from_json,
    field_to_json,
    type_from_json,
    type_to_json,
)
from tests.property.strategies import examples

# A failing example of these nested strategies has a huge repr; keep the failure readable.
pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")

SETTINGS = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

PRIMITIVES = [
    pa.null(),
    pa.bool_(),
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.date32(),
    pa.date64(),
]
TIMEZONES = [None, "UTC", "+01:00", "-05:30", "America/New_York", "Asia/Kolkata"]

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
metadata = st.none() | st.dictionaries(text, text, min_size=1, max_size=3)


def _decimal(factory: object, max_precision: int) -> st.SearchStrategy[pa.DataType]:
    return st.integers(1, max_precision).flatmap(
        lambda p: st.integers(-20, p + 5).map(lambda s: factory(p, s))  # type: ignore[operator]
    )


leaves: st.SearchStrategy[pa.DataType] = st.one_of(
    st.sampled_from(PRIMITIVES),
    _decimal(pa.decimal32, 9),
    _decimal(pa.decimal64, 18),
    _decimal(pa.decimal128, 38),
    _decimal(pa.decimal256, 76),
    st.builds(pa.timestamp, st.sampled_from(["s", "ms", "us", "ns"]), st.sampled_from(TIMEZONES)),
    st.builds(pa.time32, st.sampled_from(["s", "ms"])),
    st.builds(pa.time64, st.sampled_from(["us", "ns"])),
    st.builds(pa.duration, st.sampled_from(["s", "ms", "us", "ns"])),
    st.builds(pa.binary, st.integers(0, 32)),
)
key_types = leaves.filter(lambda t: t != pa.null())


def _field(name: str, dtype: pa.DataType, nullable: bool, meta: dict[str, str] | None) -> pa.Field:
    # pyarrow refuses a non-nullable field of the null type
    return pa.field(name, dtype, nullable=nullable or dtype == pa.null(), metadata=meta)


def fields_of(
    types: st.SearchStrategy[pa.DataType],
    names: st.SearchStrategy[str] = text,
    meta: st.SearchStrategy[dict[str, str] | None] = metadata,
) -> st.SearchStrategy[pa.Field]:
    return st.builds(_field, names, types, st.booleans(), meta)


def nested(
    children: st.SearchStrategy[pa.DataType], names: st.SearchStrategy[str], unique: bool
) -> st.SearchStrategy[pa.DataType]:
    child_fields = fields_of(children, names)
    keys = st.builds(pa.field, names, key_types, nullable=st.just(False), metadata=metadata)
    struct_fields = st.lists(
        child_fields, max_size=4, unique_by=(lambda f: f.name) if unique else None
    )
    return st.one_of(
        st.builds(pa.list_, child_fields),
        st.builds(pa.large_list, child_fields),
        st.builds(pa.list_, child_fields, st.integers(0, 5)),
        st.builds(pa.struct, struct_fields),
        st.builds(pa.map_, keys, child_fields, keys_sorted=st.booleans()),
    )


def types_of_depth(
    depth: int, names: st.SearchStrategy[str] = text, unique: bool = False
) -> st.SearchStrategy[pa.DataType]:
    """Types nested up to ``depth`` levels; ``unique``: struct children have distinct names."""
    if depth == 0:
        return leaves
    return st.one_of(leaves, nested(types_of_depth(depth - 1, names, unique), names, unique))


arrow_types = types_of_depth(3)
arrow_fields = fields_of(arrow_types)


@SETTINGS
@given(arrow_types)
def test_type_round_trips_through_json(dtype: pa.DataType) -> None:
    encoded = type_to_json(dtype)
    assert json.loads(json.dumps(encoded)) == encoded
    assert type_from_json(encoded).equals(dtype, check_metadata=True)
    assert type_from_json(json.loads(json.dumps(encoded))).equals(dtype, check_metadata=True)


@SETTINGS
@given(arrow_fields)
def test_field_round_trips_with_metadata_and_nullability(field: pa.Field) -> None:
    encoded = field_to_json(field)
    assert json.loads(json.dumps(encoded)) == encoded
    decoded = field_from_json(json.loads(json.dumps(encoded)))
    assert decoded.equals(field, check_metadata=True)
    assert decoded.nullable == field.nullable
    assert (decoded.metadata or {}) == (field.metadata or {})
    assert field_to_json(decoded) == encoded


# Namespace schemas: fields without ids; names unique among siblings, without '.' or NUL (which
# Lance truncates at); no lance: metadata keys.
plain_names = st.text(
    st.characters(exclude_categories=("Cs",), exclude_characters=".\x00"), min_size=1
)
plain_metadata = st.none() | st.dictionaries(
    text.filter(lambda k: not k.startswith("lance:")), text, min_size=1, max_size=2
)
schemas = st.lists(
    fields_of(types_of_depth(3, plain_names, unique=True), plain_names, plain_metadata),
    max_size=5,
    unique_by=lambda f: f.name,
).map(pa.schema)


def _paths(field: pa.Field, prefix: tuple[str, ...] = ()) -> list[str]:
    """Dotted paths of ``field`` and every field below it that gets an id, in pre-order.

    Lance's rules: list and map children count (a map's entries too); a fixed-size list is a
    leaf unless its elements are structs.
    """
    path = (*prefix, field.name)
    dtype = field.type
    children: list[pa.Field] = []
    struct_vector = pa.types.is_fixed_size_list(dtype) and pa.types.is_struct(dtype.value_type)
    if pa.types.is_struct(dtype):
        children = [dtype.field(i) for i in range(dtype.num_fields)]
    elif pa.types.is_map(dtype):
        children = [dtype.field(0)]
    elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or struct_vector:
        children = [dtype.value_field]
    return [".".join(path)] + [p for child in children for p in _paths(child, path)]


@SETTINGS
@given(schemas)
def test_namespace_schema_round_trips(source: pa.Schema) -> None:
    schema = NamespaceSchema.from_arrow(source)
    paths = [p for f in source for p in _paths(f)]
    assert schema.max_field_id == len(paths) - 1
    assert [schema.name_of(i) for i in range(len(paths))] == paths
    assert schema.names == source.names
    obj = schema.to_json()
    assert json.loads(json.dumps(obj)) == obj
    again = NamespaceSchema.from_json(json.loads(json.dumps(obj)))
    assert again == schema
    assert again.to_json() == obj
    assert again.arrow_schema.equals(schema.arrow_schema, check_metadata=True)
    assert NamespaceSchema(schema.arrow_schema) == schema
    assert pickle.loads(pickle.dumps(schema)) == schema


def _lance_ids(fields: list[Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for f in fields:
        path = (*prefix, f.name())
        out.append((".".join(path), f.id()))
        out.extend(_lance_ids(f.children(), path))
    return out


@settings(max_examples=examples(100), deadline=None, suppress_health_check=list(HealthCheck))
@given(schemas)
def test_ids_are_the_ones_lance_assigns(source: pa.Schema) -> None:
    try:
        lance_schema = LanceSchema.from_pyarrow(source)
    except Exception:  # Lance rejects some nestings (e.g. fixed-size lists of lists)
        lance_schema = None
    assume(lance_schema is not None)
    ours = NamespaceSchema.from_arrow(source)
    assert [(ours.name_of(i), i) for i in range(ours.max_field_id + 1)] == _lance_ids(
        lance_schema.fields()
    )
