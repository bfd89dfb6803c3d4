"""Deterministic races between writes and schema or partition evolution.

Each test runs another writer or an evolution at an explicit pause point of a write's commit
(:func:`lance_partitioned.transaction.pause_at`): after the data is staged, or after the leaf
commits and before the ``__manifest`` commit. Whatever the interleaving, a write either lands
whole, readable by every later reader, or raises a typed conflict with nothing visible.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance import LanceDataset, LanceOperation

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.manifest import rows_table
from lance_partitioned.transaction import pause_at
from tests.integration.helpers import copy_namespace, read_leaves

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("k", pa.utf8()), ("w", pa.int32())]
)


def rows(ids: list[int], keys: list[str], **extra: list[Any]) -> pa.Table:
    table = pa.table({"id": pa.array(ids, pa.int64()), "k": keys, "w": pa.array(ids, pa.int32())})
    for name, values in extra.items():
        table = table.append_column(name, pa.array(values))
    return table


def ids(ns: lp.PartitionedNamespace) -> list[int]:
    return sorted(ns.refresh().to_table(columns=["id"]).column("id").to_pylist())


def every_version_reads(ns: lp.PartitionedNamespace) -> None:
    """Every ``__manifest`` version opens and reads in full (no unreadable leaf anywhere)."""
    for version in range(2, lp.PartitionedNamespace.open(ns.uri).version + 1):  # 1: create
        old = lp.PartitionedNamespace.open(ns.uri, version=version)
        assert old.to_table().num_rows == old.count_rows()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The namespaces the tests start from, each built once through the API (the tests copy
    them: a namespace's directory copied elsewhere is the same namespace, its paths are
    relative): ``one_spec`` has p and q under ``k``; ``three_specs`` adds a v2 leaf
    (``truncate(1, k)``) holding p and pz, then goes back to ``k`` (v3)."""
    root = tmp_path_factory.mktemp("races")
    one = lp.PartitionedNamespace.create(str(root / "one_spec"), schema=SCHEMA, partition_by="k")
    one.write(rows([1, 2], ["p", "q"]))
    shutil.copytree(root / "one_spec", root / "three_specs")
    three = lp.PartitionedNamespace.open(str(root / "three_specs"))
    three.update_partition_spec("truncate(1, k)")
    three.write(rows([4, 5], ["p", "pz"]))
    three.update_partition_spec("k")
    return {"one_spec": root / "one_spec", "three_specs": root / "three_specs"}


@pytest.fixture
def ns(built: dict[str, Path], tmp_path: os.PathLike[str]) -> lp.PartitionedNamespace:
    """A namespace partitioned by ``k`` holding ids 1 (p) and 2 (q), in ``tmp_path``."""
    return copy_namespace(built["one_spec"], tmp_path)


@pytest.fixture
def three_specs(built: dict[str, Path], tmp_path: os.PathLike[str]) -> lp.PartitionedNamespace:
    """``ns`` after ``truncate(1, k)`` (v2: ids 4 in p, 5 in pz) and back to ``k`` (v3)."""
    return copy_namespace(built["three_specs"], tmp_path)


# ------------------------------------------------------------------ issue 16, item 1


def test_an_append_staged_before_a_promotion_never_publishes_the_old_type(
    ns: lp.PartitionedNamespace,
) -> None:
    """A stages int32 rows for p; w is promoted to int64 and B writes p (its leaf now holds
    int64); A's commit must not append int32 fragments to the int64 leaf: it re-stages them
    as int64. (Before: A's commit appended them as they were, and every later read of p
    failed with ArrowInvalid "Need at least 8 bytes in buffers[0] ... Int64, but got 4".)"""
    other = lp.PartitionedNamespace.open(ns.uri)

    def promote_and_write() -> None:
        other.alter_column_type("w", pa.int64())
        other.write(rows([3], ["p"]).set_column(2, "w", pa.array([3], pa.int64())))

    with pause_at("staged", promote_and_write):
        ns.write(rows([10, 11], ["p", "r"]))
    assert ids(ns) == [1, 2, 3, 10, 11]
    got = ns.to_table("k = 'p' OR k = 'r'").sort_by("id")
    assert got.column("w").type == pa.int64()
    assert got.column("w").to_pylist() == [1, 3, 10, 11]
    for leaf in ns.partitions("k = 'p' OR k = 'r'")["location"].to_pylist():
        assert lance.dataset(f"{ns.uri}/{leaf}").schema.field("w").type == pa.int64()
    every_version_reads(ns)


