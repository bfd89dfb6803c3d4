"""Property: any sequence of writes, deletes, updates, merges and replace-wheres leaves the
namespace equal to the same sequence applied to an in-memory table (DuckDB)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.property.strategies import examples

from .helpers import SCHEMA, create, expected, rows

PREDICATES = [
    "country = 'US'",
    "country IS NULL",
    "id % 3 = 1",
    "ts < TIMESTAMP '2025-01-01 00:00:00'",
    "user_id >= 25",
    "name = 'bob' OR amount > 80",
]
ASSIGNMENTS = [
    ({"country": "'FR'"}, "'FR' AS country"),
    ({"amount": "amount + 1"}, "amount + 1 AS amount"),
    ({"user_id": "NULL", "name": "'z'"}, "NULL AS user_id, 'z' AS name"),
    ({"ts": "ts + INTERVAL '1 day'"}, "ts + INTERVAL '1 day' AS ts"),
]

# when_matched_update(set=...) of a merge: ours, and DuckDB's SELECT list over t (target) and
# s (source) joined on id
SETS = [
    ({"amount": "target.amount + source.amount"}, "t.amount + s.amount AS amount"),
    ({"country": "source.country"}, "s.country AS country"),  # rows move
    ({"name": "'m'", "user_id": "source.user_id"}, "'m' AS name, s.user_id AS user_id"),
]

operation = st.one_of(
    st.tuples(st.just("append"), st.integers(0, 10_000)),
    st.tuples(st.just("delete"), st.sampled_from(PREDICATES)),
    st.tuples(
        st.just("update"), st.sampled_from(PREDICATES), st.sampled_from(range(len(ASSIGNMENTS)))
    ),
    st.tuples(st.just("merge"), st.integers(0, 10_000)),
    st.tuples(st.just("merge_set"), st.integers(0, 10_000), st.sampled_from(range(len(SETS)))),
    st.tuples(st.just("replace"), st.sampled_from(PREDICATES), st.integers(0, 10_000)),
)


def _sql(table: pa.Table, sql: str) -> pa.Table:
    con = duckdb.connect()
    con.register("t", table)
    return con.sql(sql).to_arrow_table().cast(SCHEMA)


def _step(ns: object, model: pa.Table, op: tuple[object, ...], next_id: int) -> pa.Table:
    kind = op[0]
    if kind == "append":
        batch = rows(15, seed=int(op[1]), first_id=next_id)  # type: ignore[call-overload]
        ns.write(batch)  # type: ignore[attr-defined]
        return pa.concat_tables([model, batch])
    if kind == "delete":
        ns.delete(op[1])  # type: ignore[attr-defined]
        return _sql(model, f"SELECT * FROM t WHERE NOT coalesce(({op[1]}), false)")
    if kind == "update":
        assignments, duck = ASSIGNMENTS[int(op[2])]  # type: ignore[call-overload]
        ns.update(op[1], set=assignments)  # type: ignore[attr-defined]
        return _sql(
            model,
            f"SELECT * REPLACE ({duck}) FROM t WHERE coalesce(({op[1]}), false) "
            f"UNION ALL SELECT * FROM t WHERE NOT coalesce(({op[1]}), false)",
        )
    if kind == "merge":
        # half the ids exist (if the model has rows), half are new
        existing = model.column("id").to_pylist()[:5]
        fresh = rows(10, seed=int(op[1]), first_id=next_id)  # type: ignore[call-overload]
        ids = existing + fresh.column("id").to_pylist()[: 10 - len(existing)]
        source = fresh.slice(0, len(ids)).set_column(0, "id", pa.array(ids, pa.int64()))
        ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()  # type: ignore[attr-defined]
        kept = model.filter(
            pa.compute.invert(pa.compute.is_in(model.column("id"), source.column("id")))
        )
        return pa.concat_tables([kept, source])
    if kind == "merge_set":  # half the source matches, the rest is inserted
        existing = model.column("id").to_pylist()[:5]
        fresh = rows(10, seed=int(op[1]), first_id=next_id)  # type: ignore[call-overload]
        ids = existing + fresh.column("id").to_pylist()[: 10 - len(existing)]
        source = fresh.slice(0, len(ids)).set_column(0, "id", pa.array(ids, pa.int64()))
        assign, duck = SETS[int(op[2])]  # type: ignore[call-overload]
        builder = ns.merge(source, on="id")  # type: ignore[attr-defined]
        builder.when_matched_update(set=assign).when_not_matched_insert_all().execute()
        con = duckdb.connect()
        con.register("t", model)
        con.register("s", source)
        sql = (
            f"SELECT t.* REPLACE ({duck}) FROM t JOIN s ON t.id = s.id "
            "UNION ALL SELECT * FROM t WHERE id NOT IN (SELECT id FROM s) "
            "UNION ALL SELECT * FROM s WHERE id NOT IN (SELECT id FROM t)"
        )
        return con.sql(sql).to_arrow_table().cast(SCHEMA)
    where = str(op[1])
    fresh = _sql(
        rows(20, seed=int(op[2]), first_id=next_id),  # type: ignore[call-overload]
        f"SELECT * FROM t WHERE coalesce(({where}), false)",
    )
    ns.write(fresh, mode="overwrite", where=where)  # type: ignore[attr-defined]
    return pa.concat_tables(
        [_sql(model, f"SELECT * FROM t WHERE NOT coalesce(({where}), false)"), fresh]
    )


@settings(
    max_examples=examples(8),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    spec=st.sampled_from(["country", "year(ts), bucket(3, user_id)", "truncate(1, name)"]),
    operations=st.lists(operation, min_size=1, max_size=4),
)
def test_any_sequence_of_changes_equals_the_in_memory_model(
    spec: str, operations: list[tuple[object, ...]]
) -> None:
    with tempfile.TemporaryDirectory() as root:
        model = rows(40, seed=7)
        ns = create(Path(root) / "ns", spec, model)
        for i, op in enumerate(operations):
            model = _step(ns, model, op, next_id=1000 * (i + 1))
            assert ns.refresh().to_table().sort_by("id").to_pylist() == expected(model), op
