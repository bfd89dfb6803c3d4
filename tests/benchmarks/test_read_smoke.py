"""Smoke tests of ``benchmarks/read.py``: it runs end to end on a small table, and the
synthetic ``__manifest`` its planning benchmark builds has exactly the rows a real write has."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from tests.benchmarks.helpers import available, load, run


@pytest.mark.slow
def test_read_benchmark_runs_and_prints_its_table() -> None:
    systems = available("ours", "lance", "delta", "hive")
    done = run("read.py", "--rows", "20000", "--repeat", "1", "--only", ",".join(systems))
    header = "| measurement | " + " | ".join(f"{s} (ms)" for s in systems) + " | ours / lance |"
    assert header in done.stdout, done.stdout
    # every measurement ran and matched the reference result (a mismatch prints "failed")
    assert "failed" not in done.stdout, done.stdout
    assert "| `plan_scan` over 1,000 leaves, selective filter" in done.stdout


def test_synthetic_manifest_has_the_rows_a_real_write_has(tmp_path: Path) -> None:
    read, data = load("read"), load("_data")
    events = data.make_events(2000)  # every (year, country) of 2024-2025 occurs
    real = lp.PartitionedNamespace.create(
        str(tmp_path / "real"), schema=events.schema, partition_by=read.PARTITION_BY
    )
    real.write(events)
    leaves = read.synthetic_manifest(
        str(tmp_path / "fake"),
        events.schema,
        read.PARTITION_BY,
        [[2024, 2025], list(data.COUNTRIES)],
    )
    fake = lp.PartitionedNamespace.open(str(tmp_path / "fake"))
    assert leaves == 20

    def rows(ns: lp.PartitionedNamespace) -> pa.Table:
        table = ns.snapshot.rows.sort_by("object_id")
        return table.drop_columns(["metadata"])

    assert rows(fake).equals(rows(real))
    assert fake.snapshot.rows.schema.equals(real.snapshot.rows.schema, check_metadata=True)
    assert len(fake.plan_scan("country = 'FR' AND event_date >= DATE '2025-03-01'")) == 1
