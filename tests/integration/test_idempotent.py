"""Idempotent writes: a (application id, version) transaction recorded in the commit."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import lance_partitioned as lp
from lance_partitioned import transaction
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.ingest import WriteOptions, stage
from lance_partitioned.manifest import WriterTransactions
from lance_partitioned.transaction.write import commit_write

SCHEMA = pa.schema([("id", pa.int64()), ("key", pa.string())])


def pending(ns: lp.PartitionedNamespace, ids: range) -> transaction.PendingWrite:
    data = pa.table({"id": list(ids), "key": [f"k{i % 2}" for i in ids]}, schema=SCHEMA)
    return stage(
        ns._manifest,
        ns.refresh().snapshot,
        data,
        mode="append",
        target=leaf_schema(ns.namespace_schema),
        options=WriteOptions(),
    )


def ids(ns: lp.PartitionedNamespace) -> list[int]:
    return sorted(ns.refresh().to_table().column("id").to_pylist())


def test_a_committed_transaction_is_not_written_again(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="key")
    first = commit_write(ns._manifest, pending(ns, range(4)), txn=("etl", 0))
    assert not first.skipped
    again = commit_write(ns._manifest, pending(ns, range(4)), txn=("etl", 0))
    assert again.skipped
    assert again.version == first.version  # nothing committed
    older = commit_write(ns._manifest, pending(ns, range(9, 10)), txn=("etl", -1))
    assert older.skipped
    other = commit_write(ns._manifest, pending(ns, range(4, 6)), txn=("other", 0))
    later = commit_write(ns._manifest, pending(ns, range(6, 8)), txn=("etl", 1))
    assert not other.skipped
    assert not later.skipped
    assert ids(ns) == list(range(8))
    snapshot = ns.refresh().snapshot
    assert WriterTransactions.version_of(snapshot, "etl") == 1
    assert WriterTransactions.version_of(snapshot, "other") == 0
    assert WriterTransactions.version_of(snapshot, "nobody") is None


def test_the_transaction_survives_partition_evolution(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="key")
    commit_write(ns._manifest, pending(ns, range(2)), txn=("etl", 5))
    ns.update_partition_spec("bucket(2, id)")
    assert commit_write(ns._manifest, pending(ns, range(2)), txn=("etl", 5)).skipped
    assert ids(ns) == [0, 1]


def test_a_retry_after_a_conflict_checks_the_new_base(tmp_path: Path) -> None:
    """Two writers commit the same transaction at once: the one that loses the manifest
    compare-and-swap re-reads, finds the transaction committed and writes nothing."""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="key")
    ours, theirs = pending(ns, range(3)), pending(ns, range(3))
    raced = []

    def race(_: dict[str, int]) -> None:  # our leaves are committed, our manifest is not
        if not raced:
            raced.append(commit_write(ns._manifest, theirs, txn=("etl", 7)))

    result = commit_write(ns._manifest, ours, txn=("etl", 7), on_leaves_committed=race)
    assert not raced[0].skipped
    assert result.skipped
    assert result.attempts == 2
    assert ids(ns) == [0, 1, 2]
