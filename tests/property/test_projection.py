"""Properties of binding, projection and residuals on random data, specs and predicates.

Oracle: DataFusion evaluating the SQL of the predicate (as written, before binding) on the data.

- ``bind`` keeps the meaning: the bound predicate selects the same rows (SQL and pyarrow).
- ``project`` is inclusive: every matching row lies in a partition whose values (computed with
  ``transform.apply``) satisfy the projection (evaluated with pyarrow and with DataFusion).
- ``residual`` is exact inside each partition: on the partition's rows it selects the rows the
  predicate selects.
"""

from __future__ import annotations

import datetime
from typing import Any

import datafusion
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lance_partitioned.expressions import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    Predicate,
    StartsWith,
    Unknown,
    and_,
    bind,
    or_,
    terms,
    to_arrow,
    to_sql,
)
from lance_partitioned.pruning import project, residual
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from tests.property.strategies import examples

pytestmark = pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")

SETTINGS = settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

UTC = datetime.timezone.utc
YEAR = "date_part('year', col)"
MONTH = "date_part('month', col)"
DAY = "date_part('day', col)"
HOUR = "date_part('hour', col)"
# (column, expression, result type); the result type None means the column's type.
CANDIDATES: list[tuple[str, str, pa.DataType | None]] = [
    ("i", "col", None),
    ("i", "abs(hash(col)) % 3", pa.int64()),
    ("i", "col - (col % 5)", None),
    ("i", "col - (col % 10)", None),
    ("d", "col", None),
    ("d", YEAR, pa.int32()),
    ("d", MONTH, pa.int32()),
    ("d", DAY, pa.int32()),
    ("ts", YEAR, pa.int32()),
    ("ts", MONTH, pa.int32()),
    ("ts", DAY, pa.int32()),
    ("ts", HOUR, pa.int32()),
    ("ts", "col", None),
    ("s", "col", None),
    ("s", "left(col, 1)", pa.utf8()),
    ("s", "left(col, 2)", pa.utf8()),
    ("s", "abs(hash(col)) % 4", pa.int64()),
    ("s", "upper(col)", pa.utf8()),
    ("s", "nullif(col, 'a')", pa.utf8()),
]
CHAINS = [
    [("ts", YEAR, pa.int32()), ("ts", MONTH, pa.int32())],
    [("ts", YEAR, pa.int32()), ("ts", MONTH, pa.int32()), ("ts", DAY, pa.int32())],
    [*[("ts", p, pa.int32()) for p in (YEAR, MONTH, DAY, HOUR)]],
    [("d", YEAR, pa.int32()), ("d", MONTH, pa.int32())],
    [("d", YEAR, pa.int32()), ("d", MONTH, pa.int32()), ("d", DAY, pa.int32())],
]

# Few distinct values, at the edges of months, years, truncation widths: rows and literals
# collide often, so that boundaries are hit within a modest number of examples.
ints = st.integers(-21, 21)
dates = st.sampled_from(
    [
        datetime.date(y, m, d)
        for y, m, d in [
            (2024, 2, 29), (2024, 12, 30), (2024, 12, 31), (2025, 1, 1), (2025, 1, 2),
            (2025, 1, 30), (2025, 1, 31), (2025, 2, 1), (2025, 2, 28), (2025, 3, 1),
            (2025, 12, 31), (2026, 1, 1),
        ]
    ]
)  # fmt: skip
naive_ts = st.sampled_from(
    [
        datetime.datetime(2024, 12, 31, 23),
        datetime.datetime(2024, 12, 31, 23, 59, 59, 999999),
        datetime.datetime(2025, 1, 1),
        datetime.datetime(2025, 1, 1, 0, 30),
        datetime.datetime(2025, 1, 1, 1),
        datetime.datetime(2025, 1, 1, 9),
        datetime.datetime(2025, 1, 31, 23, 30),
        datetime.datetime(2025, 2, 1),
        datetime.datetime(2025, 6, 15, 12),
        datetime.datetime(2025, 12, 31, 15),
        datetime.datetime(2026, 1, 1),
    ]
)
strings = st.sampled_from(["", "a", "b", "aa", "ab", "aab", "aba", "ba", "A", "Ab"]) | st.text(
    alphabet="ab", max_size=3
)


def arrow_schema(tz: str | None) -> pa.Schema:
    return pa.schema(
        [("i", pa.int64()), ("d", pa.date32()), ("ts", pa.timestamp("us", tz=tz)), ("s", pa.utf8())]
    )


@st.composite
def tables(draw: st.DrawFn, schema: pa.Schema) -> pa.Table:
    n = draw(st.integers(0, 20))
    tz = schema.field("ts").type.tz

    def column(values: st.SearchStrategy[Any]) -> list[Any]:
        return draw(st.lists(st.none() | values, min_size=n, max_size=n))

    stamps = column(naive_ts)
    if tz is not None:
        stamps = [None if v is None else v.replace(tzinfo=UTC) for v in stamps]
    data = {"i": column(ints), "d": column(dates), "ts": stamps, "s": column(strings)}
    return pa.table(data, schema=schema)


def literals(column: str) -> list[st.SearchStrategy[Any]]:
    """Kinds of literals for a column (an IN list draws from one kind)."""
    if column == "i":
        return [ints, st.sampled_from([2.5, -0.5, -10.5, 9.5, 10.0, 1e3, -1e3])]
    if column == "d":
        return [dates]
    if column == "s":
        return [strings]
    # A naive value is wall-clock time in the column's zone, a date its midnight UTC.
    # (DataFusion coerces an IN list of mixed kinds to one type, which changes their meaning.)
    return [naive_ts, naive_ts.map(lambda v: v.replace(tzinfo=UTC)), dates]


