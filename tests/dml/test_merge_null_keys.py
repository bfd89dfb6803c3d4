"""``merge`` with NULL keys: partition source keys match NULL-safely, ``null_safe=True`` makes
every key do so, and the target leaves searched are those of the source rows' partition values
(NULL included, per spec version) — against DuckDB's ``IS NOT DISTINCT FROM``."""

from __future__ import annotations

import datetime
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp
from lance_partitioned.dml import MergeResult

from .helpers import contents, expected

ZONED = pa.schema(
    [
        ("id", pa.int64()),
        ("ts", pa.timestamp("us", "Europe/Berlin")),
        ("country", pa.string()),
        ("name", pa.string()),
        ("amount", pa.float64()),
    ]
)
START = datetime.datetime(2025, 1, 31, 23, 30, tzinfo=datetime.timezone.utc)


def _events(ids: range, *, amount: float = 0.0) -> pa.Table:
    """Rows over four months (one at a Berlin month boundary), every third country NULL,
    every fourth name NULL."""
    return pa.Table.from_pylist(
        [
            {
                "id": i,
                "ts": START + datetime.timedelta(days=31 * (i % 4)),
                "country": [None, "US", "FR"][i % 3],
                "name": None if i % 4 == 0 else f"n{i % 5}",
                "amount": amount + i,
            }
            for i in ids
        ],
        schema=ZONED,
    )


def _create(root: Path, data: pa.Table) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(root), schema=ZONED, partition_by="months(ts), country")
    ns.write(data)
    return ns


def _oracle(target: pa.Table, source: pa.Table, on: list[str], safe: set[str]) -> pa.Table:
    """DuckDB's upsert (update all, insert all); the ``safe`` keys IS NOT DISTINCT FROM."""
    match = " AND ".join(
        f"target.{k} {'IS NOT DISTINCT FROM' if k in safe else '='} source.{k}" for k in on
    )
    con = duckdb.connect()
    con.register("target", target)
    con.register("source", source)
    sql = (
        f"SELECT * FROM target WHERE NOT EXISTS (SELECT 1 FROM source WHERE {match}) "
        f"UNION ALL SELECT source.* FROM source JOIN target ON {match} "
        f"UNION ALL SELECT * FROM source WHERE NOT EXISTS (SELECT 1 FROM target WHERE {match})"
    )
    return con.sql(sql).to_arrow_table().cast(ZONED)


def _upsert(
    ns: lp.PartitionedNamespace, source: pa.Table, on: list[str], **kw: bool
) -> MergeResult:
    return (
        ns.merge(source, on=on, **kw)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )


def test_a_rerun_of_an_upsert_keyed_on_partition_columns_with_nulls_changes_nothing(
    tmp_path: Path,
) -> None:
    data = _events(range(24))
    ns = _create(tmp_path / "ns", data)
    source = pa.concat_tables([_events(range(12), amount=0.5), _events(range(100, 106))])
    on = ["id", "ts", "country"]
    first = _upsert(ns, source, on)
    after_first = contents(ns)
    assert after_first == expected(_oracle(data, source, on, {"ts", "country"}))
    assert (first.rows_updated, first.rows_inserted) == (12, 6)
    second = _upsert(ns, source, on)
    assert (second.rows_updated, second.rows_inserted) == (18, 0)
    assert ns.count_rows() == 30
    assert contents(ns) == after_first


def test_null_safe_matches_null_keys_on_every_key(tmp_path: Path) -> None:
    data = _events(range(20))
    source = _events(range(8), amount=0.5)  # ids 0 and 4 have a NULL name
    on = ["id", "name"]
    plain = _create(tmp_path / "plain", data)
    _upsert(plain, source, on)
    assert contents(plain) == expected(_oracle(data, source, on, set()))
    assert plain.count_rows() == 22  # the two NULL-named rows are inserted again
    safe = _create(tmp_path / "safe", data)
    result = _upsert(safe, source, on, null_safe=True)
    assert contents(safe) == expected(_oracle(data, source, on, {"id", "name"}))
    assert (result.rows_updated, result.rows_inserted) == (8, 0)
    again = _upsert(safe, source, on, null_safe=True)
    assert (again.rows_updated, again.rows_inserted) == (8, 0)
    assert safe.count_rows() == 20


def test_the_leaves_searched_are_those_of_the_source_rows_partition_values_null_included(
    tmp_path: Path,
) -> None:
    data = _events(range(48))
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=ZONED, partition_by="country")
    ns.write(data.slice(0, 24))  # spec v1: country (3 leaves)
    ns.update_partition_spec("months(ts), country")
    ns.write(data.slice(24))  # spec v2: month(ts), country (12 leaves)
    leaves = ns.partitions().num_rows
    assert leaves == 15
    # rows 0 (NULL country) and 28 (US): v1's NULL and US leaves, v2's two (month, country)
    source = _events([0, 28], amount=0.5)
    result = _upsert(ns, source, ["id", "ts", "country"])
    assert result.leaves_read == 4
    assert (result.rows_updated, result.rows_inserted) == (2, 0)
    assert contents(ns) == expected(
        _oracle(data, source, ["id", "ts", "country"], {"ts", "country"})
    )


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    picked=st.lists(st.integers(0, 59), min_size=1, max_size=8, unique=True),
    on=st.sampled_from([["id", "country"], ["id", "ts", "country"], ["id", "name", "country"]]),
    null_safe=st.booleans(),
)
def test_pruned_merge_equals_the_oracle(picked: list[int], on: list[str], null_safe: bool) -> None:
    data = _events(range(40))
    source = _events(picked, amount=0.25)  # ids from 40 on are new
    with tempfile.TemporaryDirectory() as root:
        ns = _create(Path(root) / "ns", data)
        result = _upsert(ns, source, on, null_safe=null_safe)
        safe = set(on) if null_safe else {k for k in on if k in ("ts", "country")}
        assert contents(ns) == expected(_oracle(data, source, on, safe))
        if "ts" in on:  # every partition source is a key: the source rows' leaves only
            # (ids from 40 on fall in existing leaves too: the data covers all 12)
            assert result.leaves_read == len({(i % 4, i % 3) for i in picked})
