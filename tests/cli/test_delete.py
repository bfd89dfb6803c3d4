"""``delete`` through the command line: partition drops, deletion files, --json, errors."""

from __future__ import annotations

from pathlib import Path

import lance_partitioned as lp
from tests.cli.helpers import build, cli, one_line_error


def test_delete_reports_json_and_removes_exactly_the_matching_rows(tmp_path: Path) -> None:
    ns = build(tmp_path / "ns", appends=2)
    before = ns.version
    total = ns.count_rows()
    fr = ns.count_rows("country = 'FR'")
    odd = ns.count_rows("id % 2 = 1") - ns.count_rows("country = 'FR' AND id % 2 = 1")
    assert fr > 0
    assert odd > 0

    result = cli("delete", tmp_path / "ns", "--where", "country = 'FR'", "--json")

    assert result.code == 0, result.err
    out = result.json()
    ns = lp.PartitionedNamespace.open(str(tmp_path / "ns"))
    assert out["manifest_version"] == ns.version == before + 1
    assert out["rows_deleted"] == fr
    assert out["leaves_dropped"] > 0  # every FR leaf is decided by its partition value
    assert out["leaves_rewritten"] == 0
    assert ns.count_rows() == total - fr
    assert ns.count_rows("country = 'FR'") == 0
    assert lp.PartitionedNamespace.open(str(tmp_path / "ns"), version=before).count_rows() == total

    again = cli("delete", tmp_path / "ns", "--where", "id % 2 = 1", "--json").json()
    assert again["rows_deleted"] == odd
    assert again["leaves_rewritten"] > 0  # not decided by partition values: deletion files
    assert lp.PartitionedNamespace.open(str(tmp_path / "ns")).count_rows("id % 2 = 1") == 0


def test_delete_text_output_and_errors(tmp_path: Path) -> None:
    build(tmp_path / "ns", appends=1)
    result = cli("delete", tmp_path / "ns", "--where", "id < 0")
    assert result.code == 0, result.err
    assert result.out.startswith("deleted 0 rows: 0 leaves dropped, 0 with deletion files")
    bad = one_line_error(cli("delete", tmp_path / "ns", "--where", "no_such_column = 1"))
    assert "no_such_column" in bad
    missing = one_line_error(cli("delete", tmp_path / "nowhere", "--where", "id = 1"))
    assert "no partitioned namespace at" in missing
    assert cli("delete", tmp_path / "ns").code == 2  # --where is required
