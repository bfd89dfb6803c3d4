"""The pure rules of schema and partition evolution (spec 000, "Schema Evolution" and
"Partition Evolution"), on NamespaceMetadata values."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lance_partitioned import errors
from lance_partitioned.spec import evolution as ev
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec, bind_spec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.shorthand import parse_partition_by


def meta(fields: list[Any], partition_by: str = "") -> NamespaceMetadata:
    """A namespace with ids assigned in pre-order, partitioned by ``partition_by`` (v1)."""
    schema = NamespaceSchema.from_arrow(pa.schema(fields))
    spec = bind_spec(parse_partition_by(partition_by, schema), existing=(), schema=schema)
    return NamespaceMetadata(schema, (spec,))


def ids(metadata: NamespaceMetadata) -> dict[str, int]:
    """Every field (dotted path) to its id, deprecated ones included."""
    schema = metadata.schema
    out = {}
    for i in range(schema.max_field_id + 1):
        try:
            out[schema.name_of(i)] = i
        except errors.SchemaError:
            continue
    return out


BASE = [
    pa.field("id", pa.int64(), nullable=False),
    ("event_date", pa.date32()),
    ("country", pa.utf8()),
]


# ----------------------------------------------------------------------------- promotion

ALLOWED = [
    (pa.int8(), pa.int16()),
    (pa.int8(), pa.int64()),
    (pa.int16(), pa.int32()),
    (pa.int32(), pa.int64()),
    (pa.uint8(), pa.uint16()),
    (pa.uint32(), pa.uint64()),
    (pa.uint16(), pa.int32()),
    (pa.float16(), pa.float32()),
    (pa.float32(), pa.float64()),
    (pa.float16(), pa.float64()),
    (pa.decimal128(10, 2), pa.decimal128(12, 2)),
    (pa.decimal128(10, 2), pa.decimal256(10, 2)),
    (pa.decimal128(10, 2), pa.decimal256(40, 2)),
    (pa.utf8(), pa.large_utf8()),
    (pa.binary(), pa.large_binary()),
    (pa.date32(), pa.timestamp("s")),
    (pa.date32(), pa.timestamp("ms")),
    (pa.date32(), pa.timestamp("us")),
]

FORBIDDEN = [
    (pa.int64(), pa.int32()),
    (pa.int32(), pa.int32()),
    (pa.int32(), pa.uint64()),
    (pa.uint64(), pa.int64()),
    (pa.uint8(), pa.int8()),
    (pa.int32(), pa.float64()),
    (pa.float64(), pa.float32()),
    (pa.decimal128(10, 2), pa.decimal128(10, 2)),
    (pa.decimal128(10, 2), pa.decimal128(12, 3)),
    (pa.decimal128(12, 2), pa.decimal128(10, 2)),
    (pa.decimal256(10, 2), pa.decimal128(20, 2)),
    (pa.large_utf8(), pa.utf8()),
    (pa.utf8(), pa.large_binary()),
    (pa.binary(), pa.utf8()),
    (pa.date32(), pa.timestamp("ns")),
    (pa.date32(), pa.timestamp("us", tz="UTC")),
    (pa.timestamp("us"), pa.date32()),
    (pa.timestamp("ms"), pa.timestamp("us")),
    (pa.int64(), pa.utf8()),
]


@pytest.mark.parametrize(("source", "target"), ALLOWED, ids=str)
def test_can_promote_allows_exact_widening(source: pa.DataType, target: pa.DataType) -> None:
    assert ev.can_promote(source, target)


@pytest.mark.parametrize(("source", "target"), FORBIDDEN, ids=str)
def test_can_promote_refuses_narrowing_lossy_or_same(
    source: pa.DataType, target: pa.DataType
) -> None:
    assert not ev.can_promote(source, target)


# ----------------------------------------------------------------------------- add


def test_add_assigns_ids_above_every_id_ever_assigned() -> None:
    m = meta([*BASE, ("legacy", pa.utf8())])
    m = ev.drop_columns(m, ["legacy"])  # id 3, deprecated, still counts
    m = ev.add_columns(m, [pa.field("amount", pa.float64()), pa.field("note", pa.utf8())])
    assert ids(m)["amount"] == 4
    assert ids(m)["note"] == 5
    assert m.schema.names == ["id", "event_date", "country", "amount", "note"]
    assert m.schema.top_level_field("amount").nullable


def test_add_nested_types_get_ids_in_pre_order() -> None:
    m = meta(BASE)
    new = pa.field(
        "attrs",
        pa.struct(
            [("k", pa.utf8()), ("tags", pa.list_(pa.utf8())), ("m", pa.map_(pa.utf8(), pa.int32()))]
        ),
    )
    m = ev.add_columns(m, [new])
    got = {k: v for k, v in ids(m).items() if k.startswith("attrs")}
    # attrs 3, k 4, tags 5, tags.item 6, m 7, m.entries 8 (implicit), m.entries.key 9, .value 10
    assert got == {
        "attrs": 3,
        "attrs.k": 4,
        "attrs.tags": 5,
        "attrs.tags.item": 6,
        "attrs.m": 7,
        "attrs.m.entries": 8,
        "attrs.m.entries.key": 9,
        "attrs.m.entries.value": 10,
    }
    assert NamespaceSchema.from_json(m.schema.to_json()) == m.schema


def test_add_struct_child_by_dotted_path() -> None:
    m = meta([*BASE, ("s", pa.struct([("a", pa.int32())]))])
    m = ev.add_columns(m, [pa.field("s.b", pa.utf8())])
    assert ids(m)["s.b"] == 5
    assert m.schema.top_level_field("s").type == pa.struct(
        [pa.field("a", pa.int32()), pa.field("b", pa.utf8())]
    )
    # the struct keeps its own id and metadata
    assert ids(m)["s"] == 3


def test_readd_a_dropped_column_gets_a_new_id() -> None:
    m = meta([*BASE, ("amount", pa.float64())])
    m = ev.drop_columns(m, ["amount"])
    m = ev.add_columns(m, [pa.field("amount", pa.float64())])
    fields = [f for f in m.schema.arrow_schema if f.name == "amount"]
    assert [f.metadata[b"lance:field_id"] for f in fields] == [b"3", b"4"]
    assert m.schema.field_id("amount") == 4
    assert m.schema.is_deprecated(3)


def test_readd_a_dropped_partition_source_name_is_allowed() -> None:
    m = meta(BASE, "country")
    m = ev.update_partition_spec(m, "event_date")
    m = ev.drop_columns(m, ["country"])
    m = ev.add_columns(m, [pa.field("country", pa.large_utf8())])
    assert m.schema.field_id("country") == 3
    assert m.spec(1).fields[0].source_id == 2  # the old partition field keeps its source


def test_add_nothing_is_a_no_op() -> None:
    m = meta(BASE)
    assert ev.add_columns(m, []) == m


@pytest.mark.parametrize(
    ("field", "message"),
    [
        (pa.field("amount", pa.float64(), nullable=False), "must be nullable"),
        (pa.field("country", pa.utf8()), "already exists"),
        (pa.field("location", pa.utf8()), "reserved"),
        (pa.field("x", pa.int8(), metadata={"lance:field_id": "9"}), "lance:field_id"),
        (pa.field("x", pa.int8(), metadata={"lance:deprecated": "true"}), "lance:deprecated"),
        (
            pa.field("s", pa.struct([pa.field("a", pa.int8(), metadata={"lance:field_id": "1"})])),
            "'s.a'",
        ),
        (pa.field("nope.c", pa.int8()), "'nope'"),
        (pa.field("country.c", pa.int8()), "not a struct"),
        (pa.field("", pa.int8()), "non-empty"),
    ],
)
def test_add_refuses(field: pa.Field, message: str) -> None:
    m = meta(BASE)
    with pytest.raises(errors.SchemaError, match=message):
        ev.add_columns(m, [field])


def test_add_refuses_the_name_of_a_partition_field_of_another_live_column() -> None:
    m = meta(BASE, "year(event_date) AS event_year")
    with pytest.raises(errors.SchemaError, match="partition field 'event_year'"):
        ev.add_columns(m, [pa.field("event_year", pa.int32())])


def test_add_refuses_a_name_twice_in_one_call() -> None:
    with pytest.raises(errors.SchemaError, match="'a' already exists"):
        ev.add_columns(meta(BASE), [pa.field("a", pa.int8()), pa.field("a", pa.int16())])


def test_add_refuses_a_child_of_a_dropped_struct() -> None:
    m = ev.drop_columns(meta([*BASE, ("s", pa.struct([("a", pa.int32())]))]), ["s"])
    with pytest.raises(errors.SchemaError, match="'s'"):
        ev.add_columns(m, [pa.field("s.b", pa.int8())])


def test_add_refuses_a_duplicate_struct_child() -> None:
    m = meta([*BASE, ("s", pa.struct([("a", pa.int32())]))])
    with pytest.raises(errors.SchemaError, match="'a' already exists"):
        ev.add_columns(m, [pa.field("s.a", pa.int64())])


# ----------------------------------------------------------------------------- drop


def test_drop_deprecates_and_makes_nullable_appendix_e() -> None:
    m = meta([*BASE[:2], pa.field("legacy_field", pa.utf8(), nullable=False)], "event_date")
    m = ev.drop_columns(m, ["legacy_field"])
    # Spec 000 Appendix E, object for object.
    assert m.schema.to_json() == {
        "fields": [
            {
                "name": "id",
                "nullable": False,
                "type": {"type": "int64"},
                "metadata": {"lance:field_id": "0"},
            },
            {
                "name": "event_date",
                "nullable": True,
                "type": {"type": "date32"},
                "metadata": {"lance:field_id": "1"},
            },
            {
                "name": "legacy_field",
                "nullable": True,
                "type": {"type": "utf8"},
                "metadata": {"lance:field_id": "2", "lance:deprecated": "true"},
            },
        ]
    }
    assert m.schema.names == ["id", "event_date"]
    assert m.schema.read_schema().names == ["id", "event_date"]


def test_drop_a_source_of_an_older_spec_keeps_that_spec() -> None:
    m = meta(BASE, "country")
    m = ev.update_partition_spec(m, "event_date")
    m = ev.drop_columns(m, ["country"])
    assert m.spec(1).fields[0].source_id == 2
    assert m.schema.is_deprecated(2)


def test_drop_refuses_a_source_of_the_current_spec() -> None:
    m = meta(BASE, "year(event_date) AS event_year, country")
    message = r"partition field 'event_year' of the current partition_spec_v1"
    with pytest.raises(errors.SchemaError, match=message):
        ev.drop_columns(m, ["event_date"])


def test_drop_refuses_a_struct_holding_a_current_source() -> None:
    fields = [*BASE, ("s", pa.struct([("a", pa.int32()), ("b", pa.int32())]))]
    schema = NamespaceSchema.from_arrow(pa.schema(fields))
    spec = PartitionSpec(1, (PartitionField(1, "a", 4, "col", pa.int32()),))
    m = NamespaceMetadata(schema, (spec,))
    with pytest.raises(errors.SchemaError, match="partition field 'a'"):
        ev.drop_columns(m, ["s"])
    with pytest.raises(errors.SchemaError, match="partition field 'a'"):
        ev.drop_columns(m, ["s.a"])
    assert ev.drop_columns(m, ["s.b"]).schema.is_deprecated(5)


def test_drop_struct_child() -> None:
    m = meta([*BASE, ("s", pa.struct([("a", pa.int32()), ("b", pa.utf8())]))])
    m = ev.drop_columns(m, ["s.a"])
    assert m.schema.is_deprecated(4)
    assert not m.schema.is_deprecated(3)
    assert m.schema.read_schema().field("s").type == pa.struct([pa.field("b", pa.utf8())])


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["nope"], "'nope' is not in the namespace schema"),
        (["country", "country"], "listed twice"),
        (["id", "event_date", "country", "s"], "last live column of the namespace"),
        (["s.a"], "last live column of struct 's'"),
        (["s.x"], "'s.x' is not in the namespace schema"),
    ],
)
def test_drop_refuses(names: list[str], message: str) -> None:
    m = meta([*BASE, ("s", pa.struct([("a", pa.int32())]))])
    with pytest.raises(errors.SchemaError, match=message):
        ev.drop_columns(m, names)


def test_drop_refuses_a_dropped_column_and_a_bare_string() -> None:
    m = ev.drop_columns(meta(BASE), ["country"])
    with pytest.raises(errors.SchemaError, match="it was dropped"):
        ev.drop_columns(m, ["country"])
    with pytest.raises(errors.SchemaError, match="list of names"):
        ev.drop_columns(m, "id")


# ----------------------------------------------------------------------------- rename


def test_rename_keeps_the_id_and_the_partition_source() -> None:
    m = meta(BASE, "year(event_date) AS event_year, country")
    m = ev.rename_column(m, "country", "region")
    assert m.schema.field_id("region") == 2
    assert m.schema.names == ["id", "event_date", "region"]
    assert m.current_spec.field("country").source_id == 2
    # back again: a column may take the name of a partition field computed from itself
    assert ev.rename_column(m, "region", "country").schema.field_id("country") == 2


def test_rename_struct_child_both_spellings() -> None:
    m = meta([*BASE, ("s", pa.struct([("a", pa.int32()), ("b", pa.int32())]))])
    for new in ("x", "s.x"):
        renamed = ev.rename_column(m, "s.a", new)
        assert renamed.schema.name_of(4) == "s.x"


def test_rename_to_the_same_name_is_a_no_op() -> None:
    m = meta(BASE)
    assert ev.rename_column(m, "country", "country") is m


def test_rename_onto_a_dropped_name_is_allowed() -> None:
    m = ev.drop_columns(meta([*BASE, ("old", pa.utf8())]), ["old"])
    m = ev.rename_column(m, "country", "old")
    assert m.schema.field_id("old") == 2


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("country", "id", "'id' already exists"),
        ("country", "object_id", "reserved"),
        ("country", "read_version", "reserved"),
        ("id", "event_year", "partition field 'event_year'"),
        ("nope", "x", "'nope' is not in the namespace schema"),
        ("country", "", "non-empty"),
        ("s.a", "b", "'b' already exists"),
    ],
)
def test_rename_refuses(old: str, new: str, message: str) -> None:
    fields = [*BASE, ("s", pa.struct([("a", pa.int32()), ("b", pa.int32())]))]
    m = meta(fields, "year(event_date) AS event_year")
    with pytest.raises(errors.SchemaError, match=message):
        ev.rename_column(m, old, new)


# ----------------------------------------------------------------------------- promote


def test_promote_keeps_id_nullability_and_specs() -> None:
    m = meta([*BASE, pa.field("user_id", pa.int32(), nullable=False)], "bucket(16, user_id)")
    promoted = ev.alter_column_type(m, "user_id", pa.int64())
    field = promoted.schema.top_level_field("user_id")
    assert (field.type, field.nullable, promoted.schema.field_id("user_id")) == (
        pa.int64(),
        False,
        3,
    )
    assert promoted.specs == m.specs


def test_promote_same_type_is_a_no_op_and_narrowing_is_refused() -> None:
    m = meta([*BASE, ("n", pa.int32())])
    assert ev.alter_column_type(m, "n", pa.int32()) is m
    with pytest.raises(errors.SchemaError, match="'n' from int32 to int8"):
        ev.alter_column_type(m, "n", pa.int8())
    with pytest.raises(errors.SchemaError, match="from int32 to string"):
        ev.alter_column_type(m, "n", pa.utf8())


def test_promote_struct_child() -> None:
    m = meta([*BASE, ("s", pa.struct([("a", pa.float32())]))])
    m = ev.alter_column_type(m, "s.a", pa.float64())
    assert m.schema.field_by_id(4).type == pa.float64()


def test_promote_refuses_structs_and_dropped_columns() -> None:
    m = meta([*BASE, ("s", pa.struct([("a", pa.int32())]))])
    with pytest.raises(errors.SchemaError, match="only exact widening"):
        ev.alter_column_type(m, "s", pa.struct([("a", pa.int64())]))
    m = ev.drop_columns(m, ["s"])
    with pytest.raises(errors.SchemaError, match="dropped"):
        ev.alter_column_type(m, "s", pa.struct([("a", pa.int64())]))


def test_promote_date_to_timestamp_only_under_date_parts() -> None:
    year = meta(BASE, "year(event_date), month(event_date), day(event_date)")
    promoted = ev.alter_column_type(year, "event_date", pa.timestamp("us"))
    assert promoted.schema.top_level_field("event_date").type == pa.timestamp("us")
    periods = meta(BASE, "years(event_date), months(event_date)")  # a date is its midnight
    promoted = ev.alter_column_type(periods, "event_date", pa.timestamp("us"))
    assert promoted.schema.top_level_field("event_date").type == pa.timestamp("us")
    for partition_by in ("event_date", "bucket(8, event_date)"):
        m = meta(BASE, partition_by)
        with pytest.raises(errors.SchemaError, match="would compute other values"):
            ev.alter_column_type(m, "event_date", pa.timestamp("us"))


def test_promote_under_opaque_and_truncate_expressions() -> None:
    schema = NamespaceSchema.from_arrow(pa.schema([("n", pa.int32()), ("s", pa.utf8())]))
    spec = PartitionSpec(
        1,
        (
            PartitionField(1, "n_mod", 0, "col % 7", pa.int32()),
            PartitionField(2, "s_trunc", 1, "left(col, 2)", pa.utf8()),
        ),
    )
    m = NamespaceMetadata(schema, (spec,))
    m = ev.alter_column_type(m, "n", pa.int64())
    m = ev.alter_column_type(m, "s", pa.large_utf8())
    assert [f.type for f in m.schema.read_schema()] == [pa.int64(), pa.large_utf8()]
    assert m.specs == (spec,)


# ----------------------------------------------------------------------------- partition specs


def test_update_reproduces_appendix_a() -> None:
    m = meta(BASE, "event_date")
    m = ev.update_partition_spec(m, "year(event_date) AS event_year, country")
    assert [s.to_json() for s in m.specs] == [
        [
            {
                "field_id": 1,
                "name": "event_date",
                "source_id": 1,
                "expression": "col",
                "result_type": {"type": "date32"},
            }
        ],
        [
            {
                "field_id": 2,
                "name": "event_year",
                "source_id": 1,
                "expression": "date_part('year', col)",
                "result_type": {"type": "int32"},
            },
            {
                "field_id": 3,
                "name": "country",
                "source_id": 2,
                "expression": "col",
                "result_type": {"type": "utf8"},
            },
        ],
    ]
    assert m.partition_columns() == [
        ("event_date", pa.date32()),
        ("event_year", pa.int32()),
        ("country", pa.utf8()),
    ]


def test_update_reuses_ids_and_assigns_new_ones_above_the_max() -> None:
    m = meta(BASE, "country")  # country: 1
    m = ev.update_partition_spec(m, "year(event_date) AS event_year")  # event_year: 2
    m = ev.update_partition_spec(m, "country, bucket(4, id)")  # country again: 1; bucket: 3
    assert [(f.name, f.field_id) for f in m.current_spec.fields] == [
        ("country", 1),
        ("id_bucket", 3),
    ]
    assert m.current_spec.version == 3
    # another expression under a known name is another field: new id, same result type needed
    m = ev.update_partition_spec(m, "truncate(2, country) AS country2")
    assert m.current_spec.fields[0].field_id == 4


def test_update_identical_spec_is_a_no_op() -> None:
    m = meta(BASE, "year(event_date) AS event_year, country")
    assert ev.update_partition_spec(m, "year(event_date) AS event_year, country") is m
    assert ev.update_partition_spec(m, list(m.current_spec.fields)) is m


def test_update_to_unpartitioned() -> None:
    m = meta(BASE, "country")
    m = ev.update_partition_spec(m, "")
    assert m.current_spec.version == 2
    assert m.current_spec.is_unpartitioned
    assert ev.update_partition_spec(m, "  ") is m
    assert m.partition_columns() == [("country", pa.utf8())]


def test_update_refuses_a_dropped_column() -> None:
    m = ev.drop_columns(meta(BASE, "event_date"), ["country"])
    with pytest.raises(errors.PartitionByParseError, match="country"):
        ev.update_partition_spec(m, "country")
    bound = [PartitionField(2, "country", 2, "col", pa.utf8())]
    with pytest.raises(errors.PartitionSpecError, match="deprecated"):
        ev.update_partition_spec(m, bound)


def test_update_refuses_a_name_with_another_result_type() -> None:
    m = meta(BASE, "year(event_date) AS p")
    with pytest.raises(errors.PartitionSpecError, match="result_type"):
        ev.update_partition_spec(m, "country AS p")


def test_update_refuses_a_name_of_another_live_column() -> None:
    m = meta(BASE, "event_date")
    with pytest.raises(errors.PartitionSpecError, match="another live column"):
        ev.update_partition_spec(m, "year(event_date) AS country")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ([PartitionField(1, "country", 2, "col", pa.utf8())], "field_id 1 is already"),
        ([PartitionField(9, "event_date", 1, "col", pa.date32())], "must be reused"),
        ([PartitionField(3, "event_year", 1, "date_part('year', col)", pa.int32())], "above"),
        ([PartitionField(9, "object_id", 2, "col", pa.utf8())], "reserved"),
    ],
)
def test_update_with_bound_fields_checks_ids(fields: list[PartitionField], message: str) -> None:
    m = meta(BASE, "event_date")  # event_date: 1
    m = ev.update_partition_spec(m, "country")  # country: 2 ... then v3 below
    m = ev.update_partition_spec(m, "event_date")  # v3 reuses 1
    m = ev.update_partition_spec(m, "id")  # id: 3 (the max)
    with pytest.raises(errors.PartitionSpecError, match=message):
        ev.update_partition_spec(m, fields)


def test_update_with_bound_fields_accepts_reuse_and_fresh_ids() -> None:
    m = meta(BASE, "event_date")
    fields = [
        PartitionField(1, "event_date", 1, "col", pa.date32()),
        PartitionField(7, "country", 2, "col", pa.utf8()),
    ]
    m = ev.update_partition_spec(m, fields)
    assert [f.field_id for f in m.current_spec.fields] == [1, 7]
    # the next shorthand field continues above 7
    m = ev.update_partition_spec(m, "bucket(4, id)")
    assert m.current_spec.fields[0].field_id == 8
