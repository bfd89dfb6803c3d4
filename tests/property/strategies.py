"""What the property tests share: the example counts, the predicate strategies, the events data
set of the pruning properties, and the oracles (DuckDB, and DataFusion for residuals).

Example counts: ``examples(n)`` is ``n`` in a full run and a tenth of it (at least 5) under
the ``fast`` hypothesis profile (``HYPOTHESIS_PROFILE=fast``, which ``scripts/test --fast``
sets; ``tests/conftest.py`` registers it).
"""

from __future__ import annotations

import datetime as dt
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import datafusion
import duckdb
import lance
import numpy as np
import pyarrow as pa
from hypothesis import settings
from hypothesis import strategies as st

import lance_partitioned as lp

__all__ = [
    "EVENTS",
    "EVENTS_SCHEMA",
    "EVENT_ATOMS",
    "OPS",
    "assert_pruned_read_exact",
    "boolean_combinations",
    "datafusion_ids",
    "examples",
    "leaf_rows",
    "oracle_ids",
]

FAST_PROFILE = "fast"


def examples(full: int) -> int:
    """``full`` examples, or a tenth of them (at least 5) under the ``fast`` profile."""
    if settings.get_current_profile_name() == FAST_PROFILE:
        return max(5, full // 10)
    return full


# ------------------------------------------------------------------------------ predicates

OPS = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])


def boolean_combinations(atoms: st.SearchStrategy[str], max_leaves: int) -> st.SearchStrategy[str]:
    """SQL conditions: ``atoms`` combined with AND, OR and NOT, up to ``max_leaves`` atoms."""
    return st.recursive(
        atoms,
        lambda inner: st.one_of(
            st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
            st.builds(lambda a, b: f"({a}) OR ({b})", inner, inner),
            st.builds(lambda a: f"NOT ({a})", inner),
        ),
        max_leaves=max_leaves,
    )


# ------------------------------------------------------------------------------ oracles


def oracle_ids(table: pa.Table, condition: str, utc: Sequence[str] = ()) -> list[int]:
    """The sorted ``id`` of the rows of ``table`` that DuckDB keeps for ``condition`` (the
    table is ``data``). The zoned timestamp columns named in ``utc`` are cast to UTC first, so
    that DuckDB compares instants."""
    for name in utc:
        index = table.schema.get_field_index(name)
        unit = table.schema.field(name).type.unit
        table = table.set_column(index, name, table.column(name).cast(pa.timestamp(unit, "UTC")))
    data = table  # noqa: F841  (read by DuckDB)
    result = duckdb.sql(f"SELECT id FROM data WHERE {condition}").arrow().read_all()
    return sorted(result.column("id").to_pylist())


def datafusion_ids(table: pa.Table, condition: str) -> list[int]:
    """The sorted ``id`` of the rows of ``table`` that DataFusion (Lance's filter engine)
    keeps for ``condition``."""
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [table.to_batches() or [pa.record_batch([], table.schema)]])
    return sorted(ctx.sql(f"SELECT id FROM t WHERE {condition}").to_pydict()["id"])


# The rows of each leaf at its read_version, by namespace object, for the __manifest version
# they were read at: the property tests ask the same namespaces many examples over, and
# opening every leaf again for each was most of their time.
_LEAF_ROWS: weakref.WeakKeyDictionary[lp.PartitionedNamespace, tuple[int, dict[str, pa.Table]]] = (
    weakref.WeakKeyDictionary()
)


def leaf_rows(ns: lp.PartitionedNamespace, leaf: dict[str, Any]) -> pa.Table:
    """The rows of ``leaf`` (a row of ``ns.partitions()``) at its ``read_version``, read once
    for the ``__manifest`` version ``ns`` reads (under which a leaf's rows never change)."""
    version, tables = _LEAF_ROWS.get(ns, (None, {}))
    if version != ns.version:
        tables = {}
        _LEAF_ROWS[ns] = (ns.version, tables)
    key = f"{leaf['location']}@{leaf['read_version']}"
    if key not in tables:
        path = f"{ns.uri}/{leaf['location']}"
        tables[key] = lance.dataset(path, version=leaf["read_version"]).to_table()
    return tables[key]


def assert_pruned_read_exact(
    ns: lp.PartitionedNamespace,
    condition: str,
    expected: list[int],
    leaf_ids: Callable[[pa.Table], list[int]],
    case: object,
) -> None:
    """A pruned read of ``ns`` returns the ``expected`` ids (and counts them), and every leaf
    the plan leaves out holds no matching row: ``leaf_ids`` (the oracle, row by row) finds
    none in their rows, asked once over the rows of all of them together (the failure names
    the leaves that hold what it found). ``case`` goes into the failure message."""
    got = ns.to_table(condition, columns=["id"])
    assert sorted(got.column("id").to_pylist()) == expected
    assert ns.count_rows(condition) == len(expected)
    planned = {task.object_id for task in ns.plan_scan(condition)}
    pruned = [
        leaf for leaf in ns.partitions(sizes=False).to_pylist() if leaf["object_id"] not in planned
    ]
    if not pruned:
        return
    rows = [leaf_rows(ns, leaf) for leaf in pruned]
    found = leaf_ids(pa.concat_tables(rows))
    # (the leaves that hold what it found: named only when it found some)
    assert found == [], (
        case,
        condition,
        [
            leaf
            for leaf, table in zip(pruned, rows, strict=True)
            if set(table.column("id").to_pylist()) & set(found)
        ],
    )


# ------------------------------------------------------------------------------ events

EVENTS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", "UTC")),
        pa.field("event_date", pa.date32()),
        pa.field("country", pa.string()),
        pa.field("user_id", pa.int32()),
        pa.field("amount", pa.float64()),
    ]
)
COUNTRIES = ["US", "FR", "DE", "UK", "", None]
START = dt.datetime(2024, 11, 30, 20, tzinfo=dt.timezone.utc)


def make_events(rows: int = 600, seed: int = 7) -> pa.Table:
    """Random events over four months from ``START``, ids from -100, with NULLs."""
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
        schema=EVENTS_SCHEMA,
    )


EVENTS = make_events()


def _ts(hours: int) -> str:
    stamp = START + dt.timedelta(hours=hours)
    return f"TIMESTAMP '{stamp:%Y-%m-%d %H:%M:%S}+00:00'"


# Conditions on the columns of EVENTS, around and past the values it holds.
EVENT_ATOMS = st.one_of(
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
