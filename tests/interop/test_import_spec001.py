"""import_ of the published spec's Hive-style layout (spec 001, section 3.2): ``key=value/``
directories ending in ``key=value.lance`` leaf datasets without the partition columns, built
here with pylance and pyarrow alone; the rows come back with their partition values."""

from __future__ import annotations

import datetime as dt
import json
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


PROPERTIES_ROWS = pa.table(
    {
        "id": pa.array(range(12), pa.int64()),
        "d": [dt.date(2024 + i % 2, 1 + i % 12, 1 + i) for i in range(12)],
        "tenant": pa.array([7, 8, 9, 10] * 3, pa.int64()),
        "s": ["abc", "abd", "xyz", "x"] * 3,
    }
)


def _with_functions(root: Path, functions: list[dict[str, object]], last: str = "s_trunc") -> None:
    """A spec-001 layout by ``year(d)``, ``bucket(4, tenant)``, then ``truncate(2, s)`` (level
    ``last``): the leaves store every column, the root's ``__manifest`` carries the
    ``lance.partitioning.*`` properties (its table metadata), the bucket paths are murmur3_32
    mod 4 (another client's buckets: recomputed here)."""
    import mmh3

    for row in PROPERTIES_ROWS.to_pylist():
        bucket = mmh3.hash(str(row["tenant"]).encode()) % 4
        leaf = root / f"d_year={row['d'].year}" / f"tenant_bucket={bucket}"
        leaf = leaf / f"{last}={row['s'][:2]}.lance"
        table = pa.Table.from_pylist([row], schema=PROPERTIES_ROWS.schema)
        lance.write_dataset(table, leaf, mode="append" if leaf.exists() else "create")
    manifest = lance.write_dataset(pa.table({"object_id": ["root"]}), root / "__manifest")
    manifest.update_metadata(
        {
            "lance.partitioning.is_partitioned": "true",
            "lance.partitioning.partition_columns": json.dumps(functions),
        }
    )


FUNCTIONS: list[dict[str, object]] = [
    {"name": "d", "function": "year"},
    {"name": "tenant", "function": "bucket", "properties": {"num_buckets": "4"}},
    {"name": "s", "function": "truncate(2)"},
]


def test_spec001_functions_become_our_transforms(tmp_path: Path) -> None:
    _with_functions(tmp_path / "table", FUNCTIONS)
    uri = str(tmp_path / "ns")
    result = lp.import_(str(tmp_path / "table"), uri)
    assert result.partition_by == (
        "d_year = date_part('year', col), tenant_bucket = abs(hash(col)) % 4, "
        "s_trunc = left(col, 2)"
    )
    ns = lp.PartitionedNamespace.open(uri)
    assert ns.schema.names == ["id", "d", "tenant", "s"]  # no path-value columns
    same_rows(ns.to_table(), PROPERTIES_ROWS)
    for task in ns.plan_scan():  # every row in the leaf of its recomputed values
        values = dict(task.partition_values)
        for row in task.open().to_table().to_pylist():
            assert values["d_year"] == row["d"].year
            assert values["s_trunc"] == row["s"][:2]
    assert ns.count_rows("s = 'abc'") == 3
    assert len(ns.plan_scan("s = 'abc'")) < len(ns.plan_scan())


def test_spec001_hash_level_needs_partition_by(tmp_path: Path) -> None:
    functions = [*FUNCTIONS[:2], {"name": "s", "function": "hash"}]
    _with_functions(tmp_path / "table", functions, last="s_hash")
    with pytest.raises(errors.PartitionSpecError, match=r"'s_hash' .*has no equivalent"):
        lp.import_(str(tmp_path / "table"), str(tmp_path / "ns"))
