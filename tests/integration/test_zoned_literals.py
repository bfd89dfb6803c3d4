"""A timestamp literal with an explicit UTC offset is the instant it names, against a column
with a time zone: pruning, the residual and in-memory filters all read it so, as DuckDB's
``TIMESTAMPTZ`` does; a literal without an offset stays on the column's wall clock."""

from __future__ import annotations

import datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import lance_partitioned as lp

ZONE = "Europe/Berlin"
SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", ZONE))])
START = datetime.datetime(2025, 5, 31, 20, tzinfo=datetime.timezone.utc)


def _events() -> pa.Table:
    """Every 15 minutes across Berlin's midnight of 2025-06-01 (22:00 UTC)."""
    stamps = [START + datetime.timedelta(minutes=15 * i) for i in range(48)]
    return pa.table({"id": range(48), "ts": pa.array(stamps, SCHEMA.field("ts").type)}, SCHEMA)


@pytest.fixture(scope="module")
def namespace(tmp_path_factory: pytest.TempPathFactory) -> lp.PartitionedNamespace:
    root = tmp_path_factory.mktemp("zoned") / "ns"
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="hours(ts)")
    ns.write(_events())
    return ns


def _duckdb_ids(condition: str) -> list[int]:
    """DuckDB's answer, its session in UTC, the literals as TIMESTAMPTZ (instants)."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.register("t", _events())
    sql = f"SELECT id FROM t WHERE {condition.replace('TIMESTAMP ', 'TIMESTAMPTZ ')}"
    return sorted(row[0] for row in con.sql(sql).fetchall())


@pytest.mark.parametrize(
    "condition",
    [
        "ts >= TIMESTAMP '2025-06-01 00:00:00+02:00'",
        "ts < TIMESTAMP '2025-05-31 22:30:00Z'",
        "ts BETWEEN TIMESTAMP '2025-05-31 23:00:00+01:00' "
        "AND TIMESTAMP '2025-06-01 02:00:00+02:00'",
        "ts IN (TIMESTAMP '2025-05-31 22:00:00+00:00', TIMESTAMP '2025-06-01 00:15:00+02:00')",
        # not decided by the partition values alone: a residual, and an expression of the column
        "ts >= TIMESTAMP '2025-06-01 00:07:00+02:00' AND id % 2 = 0",
        "ts + INTERVAL '1 hour' >= TIMESTAMP '2025-06-01 00:00:00+02:00'",
    ],
)
def test_an_offset_literal_is_the_instant_duckdb_reads(
    namespace: lp.PartitionedNamespace, condition: str
) -> None:
    want = _duckdb_ids(condition)
    assert 0 < len(want) < 48
    got = sorted(namespace.to_table(condition, columns=["id"]).column("id").to_pylist())
    assert got == want
    assert namespace.count_rows(condition) == len(want)


def test_pruning_keeps_the_leaves_of_the_instant(tmp_path: Path) -> None:
    # a fixed offset prunes exactly (a zone with DST rules widens bounds by a day)
    fixed = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", "+02:00"))])
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=fixed, partition_by="hours(ts)"
    )
    ns.write(_events().cast(fixed))
    condition = "ts >= TIMESTAMP '2025-06-01 07:00:00+02:00'"
    # 05:00 UTC onwards: the hours 05:00, 06:00 and 07:00 UTC, three leaves of twelve
    assert len(ns.plan_scan(condition)) == 3
    assert ns.count_rows(condition) == 12


def test_a_literal_without_an_offset_is_wall_clock_time(
    namespace: lp.PartitionedNamespace,
) -> None:
    # midnight in Berlin is 22:00 UTC: the first 8 quarter hours (from 20:00 UTC) are before
    assert namespace.count_rows("ts >= TIMESTAMP '2025-06-01 00:00:00'") == 40
    assert namespace.count_rows("ts >= TIMESTAMP '2025-06-01 00:00:00+02:00'") == 40
    assert namespace.count_rows("ts >= TIMESTAMP '2025-06-01 00:00:00+00:00'") == 32
