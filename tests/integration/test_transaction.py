"""All-or-nothing writes: a crash mid-commit leaves no trace; concurrent writers lose nothing."""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import time
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors, transaction
from lance_partitioned.transaction import leaves
from lance_partitioned.transaction.write import commit_write
from tests.integration.helpers import Boom, crash_after_leaf_commits, read_leaves

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string())])


def rows(ids: range, keys: list[str]) -> pa.Table:
    return pa.table(
        {"id": pa.array(list(ids), pa.int64()), "k": [keys[i % len(keys)] for i in ids]},
        schema=SCHEMA,
    )


def test_a_write_failing_after_some_leaves_committed_is_invisible(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="k")
    ns.write(rows(range(40), ["a", "b", "c", "d"]))
    before_parts = ns.partitions()
    before_data = read_leaves(ns).sort_by("id")
    manifest_version = ns.version

    real_commit_leaf = transaction.commit_leaf
    committed: list[str] = []
    monkeypatch.setattr(transaction, "commit_leaf", crash_after_leaf_commits(2, committed))
    with pytest.raises(Boom):
        ns.write(
            rows(range(100, 140), ["a", "b", "c", "d", "e"]), options=lp.WriteOptions(threads=1)
        )
    assert len(committed) == 2
    # the leaves really moved on disk ...
    moved = [
        lance.dataset(f"{ns.uri}/{loc}").latest_version
        for loc in before_parts.column("location").to_pylist()
    ]
    assert moved != before_parts.column("read_version").to_pylist()
    # ... but a reader sees exactly the namespace as before
    reader = lp.PartitionedNamespace.open(ns.uri)
    assert reader.version == manifest_version
    assert reader.partitions().equals(before_parts)
    assert read_leaves(reader).sort_by("id").equals(before_data)

    # the next write restores the orphaned leaves and commits only its own rows
    monkeypatch.setattr(transaction, "commit_leaf", real_commit_leaf)
    ns.refresh().write(rows(range(200, 210), ["a", "b", "c", "d", "e"]))
    ids = sorted(read_leaves(ns)["id"].to_pylist())
    assert ids == list(range(40)) + list(range(200, 210))


def _append_worker(root: str, worker: int, rounds: int, per_round: int) -> None:
    ns = lp.PartitionedNamespace.open(root)
    keys = ["a", "b", "c"]  # every worker writes every partition: maximal overlap
    for r in range(rounds):
        start = (worker * rounds + r) * per_round
        ns.write(rows(range(start, start + per_round), keys))


