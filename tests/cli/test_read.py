"""describe, partitions, scan and stats on a real namespace, --json parsed back."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.parquet as pq

import lance_partitioned as lp
from tests.cli.helpers import cli, one_line_error


def test_describe_json(namespace: Path) -> None:
    ns = lp.PartitionedNamespace.open(str(namespace))
    out = cli("describe", namespace, "--json").json()
    assert out["uri"] == str(namespace)
    assert out["manifest_version"] == ns.version
    assert out["manifest_time"][:4].isdigit()
    assert [(f["path"], f["field_id"], f["deprecated"]) for f in out["schema"]] == [
        ("id", 0, False),
        ("ts", 1, False),
        ("country", 2, False),
        ("amount", 3, False),
    ]
    assert [(s["version"], s["current"], s["leaves"]) for s in out["specs"]] == [
        (1, False, 5),
        (2, True, 4),
    ]
    assert [f["expression"] for f in out["specs"][0]["fields"]] == ["date_part('year', col)", "col"]
    assert out["specs"][0]["fields"][0]["source"] == "ts"
    parts = ns.partitions()
    counts = out["counts"]
    assert counts["leaves"] == parts.num_rows == 9
    assert counts["rows"] == ns.count_rows() == 78
    tables = ns.snapshot.rows.num_rows - ns.snapshot.tables.num_rows
    assert counts["namespaces"] == tables
    assert counts["bytes"] > 0
    assert counts["fragments"] == 5 * 3 + 4


def test_partitions_json_sizes_match_the_leaves(namespace: Path) -> None:
    ns = lp.PartitionedNamespace.open(str(namespace))
    out = cli("partitions", namespace, "--filter", "country = 'US'", "--sort", "rows", "--json")
    assert out.code == 0, out.err
    leaves = out.json()
    assert {(leaf["spec_version"], json.dumps(leaf["values"])) for leaf in leaves} == {
        (1, '{"ts_year": 2025, "country": "US"}'),
        (1, '{"ts_year": 2026, "country": "US"}'),
        (2, '{"country": "US"}'),
    }
    assert [leaf["rows"] for leaf in leaves] == sorted(
        (leaf["rows"] for leaf in leaves), reverse=True
    )
    for leaf in leaves:
        dataset = lance.dataset(f"{ns.uri}/{leaf['location']}", version=leaf["read_version"])
        assert leaf["rows"] == dataset.count_rows()
        assert leaf["fragments"] == len(dataset.get_fragments())
        on_disk = sum(
            f.file_size_bytes for fr in dataset.get_fragments() for f in fr.metadata.files
        )
        assert leaf["bytes"] == on_disk
    assert sum(leaf["rows"] for leaf in leaves) == ns.count_rows("country = 'US'")


def test_partitions_text_and_mistakes(namespace: Path) -> None:
    text = cli("partitions", namespace, "--sort", "bytes")
    assert text.code == 0, text.err
    assert text.out.splitlines()[0].split() == (
        [
            "spec",
            "┃",
            "ts_year",
            "┃",
            "country",
            "┃",
            "rows",
            "┃",
            "bytes",
            "┃",
            "fragments",
            "┃",
            "read_version",
        ]
    )
    assert text.out.rstrip().splitlines()[-1].startswith("9 leaves, 78 rows, ")
    line = one_line_error(cli("partitions", namespace, "--filter", "nope = 1"))
    assert "partition filter" in line
    assert "nope" in line
    line = one_line_error(cli("partitions", namespace, "--sort", "size"))
    assert "--sort" in line


def test_scan_formats(namespace: Path, tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.open(str(namespace))
    expected = ns.to_table("country = 'FR' AND amount > 3", columns=["id", "amount"])
    ids = sorted(expected.column("id").to_pylist())
    where = ["--filter", "country = 'FR' AND amount > 3", "--columns", "id,amount"]

    lines = cli("scan", namespace, *where, "--json").out.splitlines()
    assert sorted(json.loads(line)["id"] for line in lines) == ids

    text = cli("scan", namespace, *where, "--format", "csv").out
    rows = list(csv.DictReader(io.StringIO(text)))
    assert sorted(int(r["id"]) for r in rows) == ids
    assert set(rows[0]) == {"id", "amount"}

    target = tmp_path / "out.parquet"
    done = cli("scan", namespace, *where, "--format", "parquet", "--output", target, "--limit", "2")
    assert done.code == 0, done.err
    assert pq.read_table(target).num_rows == 2

    shown = cli("scan", namespace, *where, "--limit", "3")
    assert shown.code == 0, shown.err
    assert shown.out.rstrip().endswith("3 rows (more rows exist: raise --limit)")
    assert "amount" in shown.out.splitlines()[0]


def test_scan_explain(namespace: Path) -> None:
    ns = lp.PartitionedNamespace.open(str(namespace))
    sql = "country = 'US' AND amount > 5"
    plan = cli("scan", namespace, "--filter", sql, "--explain", "--json").json()
    tasks = ns.plan_scan(sql)
    assert plan["kept"] == len(tasks) == 3
    assert plan["leaves"] == 9
    assert [(s["spec_version"], s["kept"], s["leaves"]) for s in plan["specs"]] == [
        (1, 2, 5),
        (2, 1, 4),
    ]
    assert plan["specs"][0]["manifest_filter"] == "`country` = 'US'"
    assert plan["residuals"] == [
        {"spec_version": 1, "leaves": 2, "residual": "`amount` > 5.0"},
        {"spec_version": 2, "leaves": 1, "residual": "`amount` > 5.0"},
    ]
    text = cli("scan", namespace, "--filter", "country = 'US'", "--explain")
    assert "leaves scanned: 3 of 9" in text.out
    assert "none (the partition values decide)" in text.out


def test_scan_mistakes(namespace: Path) -> None:
    line = one_line_error(cli("scan", namespace, "--filter", "amount >"))
    assert "amount >" in line
    line = one_line_error(cli("scan", namespace, "--columns", "id,nope"))
    assert "'nope'" in line
    line = one_line_error(cli("scan", namespace, "--format", "parquet"))
    assert "--output" in line
    line = one_line_error(cli("scan", namespace, "--format", "xml"))
    assert "'xml' is not one of table, csv, json, parquet" in line


def test_stats_json(namespace: Path) -> None:
    out = cli("stats", namespace, "--json", "--small-fragments", "3", "--top", "2").json()
    rows = sorted(leaf["rows"] for leaf in cli("partitions", namespace, "--json").json())
    assert out["leaves"] == len(rows) == 9
    assert out["rows"] == sum(rows)
    spread = out["rows_per_leaf"]
    assert (spread["min"], spread["max"], spread["median"]) == (rows[0], rows[-1], rows[4])
    assert spread["skew"] == round(rows[-1] / rows[4], 2)
    assert [leaf["rows"] for leaf in out["largest"]] == rows[::-1][:2]
    assert [leaf["rows"] for leaf in out["smallest"]] == rows[:2]
    # v1 leaves were written by three appends: three small fragments each
    assert len(out["fragmented"]) == 5
    assert all(leaf["spec_version"] == 1 for leaf in out["fragmented"])
    assert out["advice"][0].startswith("compact these 5 leaves")


def test_describe_text_marks_deprecated_and_nested_fields(tmp_path: Path) -> None:
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("geo", pa.struct([("lat", pa.float64()), ("lon", pa.float64())])),
            ("old", pa.string()),
        ]
    )
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=schema, partition_by="id")
    ns.drop_columns(["old"])
    result = cli("describe", tmp_path / "ns")
    assert result.code == 0, result.err
    tree = result.out.split("\nschema\n")[1].split("\n\n")[0].splitlines()
    assert tree == [
        "├── id: int64  #0",
        "├── geo: struct<lat: float64, lon: float64>  #1",
        "│   ├── lat: float64  #2",
        "│   └── lon: float64  #3",
        "└── old: utf8  #4  (deprecated)",
    ]
    assert "1 namespaces, 0 leaves, 0 rows, 0 B in 0 fragments" in result.out


def test_scan_explain_on_a_partition_field_name(namespace: Path) -> None:
    # ts_year is a field of v1 only: v1 prunes on its __manifest column, v2 keeps every leaf
    ns = lp.PartitionedNamespace.open(str(namespace))
    sql = "ts_year = 2025"
    done = cli("scan", namespace, "--filter", sql, "--explain", "--json")
    assert done.code == 0, done.err
    plan = done.json()
    tasks = ns.plan_scan(sql)
    assert plan["kept"] == len(tasks)
    assert plan["specs"][0]["manifest_filter"] == "`ts_year` = 2025"
    assert plan["specs"][1]["kept"] == plan["specs"][1]["leaves"]
    assert {r["residual"] for r in plan["residuals"] if r["spec_version"] == 2} == {
        "((date_part('year', `ts`)) = 2025)"
    }


def test_leaf_commands_on_a_deleted_leaf_name_it_on_one_line(tmp_path: Path) -> None:
    """``partitions``/``stats``/``describe`` show no leaf without its sizes: a leaf that cannot
    be opened is one error line naming it and pointing to ``verify`` (no traceback)."""
    from tests.cli.helpers import build

    ns = build(tmp_path / "ns")
    gone = ns.partitions(sizes=False).to_pylist()[0]
    shutil.rmtree(tmp_path / "ns" / gone["location"])
    for command in ("partitions", "stats", "describe"):
        line = one_line_error(cli(command, tmp_path / "ns"), code=1)
        assert "1 of 9 leaves" in line, line
        assert gone["object_id"] in line
        assert "verify" in line
