"""``optimize`` through the command line (in-process): compaction, the filter, --json, errors."""

from __future__ import annotations

from pathlib import Path

import lance_partitioned as lp
from tests.cli.helpers import build, cli, one_line_error
from tests.maintenance.optimize_helpers import leaf_fragments


def test_optimize_compacts_and_reports_json(tmp_path: Path) -> None:
    ns = build(tmp_path / "ns", appends=3)
    rows = sorted(ns.to_table(columns=["id"]).column("id").to_pylist())
    before = leaf_fragments(ns)
    assert sorted(before.values()) == [1] * 4 + [3] * 5  # v1: 3 appends, v2: one write

    result = cli("optimize", tmp_path / "ns", "--json")

    assert result.code == 0, result.err
    out = result.json()
    ns = lp.PartitionedNamespace.open(str(tmp_path / "ns"))
    assert set(leaf_fragments(ns).values()) == {1}
    assert out["manifest_version"] == ns.version
    assert (out["leaves_compacted"], out["leaves_skipped"]) == (5, 4)
    assert (out["fragments_before"], out["fragments_after"]) == (19, 9)
    assert out["rows"] == len(rows) == 78
    assert out["manifest_fragments_after"] == 1
    assert sorted(ns.to_table(columns=["id"]).column("id").to_pylist()) == rows
    assert result.err == ""  # no progress bar off a terminal


def test_optimize_with_a_filter_and_text_output(tmp_path: Path) -> None:
    ns = build(tmp_path / "ns", appends=2)
    before = leaf_fragments(ns)
    result = cli("optimize", tmp_path / "ns", "--filter", "country = 'FR'", "--no-manifest")
    assert result.code == 0, result.err
    assert result.out.startswith("compacted 1 of 2 leaves (")
    assert "fragments 3 -> 2" in result.out
    after = leaf_fragments(lp.PartitionedNamespace.open(str(tmp_path / "ns")))
    changed = {oid for oid in before if before[oid] != after[oid]}
    fr_v1 = ns.partitions("spec_version = 1 AND country = 'FR'").column("object_id")
    assert changed == set(fr_v1.to_pylist())


def test_optimize_errors_are_one_line(tmp_path: Path) -> None:
    build(tmp_path / "ns", appends=1)
    bad = one_line_error(cli("optimize", tmp_path / "ns", "--filter", "no_such_column = 1"))
    assert "no_such_column" in bad
    missing = one_line_error(cli("optimize", tmp_path / "nowhere"))
    assert "no partitioned namespace at" in missing
