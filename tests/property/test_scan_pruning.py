"""Property: for every predicate, a pruned read equals a full read filtered by the predicate,
and pruning never drops a leaf that holds a matching row (real Lance namespaces, DuckDB oracle)."""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp
from tests.property.strategies import (
    EVENT_ATOMS,
    EVENTS,
    EVENTS_SCHEMA,
    assert_pruned_read_exact,
    boolean_combinations,
    examples,
    oracle_ids,
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


@pytest.fixture(scope="module")
def namespaces() -> Iterator[dict[str, lp.PartitionedNamespace]]:
    """One namespace per spec of ``SPECS``, each built the first time an example asks for it
    (the inner loop's few examples need only some of them)."""

    class Built(dict[str, lp.PartitionedNamespace]):
        def __missing__(self, spec: str) -> lp.PartitionedNamespace:
            with warnings.catch_warnings():  # "month(ts), day(ts)": the spec's own day
                warnings.simplefilter("ignore", lp.AmbiguousPartitionWarning)
                ns = lp.PartitionedNamespace.create(
                    f"{root}/ns{SPECS.index(spec)}", schema=EVENTS_SCHEMA, partition_by=spec
                )
            ns.write(EVENTS.slice(0, 400))
            ns.write(EVENTS.slice(400))
            self[spec] = ns
            return ns

    with tempfile.TemporaryDirectory() as root:
        yield Built()


PREDICATES = boolean_combinations(EVENT_ATOMS, max_leaves=4)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(spec=st.sampled_from(SPECS), condition=PREDICATES)
def test_pruned_read_equals_filtered_full_read(
    namespaces: dict[str, lp.PartitionedNamespace], spec: str, condition: str
) -> None:
    expected = oracle_ids(EVENTS, condition)
    assert_pruned_read_exact(
        namespaces[spec], condition, expected, lambda t: oracle_ids(t, condition), spec
    )
