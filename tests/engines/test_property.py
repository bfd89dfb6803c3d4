"""Property: for random filters over a small real namespace, DuckDB through
``to_pyarrow_dataset`` and Polars through ``scan_polars`` return the rows the same engine
returns from a full scan filtered in memory (pruning and pushdown never change a result)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import polars as pl
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp
from tests.property.strategies import examples

UTC = dt.timezone.utc
OPS = ("=", "!=", "<", "<=", ">", ">=")
_POLARS_OPS = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}

# A filter is a tuple: ("cmp", column, op, value), ("in", column, values), ("null", column,
# negated), ("prefix", column, prefix), ("not", f), ("and", f, g), ("or", f, g).
_countries = st.sampled_from(["US", "FR", "DE", "UK"])
_times = st.datetimes(
    min_value=dt.datetime(2023, 6, 1), max_value=dt.datetime(2027, 1, 1), timezones=st.just(UTC)
).map(lambda t: t.replace(microsecond=0))
_atoms = st.one_of(
    st.tuples(st.just("cmp"), st.just("country"), st.sampled_from(OPS), _countries),
    st.tuples(st.just("cmp"), st.just("id"), st.sampled_from(OPS), st.integers(-5, 205)),
    st.tuples(st.just("cmp"), st.just("ts"), st.sampled_from(OPS), _times),
    st.tuples(
        st.just("cmp"), st.just("amount"), st.sampled_from(OPS), st.sampled_from([-1.0, 10.5, 30.0])
    ),
    st.tuples(st.just("in"), st.just("country"), st.lists(_countries, min_size=1, max_size=3)),
    st.tuples(st.just("in"), st.just("id"), st.lists(st.integers(0, 200), min_size=1, max_size=4)),
    st.tuples(st.just("null"), st.sampled_from(["country", "amount", "note"]), st.booleans()),
    st.tuples(
        st.just("prefix"), st.sampled_from(["country", "note"]), st.sampled_from(["U", "no"])
    ),
)
filters = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.tuples(st.just("not"), inner),
        st.tuples(st.sampled_from(["and", "or"]), inner, inner),
    ),
    max_leaves=5,
)


def _sql_value(value: Any) -> str:
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMPTZ '{value:%Y-%m-%d %H:%M:%S}+00'"
    return repr(value)


def to_sql(f: tuple[Any, ...]) -> str:
    """The filter in DuckDB SQL."""
    kind = f[0]
    if kind == "cmp":
        return f"{f[1]} {f[2]} {_sql_value(f[3])}"
    if kind == "in":
        return f"{f[1]} IN ({', '.join(_sql_value(v) for v in f[2])})"
    if kind == "null":
        return f"{f[1]} IS {'NOT ' if f[2] else ''}NULL"
    if kind == "prefix":
        return f"{f[1]} LIKE '{f[2]}%'"
    if kind == "not":
        return f"NOT ({to_sql(f[1])})"
    return f"({to_sql(f[1])}) {kind.upper()} ({to_sql(f[2])})"


def to_polars(f: tuple[Any, ...]) -> pl.Expr:
    """The filter as a Polars expression."""
    kind = f[0]
    if kind == "cmp":
        return _POLARS_OPS[f[2]](pl.col(f[1]), pl.lit(f[3]))  # type: ignore[no-any-return]
    if kind == "in":
        return pl.col(f[1]).is_in(f[2])
    if kind == "null":
        return pl.col(f[1]).is_not_null() if f[2] else pl.col(f[1]).is_null()
    if kind == "prefix":
        return pl.col(f[1]).str.starts_with(f[2])
    if kind == "not":
        return ~to_polars(f[1])
    left, right = to_polars(f[1]), to_polars(f[2])
    return left & right if kind == "and" else left | right


_FULL: dict[str, pa.Table] = {}


def _full(ns: lp.PartitionedNamespace) -> pa.Table:
    if ns.uri not in _FULL:
        _FULL[ns.uri] = ns.to_table()
    return _FULL[ns.uri]


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(f=filters)
def test_duckdb_through_the_dataset_matches_a_full_scan(
    events: lp.PartitionedNamespace, f: tuple[Any, ...]
) -> None:
    con = duckdb.connect()
    con.register("ds", events.to_pyarrow_dataset())
    con.register("everything", _full(events))
    sql = to_sql(f)
    got = sorted(i for (i,) in con.sql(f"SELECT id FROM ds WHERE {sql}").fetchall())
    expected = sorted(i for (i,) in con.sql(f"SELECT id FROM everything WHERE {sql}").fetchall())
    assert got == expected, sql


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(f=filters)
def test_polars_through_the_plugin_matches_a_full_scan(
    events: lp.PartitionedNamespace, f: tuple[Any, ...]
) -> None:
    predicate = to_polars(f)
    full = pl.from_arrow(_full(events))
    assert isinstance(full, pl.DataFrame)
    got = events.scan_polars().filter(predicate).select("id").collect()["id"].to_list()
    expected = full.filter(predicate)["id"].to_list()
    assert sorted(got) == sorted(expected), predicate