def test_a_leaf_that_cannot_hold_a_staged_column_is_a_typed_conflict(
    ns: lp.PartitionedNamespace,
) -> None:
    """Another client widens p's leaf column behind the namespace schema's back (pylance
    alter_columns, then the read_version moved in the __manifest, as a spec-000 client may):
    int32 fragments staged before cannot go into the int64 leaf and are not converted (the
    namespace still says int32), so the write is refused, typed, and nothing is published."""
    other = lp.PartitionedNamespace.open(ns.uri)
    part = ns.partitions("k = 'p'")
    uri = f"{ns.uri}/{part['location'][0].as_py()}"

    def widen_the_leaf() -> None:
        leaf = lance.dataset(uri)
        leaf.alter_columns({"path": "w", "data_type": pa.int64()})
        manifest = other._manifest
        snapshot = manifest.snapshot()
        row = snapshot.row(part["object_id"][0].as_py())
        assert row is not None
        row["read_version"] = lance.dataset(uri).version
        manifest.commit_rows(snapshot, rows_table(snapshot.rows.schema, [row]))

    with (
        pause_at("staged", widen_the_leaf),
        pytest.raises(errors.ConcurrentSchemaChangeError, match="int32 staged, int64"),
    ):
        ns.write(rows([10], ["p"]))
    assert isinstance(errors.ConcurrentSchemaChangeError(""), errors.ConcurrentModificationError)
    assert ids(ns) == [1, 2]
    every_version_reads(ns)


# ------------------------------------------------------------------ issue 16, item 2


@pytest.mark.parametrize("point", ["staged", "leaves_committed"])
@pytest.mark.parametrize("mode", ["overwrite", "overwrite_partitions"])
def test_an_overwrite_never_commits_under_an_outdated_spec(
    tmp_path: os.PathLike[str], point: str, mode: str
) -> None:
    """A stages an overwrite under spec v3; a new spec v4 is published and B writes under it
    before A commits. (Before, with the publish after A's leaf commits: A's manifest commit
    was rebased over B's and B's v4 rows survived the overwrite.)"""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="k")
    ns.update_partition_spec("w")
    ns.update_partition_spec("k")  # v3: every partition column exists already
    ns.write(rows([1, 2], ["p", "q"]))
    other = lp.PartitionedNamespace.open(ns.uri)

    def new_spec_and_write() -> None:
        other.update_partition_spec("w")
        other.write(rows([99], ["p"]))

    with (
        pause_at(point, new_spec_and_write),
        pytest.raises(errors.ConcurrentSchemaChangeError, match="spec v3"),
    ):
        ns.write(rows([10], ["p"]), mode=mode)  # type: ignore[arg-type]
    assert ids(ns) == [1, 2, 99]
    every_version_reads(ns)
    ns.write(rows([10], ["p"]), mode=mode)  # type: ignore[arg-type]
    # written again under v4 (by w): overwrite_partitions replaces only the partition w = 10
    assert ids(ns) == ([10] if mode == "overwrite" else [1, 2, 10, 99])


def test_an_overwrite_deletes_what_another_writer_committed_during_its_retries(
    ns: lp.PartitionedNamespace,
) -> None:
    """B writes a new partition between A's leaf commits and A's manifest commit: A's manifest
    commit conflicts, and its retry deletes everything of its new base, B's leaf included."""
    other = lp.PartitionedNamespace.open(ns.uri)
    with pause_at("leaves_committed", lambda: other.write(rows([50], ["z"]))):
        result = ns.write(rows([10], ["p"]), mode="overwrite")
    assert result.attempts == 2
    assert ids(ns) == [10]
    every_version_reads(ns)


