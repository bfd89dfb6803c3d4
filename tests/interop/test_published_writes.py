"""Writes keep the published dialect: on namespaces built by pylance + pyarrow alone, and on
namespaces made with ``create(..., dialect="published")`` or ``create --dialect published``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from tests.cli.helpers import cli
from tests.interop.published import build, partition_value
from tests.interop.test_published_dialect import ROWS, SCHEMA, _field

pytestmark = pytest.mark.interop

BUCKET = {"type": "bucket", "num_buckets": 4, "hash_encoding": "iceberg"}
FIELDS = [_field("s", "s", {"type": "identity"}, pa.utf8()), _field("nb", "n", BUCKET, pa.int32())]


def _manifest(root: str) -> tuple[dict[str, Any], list[str]]:
    ds = lance.dataset(f"{root}/__manifest")
    specs = {k: json.loads(v) for k, v in ds.metadata.items() if k.startswith("partition_spec_v")}
    return specs, [n for n in ds.schema.names if n.startswith("partition_field_")]


def _rows(ns: lp.PartitionedNamespace) -> list[dict[str, Any]]:
    return sorted(ns.to_table().to_pylist(), key=lambda r: r["id"])


def _leaf_values_match_oracle(ns: lp.PartitionedNamespace) -> None:
    """Every leaf's rows have the leaf's partition values (murmur3 buckets as the oracle)."""
    for task in ns.plan_scan():
        values = dict(task.partition_values)
        for row in task.open().to_table().to_pylist():
            if "partition_field_nb" in values:
                assert partition_value(BUCKET, row["n"]) == values["partition_field_nb"]
            if "partition_field_s" in values:
                assert row["s"] == values["partition_field_s"]


def test_every_write_keeps_the_published_dialect(tmp_path: os.PathLike[str]) -> None:
    built = build(str(tmp_path), SCHEMA, FIELDS, ROWS)
    ns = lp.PartitionedNamespace.open(built.root)
    expected = {r["id"]: dict(r) for r in ROWS}
    new = [dict(r, id=100 + r["id"]) for r in ROWS[:6]]
    ns.write(pa.Table.from_pylist(new, schema=SCHEMA))
    expected.update({r["id"]: r for r in new})
    ns.delete("id = 101 OR n = 27")
    expected = {k: r for k, r in expected.items() if k != 101 and r["n"] != 27}
    ns.update("id = 102", {"n": "7"})
    expected[102]["n"] = 7
    ns.update_partition_spec("s, bucket(4, n)")
    more = [dict(r, id=200 + r["id"]) for r in ROWS[6:9]]
    ns.write(pa.Table.from_pylist(more, schema=SCHEMA))
    expected.update({r["id"]: r for r in more})

    specs, columns = _manifest(built.root)
    assert sorted(columns) == ["partition_field_nb", "partition_field_s"]
    assert specs["partition_spec_v2"]["id"] == 2
    # the same source and transform reuse the field_id, bucket stays murmur3
    assert [f["field_id"] for f in specs["partition_spec_v2"]["fields"]] == ["s", "nb"]
    assert specs["partition_spec_v2"]["fields"][1]["transform"] == BUCKET
    ns = lp.PartitionedNamespace.open(built.root)
    assert _rows(ns) == sorted(expected.values(), key=lambda r: r["id"])
    v2 = [t for t in ns.plan_scan() if t.spec_version == 2]
    v2_ids = sorted(i for t in v2 for i in t.open().to_table().column("id").to_pylist())
    assert v2_ids == sorted(r["id"] for r in more)
    _leaf_values_match_oracle(ns)


def test_merge_overwrite_optimize_and_columns_keep_the_dialect(tmp_path: os.PathLike[str]) -> None:
    built = build(str(tmp_path), SCHEMA, FIELDS, ROWS)
    ns = lp.PartitionedNamespace.open(built.root)
    expected = {r["id"]: dict(r) for r in ROWS}
    changed = [dict(ROWS[1], n=5), dict(ROWS[2], id=300)]
    ns.merge(pa.Table.from_pylist(changed, schema=SCHEMA), on="id").when_matched_update_all()\
        .when_not_matched_insert_all().execute()  # fmt: skip
    expected.update({r["id"]: r for r in changed})
    replacement = [dict(ROWS[0], id=400, s="beta")]
    ns.write(pa.Table.from_pylist(replacement, schema=SCHEMA), mode="overwrite_partitions")
    key = ("beta", partition_value(BUCKET, ROWS[0]["n"]))  # the one partition replaced
    expected = {
        k: r for k, r in expected.items() if (r["s"], partition_value(BUCKET, r["n"])) != key
    }
    expected[400] = replacement[0]
    ns.optimize()
    ns.add_columns([pa.field("extra", pa.int32())])
    ns = lp.PartitionedNamespace.open(built.root)
    specs, columns = _manifest(built.root)
    assert list(specs) == ["partition_spec_v1"]
    assert specs["partition_spec_v1"]["fields"][1]["transform"] == BUCKET
    assert sorted(columns) == ["partition_field_nb", "partition_field_s"]
    got = [{k: v for k, v in r.items() if k != "extra"} for r in _rows(ns)]
    assert got == sorted(expected.values(), key=lambda r: r["id"])
    _leaf_values_match_oracle(ns)


def test_writing_a_bucket_of_unknown_encoding_is_refused(tmp_path: os.PathLike[str]) -> None:
    fields = [_field("nb", "n", {"type": "bucket", "num_buckets": 4}, pa.int32())]
    built = build(str(tmp_path), SCHEMA, fields, ROWS)
    ns = lp.PartitionedNamespace.open(built.root)
    with pytest.raises(errors.TransformError, match="hash_encoding"):
        ns.write(pa.Table.from_pylist(ROWS[:2], schema=SCHEMA))
    assert len(lp.PartitionedNamespace.open(built.root).to_table()) == len(ROWS)


def test_create_in_the_published_dialect(tmp_path: os.PathLike[str]) -> None:
    root = str(tmp_path)
    ns = lp.PartitionedNamespace.create(
        root, schema=SCHEMA, partition_by="s, bucket(4, n) AS nb, year(d)", dialect="published"
    )
    ns.write(pa.Table.from_pylist(ROWS, schema=SCHEMA))
    specs, columns = _manifest(root)
    assert columns == ["partition_field_s", "partition_field_nb", "partition_field_d_year"]
    assert specs["partition_spec_v1"] == {
        "id": 1,
        "fields": [
            {
                "field_id": "s",
                "source_ids": [3],
                "transform": {"type": "identity"},
                "result_type": {"type": "utf8"},
            },
            {
                "field_id": "nb",
                "source_ids": [4],
                "transform": BUCKET,
                "result_type": {"type": "int32"},
            },
            {
                "field_id": "d_year",
                "source_ids": [1],
                "transform": {"type": "year"},
                "result_type": {"type": "int32"},
            },
        ],
    }
    ns = lp.PartitionedNamespace.open(root)
    assert _rows(ns) == sorted(ROWS, key=lambda r: r["id"])
    _leaf_values_match_oracle(ns)
    assert len(ns.plan_scan("n = 27")) < len(ns.plan_scan())


def test_unknown_dialect_is_refused(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(errors.InvalidInputError, match="dialect"):
        lp.PartitionedNamespace.create(
            str(tmp_path), schema=SCHEMA, partition_by="s", dialect="iceberg"
        )


def test_cli_create_takes_the_dialect(tmp_path: Path) -> None:
    schema = '{"id": "int64", "s": "string"}'
    created = cli(
        "create",
        tmp_path / "p",
        "--schema",
        schema,
        "--partition-by",
        "s",
        "--dialect",
        "published",
    )
    assert created.code == 0, created.err
    specs, columns = _manifest(str(tmp_path / "p"))
    assert columns == ["partition_field_s"]
    assert specs["partition_spec_v1"]["id"] == 1
    default = cli("create", tmp_path / "d", "--schema", schema, "--partition-by", "s")
    assert default.code == 0, default.err
    assert isinstance(_manifest(str(tmp_path / "d"))[0]["partition_spec_v1"], list)
