"""Property: filters that name partition fields (of any spec version) read what a full read
filtered by the fields' expressions reads, on namespaces with three spec versions, and pruning
never drops a leaf holding a matching row (issue 15 item 10; DuckDB oracle over the fields'
values computed with DataFusion)."""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Iterator

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp
from lance_partitioned.spec.transforms import parse_transform
from tests.property.strategies import (
    EVENT_ATOMS,
    EVENTS,
    EVENTS_SCHEMA,
    OPS,
    assert_pruned_read_exact,
    boolean_combinations,
    examples,
    oracle_ids,
)

# every namespace ends up with all six field names, spread differently over its versions
EVOLUTIONS = {
    "date-first": [
        "event_date, truncate(50, id) AS id_t",
        "year(ts) AS ts_year, country, truncate(1, country) AS initial",
        "bucket(4, user_id) AS user_bucket, month(ts) AS ts_month, day(ts) AS ts_day",
    ],
    "time-first": [
        "month(ts) AS ts_month, day(ts) AS ts_day, bucket(4, user_id) AS user_bucket",
        "year(ts) AS ts_year, truncate(1, country) AS initial",
        "truncate(50, id) AS id_t",
    ],
}
FIELDS = ["ts_year", "ts_month", "ts_day", "user_bucket", "id_t", "initial"]


@pytest.fixture(scope="module")
def namespaces() -> Iterator[dict[str, lp.PartitionedNamespace]]:
    with tempfile.TemporaryDirectory() as root:
        made = {}
        for name, specs in EVOLUTIONS.items():
            with warnings.catch_warnings():  # month and day without year: what this tests
                warnings.simplefilter("ignore", lp.AmbiguousPartitionWarning)
                ns = lp.PartitionedNamespace.create(
                    f"{root}/{name}", schema=EVENTS_SCHEMA, partition_by=specs[0]
                )
                ns.write(EVENTS.slice(0, 200))
                for i, spec in enumerate(specs[1:], start=1):
                    ns.update_partition_spec(spec)
                    ns.write(EVENTS.slice(200 * i, 200))
            made[name] = ns
        yield made


def _with_fields(ns: lp.PartitionedNamespace, table: pa.Table) -> pa.Table:
    """``table`` plus one column per field name: the field's expression over its source,
    computed by DataFusion (the transform's reference path)."""
    seen: set[str] = set()
    for spec in ns.partition_specs:
        for field in spec.fields:
            if field.name not in FIELDS or field.name in seen:
                continue
            seen.add(field.name)
            source = table.column(ns.namespace_schema.name_of(field.source_id))
            values = parse_transform(field.expression, field.result_type).apply_reference(source)
            table = table.append_column(field.name, values.cast(field.result_type))
    return table


FIELD_ATOMS = st.one_of(
    st.builds(lambda op, v: f"ts_year {op} {v}", OPS, st.integers(2023, 2026)),
    st.builds(lambda op, v: f"ts_month {op} {v}", OPS, st.integers(0, 13)),
    st.builds(lambda op, v: f"ts_day {op} {v}", OPS, st.integers(0, 32)),
    st.builds(lambda op, v: f"user_bucket {op} {v}", OPS, st.integers(-1, 4)),
    st.builds(
        lambda vs: f"user_bucket IN ({', '.join(str(v) for v in vs)})",
        st.lists(st.integers(0, 3), min_size=1, max_size=3),
    ),
    st.builds(lambda op, v: f"id_t {op} {v}", OPS, st.integers(-150, 550)),
    st.builds(lambda op, c: f"initial {op} '{c}'", OPS, st.sampled_from(["U", "F", "D", "", "Z"])),
    st.builds(lambda c: f"{c} IS NULL", st.sampled_from(FIELDS)),
    st.builds(lambda c: f"{c} IS NOT NULL", st.sampled_from(FIELDS)),
)
PREDICATES = boolean_combinations(st.one_of(FIELD_ATOMS, FIELD_ATOMS, EVENT_ATOMS), max_leaves=4)


@pytest.mark.slow  # ~1 min on 2 CPUs: 40 examples, each a scan of an evolved namespace
@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(name=st.sampled_from(sorted(EVOLUTIONS)), condition=PREDICATES)
def test_pruned_read_on_field_names_equals_filtered_full_read(
    namespaces: dict[str, lp.PartitionedNamespace], name: str, condition: str
) -> None:
    ns = namespaces[name]
    expected = oracle_ids(_with_fields(ns, EVENTS), condition)
    assert_pruned_read_exact(
        ns,
        condition,
        expected,
        lambda rows: oracle_ids(_with_fields(ns, rows.cast(EVENTS_SCHEMA)), condition),
        name,
    )