# ------------------------------------------------------------------ issue 16, item 3


@pytest.mark.parametrize("mode", ["append", "overwrite_partitions"])
def test_a_leaf_whose_latest_version_has_another_schema_stays_writable(
    ns: lp.PartitionedNamespace, mode: str
) -> None:
    """After add_columns and a write to p, p's pinned version has column x; a writer that
    died mid-commit left a latest version without x. (Before: every later append or
    overwrite_partitions of p raised OSError "Append with different schema ...
    unexpected=[x]".)"""
    ns.add_columns([pa.field("x", pa.utf8())])
    ns.write(rows([3], ["p"], x=["a"]))
    part = ns.partitions("k = 'p'")
    uri = f"{ns.uri}/{part['location'][0].as_py()}"
    leaf = lance.dataset(uri)
    assert "x" in leaf.schema.names
    LanceDataset.commit(uri, LanceOperation.Restore(1), read_version=leaf.version)  # orphan
    assert "x" not in lance.dataset(uri).schema.names
    ns.write(rows([4], ["p"], x=["b"]), mode=mode)  # type: ignore[arg-type]
    expected = {"append": [1, 3, 4], "overwrite_partitions": [4]}[mode]
    assert sorted(ns.to_table("k = 'p'").column("id").to_pylist()) == expected
    assert ns.to_table("id = 4").column("x").to_pylist() == ["b"]
    every_version_reads(ns)


@pytest.mark.parametrize("mode", ["append", "overwrite_partitions"])
def test_a_leaf_whose_latest_version_has_more_columns_stays_writable(
    ns: lp.PartitionedNamespace, mode: str
) -> None:
    """The other way round: a writer that died after evolving p's leaf (its latest version
    has a column, at a new field id, that no namespace field has) and before publishing."""
    part = ns.partitions("k = 'p'")
    uri = f"{ns.uri}/{part['location'][0].as_py()}"
    lance.dataset(uri).add_columns(pa.field("orphan", pa.int64()))  # the dead writer's
    ns.add_columns([pa.field("x", pa.utf8())])
    ns.write(rows([4], ["p"], x=["b"]), mode=mode)  # type: ignore[arg-type]
    expected = {"append": [1, 4], "overwrite_partitions": [4]}[mode]
    assert sorted(ns.to_table("k = 'p'").column("id").to_pylist()) == expected
    assert ns.to_table("id = 4").column("x").to_pylist() == ["b"]
    leaf = lance.dataset(uri, version=ns.partitions("k = 'p'")["read_version"][0].as_py())
    assert "orphan" not in leaf.schema.names  # restored away before the write's own commits
    every_version_reads(ns)


# ------------------------------------------------------------------ every evolution x mode

EVOLUTIONS: dict[str, tuple[Callable[[lp.PartitionedNamespace], Any], pa.Table]] = {
    # the change, and B's write of p after it
    "add": (lambda n: n.add_columns([pa.field("x", pa.utf8())]), rows([3], ["p"], x=["b"])),
    "drop": (lambda n: n.drop_columns(["w"]), rows([3], ["p"]).drop_columns(["w"])),
    "rename": (
        lambda n: n.rename_column("w", "w2"),
        rows([3], ["p"]).rename_columns(["id", "k", "w2"]),
    ),
    "promote": (
        lambda n: n.alter_column_type("w", pa.int64()),
        rows([3], ["p"]).set_column(2, "w", pa.array([3], pa.int64())),
    ),
    "spec": (lambda n: n.update_partition_spec("w"), rows([3], ["p"])),
}
MODES = ["append", "overwrite", "overwrite_partitions"]


