"""optimize drops leaves that row-level changes left without a live row: a partition emptied
by a delete, an update or a merge disappears from ``partitions()`` (as from a Delta table),
older versions still read it, and a write racing the drop is never lost."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import lance_partitioned as lp
from lance_partitioned import transaction
from lance_partitioned.verify import verify

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string())])


def _ns(tmp_path: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=SCHEMA, partition_by="k")
    ns.write(pa.table({"id": [1, 2, 3, 4], "k": ["a", "a", "b", "c"]}, schema=SCHEMA))
    return ns


def _keys(ns: lp.PartitionedNamespace) -> list[str]:
    return sorted(ns.partitions(sizes=False).column("k").to_pylist())


def test_leaves_emptied_by_a_delete_and_an_update_are_dropped(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.delete("id % 2 = 1 AND k = 'a' OR id = 2")  # a's two rows, row by row (no pruned drop)
    ns.update("k = 'c'", set={"k": "'b'"})  # c's only row moves to b
    assert _keys(ns) == ["a", "b", "c"]  # emptied, still listed
    emptied_at = ns.version

    result = ns.optimize()

    assert result.leaves_dropped == 2
    assert _keys(ns) == ["b"]
    assert sorted(ns.to_table()["id"].to_pylist()) == [3, 4]
    old = lp.PartitionedNamespace.open(str(tmp_path / "ns"), version=emptied_at)
    assert sorted(old.to_table()["id"].to_pylist()) == [3, 4]
    assert verify(ns.uri).problems == []
    again = ns.optimize()
    assert (again.leaves_dropped, again.version) == (0, ns.version)


def test_a_row_written_into_an_empty_leaf_while_optimize_plans_is_kept(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.delete("id = 1 OR id = 2")
    other = lp.PartitionedNamespace.open(str(tmp_path / "ns"))

    def append() -> None:
        other.write(pa.table({"id": [9], "k": ["a"]}, schema=SCHEMA))

    with transaction.pause_at("leaves_committed", append):
        result = ns.optimize()

    assert result.leaves_dropped == 0  # planned again: the leaf is no longer empty
    assert sorted(ns.to_table()["id"].to_pylist()) == [3, 4, 9]
    assert _keys(ns) == ["a", "b", "c"]
