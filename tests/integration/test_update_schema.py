"""``ns.update_schema()``: several column changes published by one ``__manifest`` commit
(PyIceberg's ``update_schema`` model), validated in order before anything is written."""

from __future__ import annotations

import datetime as dt
import os

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.consistency import LEAF_FIELD_ID_KEY

D = dt.date
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("country", pa.utf8()),
        pa.field("qty", pa.int32()),
        pa.field("legacy", pa.utf8()),
    ]
)


def _rows(ids: list[int], countries: list[str]) -> pa.Table:
    n = len(ids)
    return pa.table(
        {"id": ids, "country": countries, "qty": [7] * n, "legacy": ["x"] * n}, schema=SCHEMA
    )


@pytest.fixture
def ns(tmp_path: os.PathLike[str]) -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")


def test_several_changes_are_one_commit(ns: lp.PartitionedNamespace) -> None:
    before = ns.version
    with ns.update_schema() as update:
        update.add_columns([pa.field("note", pa.utf8())])
        update.rename_column("qty", "quantity").alter_column_type("quantity", pa.int64())
        update.drop_columns(["legacy"])
    assert ns.version == before + 1
    assert ns.schema.names == ["id", "country", "quantity", "note"]
    assert ns.schema.field("quantity").type == pa.int64()
    assert ns.namespace_schema.field_id("quantity") == 2  # a rename keeps the field id
    last = ns.versions().to_pylist()[-1]
    assert (last["operation"], last["mode"]) == ("evolve", "update_schema")
    # another handle on the namespace sees the same schema
    assert lp.PartitionedNamespace.open(ns.uri).schema == ns.schema


def test_renames_with_leaves_move_the_leaves_once_then_publish_once(
    ns: lp.PartitionedNamespace,
) -> None:
    ns.write(_rows([1, 2], ["US", "FR"]))
    before = ns.version
    with ns.update_schema() as update:
        update.rename_column("qty", "quantity").rename_column("legacy", "old")
        update.add_columns([pa.field("note", pa.utf8())])
    assert ns.version == before + 2  # step rename_leaves (both renames), then publish
    parts = ns.partitions()
    for location, version in zip(
        parts["location"].to_pylist(), parts["read_version"].to_pylist(), strict=True
    ):
        leaf = lance.dataset(f"{ns.uri}/{location}", version=version)
        assert {"quantity", "old"} <= set(leaf.schema.names)
        assert {"qty", "legacy"}.isdisjoint(leaf.schema.names)
        assert leaf.schema.field("quantity").metadata == {LEAF_FIELD_ID_KEY.encode(): b"2"}
    table = ns.to_table().sort_by("id")
    assert table.column_names == ["id", "country", "quantity", "old", "note"]
    assert table["quantity"].to_pylist() == [7, 7]
    assert table["note"].to_pylist() == [None, None]
    ns.write(pa.table({"id": [3], "country": ["US"], "quantity": pa.array([9], pa.int32())}))
    assert ns.to_table(filter="id = 3")["quantity"].to_pylist() == [9]


def test_a_forbidden_change_writes_nothing(ns: lp.PartitionedNamespace) -> None:
    before, schema = ns.version, ns.namespace_schema
    update = ns.update_schema().add_columns([pa.field("note", pa.utf8())])
    update.rename_column("qty", "id")  # onto a live column
    with pytest.raises(errors.SchemaError):
        update.commit()
    assert (ns.version, ns.namespace_schema) == (before, schema)
    assert lp.PartitionedNamespace.open(ns.uri).version == before


def _change_my_mind(ns: lp.PartitionedNamespace) -> None:
    with ns.update_schema() as update:
        update.add_columns([pa.field("note", pa.utf8())])
        raise RuntimeError("changed my mind")


def test_an_exception_in_the_block_commits_nothing(ns: lp.PartitionedNamespace) -> None:
    before = ns.version
    with pytest.raises(RuntimeError, match="changed my mind"):
        _change_my_mind(ns)
    assert lp.PartitionedNamespace.open(ns.uri).version == before


def test_an_update_commits_once_and_a_pinned_namespace_refuses(
    ns: lp.PartitionedNamespace,
) -> None:
    update = ns.update_schema().add_columns([pa.field("note", pa.utf8())])
    update.commit()
    with pytest.raises(errors.UnsupportedOperationError):
        update.commit()
    with pytest.raises(errors.UnsupportedOperationError):
        update.drop_columns(["note"])
    pinned = lp.PartitionedNamespace.open(ns.uri, version=ns.version - 1)
    pinned_update = pinned.update_schema().drop_columns(["legacy"])
    with pytest.raises(errors.UnsupportedOperationError):
        pinned_update.commit()
    nothing = ns.version
    with ns.update_schema():
        pass
    assert ns.version == nothing
