"""``write(mode="overwrite_partitions")`` after a partition spec change: rows stored under
older spec versions that fall in the replaced partitions are replaced too."""

from __future__ import annotations

import datetime
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import transaction

from .helpers import SCHEMA, contents, create, expected, rows


def _month(year: int, month: int, n: int, first_id: int, country: str = "US") -> pa.Table:
    start = datetime.datetime(year, month, 1)
    return pa.table(
        {
            "id": range(first_id, first_id + n),
            "ts": [start + datetime.timedelta(hours=7 * i % (24 * 28)) for i in range(n)],
            "country": [country if i % 3 else "FR" for i in range(n)],
            "user_id": [i % 5 for i in range(n)],
            "name": ["n"] * n,
            "amount": [float(i) for i in range(n)],
        },
        schema=SCHEMA,
    )


def test_january_is_not_doubled_after_a_spec_change(tmp_path: Path) -> None:
    """The issue's case: v1 on year(ts), country; v2 adds month(ts); overwriting January
    under v2 must replace the January rows that v1 leaves hold."""
    ns = create(tmp_path / "ns", "year(ts), country")
    old = pa.concat_tables([_month(2025, 1, 60, 0), _month(2025, 2, 40, 100)])
    ns.write(old)
    ns.update_partition_spec("year(ts), month(ts), country")
    january = _month(2025, 1, 60, 1000)
    ns.write(january, mode="overwrite_partitions")
    want = pa.concat_tables([january, _month(2025, 2, 40, 100)])
    assert ns.count_rows("ts_month = 1") == 60
    assert contents(ns) == expected(want)


def test_only_the_written_partitions_are_replaced_in_old_leaves(tmp_path: Path) -> None:
    data = rows(300, seed=11)
    ns = create(tmp_path / "ns", "country", data)
    ns.update_partition_spec("bucket(4, user_id), truncate(10, id)")
    new = rows(40, seed=12, first_id=5000)
    ns.write(new, mode="overwrite_partitions")
    got = ns.refresh().to_table()
    written = ns.partitions(f"spec_version = {ns.current_spec.version}")
    # every row of the result is either new, or in a partition `new` does not touch
    fields = [f.name for f in ns.current_spec.fields]
    touched = {tuple(r[f] for f in fields) for r in written.to_pylist()}
    with_fields = _with_fields(ns, got)
    for row in with_fields:
        if row["id"] < 5000:
            assert tuple(row[f] for f in fields) not in touched
    old_kept = [r for r in _with_fields(ns, data) if tuple(r[f] for f in fields) not in touched]
    assert sorted(r["id"] for r in with_fields) == sorted(
        [r["id"] for r in old_kept] + new.column("id").to_pylist()
    )


def _with_fields(ns: lp.PartitionedNamespace, table: pa.Table) -> list[dict[str, object]]:
    """``table``'s rows with the current spec's partition values added, as the writer
    computes them."""
    from lance_partitioned.consistency import conform_for_write, leaf_schema
    from lance_partitioned.ingest import partition_values

    schema = ns.namespace_schema
    conformed = conform_for_write(table, schema, leaf_schema(schema))
    keys = partition_values(conformed, ns.current_spec, schema)
    out = table.to_pylist()
    for spec_field, key in zip(ns.current_spec.fields, keys, strict=True):
        for row, value in zip(out, key.to_pylist(), strict=True):
            row[spec_field.name] = value
    return out


def test_an_injected_failure_leaves_both_spec_versions_as_before(tmp_path: Path) -> None:
    ns = create(tmp_path / "ns", "year(ts), country")
    old = _month(2025, 1, 30, 0)
    ns.write(old)
    ns.update_partition_spec("year(ts), month(ts), country")
    version = ns.refresh().version

    def crash() -> None:
        raise RuntimeError("injected")

    with (
        transaction.pause_at("leaves_committed", crash),
        pytest.raises(RuntimeError, match="injected"),
    ):
        ns.write(_month(2025, 1, 10, 1000), mode="overwrite_partitions")
    assert ns.refresh().version == version
    assert contents(ns) == expected(old)