def leaves(columns: list[str]) -> st.SearchStrategy[Predicate]:
    def on(column: str) -> st.SearchStrategy[Predicate]:
        kinds = literals(column)
        value = st.one_of(kinds)
        values = st.one_of([st.lists(kind, max_size=3).map(tuple) for kind in kinds])
        options = [
            st.builds(kind, st.just(column), value)
            for kind in (EqualTo, NotEqualTo, LessThan, LessThanOrEqual, GreaterThan)
        ]
        options += [
            st.builds(GreaterThanOrEqual, st.just(column), value),
            st.builds(In, st.just(column), values),
            st.builds(NotIn, st.just(column), values),
            st.just(IsNull(column)),
            st.just(NotNull(column)),
        ]
        if column == "s":
            options += [st.builds(StartsWith, st.just("s"), strings)]
            options += [st.builds(NotStartsWith, st.just("s"), strings)]
        return st.one_of(options)

    unknown = st.just(Unknown("((`i` % 3) = 0)", ("i",)))
    others = [on(c) for c in ("i", "d", "ts", "s") if c not in columns] + [unknown]
    # Mostly the spec's own source columns, so that the projection has something to do.
    return st.one_of(*[on(c) for c in columns], *[on(c) for c in columns], *others)


def predicates(columns: list[str]) -> st.SearchStrategy[Predicate]:
    return st.recursive(
        leaves(columns),
        lambda inner: st.one_of(
            st.builds(and_, inner, inner), st.builds(or_, inner, inner), st.builds(Not, inner)
        ),
        max_leaves=5,
    )


@st.composite
def cases(draw: st.DrawFn) -> tuple[pa.Table, PartitionSpec, Predicate]:
    tz = draw(st.sampled_from([None, "UTC", "Asia/Tokyo"]))
    schema = arrow_schema(tz)
    table = draw(tables(schema))
    chosen = draw(
        st.sampled_from(CHAINS) | st.lists(st.sampled_from(CANDIDATES), min_size=1, max_size=2)
    )
    fields = []
    for k, (column, expression, result) in enumerate(chosen):
        result_type = result if result is not None else schema.field(column).type
        source_id = NamespaceSchema.from_arrow(schema).field_id(column)
        fields.append(PartitionField(k + 1, f"p{k}", source_id, expression, result_type))
    spec = PartitionSpec(1, tuple(fields))
    columns = sorted({column for column, _, _ in chosen})
    return table, spec, draw(predicates(columns))


_CTX = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(1))


def matching(table: pa.Table, sql: str) -> set[int]:
    """Row numbers of ``table`` where ``sql`` is TRUE, per DataFusion."""
    rows = table.append_column("__row", pa.array(range(table.num_rows), pa.int64()))
    _CTX.register_record_batches(
        "t", [rows.to_batches() or [pa.RecordBatch.from_pylist([], rows.schema)]]
    )
    try:
        result = _CTX.sql(f"SELECT __row FROM t WHERE {sql}").to_pydict()
    finally:
        _CTX.deregister_table("t")
    return set(result["__row"])


def partition_values(table: pa.Table, spec: PartitionSpec, schema: NamespaceSchema) -> pa.Table:
    """Each row's partition values, as the writer computes them (``transform.apply``)."""
    columns = {}
    for f in spec.fields:
        source = table.column(schema.name_of(f.source_id))
        columns[f.name] = f.transform.apply(source).cast(f.result_type)
    return pa.table(columns, schema=pa.schema([(f.name, f.result_type) for f in spec.fields]))


@SETTINGS
@given(cases())
def test_bind_project_residual(case: tuple[pa.Table, PartitionSpec, Predicate]) -> None:
    table, spec, predicate = case
    schema = NamespaceSchema.from_arrow(table.schema)
    expected = matching(table, to_sql(predicate))
    bound = bind(predicate, table.schema)
    assert matching(table, to_sql(bound)) == expected
    if not any(isinstance(p, Unknown) for p in _leaves(bound)):
        mask = table.filter(to_arrow(bound, table.schema))
        assert mask.num_rows == len(expected)

    parts = partition_values(table, spec, schema)
    projection = project(bound, spec, schema)
    assert terms(projection) <= set(spec.names)
    kept = kept_rows(parts, projection)
    assert expected <= kept, (projection, sorted(expected - kept))
    assert matching(parts, to_sql(projection)) == kept

    groups: dict[tuple[Any, ...], list[int]] = {}
    for row, values in enumerate(
        zip(*(parts.column(n).to_pylist() for n in spec.names), strict=True)
    ):
        groups.setdefault(_key(values), []).append(row)
    for rows in groups.values():
        values = {name: parts.column(name)[rows[0]].as_py() for name in spec.names}
        rest = residual(bound, spec, schema, values)
        subset = table.take(pa.array(rows, pa.int64()))
        inside = {rows[r] for r in matching(subset, to_sql(rest))}
        assert inside == expected & set(rows), (values, rest)


def kept_rows(parts: pa.Table, projection: Predicate) -> set[int]:
    """Row numbers of ``parts`` where the projection holds, per pyarrow."""
    rows = parts.append_column("__row", pa.array(range(parts.num_rows), pa.int64()))
    return set(rows.filter(to_arrow(projection, parts.schema)).column("__row").to_pylist())


def _key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(("NULL",) if v is None else v for v in values)


def _leaves(p: Predicate) -> list[Predicate]:
    children = [getattr(p, a) for a in ("left", "right", "child") if hasattr(p, a)]
    return [leaf for c in children for leaf in _leaves(c)] if children else [p]