@pytest.mark.parametrize("point", ["staged", "leaves_committed"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", list(EVOLUTIONS))
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
def test_a_write_racing_an_evolution_and_a_second_writer(
    ns: lp.PartitionedNamespace, kind: str, mode: str, point: str
) -> None:
    """A writes p (existing) and r (new); while A is at ``point``, the schema or spec evolves
    and B writes p. A lands whole (on top of B) or raises a typed conflict with nothing
    visible; every ``__manifest`` version stays readable; the next write works."""
    change, b_rows = EVOLUTIONS[kind]
    other = lp.PartitionedNamespace.open(ns.uri)

    def evolve_and_write() -> None:
        change(other)
        other.write(b_rows)

    conflict = kind == "spec" and mode != "append"
    with pause_at(point, evolve_and_write):
        if conflict:
            with pytest.raises(errors.ConcurrentSchemaChangeError):
                ns.write(rows([10, 11], ["p", "r"]), mode=mode)  # type: ignore[arg-type]
        else:
            ns.write(rows([10, 11], ["p", "r"]), mode=mode)  # type: ignore[arg-type]
    if conflict:
        expected = [1, 2, 3]
    else:
        expected = {
            "append": [1, 2, 3, 10, 11],
            "overwrite": [10, 11],
            "overwrite_partitions": [2, 10, 11],
        }[mode]
    assert ids(ns) == expected
    assert sorted(read_leaves(ns)["id"].to_pylist()) == expected
    if kind == "rename":  # no leaf keeps (or gets back) the old name, whoever wrote it last
        assert {name for name in read_leaves(ns).column_names if name.startswith("w")} == {"w2"}
    every_version_reads(ns)
    after = lp.PartitionedNamespace.open(ns.uri)
    after.write(b_rows.set_column(0, "id", pa.array([20], pa.int64())))
    assert ids(after) == sorted([*expected, 20])


@pytest.mark.parametrize("kind", list(EVOLUTIONS))
def test_an_evolution_and_a_writer_between_a_leaf_plan_and_its_append(
    ns: lp.PartitionedNamespace, kind: str
) -> None:
    """The other writer evolves and commits p just before A's Append of p (after A restored
    and planned the leaf): A's Append is rebased or conflicts, so A re-reads the manifest and
    redoes p on the new leaf version. Nothing is lost or doubled."""
    change, b_rows = EVOLUTIONS[kind]
    ns.add_columns([pa.field("y", pa.utf8())])  # so that A opens and plans p before appending
    other = lp.PartitionedNamespace.open(ns.uri)

    def evolve_and_write() -> None:
        change(other)
        other.write(b_rows)

    with pause_at("leaf_commit", evolve_and_write):
        ns.write(rows([10], ["p"]), options=lp.WriteOptions(threads=1))
    assert ids(ns) == [1, 2, 3, 10]
    assert sorted(read_leaves(ns)["id"].to_pylist()) == [1, 2, 3, 10]
    every_version_reads(ns)


# ------------------------------------------------------------------ issue 19: dropped leaves

DROPS: dict[str, tuple[Callable[[lp.PartitionedNamespace], Any], list[int], set[Any]]] = {
    # a commit that removes leaf q from the __manifest; the ids and the (spec, k, k_trunc) of
    # the leaves after it
    "delete": (lambda n: n.delete("k = 'q'"), [1], {(1, "p", None)}),
    "overwrite_partitions": (
        lambda n: (
            n.update_partition_spec("truncate(1, k)"),
            n.write(rows([3], ["q"]), mode="overwrite_partitions"),  # q of v1 goes too
        ),
        [1, 3],
        {(1, "p", None), (2, None, "q")},
    ),
    "overwrite": (
        lambda n: n.write(rows([3], ["r"]), mode="overwrite"),
        [3],
        {(1, "r", None)},
    ),
}


def _leaves(ns: lp.PartitionedNamespace) -> set[Any]:
    return {
        (r["spec_version"], r["k"], r.get("k_trunc")) for r in ns.refresh().partitions().to_pylist()
    }


@pytest.mark.parametrize("drop", list(DROPS))
def test_a_rename_never_brings_back_a_leaf_dropped_meanwhile(
    ns: lp.PartitionedNamespace, drop: str
) -> None:
    """rename_column renames the column in every leaf of the __manifest in one commit; B
    removes leaf q from the __manifest after the rename listed the leaves and before it
    commits. The rename must rename the leaves of the __manifest it commits on. (Before: it
    committed the leaves it had listed, and brought q back as a new leaf with NULL partition
    values, which a later append of q filled and no predicate on k could reach: the
    concurrency soak's overwrite_partitions that left a row visible, seed 1071777368.)"""
    change, expected, leaves = DROPS[drop]
    other = lp.PartitionedNamespace.open(ns.uri)
    with pause_at("staged", lambda: change(other)):
        ns.rename_column("w", "w2")
    assert ids(ns) == expected
    assert _leaves(ns) == leaves
    assert {name for name in read_leaves(ns).column_names if name.startswith("w")} <= {"w2"}
    every_version_reads(ns)
    # a row of q written now is in a leaf that a predicate on k reaches
    ns.write(rows([7], ["q"]).rename_columns(["id", "k", "w2"]))
    ns.delete("k = 'q'")
    assert 7 not in ids(ns)


ADAPT: dict[str, Callable[[pa.Table], pa.Table]] = {
    # B's rows in the schema after each evolution
    "none": lambda t: t,
    "overwrite_partitions": lambda t: t,
    "add": lambda t: t.append_column("x", pa.array([None] * t.num_rows, pa.utf8())),
    "drop": lambda t: t.drop_columns(["w"]),
    "rename": lambda t: t.rename_columns(["id", "k", "w2"]),
    "promote": lambda t: t.set_column(2, "w", t.column("w").cast(pa.int64())),
    "spec": lambda t: t,
}
CHANGE: dict[str, Callable[[lp.PartitionedNamespace], Any]] = {
    "none": lambda n: None,
    "overwrite_partitions": lambda n: None,
    **{kind: change for kind, (change, _) in EVOLUTIONS.items()},
}


@pytest.mark.parametrize("point", ["leaf_commit", "leaves_committed"])
@pytest.mark.parametrize("op", ["overwrite_partitions", "replace_where", "delete"])
@pytest.mark.parametrize("kind", list(ADAPT))
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
def test_a_change_across_spec_versions_racing_an_evolution_and_a_writer(
    three_specs: lp.PartitionedNamespace, kind: str, op: str, point: str
) -> None:
    """A replaces (overwrite_partitions under v3, replace-where) or deletes partition p, whose
    rows v1 and v2 leaves hold too (v2's leaf also holds pz); while A is at ``point``, the
    schema or spec evolves (``kind``) and B writes p and q (appends, or overwrites their
    partitions). A lands on top of B with the rows of p of every spec version replaced, or
    raises a typed conflict with nothing visible. A delete racing B's blind append (no
    evolution) is WriteSerializable: it is rebased over the append, whose row of p stays (the
    delete serialized before it; ``docs/dml.md``)."""
    ns = three_specs
    state = {1: "p", 2: "q", 4: "p", 5: "pz"}
    other = lp.PartitionedNamespace.open(ns.uri)
    b_mode = "overwrite_partitions" if kind == "overwrite_partitions" else "append"

    def evolve_and_write() -> None:
        CHANGE[kind](other)
        other.write(ADAPT[kind](rows([3, 6], ["p", "q"])), mode=b_mode)  # type: ignore[arg-type]

    def run() -> None:
        if op == "delete":
            ns.delete("k = 'p'")
        elif op == "replace_where":
            ns.write(rows([10], ["p"]), mode="overwrite", where="k = 'p'")
        else:
            ns.write(rows([10], ["p"]), mode="overwrite_partitions")

    if b_mode == "overwrite_partitions":
        state = {i: k for i, k in state.items() if k not in ("p", "q")}
    state |= {3: "p", 6: "q"}
    conflict = kind == "spec" and op == "overwrite_partitions"
    with pause_at(point, evolve_and_write):
        if conflict:
            with pytest.raises(errors.ConcurrentSchemaChangeError):
                run()
        else:
            run()
    appended_after = op == "delete" and kind == "none"  # B's row 3 serialized after A
    if not conflict:
        state = {i: k for i, k in state.items() if k != "p" or (appended_after and i == 3)} | (
            {} if op == "delete" else {10: "p"}
        )
    assert ids(ns) == sorted(state)
    assert sorted(read_leaves(ns)["id"].to_pylist()) == sorted(state)
    every_version_reads(ns)
