"""The command line on struct fields (issue 33): ``scan --columns device.os --filter
"device.os = 'ios'"`` as pylance answers it."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

import lance_partitioned as lp
from tests.cli.helpers import cli

DEVICE = pa.struct([("os", pa.utf8()), ("ver", pa.int32())])


def test_scan_columns_and_filter_on_a_struct_field(tmp_path: Path) -> None:
    devices = [{"os": "ios", "ver": 17}, {"os": "android", "ver": 14}, None, {"os": "ios"}]
    data = pa.table(
        {"id": range(4), "country": ["DE", "US", "DE", "FR"], "device": pa.array(devices, DEVICE)}
    )
    lp.write(str(tmp_path / "ns"), data, partition_by="country")
    result = cli(
        "scan",
        tmp_path / "ns",
        "--columns",
        "id,device.os",
        "--filter",
        "device.os = 'ios'",
        "--json",
    )
    assert result.code == 0, result.err
    rows = sorted((json.loads(line) for line in result.out.splitlines()), key=lambda r: r["id"])
    assert rows == [{"id": 0, "device.os": "ios"}, {"id": 3, "device.os": "ios"}]


def test_create_partitions_by_a_struct_field_and_scan_prunes_on_it(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    devices = [{"os": "ios", "ver": 17}, {"os": "android", "ver": 14}, None, {"os": "ios"}]
    data = pa.table({"id": pa.array(range(4), pa.int64()), "device": pa.array(devices, DEVICE)})
    pq.write_table(data, tmp_path / "data.parquet")
    ns = tmp_path / "ns"
    created = cli(
        "create",
        ns,
        "--schema",
        tmp_path / "data.parquet",
        "--partition-by",
        "device.os, bucket(2, device.ver)",
    )
    assert created.code == 0, created.err
    written = cli("write", ns, tmp_path / "data.parquet")
    assert written.code == 0, written.err
    described = cli("describe", ns, "--json")
    assert described.code == 0, described.err
    fields = described.json()["specs"][0]["fields"]
    assert [(f["name"], f["source"]) for f in fields] == [
        ("device_os", "device.os"),
        ("device_ver_bucket", "device.ver"),
    ]
    plan = cli("scan", ns, "--filter", "device.os = 'ios'", "--explain", "--json")
    assert plan.code == 0, plan.err
    assert (plan.json()["kept"], plan.json()["leaves"]) == (2, 4)
