"""A published-dialect namespace whose spec names a struct child (``device.os``, field id 2)
as its source, built with pylance + pyarrow alone: it reads back and prunes on the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from tests.interop.published import BASE_FIELDS

pytestmark = pytest.mark.interop

DEVICE = pa.struct([("os", pa.utf8()), ("ver", pa.int32())])
SCHEMA = pa.schema([("id", pa.int64()), ("device", DEVICE)])
SCHEMA_JSON = {
    "fields": [
        {
            "name": "id",
            "nullable": True,
            "type": {"type": "int64"},
            "metadata": {"lance:field_id": "0"},
        },
        {
            "name": "device",
            "nullable": True,
            "type": {
                "type": "struct",
                "fields": [
                    {
                        "name": "os",
                        "nullable": True,
                        "type": {"type": "utf8"},
                        "metadata": {"lance:field_id": "2"},
                    },
                    {
                        "name": "ver",
                        "nullable": True,
                        "type": {"type": "int32"},
                        "metadata": {"lance:field_id": "3"},
                    },
                ],
            },
            "metadata": {"lance:field_id": "1"},
        },
    ]
}
OS = ["ios", "android", None, "linux"]
ROWS: list[dict[str, Any]] = [
    {"id": i, "device": None if i % 5 == 4 else {"os": OS[i % 4], "ver": i}} for i in range(20)
]


def _build(root: Path) -> None:
    """One leaf per ``device.os`` (NULL under a NULL struct), as the published text lays out."""
    groups: dict[str | None, list[dict[str, Any]]] = {}
    for row in ROWS:
        groups.setdefault(None if row["device"] is None else row["device"]["os"], []).append(row)
    manifest: list[dict[str, Any]] = [{"object_id": "v1", "object_type": "namespace"}]
    for n, (value, rows) in enumerate(groups.items()):
        level = f"{n:016d}"
        object_id = f"v1${level}$dataset"
        location = f"{n:08x}_{object_id}"
        ds = lance.write_dataset(pa.Table.from_pylist(rows, schema=SCHEMA), str(root / location))
        manifest.append(
            {"object_id": f"v1${level}", "object_type": "namespace", "partition_field_os": value}
        )
        manifest.append(
            {
                "object_id": object_id,
                "object_type": "table",
                "location": location,
                "read_version": ds.version,
                "partition_field_os": value,
            }
        )
    columns = pa.schema([*BASE_FIELDS, pa.field("partition_field_os", pa.utf8())])
    table = lance.write_dataset(
        pa.Table.from_pylist(manifest, schema=columns), str(root / "__manifest")
    )
    spec = {
        "id": 1,
        "fields": [
            {
                "field_id": "os",
                "source_ids": [2],
                "transform": {"type": "identity"},
                "result_type": {"type": "utf8"},
            }
        ],
    }
    table.update_metadata(
        {"schema": json.dumps(SCHEMA_JSON), "partition_spec_v1": json.dumps(spec)}
    )


def test_a_published_spec_on_a_struct_child_reads_and_prunes(tmp_path: Path) -> None:
    _build(tmp_path)
    ns = lp.PartitionedNamespace.open(str(tmp_path))
    assert ns.namespace_schema.name_of(ns.current_spec.fields[0].source_id) == "device.os"
    full = ns.to_table()
    assert sorted(full.column("id").to_pylist()) == list(range(20))
    everything = len(ns.plan_scan())
    for text, os in [("device.os = 'ios'", "ios"), ("device.os IS NULL", None)]:
        expected = sorted(
            r["id"] for r in ROWS if (None if r["device"] is None else r["device"]["os"]) == os
        )
        got = ns.to_table(text)
        assert sorted(got.column("id").to_pylist()) == expected
        assert len(ns.plan_scan(text)) < everything
    os_values = pc.struct_field(full.column("device"), "os")
    assert (
        ns.count_rows("device.os IN ('linux', 'android')")
        == pc.sum(pc.is_in(os_values, pa.array(["linux", "android"]))).as_py()
    )
