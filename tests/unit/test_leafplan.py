"""How staged columns meet a leaf's schema: the plan of metadata-only changes and the field id
map, on Lance schemas built in memory."""

from __future__ import annotations

import pyarrow as pa
from lance.schema import LanceSchema

from lance_partitioned.consistency import LEAF_FIELD_ID_KEY
from lance_partitioned.transaction.leafplan import field_id_map, plan_leaf


def f(name: str, dtype: pa.DataType, key: int | None, nullable: bool = True) -> pa.Field:
    return pa.field(
        name, dtype, nullable, metadata=None if key is None else {LEAF_FIELD_ID_KEY: str(key)}
    )


def lance_schema(*fields: pa.Field) -> LanceSchema:
    return LanceSchema.from_pyarrow(pa.schema(fields))


def test_a_leaf_of_the_staged_schema_needs_nothing() -> None:
    target = pa.schema([f("a", pa.int64(), 0), f("s", pa.struct([f("b", pa.utf8(), 2)]), 1)])
    plan = plan_leaf(LanceSchema.from_pyarrow(target), target)
    assert plan.empty
    assert not plan.conflicts
    assert field_id_map(LanceSchema.from_pyarrow(target), target) == {0: 0, 1: 1, 2: 2}


def test_added_renamed_promoted_and_dropped_columns() -> None:
    leaf = lance_schema(f("a", pa.int32(), 0), f("old", pa.utf8(), 1), f("gone", pa.utf8(), 2))
    target = pa.schema([f("a", pa.int64(), 0), f("new", pa.utf8(), 1), f("x", pa.utf8(), 3)])
    plan = plan_leaf(leaf, target)
    assert plan.casts == [("a", pa.int64())]
    assert plan.renames == [("old", "new")]
    assert [field.name for field in plan.adds] == ["x"]
    assert plan.conflicts == []  # the dropped column stays in the leaf, untouched
    assert isinstance(field_id_map(leaf, target), str)  # not applied yet: not appendable


def test_a_staged_type_the_leaf_cannot_hold_is_a_conflict() -> None:
    leaf = lance_schema(f("w", pa.int64(), 0))
    target = pa.schema([f("w", pa.int32(), 0)])  # staged before w was promoted
    assert plan_leaf(leaf, target).conflicts == ["w (int32 staged, int64 in the leaf)"]
    assert field_id_map(leaf, target) == "w"


def test_a_foreign_leaf_is_matched_by_name() -> None:
    leaf = lance_schema(f("x", pa.utf8(), None), f("id", pa.int64(), None, nullable=False))
    target = pa.schema([f("id", pa.int64(), 0, nullable=False), f("x", pa.utf8(), 1)])
    assert plan_leaf(leaf, target).empty
    assert field_id_map(leaf, target) == {0: 1, 1: 0}


def test_a_re_added_name_moves_the_dropped_column_aside() -> None:
    leaf = lance_schema(f("amount", pa.float64(), 3))
    target = pa.schema([f("amount", pa.float64(), 4)])
    plan = plan_leaf(leaf, target)
    assert plan.renames == [("amount", "_deprecated_3_amount")]
    assert [field.name for field in plan.adds] == ["amount"]


def test_changes_under_a_list_are_conflicts() -> None:
    element = pa.struct([f("a", pa.int32(), 2)])
    leaf = lance_schema(f("l", pa.list_(pa.field("item", element)), 1))
    wider = pa.struct([f("a", pa.int64(), 2), f("b", pa.utf8(), 3)])
    plan = plan_leaf(leaf, pa.schema([f("l", pa.list_(pa.field("item", wider)), 1)]))
    assert plan.casts == []
    assert plan.adds == []
    assert plan.conflicts == ["l.item.a (int64 staged, int32 in the leaf)", "l.item.b"]
