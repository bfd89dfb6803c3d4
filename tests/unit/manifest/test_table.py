"""``Manifest`` row commits and the snapshots it keeps, on real ``__manifest`` tables.

A row commit that replaces rows is one Lance ``Update`` made of deletion vectors (the rows'
addresses come from the snapshot) and one new fragment; the snapshot of the version it
commits is built from the rows committed instead of being read back. Both must be exactly
what a reader of that version sees, and two commits on the same snapshot must conflict.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.manifest import CommitConflict, Manifest, ManifestSnapshot, rows_table

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string()), ("n", pa.int64())])


def data(ids: range, keys: list[str]) -> pa.Table:
    return pa.table(
        {
            "id": list(ids),
            "k": [keys[i % len(keys)] for i in ids],
            "n": [i % 3 for i in ids],
        },
        schema=SCHEMA,
    )


def by_id(snapshot: ManifestSnapshot) -> dict[str, dict[str, object]]:
    return {row["object_id"]: row for row in snapshot.rows.to_pylist()}


def addresses(snapshot: ManifestSnapshot) -> dict[str, int]:
    assert snapshot.addresses is not None
    ids = snapshot.rows.column("object_id").to_pylist()
    return dict(zip(ids, snapshot.addresses.to_pylist(), strict=True))


def read_back(root: str, version: int) -> tuple[ManifestSnapshot, dict[str, int]]:
    """The snapshot as a new reader reads it, and the row addresses Lance reports."""
    fresh = Manifest(root).snapshot(version)
    table = lance.dataset(f"{root}/__manifest", version=version).to_table(
        columns=["object_id"], with_row_address=True
    )
    on_disk = dict(
        zip(
            table.column("object_id").to_pylist(), table.column("_rowaddr").to_pylist(), strict=True
        )
    )
    return fresh, on_disk


def test_the_snapshot_a_commit_keeps_is_the_one_a_reader_reads(tmp_path: Path) -> None:
    """Appends, row-level and partition deletes, updates, an overwrite and a spec change:
    after each, the snapshot the namespace holds (built from the commit, not read) has the
    rows, order, metadata and row addresses of the version read back from disk."""
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=SCHEMA, partition_by="k")
    steps = [
        lambda: ns.write(data(range(30), ["a", "b", "c"])),
        lambda: ns.write(data(range(30, 40), ["c", "d"])),
        lambda: ns.delete("k = 'a'"),
        lambda: ns.delete("id % 4 = 0"),
        lambda: ns.update("k = 'b'", set={"n": "n + 10"}),
        lambda: ns.write(data(range(40, 50), ["e", "b"]), mode="overwrite_partitions"),
        lambda: ns.update_partition_spec("k, n"),
        lambda: ns.write(data(range(50, 60), ["b", "f"])),
        lambda: ns.delete("k = 'c' OR n = 1"),
        lambda: ns.write(data(range(60, 70), ["g"]), mode="overwrite"),
        lambda: ns.write(data(range(70, 75), ["g", "h"])),
    ]
    for step in steps:
        step()
        held = ns.snapshot
        fresh, on_disk = read_back(ns.uri, held.version)
        assert held.rows.equals(fresh.rows)  # same rows in the same order
        assert held.table_metadata == fresh.table_metadata
        assert addresses(held) == on_disk
        assert addresses(fresh) == on_disk
    assert sorted(ns.to_table(columns=["id"]).column("id").to_pylist()) == list(range(60, 75))


def test_two_row_commits_on_one_snapshot_conflict(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=SCHEMA, partition_by="k")
    ns.write(data(range(20), ["a", "b", "c", "d"]))
    base = Manifest(ns.uri).snapshot()
    spec_row = base.row("v1")
    assert spec_row is not None
    leaves = base.tables.column("object_id").to_pylist()
    first = Manifest(ns.uri)
    second = Manifest(ns.uri)
    first.commit_rows(base, rows_table(base.rows.schema, [spec_row]), delete=[leaves[0]])
    with pytest.raises(CommitConflict):  # disjoint drops, but both rewrite the spec row
        second.commit_rows(base, rows_table(base.rows.schema, [spec_row]), delete=[leaves[1]])
    after = Manifest(ns.uri).snapshot()
    assert after.version == base.version + 1
    assert set(after.tables.column("object_id").to_pylist()) == set(leaves[1:])


def test_a_commit_on_a_snapshot_without_addresses_finds_its_rows(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=SCHEMA, partition_by="k")
    ns.write(data(range(20), ["a", "b", "c"]))
    ns.write(data(range(20, 30), ["c", "d"]))  # rows spread over two fragments
    base = dataclasses.replace(Manifest(ns.uri).snapshot(), addresses=None)
    leaf = base.tables.column("object_id").to_pylist()[0]
    spec_row = base.row("v1")
    assert spec_row is not None
    manifest = Manifest(ns.uri)
    version = manifest.commit_rows(base, rows_table(base.rows.schema, [spec_row]), delete=[leaf])
    fresh, on_disk = read_back(ns.uri, version)
    assert set(by_id(fresh)) == set(by_id(base)) - {leaf}
    assert manifest.snapshot(version).rows.equals(fresh.rows)
    assert addresses(manifest.snapshot(version)) == on_disk


def test_new_columns_and_a_new_row_are_one_commit(tmp_path: Path) -> None:
    """``add_partition_columns`` with rows: one Lance ``Merge`` that widens the schema and
    adds a fragment holding the rows (NULL in the new columns), under a fragment id of its
    own; later row commits find the new row by its address."""
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=SCHEMA, partition_by="k")
    ns.write(data(range(20), ["a", "b"]))
    ns.delete("id = 0")  # a deletion vector on the fragment with the leaf rows
    manifest = Manifest(ns.uri)
    base = manifest.snapshot()
    version = manifest.add_partition_columns(
        base, [("m", pa.int64())], rows=[{"object_id": "v9", "object_type": "namespace"}]
    )
    assert version == base.version + 1
    dataset = lance.dataset(f"{ns.uri}/__manifest", version=version)
    ids = [fragment.fragment_id for fragment in dataset.get_fragments()]
    assert len(set(ids)) == len(ids)
    fresh, on_disk = read_back(ns.uri, version)
    assert set(by_id(fresh)) == {*by_id(base), "v9"}
    assert fresh.rows.column("m").null_count == fresh.rows.num_rows
    assert addresses(fresh) == on_disk
    spec_row = fresh.row("v9")
    assert spec_row is not None
    after = manifest.commit_rows(fresh, rows_table(fresh.rows.schema, [spec_row]))
    assert sorted(by_id(manifest.snapshot(after))) == sorted(by_id(fresh))
    with pytest.raises(lp.errors.InternalError, match="v9"):  # an existing row: not inserted
        manifest.add_partition_columns(
            manifest.snapshot(), [("o", pa.int64())], rows=[{"object_id": "v9"}]
        )
