"""create, write (CSV, JSON lines, Parquet; modes; progress) and evolve, through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lance_partitioned as lp
from tests.cli.helpers import SCHEMA, cli, console_script, events, one_line_error

SCHEMA_TEXT = json.dumps(
    {
        "id": "int64",
        "ts": {"type": "timestamp", "unit": "us", "timezone": "UTC"},
        "country": "utf8",
        "amount": "float64",
    }
)


def _inputs(folder: Path) -> dict[str, Path]:
    folder.mkdir()
    rows = events(0, 30)
    paths = {"parquet": folder / "a.parquet", "csv": folder / "b.csv", "json": folder / "c.jsonl"}
    pq.write_table(rows.slice(0, 10), paths["parquet"])
    lines = ["id,ts,country,amount"]
    for r in rows.slice(10, 10).to_pylist():
        country = r["country"] or ""
        lines.append(f"{r['id']},{r['ts'].isoformat()},{country},{r['amount']}")
    paths["csv"].write_text("\n".join(lines) + "\n")
    with paths["json"].open("w") as handle:
        for r in rows.slice(20, 10).to_pylist():
            handle.write(json.dumps({**r, "ts": r["ts"].isoformat()}) + "\n")
    return paths


def test_create_and_write_every_format(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    created = cli(
        "create", root, "--schema", SCHEMA_TEXT, "--partition-by", "year(ts), country", "--json"
    )
    assert created.code == 0, created.err
    out = created.json()
    assert [f["name"] for f in out["spec"]["fields"]] == ["ts_year", "country"]
    assert [(f["path"], f["field_id"]) for f in out["schema"]] == [
        ("id", 0),
        ("ts", 1),
        ("country", 2),
        ("amount", 3),
    ]
    paths = _inputs(tmp_path / "in")
    written = cli("write", root, *paths.values(), "--json")
    assert written.code == 0, written.err
    result = written.json()
    assert result["rows_written"] == 30
    assert result["input_files"] == 3
    assert result["input_bytes"] > 0
    ns = lp.PartitionedNamespace.open(str(root))
    assert result["manifest_version"] == ns.version
    assert result["partitions_created"] == ns.partitions().num_rows == 5
    got = ns.to_table().sort_by("id")
    assert got.equals(events(0, 30).cast(got.schema))  # empty CSV cells are NULL


@pytest.mark.console_script
def test_write_modes_directories_and_progress(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="country")
    folder = tmp_path / "in"
    folder.mkdir()
    pq.write_table(events(0, 12), folder / "part-0.parquet")
    pq.write_table(events(12, 12), folder / "part-1.parquet")
    # a terminal: the progress bar shows rows/s and bytes/s on stderr, colours on stdout
    shown = console_script("write", root, folder, env={"TTY_COMPATIBLE": "1"})
    assert shown.code == 0, shown.err
    assert "rows/s" in shown.err
    assert "B/s" in shown.err
    assert "partitions" in shown.err
    assert "\x1b[" in shown.err
    assert shown.out.startswith("wrote 24 rows")
    assert ns.refresh().count_rows() == 24

    replaced = tmp_path / "fr.parquet"
    pq.write_table(
        events(100, 6).filter(pa.compute.equal(events(100, 6)["country"], "FR")), replaced
    )
    done = cli("write", root, replaced, "--mode", "overwrite_partitions", "--json")
    assert done.code == 0, done.err
    assert done.json()["partitions_touched"] == 1
    assert ns.refresh().count_rows("country = 'FR'") == 1
    assert ns.count_rows() == 24 - 4 + 1

    done = cli("write", root, replaced, "--mode", "overwrite", "--json")
    assert done.json()["partitions_removed"] == 3
    assert ns.refresh().count_rows() == 1


def test_write_and_create_mistakes(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    line = one_line_error(
        cli("create", root, "--schema", SCHEMA_TEXT, "--partition-by", "year(ts), nope")
    )
    assert "nope" in line
    line = one_line_error(
        cli("create", root, "--schema", '{"id": "varchar"}', "--partition-by", "id")
    )
    assert "'varchar'" in line
    assert cli("create", root, "--schema", SCHEMA_TEXT, "--partition-by", "country").code == 0
    line = one_line_error(cli("create", root, "--schema", SCHEMA_TEXT, "--partition-by", "country"))
    assert "already exists" in line
    line = one_line_error(cli("write", root, tmp_path / "missing.csv"))
    assert "no such file or directory" in line
    (tmp_path / "data.txt").write_text("id\n1\n")
    line = one_line_error(cli("write", root, tmp_path / "data.txt"))
    assert "pass --format" in line
    bad = tmp_path / "bad.csv"
    bad.write_text("id,unknown\n1,2\n")
    line = one_line_error(cli("write", root, bad))
    assert "'unknown' is not in the namespace schema" in line
    line = one_line_error(cli("write", root, bad, "--mode", "upsert"))
    assert "--mode" in line
    # a bad value past the first block (1 MiB) that schema discovery reads: found while writing
    late = tmp_path / "late.csv"
    good = "".join(f"{i},2025-01-05T10:00:00Z,US,1.0\n" for i in range(60_000))
    late.write_text("id,ts,country,amount\n" + good + "oops,2025-01-05T10:00:00Z,US,1.0\n")
    line = one_line_error(cli("write", root, late))
    assert "cannot read the input files" in line
    assert "'oops'" in line
    assert lp.PartitionedNamespace.open(str(root)).count_rows() == 0  # nothing committed


def test_schema_types_as_pyarrow_writes_them(tmp_path: Path) -> None:
    """A newcomer writes types as pyarrow prints them (``timestamp[us, tz=UTC]``,
    ``decimal128(10, 2)``, ``string``, ``double``); a name neither form knows is one line that
    says what is accepted."""
    schema = json.dumps(
        {
            "id": "int64",
            "ts": "timestamp[us, tz=UTC]",
            "local": "timestamp[ms]",
            "day": "date32",
            "country": "string",
            "amount": "double",
            "price": "decimal128(10, 2)",
            "tags": "list<string>",
        }
    )
    root = tmp_path / "ns"
    created = cli("create", root, "--schema", schema, "--partition-by", "date(ts)", "--json")
    assert created.code == 0, created.err
    read = lp.PartitionedNamespace.open(str(root)).schema
    assert read.field("ts").type == pa.timestamp("us", "UTC")
    assert read.field("local").type == pa.timestamp("ms")
    assert read.field("day").type == pa.date32()
    assert read.field("country").type == pa.utf8()
    assert read.field("amount").type == pa.float64()
    assert read.field("price").type == pa.decimal128(10, 2)
    assert read.field("tags").type.value_type == pa.utf8()
    line = one_line_error(
        cli("create", tmp_path / "b", "--schema", '{"id": "varchar"}', "--partition-by", "id")
    )
    assert "'varchar'" in line
    assert "timestamp[us, tz=UTC]" in line  # says what is accepted
    line = one_line_error(cli("evolve", root, "add-column", "x", "timestamp[us, tz=Mars/Olympus]"))
    assert "Mars/Olympus" in line


def test_evolve(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    schema = pa.schema([("id", pa.int32()), ("country", pa.string()), ("old", pa.string())])
    ns = lp.PartitionedNamespace.create(str(root), schema=schema, partition_by="country")
    added = cli("evolve", root, "add-column", "note", "utf8", "--json")
    assert added.code == 0, added.err
    out = added.json()
    assert out["operation"] == "add-column"
    assert out["changed"] is True
    assert out["schema"][-1] == {
        "path": "note",
        "name": "note",
        "field_id": 3,
        "type": "utf8",
        "nullable": True,
        "deprecated": False,
    }
    assert cli("evolve", root, "drop-column", "old").code == 0
    assert cli("evolve", root, "rename-column", "note", "comment").code == 0
    promoted = cli("evolve", root, "promote-column", "id", "int64")
    assert promoted.out.startswith("promoted id to int64"), promoted.err
    spec = cli("evolve", root, "partition-spec", "bucket(4, id)", "--json").json()
    assert spec["spec"]["version"] == 2
    assert spec["spec"]["fields"][0]["expression"] == "abs(hash(col)) % 4"
    ns.refresh()
    assert ns.schema.names == ["id", "country", "comment"]
    assert ns.schema.field("id").type == pa.int64()
    assert ns.namespace_schema.is_deprecated(2)
    described = cli("describe", root, "--json").json()
    assert [(f["name"], f["deprecated"]) for f in described["schema"]][2] == ("old", True)
    line = one_line_error(cli("evolve", root, "promote-column", "id", "int32"))
    assert "id" in line
    line = one_line_error(cli("evolve", root, "partition-spec", "year(comment)"))
    assert "year" in line


def test_create_with_period_transforms(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    created = cli(
        "create", root, "--schema", SCHEMA_TEXT, "--partition-by", "months(ts), hours(ts) AS h",
        "--json",
    )  # fmt: skip
    assert created.code == 0, created.err
    assert created.err == ""  # no AmbiguousPartitionWarning: months are whole calendar months
    fields = created.json()["spec"]["fields"]
    assert [(f["name"], f["expression"]) for f in fields] == [
        ("ts_months", "(date_part('year', col) - 1970) * 12 + date_part('month', col) - 1"),
        ("h", "CAST(CAST(col AS DATE) AS BIGINT) * 24 + date_part('hour', col)"),
    ]
    data = tmp_path / "a.parquet"
    pq.write_table(events(0, 30), data)
    assert cli("write", root, data).code == 0
    listed = cli("partitions", root, "--json")
    assert listed.code == 0, listed.err
    stamps = events(0, 30).column("ts").to_pylist()
    expected = {((t.year - 1970) * 12 + t.month - 1, int(t.timestamp()) // 3600) for t in stamps}
    assert {(p["values"]["ts_months"], p["values"]["h"]) for p in listed.json()} == expected
    # a range of ts prunes through both fields: only the hours of March 2025 are read
    sql = "ts >= TIMESTAMP '2025-03-01 00:00:00' AND ts < TIMESTAMP '2025-04-01 00:00:00'"
    plan = cli("scan", root, "--filter", sql, "--explain", "--json")
    assert plan.code == 0, plan.err
    march = [t for t in stamps if (t.year, t.month) == (2025, 3)]
    assert plan.json()["kept"] == len({int(t.timestamp()) // 3600 for t in march}) == 3
    assert plan.json()["specs"][0]["manifest_filter"] == (  # 2025-03-01T00 to 2025-03-31T23
        "(`ts_months` >= 662) AND (`ts_months` <= 662) AND (`h` >= 483552) AND (`h` <= 484295)"
    )
    bad = one_line_error(cli("create", tmp_path / "x", "--schema", SCHEMA_TEXT,
                             "--partition-by", "hours(country)"))  # fmt: skip
    assert "hours() cannot be applied to column 'country'" in bad
