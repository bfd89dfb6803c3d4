"""A transform is one class: two transforms defined here, outside the package, registered, and
the pruning properties hold with them on real Lance namespaces (DuckDB as the oracle).

- ``Week``: ``date_trunc('week', col)``, the Monday 00:00 UTC that starts a timestamp's week.
  Monotonic: it declares ``preserves_order`` and what one of its values proves (the week's
  seven days), and inherits the projection of ``=``, IN, ranges and IS NULL.
- ``Weekday``: ``date_part('dow', col)`` (Sunday 0 … Saturday 6), cyclic. It overrides no
  pruning method at all: the defaults (``=`` and IN by the image of each literal) must be sound.

Properties, for random filters over the transformed column and others:
pruned scan == full scan + filter; no leaf left out of the plan holds a matching row
(projection ⊇ matching partitions); the residual of every leaf selects exactly its matching rows.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp
from lance_partitioned.expressions import to_sql
from lance_partitioned.expressions.ranges import Interval, Preimage
from lance_partitioned.pruning import residual
from lance_partitioned.scan import bound_filter
from lance_partitioned.spec.partitioning import PartitionField
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.transforms import (
    Transform,
    parse_transform,
    register_transform,
    unregister_transform,
)
from tests.property.strategies import (
    OPS,
    boolean_combinations,
    datafusion_ids,
    examples,
    leaf_rows,
    oracle_ids,
)

UTC = dt.timezone.utc
TS = pa.timestamp("us", "UTC")


class Week(Transform):
    """``date_trunc('week', col)`` on the UTC instant: the Monday starting the week."""

    preserves_order = True

    @property
    def expression(self) -> str:
        return "date_trunc('week', col)"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return source

    def can_apply(self, source: pa.DataType) -> bool:
        return bool(pa.types.is_timestamp(source))

    def _apply(self, values: pa.Array) -> pa.Array:
        naive = values.cast(pa.timestamp(values.type.unit))  # the UTC instant
        weeks = pc.floor_temporal(naive, unit="week", week_starts_monday=True)
        return weeks.cast(values.type)

    def _literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        midnight = value.replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight - dt.timedelta(days=value.weekday())

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        if value is None:
            return Preimage(null=True)  # only a NULL timestamp has no week
        week = Interval(value, True, value + dt.timedelta(days=7), False)
        return Preimage(null=False, interval=week)


class Weekday(Transform):
    """``date_part('dow', col)``: the day of the week, Sunday 0 (no pruning methods)."""

    @property
    def expression(self) -> str:
        return "date_part('dow', col)"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return pa.int32()

    def can_apply(self, source: pa.DataType) -> bool:
        return bool(pa.types.is_timestamp(source))

    def _apply(self, values: pa.Array) -> pa.Array:
        naive = values.cast(pa.timestamp(values.type.unit))
        return pc.day_of_week(naive, count_from_zero=True, week_start=7)


WEEK_FORM = r"date_trunc\('week',col\)"
WEEKDAY_FORM = r"date_part\('dow',col\)"

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", TS),
        pa.field("country", pa.string()),
    ]
)
IDS = NamespaceSchema.from_arrow(SCHEMA)
START = dt.datetime(2024, 12, 20, 20, tzinfo=UTC)  # a Friday
COUNTRIES = ["US", "FR", None]


def _field(field_id: int, name: str, column: str, expression: str, result: pa.DataType) -> Any:
    return PartitionField(field_id, name, IDS.field_id(column), expression, result)


SPECS: dict[str, list[PartitionField]] = {
    "week": [_field(1, "week", "ts", "date_trunc('week', col)", TS)],
    "week, country": [
        _field(1, "week", "ts", "date_trunc('week', col)", TS),
        _field(2, "country", "country", "col", pa.string()),
    ],
    "weekday": [_field(1, "dow", "ts", "date_part('dow', col)", pa.int32())],
    "year, week, weekday": [
        _field(1, "y", "ts", "date_part('year', col)", pa.int32()),
        _field(2, "week", "ts", "date_trunc('week', col)", TS),
        _field(3, "dow", "ts", "date_part('dow', col)", pa.int32()),
    ],
}


def make_data(rows: int = 400, seed: int = 11) -> pa.Table:
    rng = np.random.default_rng(seed)
    hours = rng.integers(-30, 24 * 60, rows)
    stamps = [
        START + dt.timedelta(hours=int(h), minutes=int(m))
        for h, m in zip(hours, rng.integers(0, 60, rows), strict=True)
    ]
    null = rng.random(rows) < 0.05
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "ts": pa.array([None if n else s for s, n in zip(stamps, null, strict=True)], TS),
            "country": [COUNTRIES[i] for i in rng.integers(0, len(COUNTRIES), rows)],
        },
        schema=SCHEMA,
    )


DATA = make_data()


@pytest.fixture(scope="module")
def registered() -> Iterator[None]:
    register_transform(WEEK_FORM, lambda _: Week())
    register_transform(WEEKDAY_FORM, lambda _: Weekday())
    try:
        yield
    finally:
        unregister_transform(WEEK_FORM)
        unregister_transform(WEEKDAY_FORM)


@pytest.fixture(scope="module")
def namespaces(registered: None) -> Iterator[dict[str, lp.PartitionedNamespace]]:
    with tempfile.TemporaryDirectory() as root:
        made = {}
        for i, (name, fields) in enumerate(SPECS.items()):
            ns = lp.PartitionedNamespace.create(f"{root}/ns{i}", schema=SCHEMA, partition_by=fields)
            ns.write(DATA.slice(0, 250))
            ns.write(DATA.slice(250))
            made[name] = ns
        yield made


def _ts(hours: int) -> str:
    stamp = START + dt.timedelta(hours=hours)
    return f"TIMESTAMP '{stamp:%Y-%m-%d %H:%M:%S}+00:00'"


# Hours around the week boundaries (START + 52 h is a Monday 00:00), where pruning is decided.
EDGES = [52 + 168 * k + d for k in range(-1, 9) for d in (-25, -24, -1, 0, 1, 23)]
HOURS = st.integers(-40, 24 * 62) | st.sampled_from(EDGES)
ATOMS = st.one_of(
    st.builds(lambda op, h: f"ts {op} {_ts(h)}", OPS, HOURS),
    st.builds(lambda h: f"ts = {_ts(h)}", st.sampled_from([0, 1, 24 * 3, 24 * 7])),
    st.builds(
        lambda hs: f"ts IN ({', '.join(_ts(h) for h in hs)})",
        st.lists(HOURS, min_size=1, max_size=3),
    ),
    st.builds(lambda a, b: f"ts BETWEEN {_ts(min(a, b))} AND {_ts(max(a, b))}", HOURS, HOURS),
    st.builds(lambda c: f"{c} IS NULL", st.sampled_from(["ts", "country"])),
    st.builds(lambda c: f"{c} IS NOT NULL", st.sampled_from(["ts", "country"])),
    st.builds(lambda op, c: f"country {op} '{c}'", OPS, st.sampled_from(["US", "FR", "A"])),
    st.builds(lambda op, v: f"id {op} {v}", OPS, st.integers(-1, 401)),
)
PREDICATES = boolean_combinations(ATOMS, max_leaves=4)


def test_registered_forms_parse_to_the_classes(registered: None) -> None:
    assert parse_transform("DATE_TRUNC( 'week', col )") == Week()
    assert parse_transform("date_part('dow', col)") == Weekday()
    assert (START + dt.timedelta(hours=52)).weekday() == 0
    values = DATA.column("ts")
    for transform in (Week(), Weekday()):
        assert transform.apply(values).equals(transform.apply_reference(values))


def test_unregistered_form_is_opaque() -> None:
    assert type(parse_transform("date_trunc('fortnight', col)")).__name__ == "Opaque"


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(spec=st.sampled_from(sorted(SPECS)), condition=PREDICATES)
def test_pruning_with_custom_transforms(
    namespaces: dict[str, lp.PartitionedNamespace], spec: str, condition: str
) -> None:
    ns = namespaces[spec]
    expected = oracle_ids(DATA, condition)
    got = ns.to_table(condition, columns=["id"])
    assert sorted(got.column("id").to_pylist()) == expected
    assert ns.count_rows(condition) == len(expected)

    schema = ns.namespace_schema
    predicate = bound_filter(condition, schema.read_schema())
    planned = {task.object_id: task for task in ns.plan_scan(condition)}
    (partition_spec,) = ns.partition_specs
    for leaf in ns.partitions().to_pylist():
        table = leaf_rows(ns, leaf)
        matching = oracle_ids(table, condition)
        task = planned.get(leaf["object_id"])
        if task is None:  # the projection dropped the leaf: it holds no matching row
            assert matching == [], (spec, condition, leaf)
            continue
        # the residual is exact inside the leaf
        values = {f.name: leaf[f.name] for f in partition_spec.fields}
        rest = residual(predicate, partition_spec, schema, values)
        assert rest == task.residual
        assert datafusion_ids(table, to_sql(rest)) == matching, (spec, condition, values, rest)
