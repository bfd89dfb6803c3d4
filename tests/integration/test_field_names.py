"""Filters naming partition fields (spec 000 Appendix C's pruning example, issue 15 item 10).

A two-spec namespace: v1 partitions by ``event_date`` (identity), v2 by
``date_part('year', event_date) AS event_year``, ``country`` and ``bucket(4, user_id) AS
user_bucket``. The oracle evaluates the fields' expressions with DataFusion over the full data.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned.errors import InvalidInputError
from lance_partitioned.pruning import fieldnames
from lance_partitioned.scan import sql_filter
from lance_partitioned.spec.transforms import Bucket
from tests.integration.helpers import copy_namespace
from tests.property.strategies import oracle_ids

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


# --------------------------------------------------------- field names inside expressions
# SQL the predicate tree cannot express (arithmetic, IS [NOT] TRUE, CASE, COALESCE...) that
# names partition fields: decided per leaf from its partition values where they pin the
# field, computed over the source column in memory elsewhere. The oracle is DuckDB over the
# full data with the fields computed by hand (pyarrow's year, the bucket transform).


def _with_fields(table: pa.Table) -> pa.Table:
    """``table`` with ``event_year`` and ``user_bucket`` computed by hand."""
    years = pc.year(table.column("event_date")).cast(pa.int32())
    buckets = Bucket(4).apply_reference(table.column("user_id"))
    return table.append_column("event_year", years).append_column("user_bucket", buckets)


SHAPES = [
    "event_year + 1 = 2026",
    "event_year % 2 = 0 OR country = 'FR'",
    "(event_year = 2024) IS NOT TRUE",
    "(event_year > 2024) IS TRUE AND id > 3",
    "NOT (event_year + 1 = 2025) OR user_bucket IS NULL",
    "CASE WHEN event_year = 2024 THEN id % 2 = 0 ELSE country = 'US' END",
    "CASE WHEN id > 205 THEN true ELSE false END",
    "COALESCE(event_year, 0) = 0",
    "COALESCE(user_bucket, -1) IN (-1, 2)",
    "event_year + 0 IN (2024, 2026)",
    "event_year - 1 BETWEEN 2023 AND 2024",
    "user_bucket + event_year > 2026",
    "(user_bucket = 1) IS NOT TRUE AND event_year * 1 = 2025",
]


# each shape of expression against DuckDB
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("condition", SHAPES)
def test_expressions_over_field_names_match_duckdb(
    ns: lp.PartitionedNamespace, condition: str
) -> None:
    expected = oracle_ids(_with_fields(ns.to_table()), condition)
    assert expected, "a shape that selects nothing tests little"
    assert _ids(ns.to_table(condition)) == expected
    assert ns.count_rows(condition) == len(expected)
    assert sorted(ns.to_pyarrow_dataset(condition).to_table().column("id").to_pylist()) == (
        expected
    )


def test_an_expression_over_a_field_is_decided_by_the_partition_values(
    ns: lp.PartitionedNamespace,
) -> None:
    """v2 leaves hold ``event_year``, v1 leaves' ``event_date`` pins it: every leaf is
    decided (pruned, or read whole); only a field no partition pins is read per row."""
    tasks = ns.plan_scan("event_year + 1 = 2026")
    assert tasks
    assert all(isinstance(t.residual, lp.expressions.AlwaysTrue) for t in tasks)
    values = [dict(t.partition_values) for t in tasks]
    assert all(
        v["event_year"] == 2025 if "event_year" in v else v["event_date"].year == 2025
        for v in values
    )
    bucketed = ns.plan_scan("user_bucket * 2 = 6")
    v1 = [t for t in bucketed if t.spec_version == 1]
    v2 = [t for t in bucketed if t.spec_version == 2]
    assert v1
    assert all(isinstance(t.residual, fieldnames.FieldExpression) for t in v1)
    assert all(t.residual.columns == ("user_id",) for t in v1)
    assert v2
    assert all(dict(t.partition_values)["user_bucket"] == 3 for t in v2)


TS_SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", "UTC")), ("v", pa.int64())])


def _ts_rows(first: int, count: int) -> pa.Table:
    base = dt.datetime(2023, 3, 1, tzinfo=dt.timezone.utc)
    ids = list(range(first, first + count))
    return pa.table(
        {
            "id": ids,
            "ts": [None if i % 6 == 5 else base + dt.timedelta(days=97 * i) for i in ids],
            "v": [i % 5 for i in ids],
        },
        schema=TS_SCHEMA,
    )


@pytest.fixture(scope="module")
def ts_built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pa.Table]:
    """``year(ts)`` (the field ``ts_year``), then ``bucket(2, id)``: in v2 leaves no
    partition value pins ``ts_year``. Built once: the tests that change it take a copy
    (``tests.integration.helpers.copy_namespace``). The directory, and the rows."""
    root = tmp_path_factory.mktemp("ts_fields") / "ns"
    ns = lp.PartitionedNamespace.create(str(root), schema=TS_SCHEMA, partition_by="year(ts)")
    first, second = _ts_rows(0, 12), _ts_rows(100, 8)
    ns.write(first)
    ns.update_partition_spec("bucket(2, id)")
    ns.write(second)
    return root, pa.concat_tables([first, second])


def _ts_oracle(data: pa.Table, condition: str) -> list[int]:
    years = pc.year(data.column("ts")).cast(pa.int32())
    return oracle_ids(data.append_column("ts_year", years), condition)


REPRODUCTIONS = [
    "ts_year + 1 = 2025",
    "(ts_year = 2024) IS NOT TRUE",
    "CASE WHEN v > 2 THEN true ELSE false END",
    "CASE WHEN ts_year = 2024 THEN v > 2 ELSE v = 0 END",
]


def _read(ns: lp.PartitionedNamespace, condition: str, data: pa.Table) -> None:
    assert _ids(ns.to_table(condition)) == _ts_oracle(data, condition)


def _count(ns: lp.PartitionedNamespace, condition: str, data: pa.Table) -> None:
    assert ns.count_rows(condition) == len(_ts_oracle(data, condition))


def _delete(ns: lp.PartitionedNamespace, condition: str, data: pa.Table) -> None:
    matching = _ts_oracle(data, condition)
    assert ns.delete(condition).rows_deleted == len(matching)
    assert _ids(ns.to_table()) == sorted(set(data.column("id").to_pylist()) - set(matching))


def _update(ns: lp.PartitionedNamespace, condition: str, data: pa.Table) -> None:
    matching = set(_ts_oracle(data, condition))
    assert ns.update(condition, {"v": "v + 100"}).rows_updated == len(matching)
    before = dict(zip(data.column("id").to_pylist(), data.column("v").to_pylist(), strict=True))
    after = ns.to_table().to_pylist()
    assert len(after) == data.num_rows
    for row in after:
        assert row["v"] == before[row["id"]] + (100 if row["id"] in matching else 0)


OPERATIONS = {"to_table": _read, "count_rows": _count, "delete": _delete, "update": _update}


@pytest.mark.parametrize("operation", list(OPERATIONS))
@pytest.mark.parametrize("condition", REPRODUCTIONS)
def test_field_names_inside_expressions_in_reads_and_changes(
    ts_built: tuple[Path, pa.Table], tmp_path: Path, condition: str, operation: str
) -> None:
    built, data = ts_built
    ns = copy_namespace(built, tmp_path / "ns")
    assert _ts_oracle(data, condition), "a filter that selects nothing tests little"
    OPERATIONS[operation](ns, condition, data)


def test_an_expression_datafusion_cannot_evaluate_is_a_typed_error(
    ns: lp.PartitionedNamespace,
) -> None:
    for condition in ("event_year + 'x' = 1", "CASE WHEN id > 1 THEN 'a' ELSE 'b' END = 1"):
        with pytest.raises(InvalidInputError):
            ns.count_rows(condition)
