"""DuckDB and Polars filters on struct fields (issue 33): pushed into the scan as Lance SQL on
the field's path (exact: the engine need not filter again), the same rows as ``to_table``."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.engines import EngineScan
from lance_partitioned.expressions import Unknown

DEVICE = pa.struct([("os", pa.string()), ("ver", pa.int32()), ("beta", pa.bool_())])


@pytest.fixture
def ns(tmp_path: Path) -> lp.PartitionedNamespace:
    oses = ("ios", "android", None, "ios")
    devices = [
        None if i % 9 == 8 else {"os": oses[i % 4], "ver": i % 6, "beta": i % 5 == 0}
        for i in range(30)
    ]
    data = pa.table(
        {
            "id": pa.array(range(30), pa.int64()),
            "country": [("US", "FR", None)[i % 3] for i in range(30)],
            "device": pa.array(devices, DEVICE),
        }
    )
    lp.write(str(tmp_path / "ns"), data, partition_by="country")
    return lp.PartitionedNamespace.open(str(tmp_path / "ns"))


def _expected(ns: lp.PartitionedNamespace, sql: str) -> list[int]:
    return sorted(ns.to_table(sql, columns=["id"]).column("id").to_pylist())


def _pushed(scans: list[EngineScan]) -> None:
    assert scans
    for scan in scans:
        assert scan.exact, scan.predicate
        assert isinstance(scan.predicate, Unknown) or "`device`." in repr(scan.predicate)


def test_duckdb_pushes_filters_on_struct_fields(ns: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    con = duckdb.connect()
    con.register("ev", ns.to_pyarrow_dataset(on_scan=scans.append))
    query = "SELECT id FROM ev WHERE device.os = 'ios' AND device.ver >= 2 ORDER BY id"
    got = [row[0] for row in con.execute(query).fetchall()]
    assert got == _expected(ns, "device.os = 'ios' AND device.ver >= 2")
    assert got
    _pushed(scans)


def test_polars_pushes_filters_on_struct_fields(ns: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    device = pl.col("device").struct
    query = (device.field("os") == "ios") | device.field("ver").is_null() | device.field("beta")
    got = ns.scan_polars(on_scan=scans.append).filter(query).select("id").collect()
    expected = _expected(ns, "device.os = 'ios' OR device.ver IS NULL OR device.beta")
    assert sorted(got["id"].to_list()) == expected
    assert expected
    _pushed(scans)
