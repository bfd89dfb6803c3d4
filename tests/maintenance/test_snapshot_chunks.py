"""A ``__manifest`` spread over many fragments (one per commit, before optimize compacts it)
is read into one contiguous table: every scan plan filters it, and a table of one chunk per
fragment made the one-day query of the maintenance benchmark take 260 ms at 365 appends
(plan_scan alone ~200 ms over 358 chunks, 5-70 ms over one)."""

from __future__ import annotations

from pathlib import Path

import lance_partitioned as lp
from tests.maintenance.optimize_helpers import events, manifest_fragments


def test_a_fragmented_manifest_is_read_as_one_chunk(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=events(0, 1).schema, partition_by="country"
    )
    for n in range(8):  # each commit leaves the rows it does not touch in older fragments
        ns.write(events(n, 1, countries=[f"C{n}"]))
    assert manifest_fragments(ns.uri) > 4
    rows = lp.PartitionedNamespace.open(ns.uri).snapshot.rows
    assert {column.num_chunks for column in rows.columns} == {1}
    assert ns.count_rows("country = 'C3'") == 1
