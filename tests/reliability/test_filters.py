"""Filters that must read exactly what SQL says, on real Lance namespaces (DataFusion oracle):
signed zeros and NaN in every projection path, extreme literals, very long filters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.scan import sql_filter

NAN = float("nan")


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def _expected(data: pa.Table, condition: str) -> list[int]:
    return _ids(sql_filter(data, condition))


def _check(ns: lp.PartitionedNamespace, data: pa.Table, condition: str) -> None:
    expected = _expected(data, condition)
    assert _ids(ns.to_table(condition)) == expected, condition
    assert ns.count_rows(condition) == len(expected), condition


# ------------------------------------------------------------------ -0.0 and NaN (issue 16.4)

FLOATS = pa.table(
    {
        "id": pa.array(range(7), pa.int64()),
        "f": pa.array([-0.0, 0.0, 1.0, NAN, None, -1.0, 2.5], pa.float64()),
        "g": pa.array([-0.0, 0.0, 1.0, NAN, None, -1.0, 2.5], pa.float64()),
    }
)
FLOAT_FILTERS = [
    "f IN (0.0, 1.0)",
    "f IN (-0.0, 2.5)",
    "f = 0.0",
    "f = -0.0",
    "f NOT IN (0.0, 1.0)",
    "f != 0.0",
    "f IN (CAST('NaN' AS DOUBLE), 1.0)",
    "f NOT IN (CAST('NaN' AS DOUBLE))",
    "f >= 0.0",
    "f < 0.0",
    "f <= -0.0",
    "f > -0.0",
    "g IN (0.0, 1.0)",
    "g NOT IN (-0.0)",
    "f IN (0.0, 1.0) AND g IN (-0.0, 1.0)",
]


@pytest.mark.parametrize("partition_by", ["f", "bucket(4, f)"])
@pytest.mark.parametrize("condition", FLOAT_FILTERS)
def test_signed_zero_and_nan_compare_as_sql(
    tmp_path: Path, partition_by: str, condition: str
) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=FLOATS.schema, partition_by=partition_by
    )
    ns.write(FLOATS)
    _check(ns, FLOATS, condition)


# ------------------------------------------------------------------ extreme literals (16.6)

I64_MIN, I64_MAX, U64_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
EXTREMES = pa.table(
    {
        "id": pa.array(range(6), pa.int64()),
        "k": pa.array([I64_MIN, I64_MIN + 1, -1, 0, I64_MAX, None], pa.int64()),
        "u": pa.array([0, 1, I64_MAX, I64_MAX + 1, U64_MAX, None], pa.uint64()),
        "b": pa.array([-128, -1, 0, 1, 127, None], pa.int8()),
        "x": pa.array([-1.7976931348623157e308, -5e-324, 0.0, 5e-324, 1e308, None]),
        "p": pa.array(["a", "b", "a", "b", "a", "b"]),
    }
)
EXTREME_FILTERS = [
    f"k = {I64_MIN}",
    f"k <= {I64_MIN + 1}",
    f"k IN ({I64_MIN}, {I64_MAX})",
    f"k != {I64_MIN}",
    f"k > {I64_MIN}",
    f"k = {I64_MAX}",
    f"u = {U64_MAX}",
    f"u >= {I64_MAX + 1}",
    f"u IN ({I64_MAX}, {U64_MAX})",
    "b = -128",
    "b IN (-128, 127)",
    "x = -1.7976931348623157e308",
    "x = 5e-324",
    "x > -5e-324",
    "x >= 1e308",
]


@pytest.mark.parametrize("partition_by", ["k", "p", "u, b"])
@pytest.mark.parametrize("condition", EXTREME_FILTERS)
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
def test_extreme_literals_are_read_exactly(
    tmp_path: Path, partition_by: str, condition: str
) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=EXTREMES.schema, partition_by=partition_by
    )
    ns.write(EXTREMES)
    _check(ns, EXTREMES, condition)


# ------------------------------------------------------------------ long filters (16.5)

LONG = pa.table(
    {
        "id": pa.array(range(300), pa.int64()),
        "p": pa.array([i % 7 for i in range(300)], pa.int64()),
        "s": pa.array([f"s{i % 11}" for i in range(300)]),
    }
)
TERMS = 10_000


def _or_of(terms: list[str]) -> str:
    return " OR ".join(terms)


# name -> (SQL of 10,000 terms, the same condition on one row in Python: the oracle)
LONG_FILTERS: dict[str, tuple[str, Callable[[dict[str, Any]], bool]]] = {
    "or-id": (
        _or_of([f"id = {i * 3}" for i in range(TERMS)]),
        lambda r: r["id"] % 3 == 0,
    ),
    "or-partition": (_or_of([f"p = {i}" for i in range(TERMS)]), lambda r: True),
    "or-mixed": (
        _or_of([f"(p = {i % 9} AND id > {i})" for i in range(TERMS)]),
        lambda r: any(r["id"] > i for i in range(r["p"], TERMS, 9)),
    ),
    "and-id": (
        " AND ".join(f"id != {i * 2}" for i in range(TERMS)),
        lambda r: r["id"] % 2 == 1,
    ),
    "and-partition": (" AND ".join(f"p != {i + 3}" for i in range(TERMS)), lambda r: r["p"] < 3),
    "not-or": (
        f"NOT ({_or_of([f'id = {i * 5}' for i in range(TERMS)])})",
        lambda r: r["id"] % 5 != 0,
    ),
    "parenthesised": (
        "((" + _or_of([f"s = 's{i}'" for i in range(TERMS)]) + ")) AND p < 5",
        lambda r: r["p"] < 5,
    ),
    "with-unknown": (
        _or_of([f"id = {i}" for i in range(0, TERMS, 50)] + ["id % 7 = 0"]),
        lambda r: r["id"] % 50 == 0 or r["id"] % 7 == 0,
    ),
}


@pytest.fixture(scope="module")
def long_ns(tmp_path_factory: pytest.TempPathFactory) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path_factory.mktemp("long") / "ns"), schema=LONG.schema, partition_by="p"
    )
    ns.write(LONG)
    return ns


@pytest.mark.slow  # 10,000-term filters: 5-35 s each on a loaded 2-CPU box
@pytest.mark.parametrize("name", sorted(LONG_FILTERS))
def test_filters_of_ten_thousand_terms(long_ns: lp.PartitionedNamespace, name: str) -> None:
    condition, holds = LONG_FILTERS[name]
    expected = sorted(r["id"] for r in LONG.to_pylist() if holds(r))
    assert _ids(long_ns.to_table(condition)) == expected
    assert long_ns.count_rows(condition) == len(expected)


@pytest.mark.slow  # a 10,000-term OR built with |: ~17 s (a loaded 2-CPU box)
def test_a_long_filter_built_in_python(long_ns: lp.PartitionedNamespace) -> None:
    """A left-deep chain of 10,000 ORs built with ``|`` (no SQL) reads the same rows."""
    from lance_partitioned.expressions import EqualTo

    predicate = EqualTo("id", 0)
    for i in range(1, TERMS):
        predicate = predicate | EqualTo("id", i * 7)
    got = long_ns.to_table(predicate)
    assert _ids(got) == list(range(0, 300, 7))
    assert long_ns.count_rows(predicate) == len(range(0, 300, 7))
