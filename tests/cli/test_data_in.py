"""write --allow-missing-columns and --schema-mode merge, and restore, through the CLI."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import lance_partitioned as lp
from tests.cli.helpers import SCHEMA, cli, events, one_line_error


def _ns(tmp_path: Path) -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=SCHEMA, partition_by="country"
    )


def test_missing_columns_are_an_error_unless_allowed(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    no_ts = tmp_path / "no_ts.csv"
    no_ts.write_text("id,country,amount\n1,US,1.5\n2,FR,2.5\n")
    line = one_line_error(cli("write", ns.uri, no_ts))
    assert "no column 'ts'" in line
    assert "--allow-missing-columns" in line
    assert ns.refresh().count_rows() == 0

    done = cli("write", ns.uri, no_ts, "--allow-missing-columns", "--json")
    assert done.code == 0, done.err
    assert done.json()["rows_written"] == 2
    assert ns.refresh().to_table(columns=["ts"]).column("ts").null_count == 2


def test_a_missing_partition_source_column_is_always_an_error(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    no_country = tmp_path / "no_country.csv"
    no_country.write_text("id,ts,amount\n1,2025-01-05T10:00:00Z,1.5\n")
    for extra in ([], ["--allow-missing-columns"]):
        line = one_line_error(cli("write", ns.uri, no_country, *extra))
        assert "no column 'country', a partition source column" in line
    assert ns.refresh().count_rows() == 0


def test_schema_mode_merge_adds_the_new_columns(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    wider = tmp_path / "wider.csv"
    wider.write_text("id,ts,country,amount,channel\n1,2025-01-05T10:00:00Z,US,1.5,web\n")
    line = one_line_error(cli("write", ns.uri, wider))
    assert "'channel' is not in the namespace schema" in line
    line = one_line_error(cli("write", ns.uri, wider, "--schema-mode", "replace"))
    assert "--schema-mode" in line
    done = cli("write", ns.uri, wider, "--schema-mode", "merge", "--json")
    assert done.code == 0, done.err
    ns.refresh()
    assert ns.schema.names == ["id", "ts", "country", "amount", "channel"]
    assert ns.to_table(columns=["channel"]).column("channel").to_pylist() == ["web"]


def test_restore_a_version_a_tag_and_a_time(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.write(events(0, 6))
    good = ns.version
    ns.tags.create("good", good)
    ns.write(events(6, 6))
    done = cli("restore", ns.uri, str(good), "--json")
    assert done.code == 0, done.err
    out = done.json()
    assert (out["restored_version"], out["rows"]) == (good, 6)
    assert out["manifest_version"] == ns.refresh().version
    assert sorted(ns.to_table(columns=["id"]).column("id").to_pylist()) == list(range(6))

    ns.delete("id >= 0")
    shown = cli("restore", ns.uri, "good")
    assert shown.code == 0, shown.err
    assert shown.out.startswith(f"restored the rows of __manifest version {good}: 6 rows")
    assert ns.refresh().count_rows() == 6

    when = ns.versions().column("timestamp")[good - 1].as_py().isoformat()
    ns.write(events(20, 3))
    assert cli("restore", ns.uri, when).code == 0
    assert ns.refresh().count_rows() == 6

    line = one_line_error(cli("restore", ns.uri, "nope"))
    assert "nope" in line


def test_restore_keeps_rows_equal(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.write(pa.Table.from_pylist(events(0, 8).to_pylist(), schema=SCHEMA))
    first, version = ns.to_table().sort_by("id"), ns.version
    ns.update("id < 4", values={"amount": 0.0})
    assert cli("restore", ns.uri, str(version)).code == 0
    assert ns.refresh().to_table().sort_by("id").equals(first)
