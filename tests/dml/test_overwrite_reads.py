"""An ``overwrite_partitions`` replaces every row of its partitions, in every spec version:
a leaf of an older spec that it looked at and found no row to delete in is part of its plan,
so an append landing there before its ``__manifest`` commit makes it plan again.

Found by the concurrency soak (``benchmarks/soak/concurrency.py``): an append staged under
an older spec landed in such a leaf while the overwrite committed, and its rows survived the
overwrite that the replay says removed them.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import lance_partitioned as lp
from lance_partitioned import transaction
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.dml.replace import commit_staged
from lance_partitioned.ingest import WriteOptions, stage


def _rows(ids: list[int], keys: list[str]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array(keys, pa.string())})


def test_an_append_into_an_older_leaf_the_overwrite_looked_at_makes_it_plan_again(
    tmp_path: Path,
) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=_rows([], []).schema, partition_by="truncate(1, k)"
    )
    ns.write(_rows([1], ["dz"]))  # leaf 'd' of spec v1: no row of partition k = 'd'
    other = lp.PartitionedNamespace.open(ns.uri)
    manifest = other._manifest
    snapshot = manifest.snapshot()
    late = stage(  # an append staged under v1, committed later
        manifest,
        snapshot,
        _rows([2], ["d"]),
        mode="append",
        target=leaf_schema(snapshot.metadata.schema),
        options=WriteOptions(),
    )
    ns.update_partition_spec("k")
    with transaction.pause_at("leaves_committed", lambda: commit_staged(manifest, late)):
        result = ns.write(_rows([3], ["d"]), mode="overwrite_partitions")
    assert result.attempts == 2
    ns.refresh()
    got = sorted(zip(*(ns.to_table().column(c).to_pylist() for c in ("id", "k")), strict=True))
    # the overwrite of k = 'd' committed after the append: id 2 is replaced too
    assert got == [(1, "dz"), (3, "d")]
