"""Shared data and the DuckDB oracle of the row-level change tests."""

from __future__ import annotations

import datetime
import random
import warnings
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

import lance_partitioned as lp

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("ts", pa.timestamp("us")),
        ("country", pa.string()),
        ("user_id", pa.int64()),
        ("name", pa.string()),
        ("amount", pa.float64()),
    ]
)

# every transform kind, each on a source column that has NULLs in the sample data
SPECS = {
    "identity": "country",
    "year": "year(ts)",
    "month": "month(ts)",
    "day": "day(ts)",
    "hour": "hour(ts)",
    "bucket": "bucket(4, user_id)",
    "truncate_int": "truncate(100, id)",
    "truncate_str": "truncate(1, name)",
    "year_country": "year(ts), country",
}

COUNTRIES = ["US", "FR", "DE", None]
START = datetime.datetime(2024, 12, 30, 20)


# a few hours across a year, month and day boundaries (few leaves for hour/day specs)
HOURS = [0, 1, 4, 27, 50, 24 * 20, 24 * 33 + 3, 24 * 40, 24 * 65]


def _timestamp(rng: random.Random) -> datetime.datetime:
    return START + datetime.timedelta(hours=rng.choice(HOURS), minutes=rng.randrange(60))


def rows(n: int, seed: int = 0, first_id: int = 0) -> pa.Table:
    """``n`` rows with unique ids from ``first_id``; about one in eight values of each
    partition source column is NULL."""
    rng = random.Random(seed)

    def maybe(value: Any) -> Any:
        return None if rng.random() < 0.125 else value

    ids = list(range(first_id, first_id + n))
    return pa.table(
        {
            "id": ids,
            "ts": [maybe(_timestamp(rng)) for _ in ids],
            "country": [rng.choice(COUNTRIES) for _ in ids],
            "user_id": [maybe(rng.randrange(0, 50)) for _ in ids],
            "name": [maybe(rng.choice(["ann", "bob", "cy", "dee"])) for _ in ids],
            "amount": [maybe(round(rng.uniform(0, 100), 2)) for _ in ids],
        },
        schema=SCHEMA,
    )


def create(root: Path, partition_by: str, data: pa.Table | None = None) -> lp.PartitionedNamespace:
    with warnings.catch_warnings():
        # month(ts) and day(ts) alone are covered on purpose (every transform kind)
        warnings.simplefilter("ignore", lp.AmbiguousPartitionWarning)
        ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by=partition_by)
    if data is not None:
        ns.write(data)
    return ns


def oracle(table: pa.Table, sql: str) -> pa.Table:
    """DuckDB's answer to ``sql`` over ``table`` (registered as ``t``)."""
    con = duckdb.connect()
    con.register("t", table)
    return con.sql(sql).to_arrow_table().cast(table.schema)


def after_delete(table: pa.Table, where: str) -> pa.Table:
    """The rows a delete of ``where`` keeps (a NULL predicate keeps the row)."""
    return oracle(table, f"SELECT * FROM t WHERE NOT coalesce(({where}), false)")


def contents(ns: lp.PartitionedNamespace) -> list[dict[str, Any]]:
    """Every row of the namespace (latest version), by id."""
    return ns.refresh().to_table().sort_by("id").to_pylist()


def expected(table: pa.Table) -> list[dict[str, Any]]:
    return table.sort_by("id").to_pylist()
