"""DuckDB (and pyarrow) through ``PartitionedNamespace.to_pyarrow_dataset``: the same rows as
``to_table``, only the pruned leaves opened, only the selected columns read."""

from __future__ import annotations

import datetime as dt
import pickle

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned.engines import EngineScan


def _duckdb(ds: pa.dataset.Dataset) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection where ``ds`` is the table ``ds``."""
    con = duckdb.connect()
    con.register("ds", ds)
    return con


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def _leaves(ns: lp.PartitionedNamespace, sql: str | None = None) -> list[str]:
    return sorted(task.object_id for task in ns.plan_scan(sql))


def test_duckdb_query_opens_only_the_pruned_leaves(events: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    ds = events.to_pyarrow_dataset(on_scan=scans.append)  # noqa: F841 (DuckDB finds it by name)
    got = duckdb.sql("SELECT id, amount FROM ds WHERE country = 'US' ORDER BY id").fetchall()
    expected = events.to_table("country = 'US'", columns=["id", "amount"]).sort_by("id")
    assert got == [(row["id"], row["amount"]) for row in expected.to_pylist()]
    assert len(got) == 50
    (scan,) = scans
    assert sorted(scan.opened) == _leaves(events, "country = 'US'")
    assert len(scan.opened) == 12 < len(_leaves(events)) == 50  # the pruning is real
    assert scan.columns == ("id", "amount")  # the projection reached the leaves
    assert scan.exact


def test_duckdb_pushes_ranges_and_in_lists(events: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    ds = events.to_pyarrow_dataset(on_scan=scans.append)
    con = _duckdb(ds)
    sql = (
        "country IN ('FR', 'DE') AND ts >= TIMESTAMPTZ '2025-01-01 00:00:00+00' "
        "AND ts < TIMESTAMPTZ '2026-01-01 00:00:00+00'"
    )
    got = con.sql(f"SELECT id FROM ds WHERE {sql}").fetchall()
    ours = sql.replace("TIMESTAMPTZ", "TIMESTAMP")
    assert sorted(i for (i,) in got) == _ids(events.to_table(ours, columns=["id"]))
    (scan,) = scans
    assert sorted(scan.opened) == _leaves(events, ours)
    assert len(scan.opened) == 21  # of 50: v1's (2025, FR|DE) and v2's 2025 months of FR|DE
    assert scan.columns == ("id",)


def test_duckdb_null_partition_and_negation(events: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    ds = events.to_pyarrow_dataset(on_scan=scans.append)
    con = _duckdb(ds)
    got = con.sql("SELECT id FROM ds WHERE country IS NULL").fetchall()
    assert sorted(i for (i,) in got) == _ids(events.to_table("country IS NULL"))
    assert sorted(scans[-1].opened) == _leaves(events, "country IS NULL")
    got = con.sql("SELECT id FROM ds WHERE NOT (country = 'US') AND id < 60").fetchall()
    assert sorted(i for (i,) in got) == _ids(events.to_table("country != 'US' AND id < 60"))
    assert None not in [task.partition_values for task in scans[-1].tasks]


def test_duckdb_count_star_and_limit(events: lp.PartitionedNamespace) -> None:
    ds = events.to_pyarrow_dataset()
    con = _duckdb(ds)
    assert con.sql("SELECT count(*) FROM ds").fetchall() == [(events.count_rows(),)]
    assert con.sql("SELECT count(*) FROM (SELECT * FROM ds LIMIT 5)").fetchall() == [(5,)]


def test_base_filter_applies_to_every_scan(events: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    ds = events.to_pyarrow_dataset("country = 'FR'", on_scan=scans.append)
    con = _duckdb(ds)
    got = con.sql("SELECT id FROM ds WHERE id >= 100").fetchall()
    assert sorted(i for (i,) in got) == _ids(events.to_table("country = 'FR' AND id >= 100"))
    assert sorted(scans[-1].opened) == _leaves(events, "country = 'FR' AND id >= 100")


def test_untranslatable_filter_is_applied_not_dropped(events: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    ds = events.to_pyarrow_dataset(on_scan=scans.append)
    odd = pc.equal(pc.bit_wise_and(pc.field("id"), 1), 1)
    expression = (pc.field("country") == "DE") & odd
    got = ds.to_table(columns=["id"], filter=expression)
    full = events.to_table()
    assert _ids(got) == _ids(full.filter(expression))
    (scan,) = scans
    assert not scan.exact  # the bit test runs in pyarrow on the batches read
    assert sorted(scan.opened) == _leaves(events, "country = 'DE'")  # the rest still prunes
    assert scan.columns == ("id", "country")  # read for the post-filter, not returned
    assert got.column_names == ["id"]


def test_or_with_an_untranslatable_side_keeps_its_rows(events: lp.PartitionedNamespace) -> None:
    ds = events.to_pyarrow_dataset()
    expression = (pc.field("country") == "DE") | (pc.utf8_length(pc.field("note")) == 6)
    assert _ids(ds.to_table(filter=expression)) == _ids(events.to_table().filter(expression))


def test_float_comparison_uses_pyarrow_semantics(events: lp.PartitionedNamespace) -> None:
    ds = events.to_pyarrow_dataset()
    for expression in (pc.field("amount") > 30.0, ~(pc.field("amount") > 30.0)):
        got = ds.to_table(filter=expression)
        assert _ids(got) == _ids(events.to_table().filter(expression))


def test_dataset_api(events: lp.PartitionedNamespace) -> None:
    ds = events.to_pyarrow_dataset()
    assert isinstance(ds, pa.dataset.Dataset)
    assert ds.schema == events.schema
    us = pc.field("country") == "US"
    assert ds.count_rows() == events.count_rows()
    assert ds.count_rows(filter=us) == events.count_rows("country = 'US'")
    assert ds.count_rows(filter=pc.utf8_length(pc.field("note")) == 6) == events.count_rows(
        "length(note) = 6"
    )
    assert ds.head(7, columns=["id"]).num_rows == 7
    assert ds.to_table(columns=[]).num_rows == events.count_rows()
    assert ds.filter(us).to_table().num_rows == events.count_rows("country = 'US'")
    assert ds.to_table(filter="id < 10").num_rows == 10
    batches = list(ds.to_batches(columns=["id"], filter=us, batch_size=4))
    assert sum(b.num_rows for b in batches) == events.count_rows("country = 'US'")
    assert all(b.num_rows <= 4 for b in batches)
    everything = ds.scanner(columns=["id"]).to_table()
    taken = ds.take([0, 5, 2], columns=["id"])
    assert taken.column("id").to_pylist() == everything.take([0, 5, 2]).column("id").to_pylist()


def test_dataset_errors_are_ours(events: lp.PartitionedNamespace) -> None:
    ds = events.to_pyarrow_dataset()
    with pytest.raises(lp.errors.InvalidInputError, match="unknown column"):
        ds.to_table(columns=["nope"])
    with pytest.raises(lp.errors.UnsupportedOperationError, match="get_fragments"):
        ds.get_fragments()
    with pytest.raises(lp.errors.InvalidInputError, match="filter"):
        ds.to_table(filter=42)
    with pytest.raises(lp.errors.InvalidInputError, match="out of bounds"):
        ds.take([10_000])


def test_dataset_reads_its_own_manifest_version(tmp_path: pytest.TempPathFactory) -> None:
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32())])
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=schema, partition_by="day")
    ns.write(pa.table({"id": [1], "day": [dt.date(2025, 1, 1)]}, schema=schema))
    ds = ns.to_pyarrow_dataset()
    con = _duckdb(ds)
    ns.write(pa.table({"id": [2], "day": [dt.date(2025, 1, 2)]}, schema=schema))
    assert con.sql("SELECT id FROM ds").fetchall() == [(1,)]
    assert ns.to_pyarrow_dataset().count_rows() == 2


def test_dataset_pickles_as_its_version_and_filters(events: lp.PartitionedNamespace) -> None:
    ds = events.to_pyarrow_dataset("country = 'US'").filter(pc.field("id") < 100)
    copy = pickle.loads(pickle.dumps(ds))
    assert isinstance(copy, type(ds))
    assert copy.count_rows() == events.count_rows("country = 'US' AND id < 100") > 0
    with pytest.raises(lp.errors.UnsupportedOperationError, match="pickle"):
        pickle.dumps(ds.scanner())
