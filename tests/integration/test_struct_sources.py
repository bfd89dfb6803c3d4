"""Struct children as partition sources (issue 33): ``partition_by="identity(device.os),
bucket(4, device.ver)"`` writes each row under its struct child's values (NULL under a NULL
struct), filters on ``device.os`` prune, DML and merge route rows by them, a rename of the
child keeps them, dropping it or its struct is refused; in both dialects."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned.errors import SchemaError
from lance_partitioned.verify import verify

DEVICE = pa.struct([("os", pa.utf8()), ("ver", pa.int32())])
SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.utf8()), ("device", DEVICE)])
PARTITION_BY = "identity(device.os), bucket(4, device.ver)"
OS_VALUES = ["ios", "android", None, "ios", "linux", "android"]


def _rows(start: int = 0, n: int = 24) -> pa.Table:
    devices = [
        None if i % 7 == 3 else {"os": OS_VALUES[i % 6], "ver": 10 + i % 9}
        for i in range(start, start + n)
    ]
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "country": [["DE", "US", None][i % 3] for i in range(start, start + n)],
            "device": pa.array(devices, DEVICE),
        },
        SCHEMA,
    )


def _field(table: pa.Table, name: str) -> pa.ChunkedArray:
    return pc.struct_field(table.column("device"), name)


# (filter, the same condition over a full table, as a pyarrow mask)
FILTERS: list[tuple[str, Callable[[pa.Table], pa.ChunkedArray]]] = [
    ("device.os = 'ios'", lambda t: pc.equal(_field(t, "os"), "ios")),
    ("device.os IS NULL", lambda t: pc.is_null(_field(t, "os"))),
    (
        "device.os IN ('linux', 'android')",
        lambda t: pc.is_in(_field(t, "os"), pa.array(["linux", "android"])),
    ),
    ("device.ver = 12", lambda t: pc.equal(_field(t, "ver"), 12)),
    (
        "`device`.`os` = 'android' AND device.ver >= 14",
        lambda t: pc.and_(
            pc.equal(_field(t, "os"), "android"), pc.greater_equal(_field(t, "ver"), 14)
        ),
    ),
]


def _with_os(os: str) -> list[int]:
    """The ids of :func:`_rows` whose ``device.os`` is ``os``."""
    return [i for i in range(24) if i % 7 != 3 and OS_VALUES[i % 6] == os]


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def _check_pruned_reads(ns: lp.PartitionedNamespace) -> None:
    """Each filter reads what the full scan + the filter gives, from fewer leaves."""
    full = ns.to_table()
    everything = len(ns.plan_scan())
    for text, mask in FILTERS:
        expected = _ids(full.filter(pc.fill_null(mask(full), False)))
        assert _ids(ns.to_table(text)) == expected, text
        assert ns.count_rows(text) == len(expected), text
        assert len(ns.plan_scan(text)) < everything, text


@pytest.fixture(params=["spec000", "published"])
def ns(request: pytest.FixtureRequest, tmp_path: Path) -> lp.PartitionedNamespace:
    root = str(tmp_path / "ns")
    created = lp.PartitionedNamespace.create(
        root, schema=SCHEMA, partition_by=PARTITION_BY, dialect=request.param
    )
    created.write(_rows())
    return lp.PartitionedNamespace.open(root)


def test_struct_children_are_the_sources_and_filters_on_them_prune(
    ns: lp.PartitionedNamespace,
) -> None:
    schema = ns.namespace_schema
    assert [schema.path_of(f.source_id) for f in ns.current_spec.fields] == [
        ("device", "os"),
        ("device", "ver"),
    ]
    _check_pruned_reads(ns)
    assert verify(ns.uri).problems == []  # each leaf's rows give its partition values


def test_a_null_struct_gives_null_partition_values(ns: lp.PartitionedNamespace) -> None:
    partitions = ns.partitions(sizes=False)
    os_column = next(c for c in partitions.column_names if c.endswith("device_os"))
    bucket = next(c for c in partitions.column_names if c.endswith("device_ver_bucket"))
    nulls = partitions.filter(pc.is_null(partitions.column(os_column)))
    # rows with os NULL under a live struct, and rows whose struct is NULL (bucket NULL too)
    assert None in nulls.column(bucket).to_pylist()
    expected = [i for i in range(24) if i % 7 == 3 or OS_VALUES[i % 6] is None]
    assert _ids(ns.to_table("device.os IS NULL")) == expected
    assert _ids(ns.to_table("device IS NULL")) == [i for i in range(24) if i % 7 == 3]


def test_dml_and_merge_route_rows_by_the_struct_child(ns: lp.PartitionedNamespace) -> None:
    assert ns.delete("device.os = 'linux'").rows_deleted == len(_with_os("linux"))
    assert ns.update("device.os = 'ios'", values={"country": "FR"}).rows_updated == 7
    assert _ids(ns.to_table("country = 'FR'")) == _with_os("ios")
    # an upsert that moves rows to another device.os partition, and inserts new ones
    source = _rows(0, 30).filter(pc.greater_equal(pc.field("id"), 20))
    moved = pa.table(
        {
            "id": source.column("id"),
            "country": source.column("country"),
            "device": pa.array([{"os": "tvos", "ver": 3}] * source.num_rows, DEVICE),
        },
        SCHEMA,
    )
    ns.merge(moved, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert _ids(ns.to_table("device.os = 'tvos'")) == list(range(20, 30))
    ns.write(_rows(100, 6), mode="overwrite_partitions")
    assert verify(ns.uri).problems == []
    _check_pruned_reads(ns)


def test_a_renamed_struct_child_keeps_partitioning(ns: lp.PartitionedNamespace) -> None:
    source_ids = [f.source_id for f in ns.current_spec.fields]
    ns.rename_column("device.os", "platform")
    assert [f.source_id for f in ns.current_spec.fields] == source_ids
    everything = len(ns.plan_scan())
    assert len(ns.plan_scan("device.platform = 'ios'")) < everything
    expected = _with_os("ios")
    assert _ids(ns.to_table("device.platform = 'ios'")) == expected
    ns.write(
        pa.table(
            {
                "id": pa.array([50], pa.int64()),
                "country": ["DE"],
                "device": pa.array([{"platform": "ios", "ver": 1}], ns.schema.field("device").type),
            }
        )
    )
    assert _ids(ns.to_table("device.platform = 'ios'")) == [*expected, 50]
    assert verify(ns.uri).problems == []


def test_dropping_a_source_struct_or_child_is_refused(ns: lp.PartitionedNamespace) -> None:
    for name in ("device", "device.os", "device.ver"):
        with pytest.raises(SchemaError, match="update the partition spec first"):
            ns.drop_columns([name])
    ns.update_partition_spec("country")
    ns.drop_columns(["device"])  # no longer a source of the current spec
    assert "device" not in ns.schema.names
    assert ns.count_rows() == 24


def test_a_spec_evolves_onto_a_struct_child(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=SCHEMA, partition_by="country")
    ns.write(_rows())
    spec = ns.update_partition_spec("truncate(2, device.os) AS os2")
    assert ns.namespace_schema.path_of(spec.fields[0].source_id) == ("device", "os")
    ns.write(_rows(100, 24))
    v2 = [t for t in ns.plan_scan("device.os = 'ios'") if t.spec_version == spec.version]
    assert {dict(t.partition_values)["os2"] for t in v2} == {"io"}
    full = ns.to_table()
    expected = _ids(full.filter(pc.fill_null(pc.equal(_field(full, "os"), "ios"), False)))
    assert _ids(ns.to_table("device.os = 'ios'")) == expected
    assert verify(ns.uri).problems == []
