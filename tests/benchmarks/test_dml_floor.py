"""The floor of ``benchmarks/dml.py`` (issue 31): pylance alone, one dataset per partition,
doing a row-level update, a keyed ``merge_insert`` and a compaction per leaf; and the
benchmark's table printing it beside ours, with ours / floor."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from tests.benchmarks.helpers import load, run


def test_the_floor_updates_merges_and_compacts_every_leaf(tmp_path: Path) -> None:
    floor_module = load("_floor")
    table = pa.table(
        {"id": [1, 2, 3, 4], "k": ["a", "b", None, "a"], "v": [10.0, 20.0, 30.0, 40.0]}
    )
    parts = floor_module.split_by(table, [table.column("k")])
    assert {key: part.num_rows for key, part in parts.items()} == {"a": 2, "b": 1, "null": 1}
    floor = floor_module.Floor(str(tmp_path), workers=2)
    floor.write_parts(parts)

    floor.update(floor.keys, {"v": "v + 1"}, "id % 2 = 1")
    assert floor.read("a").sort_by("id").column("v").to_pylist() == [11.0, 40.0]
    assert floor.read("null").column("v").to_pylist() == [31.0]

    source = pa.table({"id": [2, 5], "k": ["b", "c"], "v": [-2.0, -5.0]})
    floor.merge(floor_module.split_by(source, [source.column("k")]), ["id"])
    assert floor.keys == ["a", "b", "c", "null"]
    assert floor.read("b").column("v").to_pylist() == [-2.0]
    assert floor.read("c").column("id").to_pylist() == [5]
    assert floor.count_rows() == 5

    floor.optimize()
    assert floor.count_rows() == 5


@pytest.mark.slow  # (a write of 504 partitions per system: about 10 s)
def test_dml_prints_ours_over_the_floor(tmp_path: Path) -> None:
    args = ("--rows", "3000", "--merge-rows", "60", "--only", "months")
    ops = ("--ops", "update,merge_keyed,optimize", "--systems", "ours,floor")
    done = run("dml.py", *args, *ops, "--dir", str(tmp_path))
    rows = [line for line in done.stdout.splitlines() if line.startswith("| `months(ts)")]
    assert len(rows) == 3, done.stdout
    for line in rows:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert re.fullmatch(r"\d+\.\d\dx", cells[6]), line  # ours / floor
    assert list(tmp_path.iterdir()) == []
