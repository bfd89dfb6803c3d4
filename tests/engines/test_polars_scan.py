"""Polars through ``PartitionedNamespace.scan_polars``: the same rows as ``to_table``, only
the pruned leaves opened, the projection and the row limit honoured by the plugin itself."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pyarrow as pa

import lance_partitioned as lp
from lance_partitioned.engines import EngineScan


def _ids(values: list[int]) -> list[int]:
    return sorted(values)


def _leaves(ns: lp.PartitionedNamespace, sql: str | None = None) -> list[str]:
    return sorted(task.object_id for task in ns.plan_scan(sql))


def test_polars_query_opens_only_the_pruned_leaves(events: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    frame = events.scan_polars(on_scan=scans.append)
    got = frame.filter(pl.col("country") == "US").select("id", "amount").sort("id").collect()
    expected = events.to_table("country = 'US'", columns=["id", "amount"]).sort_by("id")
    assert got.to_arrow().to_pylist() == expected.to_pylist()
    (scan,) = scans
    assert sorted(scan.opened) == _leaves(events, "country = 'US'")
    assert len(scan.opened) == 12 < len(_leaves(events)) == 50
    # Polars asks for its filter's columns too: country, pinned to US in every leaf left, is
    # filled in rather than read
    assert set(scan.columns) == {"id", "amount"}
    assert [name for name, _ in scan.constants] == ["country"]
    assert scan.exact


def test_polars_range_on_a_transformed_column_prunes(events: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    frame = events.scan_polars(on_scan=scans.append)
    got = frame.filter((pl.col("ts") >= start) & pl.col("country").is_in(["FR"])).collect()
    sql = "ts >= TIMESTAMP '2026-01-01 00:00:00+00:00' AND country IN ('FR')"
    assert _ids(got["id"].to_list()) == _ids(events.to_table(sql).column("id").to_pylist())
    assert sorted(scans[-1].opened) == _leaves(events, sql)
    assert len(scans[-1].opened) == 10 < len(_leaves(events))


def test_polars_limit_stops_the_read(events: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    got = events.scan_polars(on_scan=scans.append).select("id").head(3).collect()
    assert got.height == 3
    (scan,) = scans
    assert scan.limit == 3
    assert scan.columns == ("id",)
    assert len(scan.opened) == 1  # the first leaf holds 3 rows: no other leaf was opened


def test_polars_untranslatable_predicate_runs_in_polars(events: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    frame = events.scan_polars(on_scan=scans.append)
    predicate = (pl.col("country") == "DE") & (pl.col("note").str.len_chars() == 6)
    got = frame.filter(predicate).select("id").collect()
    full = pl.from_arrow(events.to_table())
    assert isinstance(full, pl.DataFrame)
    assert _ids(got["id"].to_list()) == _ids(full.filter(predicate)["id"].to_list())
    assert len(got) > 0
    scan = scans[-1]
    assert not scan.exact
    assert sorted(scan.opened) == _leaves(events, "country = 'DE'")


def test_polars_or_with_an_untranslatable_side(events: lp.PartitionedNamespace) -> None:
    predicate = (pl.col("country") == "DE") | (pl.col("note").str.len_chars() == 6)
    got = events.scan_polars().filter(predicate).collect()
    full = pl.from_arrow(events.to_table())
    assert isinstance(full, pl.DataFrame)
    assert _ids(got["id"].to_list()) == _ids(full.filter(predicate)["id"].to_list())


def test_polars_base_filter_and_schema(events: lp.PartitionedNamespace) -> None:
    frame = events.scan_polars("country = 'FR'")
    assert frame.collect_schema().names() == events.schema.names
    got = frame.select(pl.len()).collect().item()
    assert got == events.count_rows("country = 'FR'")


def test_polars_scan_of_an_empty_namespace(tmp_path: object) -> None:
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32())])
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=schema, partition_by="day")
    assert ns.scan_polars().collect().height == 0


def test_a_column_the_partitions_pin_is_filled_in_not_read(
    events: lp.PartitionedNamespace,
) -> None:
    """Every leaf the filter leaves is a ``country = 'US'`` leaf (of both spec versions): the
    plugin does not read ``country`` and fills it in; the rows are those of ``to_table``."""
    scans: list[EngineScan] = []
    frame = events.scan_polars(on_scan=scans.append)
    got = frame.filter(pl.col("country") == "US").select("id", "country", "ts").collect()
    expected = events.to_table("country = 'US'", columns=["id", "country", "ts"])
    assert got.sort("id").to_arrow().to_pylist() == expected.sort_by("id").to_pylist()
    assert got.schema == frame.select("id", "country", "ts").collect_schema()
    (scan,) = scans
    assert scan.columns == ("id", "ts")  # ts is not pinned by year(ts) / month(ts)
    assert [(name, value.as_py()) for name, value in scan.constants] == [("country", "US")]


def test_a_null_partition_value_is_filled_in_as_null(events: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    got = (
        events.scan_polars(on_scan=scans.append)
        .filter(pl.col("country").is_null())
        .select("id", "country")
        .collect()
    )
    expected = events.to_table("country IS NULL", columns=["id", "country"])
    assert got.sort("id").to_arrow().to_pylist() == expected.sort_by("id").to_pylist()
    assert got.height > 0
    assert [(name, value.as_py()) for name, value in scans[0].constants] == [("country", None)]


def test_a_column_of_several_values_is_read(events: lp.PartitionedNamespace) -> None:
    scans: list[EngineScan] = []
    frame = events.scan_polars(on_scan=scans.append)
    got = frame.filter(pl.col("country").is_in(["US", "FR"])).select("id", "country").collect()
    expected = events.to_table("country IN ('US', 'FR')", columns=["id", "country"])
    assert got.sort("id").to_arrow().to_pylist() == expected.sort_by("id").to_pylist()
    assert scans[0].columns == ("id", "country")
    assert scans[0].constants == ()


def test_a_post_filter_sees_the_filled_in_column(events: lp.PartitionedNamespace) -> None:
    """An untranslatable predicate on a pinned column runs in Polars after it is filled in."""
    scans: list[EngineScan] = []
    predicate = (pl.col("country") == "DE") & (pl.col("country").str.len_chars() == 2)
    predicate = predicate & (pl.col("note").str.len_chars() == 6)
    got = events.scan_polars(on_scan=scans.append).filter(predicate).select("id").collect()
    full = pl.from_arrow(events.to_table())
    assert isinstance(full, pl.DataFrame)
    assert _ids(got["id"].to_list()) == _ids(full.filter(predicate)["id"].to_list())
    assert got.height > 0
    assert not scans[0].exact
    assert [name for name, _ in scans[0].constants] == ["country"]