@pytest.mark.slow
def test_four_processes_appending_to_overlapping_partitions(tmp_path: os.PathLike[str]) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="k")
    workers, rounds, per_round = 4, 3, 30
    ctx = mp.get_context("spawn")
    procs = [
        ctx.Process(target=_append_worker, args=(ns.uri, w, rounds, per_round))
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
    assert [p.exitcode for p in procs] == [0] * workers
    ns.refresh()
    ids = read_leaves(ns)["id"].to_pylist()
    assert len(ids) == workers * rounds * per_round
    assert sorted(ids) == list(range(workers * rounds * per_round))
    manifest = lance.dataset(f"{ns.uri}/__manifest").to_table()
    object_ids = manifest.column("object_id").to_pylist()
    assert len(object_ids) == len(set(object_ids)), "duplicate __manifest rows"
    assert ns.partitions().num_rows == 3


def test_commit_gives_up_with_a_typed_error(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="k")
    from lance_partitioned import manifest

    def always_conflict(self: Any, *args: Any, **kwargs: Any) -> int:
        raise manifest.CommitConflict("someone else always wins")

    monkeypatch.setattr(manifest.Manifest, "commit_rows", always_conflict)
    with pytest.raises(errors.ConcurrentModificationError, match="gave up"):
        commit_write(
            ns._manifest,
            _pending(ns),
            backoff=transaction.Backoff(attempts=3, base=0.001, free_seconds=0.0),
        )
    assert lp.PartitionedNamespace.open(ns.uri).partitions().num_rows == 0


def test_losses_to_other_writers_are_free_for_a_while(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lost compare-and-swap means another writer published: within
    ``Backoff.free_seconds`` of the first loss it uses up no attempt."""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="k")
    from lance_partitioned import manifest

    calls = 0

    def always_conflict(self: Any, *args: Any, **kwargs: Any) -> int:
        nonlocal calls
        calls += 1
        raise manifest.CommitConflict("someone else always wins")

    monkeypatch.setattr(manifest.Manifest, "commit_rows", always_conflict)
    started = time.monotonic()
    with pytest.raises(errors.ConcurrentModificationError, match="gave up") as raised:
        commit_write(
            ns._manifest,
            _pending(ns),
            backoff=transaction.Backoff(attempts=3, base=0.001, free_seconds=0.3),
        )
    assert time.monotonic() - started >= 0.3
    assert calls > 3
    assert f"after {calls} commit attempts" in str(raised.value)  # the free ones counted


def _pending(ns: lp.PartitionedNamespace) -> transaction.PendingWrite:
    from lance_partitioned.consistency import leaf_schema
    from lance_partitioned.ingest import WriteOptions, stage

    return stage(
        ns._manifest,
        ns.snapshot,
        rows(range(5), ["a"]),
        mode="append",
        target=leaf_schema(ns.namespace_schema),
        options=WriteOptions(),
    )


def _count_looks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every time a leaf commit opens a leaf (its latest version, or its schema)."""
    looks: list[str] = []
    real = leaves._latest_version

    def latest_version(uri: str, options: dict[str, str] | None) -> int | None:
        looks.append(uri)
        return real(uri, options)

    monkeypatch.setattr(leaves, "_latest_version", latest_version)
    real_open = leaves._open_leaf

    def open_leaf(uri: str, version: int, options: dict[str, str] | None) -> Any:
        looks.append(uri)
        return real_open(uri, version, options)

    monkeypatch.setattr(leaves, "_open_leaf", open_leaf)
    return looks


def test_leaf_commits_do_not_open_leaves_that_are_as_the_manifest_says(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="k")
    looks = _count_looks(monkeypatch)
    ns.write(rows(range(10), ["a", "b"]))  # new leaves
    ns.write(rows(range(10, 20), ["a", "b"]))  # appends
    ns.write(rows(range(20, 30), ["a", "b"]), mode="overwrite_partitions")
    assert looks == []
    assert sorted(read_leaves(ns)["id"].to_pylist()) == list(range(20, 30))


@pytest.mark.parametrize("mode", ["new", "append", "overwrite_partitions"])
def test_a_leaf_commit_looks_past_an_orphan(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """A leaf directory that is not as the manifest says (a crashed writer's commit) is found
    on the first commit attempt, and the orphan's rows never become visible."""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="k")
    if mode != "new":
        ns.write(rows(range(10), ["a"]))
    pending = _pending(ns)  # ids 0-4, partition "a"
    uri = ns._manifest.table_uri(pending.leaves[0].location)
    orphan = pa.table({"id": pa.array([999], pa.int64()), "k": ["a"]}, schema=SCHEMA)
    lance.write_dataset(orphan, uri, mode="create" if mode == "new" else "append")
    if mode == "overwrite_partitions":
        pending = dataclasses.replace(pending, mode="overwrite_partitions")
    looks = _count_looks(monkeypatch)
    commit_write(ns._manifest, pending)
    assert looks, "the orphan went unnoticed"
    ids = sorted(read_leaves(ns.refresh())["id"].to_pylist())
    assert ids == (sorted([*range(10), *range(5)]) if mode == "append" else list(range(5)))


def test_a_leaf_commit_overtaken_by_another_writer_re_reads_the_manifest(
    tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Another writer appends to the same leaf and commits the manifest between our reading
    the manifest and our leaf commit: our Append is rebased over theirs, the manifest has moved
    on, so the write re-reads it and redoes the leaf on the new base. Both writes land, once."""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="k")
    ns.write(rows(range(10), ["a"]))
    other = lp.PartitionedNamespace.open(ns.uri)
    real = leaves.LanceDataset

    class Overtaken:
        """``LanceDataset`` whose first commit lets the other writer finish first."""

        fired = False

        @staticmethod
        def commit(*args: Any, **kwargs: Any) -> Any:
            if not Overtaken.fired:
                Overtaken.fired = True
                other.write(rows(range(100, 105), ["a"]))
            return real.commit(*args, **kwargs)

    monkeypatch.setattr(leaves, "LanceDataset", Overtaken)
    with caplog.at_level("INFO", logger=transaction.__name__):
        result = ns.write(rows(range(200, 205), ["a"]))
    assert Overtaken.fired
    assert any("re-reading" in r.getMessage() for r in caplog.records), caplog.text
    assert result.version == other.version + 1
    ids = sorted(read_leaves(ns.refresh())["id"].to_pylist())
    assert ids == [*range(10), *range(100, 105), *range(200, 205)]
