"""Issue 15 item 3: ``rename_column`` on a namespace whose leaves another client wrote (built
here with pylance and pyarrow only: leaf columns without our private field-id key)."""

from __future__ import annotations

import json
import os

import lance
import pyarrow as pa

import lance_partitioned as lp

SCHEMA_JSON = {
    "fields": [
        {"name": "id", "nullable": False, "type": {"type": "int64"},
         "metadata": {"lance:field_id": "0"}},
        {"name": "country", "nullable": True, "type": {"type": "utf8"},
         "metadata": {"lance:field_id": "1"}},
        {"name": "amount", "nullable": True, "type": {"type": "float64"},
         "metadata": {"lance:field_id": "2"}},
    ]
}  # fmt: skip
SPEC_V1 = [
    {
        "field_id": 1,
        "name": "country",
        "source_id": 1,
        "expression": "col",
        "result_type": {"type": "utf8"},
    }
]
LEAVES = {"US": ("k7m2n9p4q8r5s3t6", [1, 2]), "FR": ("w1x2y3z4a5b6c7d8", [3])}


def foreign_namespace(root: str) -> None:
    """A spec-000 namespace as a plain pylance client writes it: random names, leaves whose
    columns carry no field ids, ``read_version`` pinned."""
    rows = []
    for country, (name, ids) in LEAVES.items():
        location = f"{name[:8]}_v1${name}$dataset"
        leaf = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "country": [country] * len(ids),
                "amount": [float(i) for i in ids],
            }
        )
        lance.write_dataset(leaf, f"{root}/{location}")
        rows.append((f"v1${name}", "namespace", None, None, country))
        rows.append((f"v1${name}$dataset", "table", location, 1, country))
    rows.insert(0, ("v1", "namespace", None, None, None))
    manifest = pa.table(
        {
            "object_id": pa.array([r[0] for r in rows], pa.string()),
            "object_type": pa.array([r[1] for r in rows], pa.string()),
            "location": pa.array([r[2] for r in rows], pa.string()),
            "metadata": pa.array([None] * len(rows), pa.string()),
            "base_objects": pa.array([None] * len(rows), pa.list_(pa.string())),
            "read_version": pa.array([r[3] for r in rows], pa.uint64()),
            "country": pa.array([r[4] for r in rows], pa.string()),
        }
    )
    ds = lance.write_dataset(manifest, f"{root}/__manifest")
    ds.update_metadata(
        {"partition_spec_v1": json.dumps(SPEC_V1), "schema": json.dumps(SCHEMA_JSON)}
    )


def test_rename_on_leaves_of_another_client(tmp_path: os.PathLike[str]) -> None:
    root = str(tmp_path)
    foreign_namespace(root)
    ns = lp.PartitionedNamespace.open(root)
    before = ns.version
    assert sorted(ns.to_table().column("country").to_pylist()) == ["FR", "US", "US"]
    ns.rename_column("country", "region")
    # before: every value of the renamed column read NULL
    assert ns.to_table().sort_by("id").column("region").to_pylist() == ["US", "US", "FR"]
    assert ns.count_rows("region = 'US'") == 2
    # a plain Lance reader of each leaf sees the new name with its values
    for location in ns.partitions()["location"].to_pylist():
        leaf = lance.dataset(f"{root}/{location}").to_table()
        assert "country" not in leaf.column_names
        assert set(leaf.column("region").to_pylist()) <= {"US", "FR"}
    # every __manifest version since reads the column's values, under either name
    for version in range(before, ns.version + 1):
        old = lp.PartitionedNamespace.open(root, version=version)
        name = "region" if "region" in old.schema.names else "country"
        assert sorted(old.to_table().column(name).to_pylist()) == ["FR", "US", "US"]
    # and writes go on: an append into a renamed leaf, read back by name
    ns.write(pa.table({"id": [4], "region": ["US"], "amount": [4.0]}))
    assert ns.to_table("region = 'US'").sort_by("id").column("id").to_pylist() == [1, 2, 4]
