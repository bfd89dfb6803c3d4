"""Struct fields named by Lance's dotted paths (issue 33): in filters and column lists of
scans, in DML conditions; segments may be quoted with backticks, as Lance and DataFusion
quote (Lance stores no name with a dot, so a dotted name is always a path)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.errors import InvalidInputError, PartitionByParseError

DEVICE = pa.struct([("os", pa.utf8()), ("ver", pa.int32())])
SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.utf8()), ("device", DEVICE)])


def _rows() -> pa.Table:
    devices = [
        {"os": "ios", "ver": 17},
        {"os": "android", "ver": 14},
        {"os": "ios", "ver": 16},
        None,
        {"os": None, "ver": 1},
        {"os": "ios", "ver": 18},
    ]
    return pa.table(
        {
            "id": pa.array(range(6), pa.int64()),
            "country": ["DE", "US", "DE", None, "FR", "US"],
            "device": pa.array(devices, DEVICE),
        },
        SCHEMA,
    )


@pytest.fixture
def ns(tmp_path: Path) -> lp.PartitionedNamespace:
    lp.write(str(tmp_path / "ns"), _rows(), partition_by="country")
    return lp.PartitionedNamespace.open(str(tmp_path / "ns"))


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def test_count_rows_filters_on_a_struct_field(ns: lp.PartitionedNamespace) -> None:
    assert ns.count_rows("device.os = 'ios'") == 3
    assert ns.count_rows("device.os = 'ios' AND country = 'US'") == 1
    assert ns.count_rows("device.os IS NULL") == 2  # a NULL struct and a NULL field


def test_to_table_filters_on_a_struct_field(ns: lp.PartitionedNamespace) -> None:
    assert _ids(ns.to_table("device.ver > 16", columns=["id"])) == [0, 5]
    assert _ids(ns.to_table("upper(device.os) = 'ANDROID'", columns=["id"])) == [1]


def test_path_segments_may_be_quoted_with_backticks(ns: lp.PartitionedNamespace) -> None:
    assert _ids(ns.to_table("`device`.`ver` >= 17", columns=["id"])) == [0, 5]
    table = ns.to_table(columns=["id", "`device`.`ver`"])
    assert table.schema.names == ["id", "`device`.`ver`"]
    got = dict(zip(table.column("id").to_pylist(), table.column(1).to_pylist(), strict=True))
    assert got == {0: 17, 1: 14, 2: 16, 3: None, 4: 1, 5: 18}


def test_columns_select_struct_fields_as_pylance_does(ns: lp.PartitionedNamespace) -> None:
    table = ns.to_table("country = 'DE' OR country IS NULL", columns=["id", "device.os"])
    assert table.schema == pa.schema([("id", pa.int64()), ("device.os", pa.utf8())])
    got = dict(zip(table.column("id").to_pylist(), table.column(1).to_pylist(), strict=True))
    assert got == {0: "ios", 2: "ios", 3: None}
    batches = ns.to_batches(columns=["device.ver"], filter="device.os = 'android'")
    assert pa.Table.from_batches(list(batches)).column(0).to_pylist() == [14]


def test_an_unknown_field_is_a_typed_error(ns: lp.PartitionedNamespace) -> None:
    with pytest.raises(InvalidInputError, match=r"device\.model.*dotted path"):
        ns.to_table(columns=["device.model"])
    with pytest.raises(InvalidInputError):
        ns.count_rows("device.model = 'x'")


def test_dml_where_on_a_struct_field(ns: lp.PartitionedNamespace) -> None:
    assert ns.delete("device.os = 'android'").rows_deleted == 1
    assert ns.update("device.ver < 17", values={"country": "FR"}).rows_updated == 2
    assert _ids(ns.to_table("country = 'FR'", columns=["id"])) == [2, 4]
    assert ns.count_rows() == 5


def test_a_field_below_a_non_struct_as_partition_source_is_a_clear_error(
    tmp_path: Path,
) -> None:
    # a struct child is a source (tests/integration/test_struct_sources.py); a field of a
    # string column is not
    with pytest.raises(PartitionByParseError, match=r"'country' is of type string.*not a struct"):
        lp.write(str(tmp_path / "ns"), _rows(), partition_by="bucket(4, country.x)")


def test_a_renamed_struct_column_is_read_by_its_new_path(ns: lp.PartitionedNamespace) -> None:
    # the leaves keep the old name: the filter runs in memory on the conformed rows
    ns.rename_column("device", "dev")
    assert ns.count_rows("dev.os = 'ios'") == 3
    table = ns.to_table("dev.ver > 16", columns=["id", "dev.os"])
    assert sorted(table.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 0, "dev.os": "ios"},
        {"id": 5, "dev.os": "ios"},
    ]


def test_a_renamed_struct_field_is_read_by_its_new_path(ns: lp.PartitionedNamespace) -> None:
    # renaming a field inside a struct renames it in every leaf (no false type change)
    ns.rename_column("device.os", "platform")
    assert ns.count_rows("device.platform = 'ios'") == 3
    assert ns.schema.field("device").type.names == ["platform", "ver"]
