"""The ``__manifest`` table metadata: spec 000 Appendix A round trip, errors, evolution."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from lance_partitioned import errors
from lance_partitioned.spec.metadata import (
    SCHEMA_KEY,
    SPEC_KEY_PREFIX,
    NamespaceMetadata,
    keep_unknown_keys,
)
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from tests.appendix import APPENDIX_A


def as_table_metadata(props: dict[str, Any]) -> dict[str, str]:
    """The metadata map as stored: every value a JSON string."""
    return {key: json.dumps(value, indent=2) for key, value in props.items()}


@pytest.fixture
def appendix_a() -> NamespaceMetadata:
    return NamespaceMetadata.from_table_metadata(as_table_metadata(APPENDIX_A))


def test_appendix_a_parses(appendix_a: NamespaceMetadata) -> None:
    assert [spec.version for spec in appendix_a.specs] == [1, 2]
    assert appendix_a.current_spec.names == ["event_year", "country"]
    assert appendix_a.spec(1).names == ["event_date"]
    assert appendix_a.schema.names == ["id", "event_date", "country"]


def test_appendix_a_round_trip(appendix_a: NamespaceMetadata) -> None:
    stored = appendix_a.to_table_metadata()
    assert list(stored) == [SCHEMA_KEY, "partition_spec_v1", "partition_spec_v2"]
    assert {key: json.loads(value) for key, value in stored.items()} == APPENDIX_A
    assert NamespaceMetadata.from_table_metadata(stored) == appendix_a


def test_stored_json_is_compact_and_stable(appendix_a: NamespaceMetadata) -> None:
    stored = appendix_a.to_table_metadata()
    for key, value in stored.items():
        assert value == json.dumps(json.loads(value), separators=(",", ":")), key
    assert stored["partition_spec_v1"] == (
        '[{"field_id":1,"name":"event_date","source_id":1,"expression":"col",'
        '"result_type":{"type":"date32"}}]'
    )
    assert NamespaceMetadata.from_table_metadata(stored).to_table_metadata() == stored


def test_partition_columns_of_appendix_a(appendix_a: NamespaceMetadata) -> None:
    assert appendix_a.partition_columns() == [
        ("event_date", pa.date32()),
        ("event_year", pa.int32()),
        ("country", pa.utf8()),
    ]


def test_partition_columns_are_distinct_names() -> None:
    schema = NamespaceSchema.from_arrow(pa.schema([("c", pa.utf8()), ("d", pa.date32())]))
    v1 = PartitionSpec(1, (PartitionField(1, "c", 0, "col", pa.utf8()),))
    v2 = PartitionSpec(
        2,
        (
            PartitionField(2, "d", 1, "col", pa.date32()),
            PartitionField(1, "c", 0, "col", pa.utf8()),
        ),
    )
    meta = NamespaceMetadata(schema, (v1, v2))
    assert meta.partition_columns() == [("c", pa.utf8()), ("d", pa.date32())]


def test_foreign_keys_are_ignored(appendix_a: NamespaceMetadata) -> None:
    stored = {
        "lance.namespace.manifest.writer_feature_flags": str(1 << 40),
        "owner": "not json at all {",
        "partition_spec_vx": "nope",
        "partition_spec_": "[]",
        **as_table_metadata(APPENDIX_A),
    }
    assert NamespaceMetadata.from_table_metadata(stored) == appendix_a
    assert set(appendix_a.to_table_metadata()) == {
        "schema",
        "partition_spec_v1",
        "partition_spec_v2",
    }


@pytest.mark.parametrize(
    ("table_metadata", "expected"),
    [
        ({"partition_spec_v1": "[]"}, True),
        ({"x": "1", "partition_spec_v12": "[]"}, True),
        ({"schema": "{}"}, False),
        ({"partition_spec_vx": "[]", "partition_spec_v": "[]", "partition_spec_v1a": "[]"}, False),
        ({}, False),
    ],
)
def test_is_partitioned(table_metadata: dict[str, str], expected: bool) -> None:
    assert NamespaceMetadata.is_partitioned(table_metadata) is expected


def test_not_partitioned() -> None:
    stored = {"schema": json.dumps(APPENDIX_A["schema"]), "owner": "me"}
    with pytest.raises(errors.NotAPartitionedNamespaceError, match=SPEC_KEY_PREFIX):
        NamespaceMetadata.from_table_metadata(stored)


def test_missing_schema() -> None:
    stored = as_table_metadata(APPENDIX_A)
    del stored["schema"]
    with pytest.raises(errors.SchemaError, match="'schema'"):
        NamespaceMetadata.from_table_metadata(stored)


@pytest.mark.parametrize("bad", ["{not json", '{"fields": 3}', '{"fields": [{"name": "x"}]}'])
def test_bad_schema(bad: str) -> None:
    stored = {**as_table_metadata(APPENDIX_A), "schema": bad}
    with pytest.raises(errors.SchemaError):
        NamespaceMetadata.from_table_metadata(stored)


def test_bad_schema_json_names_the_key() -> None:
    stored = {**as_table_metadata(APPENDIX_A), "schema": "{not json"}
    with pytest.raises(errors.SchemaError, match="'schema'"):
        NamespaceMetadata.from_table_metadata(stored)


def test_unknown_schema_type_is_a_schema_error() -> None:
    schema = json.loads(json.dumps(APPENDIX_A["schema"]))
    schema["fields"][2]["type"] = {"type": "utf99"}
    stored = {**as_table_metadata(APPENDIX_A), "schema": json.dumps(schema)}
    with pytest.raises(errors.SchemaError, match="utf99"):
        NamespaceMetadata.from_table_metadata(stored)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("[{", "not valid JSON"),
        ('{"field_id": 1}', "array"),
        ('[{"field_id": 1, "name": "x"}]', "'source_id'"),
    ],
)
def test_bad_spec_names_the_key(value: str, fragment: str) -> None:
    stored = {**as_table_metadata(APPENDIX_A), "partition_spec_v2": value}
    with pytest.raises(errors.PartitionSpecError, match="partition_spec_v2") as info:
        NamespaceMetadata.from_table_metadata(stored)
    assert fragment in str(info.value)


@pytest.mark.parametrize("key", ["partition_spec_v01", "partition_spec_v0"])
def test_non_canonical_spec_key(key: str) -> None:
    stored = {**as_table_metadata(APPENDIX_A), key: "[]"}
    with pytest.raises(errors.PartitionSpecError, match=key):
        NamespaceMetadata.from_table_metadata(stored)


def test_specs_are_validated_on_load() -> None:
    props = json.loads(json.dumps(APPENDIX_A))
    props["partition_spec_v2"][1]["field_id"] = 1  # country would take event_date's id
    with pytest.raises(errors.PartitionSpecError, match="'country'"):
        NamespaceMetadata.from_table_metadata(as_table_metadata(props))


def test_spec_lookup(appendix_a: NamespaceMetadata) -> None:
    assert appendix_a.spec(2) is appendix_a.current_spec
    with pytest.raises(errors.PartitionSpecError, match="v3"):
        appendix_a.spec(3)


def test_needs_a_spec(appendix_a: NamespaceMetadata) -> None:
    with pytest.raises(errors.PartitionSpecError, match="at least one"):
        NamespaceMetadata(appendix_a.schema, ())


def test_specs_are_sorted(appendix_a: NamespaceMetadata) -> None:
    reordered = NamespaceMetadata(appendix_a.schema, appendix_a.specs[::-1])
    assert reordered == appendix_a
    assert reordered.current_spec.version == 2


def test_with_spec(appendix_a: NamespaceMetadata) -> None:
    v3 = PartitionSpec(3, (PartitionField(4, "id_bucket", 0, "abs(hash(col)) % 4", pa.int64()),))
    evolved = appendix_a.with_spec(v3)
    assert evolved.current_spec == v3
    assert appendix_a.current_spec.version == 2  # unchanged
    assert evolved.partition_columns()[-1] == ("id_bucket", pa.int64())
    assert json.loads(evolved.to_table_metadata()["partition_spec_v3"]) == v3.to_json()


def test_with_spec_is_validated(appendix_a: NamespaceMetadata) -> None:
    with pytest.raises(errors.PartitionSpecError, match="v2"):
        appendix_a.with_spec(PartitionSpec(2, ()))
    clash = PartitionSpec(3, (PartitionField(3, "id_bucket", 0, "abs(hash(col)) % 4", pa.int64()),))
    with pytest.raises(errors.PartitionSpecError, match="'id_bucket'"):
        appendix_a.with_spec(clash)


def test_with_schema(appendix_a: NamespaceMetadata) -> None:
    widened = NamespaceSchema.from_arrow(
        pa.schema(
            [
                pa.field(f.name, f.type, f.nullable, metadata=f.metadata)
                for f in appendix_a.schema.arrow_schema
            ]
            + [pa.field("amount", pa.float64(), metadata={"lance:field_id": "3"})]
        )
    )
    assert appendix_a.with_schema(widened).schema.names == ["id", "event_date", "country", "amount"]


def test_with_schema_rejects_dropping_a_current_source(appendix_a: NamespaceMetadata) -> None:
    fields = list(appendix_a.schema.arrow_schema)
    fields[2] = fields[2].with_metadata({"lance:field_id": "2", "lance:deprecated": "true"})
    dropped = NamespaceSchema(pa.schema(fields))
    with pytest.raises(errors.PartitionSpecError, match=r"'country'.*deprecated"):
        appendix_a.with_schema(dropped)


# ------------------------------------------------------------- unknown keys (issue 16 item 8)


def test_unknown_keys_are_kept_at_every_level_of_the_schema() -> None:
    old = {
        "x-top": 1,
        "fields": [
            {
                "name": "s",
                "nullable": True,
                "x-field": "outer",
                "type": {
                    "type": "struct",
                    "x-type": "t",
                    "fields": [
                        {
                            "name": "a",
                            "nullable": True,
                            "x-child": [1, 2],
                            "type": {"type": "int32"},
                            "metadata": {"lance:field_id": "1"},
                        }
                    ],
                },
                "metadata": {"lance:field_id": "0"},
            }
        ],
    }
    # what we write after renaming s.a to b and promoting it to int64
    new = json.loads(json.dumps(old))
    del new["x-top"], new["fields"][0]["x-field"], new["fields"][0]["type"]["x-type"]
    child = new["fields"][0]["type"]["fields"][0]
    del child["x-child"]
    child["name"], child["type"] = "b", {"type": "int64"}
    kept = json.loads(keep_unknown_keys(SCHEMA_KEY, json.dumps(old), json.dumps(new)))
    assert kept["x-top"] == 1
    assert kept["fields"][0]["x-field"] == "outer"
    assert kept["fields"][0]["type"]["x-type"] == "t"
    merged_child = kept["fields"][0]["type"]["fields"][0]
    assert merged_child["x-child"] == [1, 2]
    assert (merged_child["name"], merged_child["type"]) == ("b", {"type": "int64"})


def test_unknown_keys_of_partition_fields_follow_their_field_id() -> None:
    old = [
        {**APPENDIX_A["partition_spec_v2"][0], "x-owner": "time"},
        {**APPENDIX_A["partition_spec_v2"][1], "result_type": {"type": "utf8", "x-t": 1}},
    ]
    new = list(reversed(APPENDIX_A["partition_spec_v2"]))
    kept = json.loads(keep_unknown_keys("partition_spec_v2", json.dumps(old), json.dumps(new)))
    assert kept[1]["x-owner"] == "time"
    assert kept[0]["result_type"] == {"type": "utf8", "x-t": 1}
    assert "x-owner" not in kept[0]


def test_our_own_keys_are_not_resurrected_and_bad_json_passes() -> None:
    old = {"fields": [{"name": "t", "nullable": True, "type": {"type": "timestamp", "unit": "s",
           "timezone": "UTC"}, "metadata": {"lance:field_id": "0"}}]}  # fmt: skip
    new = {"fields": [{"name": "t", "nullable": True, "type": {"type": "int64"},
           "metadata": {"lance:field_id": "0"}}]}  # fmt: skip
    kept = json.loads(keep_unknown_keys(SCHEMA_KEY, json.dumps(old), json.dumps(new)))
    assert kept["fields"][0]["type"] == {"type": "int64"}
    assert keep_unknown_keys(SCHEMA_KEY, "not json", '{"fields":[]}') == '{"fields":[]}'
