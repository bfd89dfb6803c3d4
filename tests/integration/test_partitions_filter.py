"""``partitions(filter=...)`` over the namespace's columns: the leaves a scan with that
filter reads (pruned by source columns), next to filters over the listing's own columns."""

from __future__ import annotations

from pathlib import Path

import pytest

from lance_partitioned import errors
from tests.cli.helpers import build

LATE = "ts >= TIMESTAMP '2026-01-01 00:00:00+00:00'"


@pytest.mark.parametrize(
    "condition", [LATE, f"{LATE} AND country = 'US'", "country IS NULL AND amount > 1"]
)
def test_a_filter_over_source_columns_lists_the_leaves_a_scan_reads(
    tmp_path: Path, condition: str
) -> None:
    ns = build(tmp_path / "ns")
    listed = ns.partitions(condition)
    scanned = [task.object_id for task in ns.plan_scan(condition)]
    assert listed.column("object_id").to_pylist() == sorted(scanned)
    assert 0 < listed.num_rows < ns.partitions(sizes=False).num_rows
    assert listed.column_names == ns.partitions().column_names


def test_a_filter_over_partition_columns_is_unchanged(tmp_path: Path) -> None:
    ns = build(tmp_path / "ns")
    assert ns.partitions("ts_year = 2026", sizes=False).column("ts_year").to_pylist() == [2026] * 3
    assert set(
        ns.partitions("spec_version = 2", sizes=False).column("spec_version").to_pylist()
    ) == {2}
    with pytest.raises(errors.InvalidInputError, match=r"partition filter.*nope"):
        ns.partitions("nope = 1")
