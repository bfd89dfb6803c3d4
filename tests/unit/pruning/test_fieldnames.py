"""Partition field names in filters: which names, and what one partition's values decide."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from lance_partitioned.expressions import bind, parse_sql
from lance_partitioned.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    EqualTo,
    IsNull,
    Predicate,
)
from lance_partitioned.pruning.fieldnames import (
    FieldCondition,
    FieldTerm,
    field_schema,
    field_terms,
    on_fields,
    substitute,
    without_fields,
)
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema

SCHEMA = NamespaceSchema.from_arrow(
    pa.schema([("d", pa.date32()), ("u", pa.int64()), ("s", pa.utf8())])
)
V1 = PartitionSpec(
    1,
    (
        PartitionField(1, "m", 0, "date_part('month', col)", pa.int32()),
        PartitionField(2, "dd", 0, "date_part('day', col)", pa.int32()),
    ),
)
V2 = PartitionSpec(
    2,
    (
        PartitionField(3, "y", 0, "date_part('year', col)", pa.int32()),
        PartitionField(4, "b", 1, "abs(hash(col)) % 4", pa.int64()),
        PartitionField(5, "s", 2, "left(col, 1)", pa.utf8()),
    ),
)
V3 = PartitionSpec(4, (PartitionField(6, "d", 0, "col", pa.date32()),))


def _bound(sql: str) -> tuple[Predicate, dict[str, FieldTerm]]:
    fields = field_terms([V1, V2, V3], SCHEMA)
    read = field_schema(SCHEMA.read_schema(), fields)
    return bind(parse_sql(sql, read), read), fields


def test_field_names_exclude_schema_columns() -> None:
    fields = field_terms([V1, V2, V3], SCHEMA)
    assert sorted(fields) == ["b", "dd", "m", "y"]  # s and d are columns
    assert fields["y"].source == "d"
    assert fields["b"].sql() == "abs(hash(`u`)) % 4"


def test_a_name_with_two_meanings_is_left_out() -> None:
    other = PartitionSpec(5, (PartitionField(7, "y", 1, "col - (col % 10)", pa.int32()),))
    assert "y" not in field_terms([V2, other], SCHEMA)


def test_sql_replaces_col_outside_string_literals_only() -> None:
    term = FieldTerm("t", 0, "c", pa.utf8(), "concat('col', col)", pa.utf8())
    assert term.sql() == "concat('col', `c`)"


def test_spec_with_the_field_decides_from_its_value() -> None:
    predicate, fields = _bound("y = 2025 AND s = 'x'")
    assert substitute(predicate, V2, fields, {"y": 2025}) == EqualTo("s", "x")
    assert substitute(predicate, V2, fields, {"y": 2024}) == AlwaysFalse()
    assert substitute(predicate, V2, fields, {"y": None}) == AlwaysFalse()
    null, fields = _bound("y IS NULL")
    assert substitute(null, V2, fields, {"y": None}) == AlwaysTrue()


def test_identity_value_of_the_source_decides_other_fields() -> None:
    predicate, fields = _bound("y = 2025 AND m = 3")
    assert substitute(predicate, V3, fields, {"d": dt.date(2025, 3, 9)}) == AlwaysTrue()
    assert substitute(predicate, V3, fields, {"d": dt.date(2025, 4, 9)}) == AlwaysFalse()
    null, fields = _bound("y IS NULL")
    assert substitute(null, V3, fields, {"d": None}) == AlwaysTrue()


def test_undecided_leaves_become_field_conditions() -> None:
    predicate, fields = _bound("b = 3")
    kept = substitute(predicate, V1, fields, {"m": 3, "dd": 9})
    assert isinstance(kept, FieldCondition)
    assert kept.columns == ("u",)
    assert kept.leaf == EqualTo("b", 3)
    assert kept.sql == "(abs(hash(`u`)) % 4) = 3"
    # a month and a day do not pin the year
    year, fields = _bound("y = 2025")
    assert isinstance(substitute(year, V1, fields, {"m": 3, "dd": 9}), FieldCondition)


def test_pruning_relaxes_other_fields_and_keeps_own() -> None:
    predicate, fields = _bound("(y = 2025 OR m IS NULL) AND s = 'x'")
    assert on_fields(predicate, V2, fields) == AlwaysTrue()  # m is not a v2 field
    assert on_fields(predicate, V1, fields) == AlwaysTrue()
    narrow, fields = _bound("y = 2025 AND m IS NULL")
    assert on_fields(narrow, V1, fields) == IsNull("m")
    assert on_fields(narrow, V2, fields) == EqualTo("y", 2025)
    assert without_fields(predicate, fields) == EqualTo("s", "x")
