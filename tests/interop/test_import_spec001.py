"""import_ of the published spec's Hive-style layout (spec 001, section 3.2): ``key=value/``
directories ending in ``key=value.lance`` leaf datasets without the partition columns, built
here with pylance and pyarrow alone; the rows come back with their partition values."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from tests.interop._oracle import same_rows


def _layout(root: Path) -> pa.Table:
    """Two levels (event_date, country), the values only in the paths; one leaf of two
    fragments; a NULL country; a value that needs URL-encoding."""
    expected: list[pa.Table] = []
    leaves = [
        ("2025-12-10", "US", "country=US.lance", 4),
        ("2025-12-10", "C N", "country=C%20N.lance", 3),
        ("2025-12-11", None, "country=__HIVE_DEFAULT_PARTITION__.lance", 2),
    ]
    first = 0
    for day, country, name, rows in leaves:
        data = pa.table({"id": pa.array(range(first, first + rows), pa.int64()), "v": [1.5] * rows})
        leaf = root / f"event_date={day}" / name
        lance.write_dataset(data, leaf, max_rows_per_file=3)
        expected.append(
            data.append_column(
                "event_date", pa.array([dt.date.fromisoformat(day)] * rows)
            ).append_column("country", pa.array([country] * rows, pa.string()))
        )
        first += rows
    return pa.concat_tables(expected)


def test_spec001_layout(tmp_path: Path) -> None:
    expected = _layout(tmp_path / "table")
    uri = tmp_path / "ns"
    result = lp.import_(str(tmp_path / "table"), str(uri), commit_rows=3)
    assert result.units == 4  # the US leaf has two fragments
    ns = lp.PartitionedNamespace.open(str(uri))
    assert [f.name for f in ns.current_spec.fields] == ["event_date", "country"]
    assert ns.schema.field("event_date").type == pa.date32()
    same_rows(ns.to_table(), expected)
    assert ns.count_rows("country = 'C N'") == 3
    assert ns.count_rows("country IS NULL") == 2
    again = lp.import_(str(tmp_path / "table"), str(uri), format="spec001")
    assert (again.rows, again.units_skipped) == (0, 4)


def test_spec001_leaves_must_share_their_levels(tmp_path: Path) -> None:
    _layout(tmp_path / "table")
    lance.write_dataset(pa.table({"id": [9], "v": [0.0]}), tmp_path / "table" / "country=FR.lance")
    with pytest.raises(errors.InvalidInputError, match="same levels"):
        lp.import_(str(tmp_path / "table"), str(tmp_path / "ns"))
