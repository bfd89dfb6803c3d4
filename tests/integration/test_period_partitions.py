"""Monthly and hourly partitions with ``months(ts)`` / ``hours(ts)`` on a real namespace: the
``__manifest`` metadata JSON, a fresh open, properties, appends and rows before 1970."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa

import lance_partitioned as lp
from lance_partitioned.spec.transforms import Hours, Months

UTC = dt.timezone.utc
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("ts", pa.timestamp("ms", "UTC"))])
STAMPS = [
    dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),  # month -1, hour -1
    dt.datetime(1970, 1, 1, tzinfo=UTC),  # month 0, hour 0
    dt.datetime(2024, 2, 29, 23, 30, tzinfo=UTC),
    dt.datetime(2024, 3, 1, 0, 30, tzinfo=UTC),
    dt.datetime(2024, 3, 1, 0, 45, tzinfo=UTC),
    None,
]


def test_months_and_hours_round_trip(tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    data = pa.table({"id": list(range(len(STAMPS))), "ts": pa.array(STAMPS, SCHEMA[1].type)})
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="months(ts), hours(ts)")
    ns.write(data)

    rows = ns.partitions().select(["ts_months", "ts_hours"]).to_pylist()
    march, feb = (2024 - 1970) * 12 + 2, (2024 - 1970) * 12 + 1
    first_of_march = (dt.date(2024, 3, 1) - dt.date(1970, 1, 1)).days * 24
    assert sorted(rows, key=lambda r: (r["ts_months"] is None, r["ts_months"], r["ts_hours"])) == [
        {"ts_months": -1, "ts_hours": -1},
        {"ts_months": 0, "ts_hours": 0},
        {"ts_months": feb, "ts_hours": first_of_march - 1},
        {"ts_months": march, "ts_hours": first_of_march},
        {"ts_months": None, "ts_hours": None},
    ]
    assert ns.partitions().schema.field("ts_months").type == pa.int32()
    before = "ts < TIMESTAMP '1970-01-01 00:00:00'"
    assert [dict(t.partition_values)["ts_months"] for t in ns.plan_scan(before)] == [-1]
    assert ns.to_table(before, columns=["id"]).column("id").to_pylist() == [0]
    after = "ts >= TIMESTAMP '2024-03-01 00:00:00'"
    assert ns.count_rows(after) == 2
    assert len(ns.plan_scan(after)) == 1

    # the metadata JSON carries the expressions; a fresh open parses them back to the classes
    stored = json.loads(lance.dataset(f"{root}/__manifest").metadata["partition_spec_v1"])
    assert [(f["name"], f["expression"], f["result_type"]) for f in stored] == [
        ("ts_months", Months().expression, {"type": "int32"}),
        ("ts_hours", Hours().expression, {"type": "int32"}),
    ]
    fresh = lp.PartitionedNamespace.open(root)
    assert [f.transform for f in fresh.current_spec.fields] == [Months(), Hours()]

    # the partition.<name> property is the number's string form
    adapter = fresh.as_lance_namespace()
    for row in fresh.partitions().to_pylist():
        if row["ts_hours"] is None:
            continue
        request = ln.DescribeTableRequest(id=row["object_id"].split("$"))
        properties = adapter.describe_table(request).properties or {}
        assert properties["partition.ts_months"] == str(row["ts_months"])
        assert properties["partition.ts_hours"] == str(row["ts_hours"])

    # appending to an existing hour finds its partition by value
    again = fresh.write(data.slice(3, 2))
    assert again.partitions_created == 0
    assert fresh.count_rows(after) == 4
