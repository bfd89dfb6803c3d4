"""Daily partitions with ``date(ts)`` on a real namespace: pruning, the ``__manifest`` metadata
JSON, names and properties, and a fresh open."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa

import lance_partitioned as lp
from lance_partitioned.spec.transforms import Date

UTC = dt.timezone.utc
SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("ts", pa.timestamp("us", "UTC"))])


def _data() -> pa.Table:
    start = dt.datetime(2024, 2, 27, 22, tzinfo=UTC)
    stamps = [start + dt.timedelta(hours=7 * i) for i in range(20)] + [None]
    return pa.table({"id": list(range(21)), "ts": pa.array(stamps, SCHEMA.field("ts").type)})


def test_date_partitions_prune_ranges_and_round_trip(tmp_path: Path) -> None:
    root = str(tmp_path / "daily")
    data = _data()
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="date(ts)")
    ns.write(data)

    parts = ns.partitions()
    assert parts.schema.field("ts_date").type == pa.date32()
    days = parts.column("ts_date").to_pylist()
    expected_days = {None} | {s.date() for s in data.column("ts").to_pylist() if s is not None}
    assert set(days) == expected_days
    assert len(days) == len(expected_days)
    for object_id in parts.column("object_id").to_pylist():
        assert re.fullmatch(r"v1\$[0-9a-z]{16}\$dataset", object_id)

    condition = "ts >= TIMESTAMP '2024-03-01 00:00:00+00:00'"
    kept = {dict(t.partition_values)["ts_date"] for t in ns.plan_scan(condition)}
    assert kept == {d for d in expected_days if d is not None and d >= dt.date(2024, 3, 1)}
    march = [i for i, s in enumerate(data.column("ts").to_pylist()) if s and s.month == 3]
    assert sorted(ns.to_table(condition, columns=["id"]).column("id").to_pylist()) == march
    between = (
        "ts BETWEEN TIMESTAMP '2024-02-28 00:00:00+00:00' AND TIMESTAMP '2024-02-28 23:00:00+00:00'"
    )
    assert [dict(t.partition_values)["ts_date"] for t in ns.plan_scan(between)] == [
        dt.date(2024, 2, 28)
    ]

    # the metadata JSON carries the expression and its type; a fresh open parses it back
    stored = lance.dataset(f"{root}/__manifest").metadata["partition_spec_v1"]
    (field,) = json.loads(stored)
    assert field["expression"] == "CAST(col AS DATE)"
    assert field["result_type"] == {"type": "date32"}
    fresh = lp.PartitionedNamespace.open(root)
    (bound,) = fresh.current_spec.fields
    assert (bound.name, bound.transform, bound.result_type) == ("ts_date", Date(), pa.date32())
    assert fresh.count_rows(condition) == len(march)

    # the partition.<name> property is the date's string form; the NULL day has none
    adapter = fresh.as_lance_namespace()
    for row in fresh.partitions().to_pylist():
        request = ln.DescribeTableRequest(id=row["object_id"].split("$"))
        properties = adapter.describe_table(request).properties or {}
        if row["ts_date"] is None:
            assert "partition.ts_date" not in properties
        else:
            assert properties["partition.ts_date"] == row["ts_date"].isoformat()

    # appending to an existing day finds its partition by value
    again = fresh.write(data.slice(0, 2))
    assert again.partitions_created == 0
