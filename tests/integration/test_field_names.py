"""Filters naming partition fields (spec 000 Appendix C's pruning example, issue 15 item 10).

A two-spec namespace: v1 partitions by ``event_date`` (identity), v2 by
``date_part('year', event_date) AS event_year``, ``country`` and ``bucket(4, user_id) AS
user_bucket``. The oracle evaluates the fields' expressions with DataFusion over the full data.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.errors import InvalidInputError
from lance_partitioned.scan import sql_filter
from lance_partitioned.spec.transforms import Bucket

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("event_date", pa.date32()),
        ("country", pa.string()),
        ("user_id", pa.int64()),
    ]
)


def _rows(start: int, count: int, year: int) -> pa.Table:
    return pa.table(
        {
            "id": list(range(start, start + count)),
            "event_date": [
                None if i % 7 == 6 else dt.date(year, 1 + i % 12, 1 + i % 28) for i in range(count)
            ],
            "country": [["US", "FR", None][i % 3] for i in range(count)],
            "user_id": [None if i % 5 == 4 else i * 37 for i in range(count)],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def ns(tmp_path_factory: pytest.TempPathFactory) -> lp.PartitionedNamespace:
    root: Path = tmp_path_factory.mktemp("fieldnames")
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="event_date")
    ns.write(_rows(0, 14, 2025))
    ns.write(_rows(100, 8, 2024))
    ns.update_partition_spec(
        "year(event_date) AS event_year, country, bucket(4, user_id) AS user_bucket"
    )
    ns.write(_rows(200, 20, 2025))
    ns.write(_rows(300, 10, 2024))
    return ns


def _oracle(ns: lp.PartitionedNamespace, condition: str) -> list[int]:
    """Ids where ``condition`` holds, the field names replaced by their expressions
    (DataFusion; the bucket computed by the transform's DataFusion reference)."""
    full = ns.to_table()
    buckets = Bucket(4).apply_reference(full.column("user_id"))
    table = full.append_column("user_bucket", buckets)
    condition = condition.replace("event_year", "date_part('year', event_date)")
    return sorted(sql_filter(table, condition).column("id").to_pylist())


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


APPENDIX_C = "event_year = 2025 AND country = 'US'"


def test_appendix_c_query_reads_the_oracle_rows(ns: lp.PartitionedNamespace) -> None:
    expected = _oracle(ns, APPENDIX_C)
    assert expected  # rows in both spec versions
    assert {i // 100 for i in expected} == {0, 2}
    assert _ids(ns.to_table(APPENDIX_C)) == expected
    assert ns.count_rows(APPENDIX_C) == len(expected)


def test_appendix_c_query_prunes_per_spec(ns: lp.PartitionedNamespace) -> None:
    tasks = ns.plan_scan(APPENDIX_C)
    v1 = [t for t in tasks if t.spec_version == 1]
    v2 = [t for t in tasks if t.spec_version == 2]
    # v2: the event_year and country columns of the __manifest decide; nothing remains
    assert v2
    assert all(
        dict(t.partition_values)["event_year"] == 2025
        and dict(t.partition_values)["country"] == "US"
        and isinstance(t.residual, lp.expressions.AlwaysTrue)
        for t in v2
    )
    # v1: the event_date identity decides the year of every leaf; country stays a residual
    dates = [dict(t.partition_values)["event_date"] for t in v1]
    assert dates
    assert all(d is not None and d.year == 2025 for d in dates)
    all_v1 = [t for t in ns.plan_scan() if t.spec_version == 1]
    assert len(v1) == len(
        {
            t.partition_values
            for t in all_v1
            if t.partition_values[0][1] is not None and t.partition_values[0][1].year == 2025
        }
    )
    assert all(t.residual == lp.expressions.EqualTo("country", "US") for t in v1)


@pytest.mark.parametrize(
    "condition",
    [
        "user_bucket = 3",
        "user_bucket IN (0, 2) OR event_year < 2025",
        "NOT (event_year = 2024) AND user_bucket IS NOT NULL",
        "event_year IS NULL",
        "event_year >= 2025 OR country = 'FR'",
        "user_bucket <> 1 AND id > 10",
    ],
)
def test_field_name_filters_match_the_oracle(ns: lp.PartitionedNamespace, condition: str) -> None:
    expected = _oracle(ns, condition)
    assert _ids(ns.to_table(condition)) == expected
    assert ns.count_rows(condition) == len(expected)


def test_bucket_field_is_evaluated_in_memory_in_other_specs(ns: lp.PartitionedNamespace) -> None:
    # Lance's filter has no hash(): v1 leaves keep the condition and read it in memory
    tasks = ns.plan_scan("user_bucket = 3")
    v1 = [t for t in tasks if t.spec_version == 1]
    v2 = [t for t in tasks if t.spec_version == 2]
    assert len(v1) == len([t for t in ns.plan_scan() if t.spec_version == 1])
    assert v1
    assert all("hash(`user_id`)" in lp.expressions.to_sql(t.residual) for t in v1)
    assert v2
    assert all(dict(t.partition_values)["user_bucket"] == 3 for t in v2)
    assert ns.to_table("user_bucket = 3", columns=["country"]).num_rows == len(
        _oracle(ns, "user_bucket = 3")
    )


def test_partitions_filter_on_field_names(ns: lp.PartitionedNamespace) -> None:
    out = ns.partitions(APPENDIX_C)
    assert out.num_rows > 0
    assert set(out.column("spec_version").to_pylist()) == {2}
    assert set(out.column("event_year").to_pylist()) == {2025}
    assert set(out.column("country").to_pylist()) == {"US"}


def test_schema_column_wins_over_field_name(tmp_path: Path) -> None:
    # a field may share its source column's name: the name means the column
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="event_date")
    ns.write(_rows(0, 9, 2025))
    ns.update_partition_spec("truncate(1, country) AS country")
    ns.write(_rows(100, 9, 2025))
    assert ns.count_rows("country = 'U'") == 0
    assert _ids(ns.to_table("country = 'US'")) == [0, 3, 6, 100, 103, 106]


def test_unknown_name_still_fails(ns: lp.PartitionedNamespace) -> None:
    with pytest.raises(InvalidInputError, match="no column 'event_month'"):
        ns.to_table("event_month = 1")
