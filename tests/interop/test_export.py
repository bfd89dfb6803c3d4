"""export: a namespace's rows as a Hive Parquet tree, a Delta table or one Lance dataset;
import(export(x)) gives x's rows back (DuckDB oracle); the CLI's import and export."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from tests.cli.helpers import cli
from tests.interop._oracle import same_rows


def _namespace(uri: Path) -> pa.Table:
    table = pa.table(
        {
            "id": pa.array(range(40), pa.int64()),
            "country": [None if i % 9 == 0 else ("US" if i % 2 else "F R") for i in range(40)],
            "ts": [dt.datetime(2024, 1 + i % 3, 1, tzinfo=dt.timezone.utc) for i in range(40)],
            "v": [i / 4 for i in range(40)],
        }
    )
    lp.write(str(uri), table, partition_by="country, months(ts)")
    return lp.PartitionedNamespace.open(str(uri)).to_table()


@pytest.mark.parametrize("to", ["parquet", "delta", "lance"])
def test_round_trip(tmp_path: Path, to: str) -> None:
    if to == "delta":
        pytest.importorskip("deltalake")
    rows = _namespace(tmp_path / "ns")
    out = tmp_path / "out"
    result = lp.export(str(tmp_path / "ns"), str(out), to=to)  # type: ignore[arg-type]
    assert result.rows == rows.num_rows
    if to != "lance":
        assert result.partition_by == ["country"]
    back = tmp_path / "back"
    lp.import_(str(out), str(back), partition_by="country")
    same_rows(lp.PartitionedNamespace.open(str(back)).to_table(), rows)


def test_parquet_tree_layout_and_filter(tmp_path: Path) -> None:
    rows = _namespace(tmp_path / "ns")
    out = tmp_path / "out"
    result = lp.export(str(tmp_path / "ns"), str(out), filter="v >= 5")
    assert sorted(p.name for p in out.iterdir()) == [
        "country=F%20R",
        "country=US",
        "country=__HIVE_DEFAULT_PARTITION__",
    ]
    expected = rows.filter(pa.compute.greater_equal(rows["v"], 5.0))
    assert result.rows == expected.num_rows
    read = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    same_rows(read, expected)


def test_export_errors(tmp_path: Path) -> None:
    _namespace(tmp_path / "ns")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(errors.InvalidInputError, match="not an empty directory"):
        lp.export(str(tmp_path / "ns"), str(tmp_path / "full"))
    with pytest.raises(errors.InvalidInputError, match="orc"):
        lp.export(str(tmp_path / "ns"), str(tmp_path / "o"), to="orc")  # type: ignore[arg-type]


def test_cli_export_then_import(tmp_path: Path) -> None:
    rows = _namespace(tmp_path / "ns")
    exported = cli("export", tmp_path / "ns", tmp_path / "out", "--to", "parquet", "--json")
    assert exported.code == 0, exported.err
    assert json.loads(exported.out)["rows"] == rows.num_rows
    imported = cli("import", tmp_path / "out", tmp_path / "back", "--commit-rows", "10", "--json")
    assert imported.code == 0, imported.err
    out = json.loads(imported.out)
    assert (out["rows"], out["units_skipped"], out["partition_by"]) == (40, 0, "country = col")
    assert out["commits"] > 1
    same_rows(lp.PartitionedNamespace.open(str(tmp_path / "back")).to_table(), rows)
    again = cli("import", tmp_path / "out", tmp_path / "back")
    assert again.code == 0, again.err
    assert again.out.startswith("imported 0 rows from 3 files, 3 already imported in 0 commits")


def test_cli_import_errors(tmp_path: Path) -> None:
    missing = cli("import", tmp_path / "nowhere", tmp_path / "ns", "--format", "hive")
    assert missing.code == 2
    assert "does not exist" in missing.err
    bad = cli("import", tmp_path, tmp_path / "ns", "--format", "orc")
    assert bad.code == 2
    assert "format 'orc'" in bad.err
