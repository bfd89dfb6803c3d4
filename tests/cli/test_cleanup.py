"""``lance-partitioned cleanup`` through the command line (in-process)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import transaction
from tests.cli.helpers import cli, one_line_error
from tests.maintenance.helpers import files


def _history(root: Path) -> lp.PartitionedNamespace:
    schema = pa.schema([("id", pa.int64()), ("k", pa.string())])
    ns = lp.PartitionedNamespace.create(str(root), schema=schema, partition_by="k")
    ns.write(pa.table({"id": [1, 2], "k": ["a", "b"]}))
    ns.write(pa.table({"id": [3], "k": ["a"]}))
    ns.write(pa.table({"id": [4], "k": ["c"]}), mode="overwrite")
    return ns


def test_dry_run_then_cleanup_as_json(tmp_path: Path) -> None:
    ns = _history(tmp_path / "ns")
    before = files(ns.uri)
    preview = cli("cleanup", ns.uri, "--older-than", "0", "--dry-run", "--json")
    assert preview.code == 0, preview.err
    assert files(ns.uri) == before
    plan = preview.json()
    assert plan["dry_run"] is True
    assert plan["removed_manifest_versions"] == list(range(1, ns.version))
    assert plan["removed"]["leaf_directories"]["count"] == 2
    done = cli("cleanup", ns.uri, "--older-than", "0", "--json")
    assert done.code == 0, done.err
    report = done.json()
    assert report["dry_run"] is False
    assert report["removed"] == plan["removed"]
    gone = set(before) - set(files(ns.uri))
    assert (report["files"], report["bytes"]) == (len(gone), sum(before[p] for p in gone))
    assert report["kept_manifest_versions"] == [ns.version]
    assert lp.PartitionedNamespace.open(ns.uri).to_table().column("id").to_pylist() == [4]


def test_human_output_and_the_default_retention(tmp_path: Path) -> None:
    ns = _history(tmp_path / "ns")
    young = cli("cleanup", ns.uri)  # a week by default: everything here is younger
    assert young.code == 0, young.err
    assert "removed 0 files" in young.out
    assert f"kept {ns.version} __manifest versions" in young.out
    assert "of 3 leaves" in young.out
    preview = cli("cleanup", ns.uri, "--older-than", "0", "--dry-run")
    assert preview.code == 0, preview.err
    assert "would remove" in preview.out
    assert "leaf directories" in preview.out


def test_a_bad_duration_and_a_missing_namespace_are_usage_errors(tmp_path: Path) -> None:
    ns = _history(tmp_path / "ns")
    assert "not a duration" in one_line_error(cli("cleanup", ns.uri, "--older-than", "7 days"))
    assert "no partitioned namespace" in one_line_error(cli("cleanup", tmp_path / "nothing"))


def test_cleanup_rolls_back_an_interrupted_write(tmp_path: Path) -> None:
    ns = _history(tmp_path / "ns")

    def crash() -> None:
        raise RuntimeError("killed")

    with transaction.pause_at("leaves_committed", crash), pytest.raises(RuntimeError):
        ns.write(pa.table({"id": [5], "k": ["c"]}))
    (leaf,) = ns.partitions(sizes=False).column("object_id").to_pylist()
    assert cli("verify", ns.uri).code == 1
    preview = cli("cleanup", ns.uri, "--older-than", "0", "--dry-run")
    assert preview.code == 0, preview.err
    assert "would roll back 1 leaf over the versions an interrupted write left" in preview.out
    done = cli("cleanup", ns.uri, "--older-than", "0", "--json")
    assert done.code == 0, done.err
    assert done.json()["rolled_back"] == [leaf]
    assert cli("verify", ns.uri).code == 0
    assert lp.PartitionedNamespace.open(ns.uri).to_table().column("id").to_pylist() == [4]
