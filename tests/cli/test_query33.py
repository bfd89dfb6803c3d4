"""The command line on issue 33's queries: ``partitions --filter`` over source columns,
zoned timestamp literals with an explicit offset."""

from __future__ import annotations

import json
from pathlib import Path

import lance_partitioned as lp
from tests.cli.helpers import cli


def test_partitions_filter_over_a_source_column_prunes_as_scan_does(namespace: Path) -> None:
    condition = "ts >= TIMESTAMP '2026-01-01 00:00:00+00:00'"
    result = cli("partitions", namespace, "--filter", condition, "--json")
    assert result.code == 0, result.err
    listed = sorted(leaf["object_id"] for leaf in result.json())
    ns = lp.PartitionedNamespace.open(str(namespace))
    assert listed == sorted(task.object_id for task in ns.plan_scan(condition))
    assert 0 < len(listed) < ns.partitions(sizes=False).num_rows


def test_scan_filter_with_an_offset_literal_reads_the_instant(tmp_path: Path) -> None:
    import datetime as dt

    import pyarrow as pa

    zoned = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", "Europe/Berlin"))])
    start = dt.datetime(2025, 5, 31, 20, tzinfo=dt.timezone.utc)  # 22:00 in Berlin
    stamps = [start + dt.timedelta(minutes=15 * i) for i in range(16)]
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=zoned, partition_by="days(ts)")
    ns.write(pa.table({"id": range(16), "ts": pa.array(stamps, zoned.field("ts").type)}, zoned))
    # midnight in Berlin (+02:00) is 22:00 UTC: the last 8 quarter hours
    condition = "ts >= TIMESTAMP '2025-06-01 00:00:00+02:00'"
    result = cli("scan", tmp_path / "ns", "--filter", condition, "--columns", "id", "--json")
    assert result.code == 0, result.err
    assert sorted(json.loads(line)["id"] for line in result.out.splitlines()) == list(range(8, 16))
