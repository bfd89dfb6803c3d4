"""The command line on issue 33's queries: ``partitions --filter`` over source columns,
zoned timestamp literals with an explicit offset."""

from __future__ import annotations

from pathlib import Path

import lance_partitioned as lp
from tests.cli.conftest import Here


def test_partitions_filter_over_a_source_column_prunes_as_scan_does(
    namespace: Path, here: Here
) -> None:
    condition = "ts >= TIMESTAMP '2026-01-01 00:00:00+00:00'"
    result = here("partitions", namespace, "--filter", condition, "--json")
    assert result.code == 0, result.err
    listed = sorted(leaf["object_id"] for leaf in result.json())
    ns = lp.PartitionedNamespace.open(str(namespace))
    assert listed == sorted(task.object_id for task in ns.plan_scan(condition))
    assert 0 < len(listed) < ns.partitions(sizes=False).num_rows
