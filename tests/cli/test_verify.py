"""verify on a healthy namespace and on namespaces broken behind its back with pylance."""

from __future__ import annotations

import shutil
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import transaction
from tests.cli.helpers import build, cli


def _leaf(ns: lp.PartitionedNamespace, where: str) -> dict[str, object]:
    (row,) = ns.partitions(where).to_pylist()
    return row


def test_a_healthy_namespace_exits_0(namespace: Path) -> None:
    result = cli("verify", namespace, "--json")
    assert result.code == 0, result.err
    out = result.json()
    assert out["healthy"] is True
    assert out["problems"] == []
    assert out["leaves"] == 9
    assert out["rows_sampled"] == 78
    assert out["orphans"] == []


def test_each_breakage_is_reported_with_exit_1(tmp_path: Path) -> None:
    ns = build(tmp_path / "ns", appends=1)
    manifest = lance.dataset(str(tmp_path / "ns" / "__manifest"))
    # 1. a deleted leaf directory
    gone = _leaf(ns, "spec_version = 1 AND country = 'FR'")
    shutil.rmtree(tmp_path / "ns" / str(gone["location"]))
    # 2. a leaf moved past its read_version by a plain pylance append
    ahead = _leaf(ns, "spec_version = 1 AND country = 'DE'")
    leaf_uri = str(tmp_path / "ns" / str(ahead["location"]))
    lance.write_dataset(lance.dataset(leaf_uri).to_table().slice(0, 1), leaf_uri, mode="append")
    # 3. a partition value that contradicts its spec: the v2 US leaf (and its parent) say MX
    wrong = _leaf(ns, "spec_version = 2 AND country = 'US'")
    parent = str(wrong["object_id"]).rsplit("$", 1)[0]
    manifest.update({"country": "'MX'"}, where=f"object_id IN ('{wrong['object_id']}', '{parent}')")
    # 4. corrupted properties JSON on the v2 DE leaf's row
    broken = _leaf(ns, "spec_version = 2 AND country = 'DE'")
    lance.dataset(manifest.uri).update(
        {"metadata": "'{not json'"}, where=f"object_id = '{broken['object_id']}'"
    )
    # 5. an orphan directory (not a problem, reported with its size)
    orphan = tmp_path / "ns" / "0badc0de_v1$leftover$dataset"
    orphan.mkdir()
    (orphan / "data.bin").write_bytes(b"x" * 1234)

    result = cli("verify", tmp_path / "ns", "--json")
    assert result.code == 1, result.err
    out = result.json()
    assert out["healthy"] is False
    found = {(p["kind"], p["object_id"]) for p in out["problems"]}
    assert found == {
        ("missing_leaf", gone["object_id"]),
        ("interrupted_write", ahead["object_id"]),
        ("partition_value", wrong["object_id"]),
        ("properties", broken["object_id"]),
    }, out["problems"]
    messages = {p["kind"]: p["message"] for p in out["problems"]}
    assert "leaf version 2 above its read_version 1 (+1 rows)" in messages["interrupted_write"]
    assert "or a commit made outside the namespace" in messages["interrupted_write"]
    assert "country = 'US'" in messages["partition_value"]
    assert "partition value is 'MX'" in messages["partition_value"]
    assert "not valid JSON" in messages["properties"]
    assert out["orphans"] == [{"location": orphan.name, "bytes": 1234}]


def test_a_value_that_contradicts_only_its_spec(tmp_path: Path) -> None:
    """A leaf whose rows do not belong to it (its parent agrees with it): only re-applying the
    expression finds it; the text output lists it and exits 1."""
    schema = pa.schema([("id", pa.int64()), ("country", pa.string())])
    root = tmp_path / "ns"
    ns = lp.PartitionedNamespace.create(str(root), schema=schema, partition_by="country")
    ns.write(pa.table({"id": [1, 2], "country": ["US", "FR"]}))
    # the namespace row and its leaf both say CA: consistent with each other, not with the data
    lance.dataset(str(root / "__manifest")).update({"country": "'CA'"}, where="country = 'US'")
    result = cli("verify", root)
    assert result.code == 1, result.err
    assert "partition_value" in result.out
    assert result.out.rstrip().endswith("1 problem found")


def test_corrupt_schema_json_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    build(tmp_path / "ns", appends=1)
    manifest = lance.dataset(str(tmp_path / "ns" / "__manifest"))
    manifest.update_metadata({"schema": '{"fields": [oops'})
    result = cli("verify", tmp_path / "ns", "--json")
    assert result.code == 1, result.err
    problems = result.json()["problems"]
    assert [(p["kind"], p["object_id"]) for p in problems] == [("metadata", None)]
    assert "'schema' is not valid JSON" in problems[0]["message"]
    # the other commands cannot read it: one line, exit 2
    described = cli("describe", tmp_path / "ns")
    assert described.code == 2
    assert "'schema' is not valid JSON" in described.err


def test_a_missing_partition_column_is_a_problem(tmp_path: Path) -> None:
    build(tmp_path / "ns", appends=1)
    lance.dataset(str(tmp_path / "ns" / "__manifest")).drop_columns(["ts_year"])
    result = cli("verify", tmp_path / "ns", "--json")
    assert result.code == 1, result.err
    problems = result.json()["problems"]
    assert {
        "kind": "metadata",
        "object_id": None,
        "message": ("the __manifest has no column for partition field 'ts_year'"),
    } in problems


def test_repair_rolls_back_an_interrupted_write(tmp_path: Path) -> None:
    """A write killed after its leaf commits: exit 1 naming the interrupted write; --repair
    rolls the leaf back (exit 0, listed as repaired); then the namespace is healthy."""
    schema = pa.schema([("id", pa.int64()), ("country", pa.string())])
    root = tmp_path / "ns"
    ns = lp.PartitionedNamespace.create(str(root), schema=schema, partition_by="country")
    ns.write(pa.table({"id": [1, 2], "country": ["US", "FR"]}))

    def crash() -> None:
        raise RuntimeError("killed")

    with transaction.pause_at("leaves_committed", crash), pytest.raises(RuntimeError):
        ns.write(pa.table({"id": [3], "country": ["US"]}))
    leaf = _leaf(ns, "country = 'US'")["object_id"]
    found = cli("verify", root)
    assert found.code == 1
    assert "interrupted_write" in found.out
    assert "--repair" in found.out
    repaired = cli("verify", root, "--repair", "--json")
    assert repaired.code == 0, repaired.out
    out = repaired.json()
    assert out["problems"] == []
    assert [(p["kind"], p["object_id"]) for p in out["repaired"]] == [("interrupted_write", leaf)]
    text = cli("verify", root, "--repair")
    assert text.code == 0
    assert "healthy" in text.out
    assert "repaired" not in text.out  # nothing left to repair
    assert sorted(ns.refresh().to_table().column("id").to_pylist()) == [1, 2]
