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
