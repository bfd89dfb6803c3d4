"""Partition fields and specs: spec 000 JSON, field-id assignment and every validation rule."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pytest

from lance_partitioned import errors
from lance_partitioned.spec.partitioning import (
    FIRST_FIELD_ID,
    RESERVED_NAMES,
    PartitionField,
    PartitionSpec,
    UnboundPartitionField,
    bind_spec,
    check_authored,
    validate_specs,
)
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.shorthand import parse_partition_by
from lance_partitioned.spec.transforms import Bucket, Identity, Month, Year
from tests.appendix import APPENDIX_A, APPENDIX_E_SCHEMA

V1 = PartitionSpec(1, (PartitionField(1, "event_date", 1, "col", pa.date32()),))
V2 = PartitionSpec(
    2,
    (
        PartitionField(2, "event_year", 1, "date_part('year', col)", pa.int32()),
        PartitionField(3, "country", 2, "col", pa.utf8()),
    ),
)


@pytest.fixture
def schema() -> NamespaceSchema:
    return NamespaceSchema.from_json(APPENDIX_A["schema"])


@pytest.fixture
def deprecated_schema() -> NamespaceSchema:
    return NamespaceSchema.from_json(APPENDIX_E_SCHEMA)


def spec_error(*fragments: str) -> Any:
    """pytest.raises(PartitionSpecError) whose message contains every fragment, in order."""
    return pytest.raises(
        errors.PartitionSpecError, match=".*".join(re.escape(f) for f in fragments)
    )


# ---------------------------------------------------------------------------- JSON


def test_appendix_a_specs_parse_to_the_expected_fields() -> None:
    assert PartitionSpec.from_json(1, APPENDIX_A["partition_spec_v1"]) == V1
    assert PartitionSpec.from_json(2, APPENDIX_A["partition_spec_v2"]) == V2


def test_appendix_a_specs_serialize_to_the_spec_json() -> None:
    assert V1.to_json() == APPENDIX_A["partition_spec_v1"]
    assert V2.to_json() == APPENDIX_A["partition_spec_v2"]
    assert list(V2.to_json()[0]) == ["field_id", "name", "source_id", "expression", "result_type"]


def test_appendix_a_specs_are_valid(schema: NamespaceSchema) -> None:
    validate_specs([V1, V2], schema)
    assert [f.transform for f in V2.fields] == [Year(), Identity()]


def test_field_json_ignores_unknown_keys() -> None:
    obj = {**APPENDIX_A["partition_spec_v1"][0], "comment": "from another client"}
    assert PartitionField.from_json(obj) == V1.fields[0]


@pytest.mark.parametrize("key", ["field_id", "name", "source_id", "expression", "result_type"])
def test_field_json_missing_key_is_named(key: str) -> None:
    obj = dict(APPENDIX_A["partition_spec_v1"][0])
    del obj[key]
    with spec_error(repr(key)):
        PartitionField.from_json(obj)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("field_id", "1"),
        ("field_id", True),
        ("source_id", 1.0),
        ("name", 3),
        ("expression", None),
        ("result_type", "int32"),
    ],
)
def test_field_json_wrong_type_is_named(key: str, value: object) -> None:
    obj = {**APPENDIX_A["partition_spec_v1"][0], key: value}
    label = "<unnamed>" if key == "name" else "'event_date'"
    with spec_error(label, repr(key)):
        PartitionField.from_json(obj)


def test_field_json_unknown_result_type_is_a_spec_error() -> None:
    obj = {**APPENDIX_A["partition_spec_v1"][0], "result_type": {"type": "no_such_type"}}
    with spec_error("'event_date'", "result_type", "no_such_type"):
        PartitionField.from_json(obj)


def test_spec_json_must_be_an_array() -> None:
    with spec_error("partition_spec_v4", "array"):
        PartitionSpec.from_json(4, {"field_id": 1})  # type: ignore[arg-type]


def test_spec_json_error_names_the_version() -> None:
    with spec_error("partition_spec_v2", "'source_id'"):
        PartitionSpec.from_json(2, [{"field_id": 2, "name": "x", "expression": "col"}])


# ---------------------------------------------------------------------------- value objects


@pytest.mark.parametrize("version", [0, -1])
def test_spec_version_must_be_positive(version: int) -> None:
    with spec_error("version", str(version)):
        PartitionSpec(version, ())


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"field_id": -1}, "field_id"),
        ({"source_id": -2}, "source_id"),
        ({"name": ""}, "name"),
        ({"expression": " "}, "expression"),
        ({"result_type": "int32"}, "result_type"),
    ],
)
def test_field_rejects_malformed_values(kwargs: dict[str, Any], fragment: str) -> None:
    values: dict[str, Any] = {
        "field_id": 1,
        "name": "d",
        "source_id": 1,
        "expression": "col",
        "result_type": pa.date32(),
        **kwargs,
    }
    with spec_error(fragment):
        PartitionField(**values)


def test_spec_accessors() -> None:
    assert V2.key == "partition_spec_v2"
    assert V2.names == ["event_year", "country"]
    assert V2.field("country") == V2.fields[1]
    assert not V2.is_unpartitioned
    assert PartitionSpec(3, ()).is_unpartitioned
    assert PartitionSpec(3, list(V2.fields)).fields == V2.fields  # type: ignore[arg-type]
    with spec_error("v2", "'event_date'"):
        V2.field("event_date")


def test_same_fields() -> None:
    same = [
        UnboundPartitionField("event_year", 1, Year(), pa.int32()),
        UnboundPartitionField("country", 2, Identity(), pa.utf8()),
    ]
    assert V2.same_fields(same)
    assert not V2.same_fields(same[::-1])
    assert not V2.same_fields(same[:1])
    assert not V2.same_fields(
        [same[0], UnboundPartitionField("country", 2, Identity(), pa.int32())]
    )
    assert not V2.same_fields([same[0], UnboundPartitionField("land", 2, Identity(), pa.utf8())])
    assert not V2.same_fields(
        [UnboundPartitionField("event_year", 1, Month(), pa.int32()), same[1]]
    )
    assert PartitionSpec(3, ()).same_fields([])


# ---------------------------------------------------------------------------- validation rules


def test_duplicate_version(schema: NamespaceSchema) -> None:
    with spec_error("partition_spec_v1", "twice"):
        validate_specs([V1, V1], schema)


def test_field_id_denotes_one_field_across_versions(schema: NamespaceSchema) -> None:
    v2 = PartitionSpec(2, (PartitionField(1, "country", 2, "col", pa.utf8()),))
    with spec_error("partition_spec_v2", "'country'", "field_id 1", "'event_date'"):
        validate_specs([V1, v2], schema)


def test_field_id_denotes_one_field_within_a_version(schema: NamespaceSchema) -> None:
    v1 = PartitionSpec(
        1,
        (
            PartitionField(1, "event_date", 1, "col", pa.date32()),
            PartitionField(1, "country", 2, "col", pa.utf8()),
        ),
    )
    with spec_error("partition_spec_v1", "'country'", "field_id 1"):
        validate_specs([v1], schema)


def test_reuse_rule_same_field_same_id(schema: NamespaceSchema) -> None:
    v2 = PartitionSpec(2, (PartitionField(7, "event_date", 1, "col", pa.date32()),))
    with spec_error("partition_spec_v2", "'event_date'", "field_id 7", "must be reused"):
        validate_specs([V1, v2], schema)


@pytest.mark.parametrize(
    "field",
    [
        PartitionField(1, "event_date", 1, "col", pa.utf8()),
        PartitionField(2, "event_date", 1, "date_part('year', col)", pa.int32()),
    ],
    ids=["same-field", "other-expression"],
)
def test_same_name_same_result_type(schema: NamespaceSchema, field: PartitionField) -> None:
    v2 = PartitionSpec(2, (field,))
    with spec_error("partition_spec_v2", "'event_date'", "result_type", "date32"):
        validate_specs([V1, v2], schema)


def test_names_unique_within_a_spec(schema: NamespaceSchema) -> None:
    v1 = PartitionSpec(
        1,
        (
            PartitionField(1, "part", 1, "col", pa.date32()),
            PartitionField(2, "part", 1, "date_part('year', col)", pa.date32()),
        ),
    )
    with spec_error("partition_spec_v1", "'part'", "twice"):
        validate_specs([v1], schema)


@pytest.mark.parametrize("name", sorted(RESERVED_NAMES))
def test_reserved_names(schema: NamespaceSchema, name: str) -> None:
    v1 = PartitionSpec(1, (PartitionField(1, name, 2, "col", pa.utf8()),))
    with spec_error("partition_spec_v1", repr(name), "reserved"):
        validate_specs([v1], schema)


def test_unknown_source_id(schema: NamespaceSchema) -> None:
    v1 = PartitionSpec(1, (PartitionField(1, "ghost", 9, "col", pa.utf8()),))
    with spec_error("partition_spec_v1", "'ghost'", "source_id 9"):
        validate_specs([v1], schema)


def test_transform_must_apply_to_the_source_type(schema: NamespaceSchema) -> None:
    v1 = PartitionSpec(
        1, (PartitionField(1, "country_year", 2, "date_part('year', col)", pa.int32()),)
    )
    validate_specs([v1], schema)  # loading: another client's spec, kept as it is
    with spec_error("partition_spec_v1", "'country_year'", "'country'", "string"):
        check_authored(v1, schema)


def test_newest_spec_may_not_use_a_deprecated_source(deprecated_schema: NamespaceSchema) -> None:
    legacy = PartitionSpec(1, (PartitionField(1, "legacy_field", 2, "col", pa.utf8()),))
    validate_specs([legacy], deprecated_schema)  # Appendix E loads
    with spec_error("partition_spec_v1", "'legacy_field'", "deprecated"):
        check_authored(legacy, deprecated_schema)


def test_older_spec_may_use_a_deprecated_source(deprecated_schema: NamespaceSchema) -> None:
    legacy = PartitionSpec(1, (PartitionField(1, "legacy_field", 2, "col", pa.utf8()),))
    newer = PartitionSpec(2, (PartitionField(2, "event_date", 1, "col", pa.date32()),))
    validate_specs([newer, legacy], deprecated_schema)  # order of the input does not matter
    assert bind_spec([], existing=[legacy], schema=deprecated_schema).version == 2


# ---------------------------------------------------------------------------- bind_spec


def test_first_spec_numbers_fields_from_one(schema: NamespaceSchema) -> None:
    spec = bind_spec(
        [
            UnboundPartitionField("country", 2, Identity(), pa.utf8()),
            UnboundPartitionField("id_bucket", 0, Bucket(8), pa.int64()),
            UnboundPartitionField("event_month", 1, Month(), pa.int32()),
        ],
        existing=[],
        schema=schema,
    )
    assert spec.version == 1
    assert [f.field_id for f in spec.fields] == [FIRST_FIELD_ID, 2, 3]
    assert [f.expression for f in spec.fields] == ["col", "abs(hash(col)) % 8", Month().expression]


def test_evolution_reuses_ids_of_identical_fields(schema: NamespaceSchema) -> None:
    v1 = bind_spec(
        [
            UnboundPartitionField("event_date", 1, Identity(), pa.date32()),
            UnboundPartitionField("country", 2, Identity(), pa.utf8()),
        ],
        existing=[],
        schema=schema,
    )
    v2 = bind_spec(
        [
            UnboundPartitionField("country", 2, Identity(), pa.utf8()),
            UnboundPartitionField("event_year", 1, Year(), pa.int32()),
        ],
        existing=[v1],
        schema=schema,
    )
    assert v2.version == 2
    assert [(f.name, f.field_id) for f in v2.fields] == [("country", 2), ("event_year", 3)]


def test_renamed_or_changed_field_gets_a_new_id(schema: NamespaceSchema) -> None:
    v1 = bind_spec(
        [UnboundPartitionField("country", 2, Identity(), pa.utf8())], existing=[], schema=schema
    )
    v2 = bind_spec(
        [
            UnboundPartitionField("land", 2, Identity(), pa.utf8()),
            UnboundPartitionField("country_bucket", 2, Bucket(4), pa.int64()),
        ],
        existing=[v1],
        schema=schema,
    )
    assert [f.field_id for f in v2.fields] == [2, 3]


def test_new_ids_exceed_every_id_ever_assigned(schema: NamespaceSchema) -> None:
    v1 = bind_spec(
        [
            UnboundPartitionField("event_date", 1, Identity(), pa.date32()),
            UnboundPartitionField("country", 2, Identity(), pa.utf8()),
        ],
        existing=[],
        schema=schema,
    )
    v2 = bind_spec(
        [UnboundPartitionField("event_date", 1, Identity(), pa.date32())],
        existing=[v1],
        schema=schema,
    )
    assert [f.field_id for f in v2.fields] == [1]
    # id 2 (country) now lives only in v1, yet it is never handed out again
    v3 = bind_spec(
        [UnboundPartitionField("event_year", 1, Year(), pa.int32())],
        existing=[v1, v2],
        schema=schema,
    )
    assert (v3.version, [f.field_id for f in v3.fields]) == (3, [3])
    # ... and a field that comes back after a gap gets its old id
    v4 = bind_spec(
        [UnboundPartitionField("country", 2, Identity(), pa.utf8())],
        existing=[v1, v2, v3],
        schema=schema,
    )
    assert (v4.version, [f.field_id for f in v4.fields]) == (4, [2])


def test_ids_follow_foreign_numbering(schema: NamespaceSchema) -> None:
    foreign = PartitionSpec(5, (PartitionField(1000, "country", 2, "col", pa.utf8()),))
    spec = bind_spec(
        [UnboundPartitionField("event_year", 1, Year(), pa.int32())],
        existing=[foreign],
        schema=schema,
    )
    assert (spec.version, spec.fields[0].field_id) == (6, 1001)


def test_bind_spec_validates(schema: NamespaceSchema) -> None:
    with spec_error("partition_spec_v2", "'event_date'", "result_type"):
        bind_spec(
            [UnboundPartitionField("event_date", 1, Year(), pa.int32())],
            existing=[V1],
            schema=schema,
        )


def test_appendix_a_from_the_shorthand(schema: NamespaceSchema) -> None:
    v1 = bind_spec(parse_partition_by("event_date", schema), existing=[], schema=schema)
    v2 = bind_spec(
        parse_partition_by("year(event_date) AS event_year, country", schema),
        existing=[v1],
        schema=schema,
    )
    assert (v1, v2) == (V1, V2)
    assert v1.to_json() == APPENDIX_A["partition_spec_v1"]
    assert v2.to_json() == APPENDIX_A["partition_spec_v2"]
