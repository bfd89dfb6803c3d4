"""``transaction.commit_changes``: leaf changes, drops and writes in one ``__manifest`` commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance import LanceDataset, LanceOperation

import lance_partitioned as lp
from lance_partitioned import errors, transaction
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.ingest import WriteOptions, stage
from lance_partitioned.manifest import ManifestSnapshot
from lance_partitioned.transaction.write import commit_write

SCHEMA = pa.schema([("id", pa.int64()), ("key", pa.string())])


def namespace(tmp_path: Path, ids: range = range(6)) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="key")
    ns.write(rows(ids))
    return ns


def rows(ids: range | list[int]) -> pa.Table:
    return pa.table({"id": list(ids), "key": [f"k{i % 2}" for i in ids]}, schema=SCHEMA)


def pending(ns: lp.PartitionedNamespace, ids: range | list[int]) -> transaction.PendingWrite:
    return stage(
        ns._manifest,
        ns.refresh().snapshot,
        rows(ids),
        mode="append",
        target=leaf_schema(ns.namespace_schema),
        options=WriteOptions(),
    )


def leaf_of(ns: lp.PartitionedNamespace, key: str) -> str:
    leaves = ns.refresh().partitions().to_pylist()
    return str(next(leaf["object_id"] for leaf in leaves if leaf["key"] == key))


def deleting(predicate: str, calls: list[int] | None = None) -> Any:
    """A ``prepare`` that deletes the rows matching ``predicate`` (deletion files)."""

    def prepare(ds: LanceDataset) -> Any:
        if calls is not None:
            calls.append(ds.version)
        updated, removed = [], []
        for fragment in ds.get_fragments():
            new = fragment.delete(predicate)
            if new is None:
                removed.append(fragment.fragment_id)
            elif new.deletion_file != fragment.metadata.deletion_file:
                updated.append(new)
        if not updated and not removed:
            return None
        return LanceOperation.Delete(updated, removed, predicate)

    return prepare


def ids(ns: lp.PartitionedNamespace, version: int | None = None) -> list[int]:
    opened = ns if version is None else lp.PartitionedNamespace.open(ns.uri, version=version)
    return sorted(opened.refresh().to_table().column("id").to_pylist())


def test_a_change_deletes_rows_in_one_commit_and_records_properties(tmp_path: Path) -> None:
    ns = namespace(tmp_path)
    before = ns.version
    k0 = leaf_of(ns, "k0")
    plan = transaction.ChangePlan(
        changes=[transaction.LeafChange(k0, deleting("id = 2"))],
        properties={"lance_partitioned.operation": "delete"},
    )
    result = transaction.commit_changes(ns._manifest, lambda _: plan)
    assert result.version == before + 1
    assert list(result.changed) == [k0]
    assert ids(ns) == [0, 1, 3, 4, 5]
    assert ids(ns, before) == [0, 1, 2, 3, 4, 5]  # readers of the older version keep the row
    manifest = lance.dataset(str(tmp_path / "__manifest"))
    properties = manifest.read_transaction(result.version).transaction_properties
    assert properties["lance_partitioned.operation"] == "delete"
    assert ns.refresh().count_rows() == 5  # the row stats follow the change


def test_a_drop_removes_the_leaf_without_reading_it(tmp_path: Path) -> None:
    ns = namespace(tmp_path)
    before = ns.version
    k1 = leaf_of(ns, "k1")
    result = transaction.commit_changes(ns._manifest, lambda _: transaction.ChangePlan(drops=[k1]))
    assert result.dropped == [k1]
    assert ids(ns) == [0, 2, 4]
    assert not ns.refresh().snapshot.has(k1)
    assert ids(ns, before) == [0, 1, 2, 3, 4, 5]


def test_a_change_and_an_append_on_one_leaf_chain_in_one_commit(tmp_path: Path) -> None:
    """What an update does when rows stay in their partition: delete the old rows, append
    the new ones, both visible at once."""
    ns = namespace(tmp_path)
    k0 = leaf_of(ns, "k0")
    staged = pending(ns, [10, 12])
    plan = transaction.ChangePlan(
        changes=[transaction.LeafChange(k0, deleting("id IN (0, 2)"))], writes=staged
    )
    versions = []
    result = transaction.commit_changes(
        ns._manifest, lambda _: plan, on_leaves_committed=versions.append
    )
    assert result.version == ns.version + 1
    assert ids(ns) == [1, 3, 4, 5, 10, 12]
    leaf = lance.dataset(str(tmp_path / ns.refresh().snapshot.location(k0)))
    assert versions[0][k0] == leaf.version == ns.snapshot.read_version(k0)


def test_nothing_to_change_commits_nothing(tmp_path: Path) -> None:
    ns = namespace(tmp_path)
    before = ns.version
    k0 = leaf_of(ns, "k0")
    plan = transaction.ChangePlan(changes=[transaction.LeafChange(k0, deleting("id = 99"))])
    result = transaction.commit_changes(ns._manifest, lambda _: plan)
    assert result.changed == {}
    assert ns._manifest.latest_version() == before + 1  # rewrote the spec rows only
    assert transaction.commit_changes(ns._manifest, lambda _: transaction.ChangePlan()).skipped
    assert ns._manifest.latest_version() == before + 1


def _change_racing_an_append(
    tmp_path: Path, *, serializable: bool
) -> tuple[lp.PartitionedNamespace, transaction.CommitResult, list[int], list[int]]:
    """Delete ``id < 3`` from leaf k0 while another writer appends ids 0, 2 and 8 between our
    leaf commit and our manifest commit; returns the namespace, the result, the snapshot
    versions the planner saw and the leaf versions the change was prepared on."""
    ns = namespace(tmp_path)
    k0 = leaf_of(ns, "k0")
    calls: list[int] = []
    seen: list[int] = []
    change = transaction.LeafChange(k0, deleting("id < 3", calls))

    def plan(snapshot: ManifestSnapshot) -> transaction.ChangePlan:
        seen.append(snapshot.version)
        return transaction.ChangePlan(changes=[change], serializable=serializable)

    other = lp.PartitionedNamespace.open(str(tmp_path))
    with transaction.pause_at("leaves_committed", lambda: other.write(rows([0, 2, 8]))):
        result = transaction.commit_changes(ns._manifest, plan)
    return ns, result, seen, calls


def test_a_change_racing_an_append_is_rebased_over_it(tmp_path: Path) -> None:
    """Our manifest commit conflicts with the append, and the change (prepared once, on the
    version it read) is committed again on top of the append without planning again
    (WriteSerializable: the rows appended meanwhile are not deleted, though they match)."""
    ns, result, seen, calls = _change_racing_an_append(tmp_path, serializable=False)
    assert result.attempts == 2
    assert len(seen) == 1  # not planned again
    assert len(calls) == 1  # not prepared again
    assert ids(ns) == [0, 1, 2, 3, 4, 5, 8]


def test_a_serializable_change_racing_an_append_is_redone_on_the_new_base(
    tmp_path: Path,
) -> None:
    """The same race for a plan that depends on every row of its leaves (a replace-where):
    the planner is called with the new snapshot and the change prepared again on top of the
    append, which it deletes too."""
    ns, result, seen, calls = _change_racing_an_append(tmp_path, serializable=True)
    assert result.attempts == 2
    assert len(seen) == 2
    assert seen[1] == seen[0] + 1
    assert len(calls) == 2  # prepared again on the leaf with the append
    assert ids(ns) == [1, 3, 4, 5, 8]


def test_an_unchanged_leaf_commit_is_reused_after_a_manifest_conflict(tmp_path: Path) -> None:
    """A concurrent commit that touches other leaves only: the change is not prepared again."""
    ns = namespace(tmp_path)
    k0 = leaf_of(ns, "k0")
    calls: list[int] = []
    change = transaction.LeafChange(k0, deleting("id = 4", calls))
    other = lp.PartitionedNamespace.open(str(tmp_path))
    with transaction.pause_at("leaves_committed", lambda: other.write(rows([7]))):
        result = transaction.commit_changes(
            ns._manifest, lambda _: transaction.ChangePlan(changes=[change])
        )
    assert result.attempts == 2
    assert len(calls) == 1
    assert ids(ns) == [0, 1, 2, 3, 5, 7]


def test_a_failure_before_the_manifest_commit_leaves_nothing_visible(tmp_path: Path) -> None:
    ns = namespace(tmp_path)
    before = ns.version
    k0 = leaf_of(ns, "k0")
    plan = transaction.ChangePlan(
        changes=[transaction.LeafChange(k0, deleting("id = 0"))], drops=[leaf_of(ns, "k1")]
    )

    def crash() -> None:
        raise RuntimeError("injected")

    with transaction.pause_at("leaves_committed", crash), pytest.raises(RuntimeError):
        transaction.commit_changes(ns._manifest, lambda _: plan)
    assert ns._manifest.latest_version() == before
    assert ids(ns) == [0, 1, 2, 3, 4, 5]
    # the leaf holds an orphan version on top; the next write restores it away
    ns.write(rows([6]))
    assert ids(ns) == [0, 1, 2, 3, 4, 5, 6]


def test_a_plan_that_contradicts_its_snapshot_is_refused(tmp_path: Path) -> None:
    ns = namespace(tmp_path)
    k0 = leaf_of(ns, "k0")
    with pytest.raises(errors.InternalError, match="changed twice"):
        transaction.commit_changes(
            ns._manifest,
            lambda _: transaction.ChangePlan(
                changes=[
                    transaction.LeafChange(k0, deleting("id = 0")),
                    transaction.LeafChange(k0, deleting("id = 2")),
                ]
            ),
        )
    with pytest.raises(errors.InternalError, match="read leaf"):
        transaction.commit_changes(ns._manifest, lambda _: transaction.ChangePlan(reads={k0: 999}))
    with pytest.raises(errors.InternalError, match="dropped"):
        transaction.commit_changes(
            ns._manifest, lambda _: transaction.ChangePlan(drops=["v1$nope$dataset"])
        )


def schema_only(ns: lp.PartitionedNamespace) -> list[transaction.LeafWrite]:
    """A leaf write without data for every leaf of the latest ``__manifest`` (what
    ``rename_column`` commits to bring each leaf to the leaf schema), listed once."""
    leaves = ns.refresh().partitions(sizes=False)
    return [
        transaction.LeafWrite(object_id, location, [], 0, {})
        for object_id, location in zip(
            leaves.column("object_id").to_pylist(),
            leaves.column("location").to_pylist(),
            strict=True,
        )
    ]


DROPPING = {
    "delete": lambda n: n.delete("key = 'k1'"),
    "overwrite": lambda n: n.write(rows([0]), mode="overwrite"),
}


@pytest.mark.parametrize("drop", list(DROPPING))
def test_a_leaf_write_without_data_never_creates_a_leaf(tmp_path: Path, drop: str) -> None:
    """A plan listed leaf k1 for a schema-only write (no fragments); another writer removed k1
    from the __manifest before the plan's __manifest commit, which conflicts and is retried
    on a snapshot without k1. The retry must not create k1 again: there is nothing to write
    in it. (Before: k1 came back as an empty leaf whose __manifest row had a NULL partition
    value, and a later write of k1's rows landed in it, where no predicate on key reached
    them.) A new leaf with data in the same plan is created as always."""
    ns = namespace(tmp_path)
    k1 = leaf_of(ns, "k1")
    staged = stage(
        ns._manifest,
        ns.refresh().snapshot,
        pa.table({"id": [20], "key": ["k2"]}, schema=SCHEMA),
        mode="append",
        target=leaf_schema(ns.namespace_schema),
        options=WriteOptions(),
    )
    writes = transaction.PendingWrite(
        staged.spec_version,
        staged.leaf_schema,
        [*schema_only(ns), *staged.leaves],
        staged.namespaces,
    )
    plan = transaction.ChangePlan(writes=writes)
    other = lp.PartitionedNamespace.open(str(tmp_path))
    with transaction.pause_at("leaves_committed", lambda: DROPPING[drop](other)):
        result = transaction.commit_changes(ns._manifest, lambda _: plan)
    assert result.attempts == 2
    snapshot = ns.refresh().snapshot
    assert not snapshot.has(k1)
    assert k1 not in result.leaf_versions
    assert result.created == [leaf_of(ns, "k2")]
    leaves = ns.partitions(sizes=False).to_pylist()
    assert None not in [leaf["key"] for leaf in leaves]
    assert sorted(leaf["key"] for leaf in leaves) == ["k0", "k2"]
    ns.write(rows([7]))  # k1 again: in a leaf that a predicate on key reaches
    assert ns.refresh().to_table(filter="key = 'k1'").column("id").to_pylist() == [7]
    ns.delete("key = 'k1'")
    assert 7 not in ids(ns)


def test_a_new_leaf_row_without_its_partition_values_is_refused(tmp_path: Path) -> None:
    """An internal invariant: a leaf is never added to the __manifest without a value (NULL
    allowed) for each partition field of its spec version; nothing is visible."""
    ns = namespace(tmp_path)
    before = ns.version
    staged = stage(
        ns._manifest,
        ns.refresh().snapshot,
        pa.table({"id": [20, 21], "key": ["k2", None]}, schema=SCHEMA),
        mode="append",
        target=leaf_schema(ns.namespace_schema),
        options=WriteOptions(),
    )
    k2 = next(leaf for leaf in staged.leaves if leaf.values == {"key": "k2"})
    assert [leaf.values for leaf in staged.leaves if leaf is not k2] == [{"key": None}]
    k2.values = {}
    with pytest.raises(errors.InternalError, match="without a value for its partition fields"):
        commit_write(ns._manifest, staged)
    assert ns._manifest.latest_version() == before
    k2.values = {"key": "k2"}  # the other leaf's NULL value is one, the data's
    commit_write(ns._manifest, staged)
    assert ns.refresh().to_table(filter="key IS NULL").column("id").to_pylist() == [21]
