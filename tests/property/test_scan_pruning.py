"""Property: for every predicate, a pruned read equals a full read filtered by the predicate,
and pruning never drops a leaf that holds a matching row (real Lance namespaces, DuckDB oracle)."""

from __future__ import annotations

import datetime as dt
import tempfile
import warnings
from collections.abc import Iterator

import duckdb
import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", "UTC")),
        pa.field("event_date", pa.date32()),
        pa.field("country", pa.string()),
        pa.field("user_id", pa.int32()),
        pa.field("amount", pa.float64()),
    ]
)
SPECS = [
    "country",
    "year(ts), country",
    "month(ts), day(ts)",
    "year(ts), month(ts)",
    "bucket(4, user_id)",
    "truncate(50, id), event_date",
    "hour(ts) AS h",
    "truncate(1, country) AS initial",
    "date(ts), country",
    "date(event_date)",
]
COUNTRIES = ["US", "FR", "DE", "UK", "", None]
START = dt.datetime(2024, 11, 30, 20, tzinfo=dt.timezone.utc)


def make_data(rows: int = 600, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    hours = rng.integers(-30, 24 * 120, rows)
    stamps = [
        START + dt.timedelta(hours=int(h), minutes=int(m))
        for h, m in zip(hours, rng.integers(0, 60, rows), strict=True)
    ]
    null_ts = rng.random(rows) < 0.05
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64) - 100,
            "ts": pa.array(
                [None if n else s for s, n in zip(stamps, null_ts, strict=True)],
                pa.timestamp("us", "UTC"),
            ),
            "event_date": pa.array(
                [None if n else s.date() for s, n in zip(stamps, null_ts, strict=True)], pa.date32()
            ),
            "country": [COUNTRIES[i] for i in rng.integers(0, len(COUNTRIES), rows)],
            "user_id": pa.array(rng.integers(-5, 40, rows), pa.int32()),
            "amount": [None if v < 0.1 else round(v * 100, 2) for v in rng.random(rows)],
        },
        schema=SCHEMA,
    )


DATA = make_data()


@pytest.fixture(scope="module")
def namespaces() -> Iterator[dict[str, lp.PartitionedNamespace]]:
    with tempfile.TemporaryDirectory() as root:
        made = {}
        for i, spec in enumerate(SPECS):
            with warnings.catch_warnings():  # "month(ts), day(ts)": the spec's own day
                warnings.simplefilter("ignore", lp.AmbiguousPartitionWarning)
                ns = lp.PartitionedNamespace.create(
                    f"{root}/ns{i}", schema=SCHEMA, partition_by=spec
                )
            ns.write(DATA.slice(0, 400))
            ns.write(DATA.slice(400))
            made[spec] = ns
        yield made


def _ts(hours: int) -> str:
    stamp = START + dt.timedelta(hours=hours)
    return f"TIMESTAMP '{stamp:%Y-%m-%d %H:%M:%S}+00:00'"


OPS = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
ATOMS = st.one_of(
    st.builds(lambda op, v: f"id {op} {v}", OPS, st.integers(-120, 520)),
    st.builds(lambda op, v: f"user_id {op} {v}", OPS, st.integers(-6, 41)),
    st.builds(lambda op, h: f"ts {op} {_ts(h)}", OPS, st.integers(-40, 24 * 125)),
    st.builds(
        lambda op, d: f"event_date {op} DATE '{START.date() + dt.timedelta(days=d)}'",
        OPS,
        st.integers(-2, 125),
    ),
    st.builds(lambda op, c: f"country {op} '{c}'", OPS, st.sampled_from([*COUNTRIES[:-1], "A"])),
    st.builds(
        lambda vs: f"country IN ({', '.join(repr(v) for v in vs)})",
        st.lists(st.sampled_from(["US", "FR", "", "ZZ"]), min_size=1, max_size=3),
    ),
    st.builds(
        lambda vs: f"user_id IN ({', '.join(str(v) for v in vs)})",
        st.lists(st.integers(-6, 41), min_size=1, max_size=4),
    ),
    st.builds(lambda p: f"country LIKE '{p}%'", st.sampled_from(["U", "US", "F", "", "X"])),
    st.builds(lambda c: f"{c} IS NULL", st.sampled_from(["ts", "country", "amount"])),
    st.builds(lambda c: f"{c} IS NOT NULL", st.sampled_from(["ts", "country", "amount"])),
    st.builds(
        lambda a, b: f"ts BETWEEN {_ts(min(a, b))} AND {_ts(max(a, b))}",
        st.integers(-40, 24 * 125),
        st.integers(-40, 24 * 125),
    ),
    st.builds(lambda v: f"amount > {v}", st.integers(0, 100)),
)
PREDICATES = st.recursive(
    ATOMS,
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
        st.builds(lambda a: f"NOT ({a})", inner),
    ),
    max_leaves=4,
)


def _oracle_ids(table: pa.Table, condition: str) -> list[int]:
    data = table  # noqa: F841  (read by DuckDB)
    result = duckdb.sql(f"SELECT id FROM data WHERE {condition}").arrow().read_all()
    return sorted(result.column("id").to_pylist())


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(spec=st.sampled_from(SPECS), condition=PREDICATES)
def test_pruned_read_equals_filtered_full_read(
    namespaces: dict[str, lp.PartitionedNamespace], spec: str, condition: str
) -> None:
    ns = namespaces[spec]
    expected = _oracle_ids(DATA, condition)
    got = ns.to_table(condition, columns=["id"])
    assert sorted(got.column("id").to_pylist()) == expected
    assert ns.count_rows(condition) == len(expected)
    # no leaf left out of the plan holds a matching row
    planned = {task.object_id for task in ns.plan_scan(condition)}
    for leaf in ns.partitions().to_pylist():
        if leaf["object_id"] in planned:
            continue
        rows = lance.dataset(f"{ns.uri}/{leaf['location']}", version=leaf["read_version"])
        assert _oracle_ids(rows.to_table(), condition) == [], (spec, condition, leaf)
