"""Struct children as partition sources (issue 33): ``partition_by`` names them by dotted path,
the field's own ``lance:field_id`` is the ``source_id``; the resolver of
:mod:`lance_partitioned.spec.sourcepaths` reads their values and lifts filters on them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lance_partitioned.errors import PartitionByParseError
from lance_partitioned.expressions import bind, parse_sql
from lance_partitioned.expressions.tree import And, EqualTo, GreaterThan, IsNull, NotNull, Unknown
from lance_partitioned.pruning.projection import project
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.shorthand import parse_partition_by
from lance_partitioned.spec.sourcepaths import (
    lift_struct_conditions,
    source_id_at,
    source_name,
    source_values,
)

DEVICE = pa.struct([("os", pa.utf8()), ("ver", pa.int32()), ("x.y", pa.int8())])
SCHEMA = NamespaceSchema.from_arrow(
    pa.schema([("id", pa.int64()), ("device", DEVICE), ("tags", pa.list_(pa.utf8()))])
)  # ids: id 0, device 1, device.os 2, device.ver 3, device.x.y 4, tags 5, tags.item 6


def test_partition_by_names_a_struct_child_by_its_dotted_path() -> None:
    fields = parse_partition_by("identity(device.os), bucket(4, device.ver) AS b", SCHEMA)
    assert [(f.name, f.source_id, f.expression) for f in fields] == [
        ("device_os", 2, "col"),
        ("b", 3, "abs(hash(col)) % 4"),
    ]
    assert fields[1].result_type == pa.int64()
    assert [f.source_id for f in parse_partition_by("device.os", SCHEMA)] == [2]


def test_quoted_segments_and_a_dot_in_a_field_name() -> None:
    for text in ('device."x.y"', "device.`x.y`", '"device".`x.y`'):
        (field,) = parse_partition_by(text, SCHEMA)
        assert (field.name, field.source_id) == ("device_x.y", 4)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("device.model", r"no field 'model'"),
        ("bucket(4, tags.item)", r"'tags' is of type list.*not a struct"),
        ("device.", r"expected a struct field name"),
        ("year(device.os)", r"year\(\) cannot be applied to column 'device_os'"),
    ],
)
def test_bad_struct_sources_are_parse_errors(text: str, message: str) -> None:
    with pytest.raises(PartitionByParseError, match=message):
        parse_partition_by(text, SCHEMA)


def test_source_values_are_null_under_a_null_struct() -> None:
    data = pa.table(
        {"device": pa.array([{"os": "ios", "ver": 1, "x.y": 2}, None, {"os": None}], DEVICE)}
    )
    assert source_values(data, SCHEMA, 2).to_pylist() == ["ios", None, None]
    assert source_values(data.to_batches()[0], SCHEMA, 3).to_pylist() == [1, None, None]
    assert (source_name(SCHEMA, 4), source_id_at(SCHEMA, ("device", "x.y"))) == (
        "device.`x.y`",
        4,
    )


def test_struct_conditions_lift_and_project_onto_their_partition_fields() -> None:
    read = SCHEMA.read_schema()
    spec = PartitionSpec(
        1,
        (
            PartitionField(1, "device_os", 2, "col", pa.utf8()),
            PartitionField(2, "device_ver_bucket", 3, "abs(hash(col)) % 4", pa.int64()),
        ),
    )
    text = "device.os = 'ios' AND device.ver > 3 AND upper(device.os) = 'IOS'"
    predicate = bind(parse_sql(text, read), read)
    lifted = lift_struct_conditions(predicate, SCHEMA, [2, 3])
    assert EqualTo("device.os", "ios") in _conjuncts(lifted)
    assert GreaterThan("device.ver", 3) in _conjuncts(lifted)
    assert any(isinstance(p, Unknown) for p in _conjuncts(lifted))  # not liftable: kept
    assert project(lifted, spec, SCHEMA) == And(
        EqualTo("device_os", "ios"), NotNull("device_ver_bucket")
    )
    null = bind(parse_sql("device.os IS NULL", read), read)
    assert project(lift_struct_conditions(null, SCHEMA, [2]), spec, SCHEMA) == IsNull("device_os")
    # a struct child that is no source is left as it is
    assert lift_struct_conditions(predicate, SCHEMA, [0]) == predicate


def _conjuncts(predicate: object) -> list[object]:
    if isinstance(predicate, And):
        return [*_conjuncts(predicate.left), *_conjuncts(predicate.right)]
    return [predicate]
