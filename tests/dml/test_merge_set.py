"""``merge(...).when_matched_update(set=...)`` (Delta Lake's ``whenMatchedUpdate``): assigned
columns computed from ``target.<col>`` and ``source.<col>``, every other column kept, rows that
change partition moved — against DuckDB's ``UPDATE ... FROM`` + ``INSERT`` on the same rows."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import lance_partitioned as lp

from .helpers import SCHEMA, SPECS, contents, create, expected, rows


def _oracle(
    data: pa.Table,
    source: pa.Table,
    assign: dict[str, str],
    *,
    condition: str | None = None,
    insert: bool = True,
) -> pa.Table:
    """DuckDB's merge of ``source`` into ``data`` on ``id``: matched rows get ``assign``
    (where ``condition`` holds), unmatched source rows are inserted (columns it lacks NULL)."""
    con = duckdb.connect()
    con.register("t0", data)
    con.register("s0", source)
    con.sql("CREATE TABLE target AS SELECT * FROM t0")
    con.sql("CREATE TABLE source AS SELECT * FROM s0")
    sets = ", ".join(f"{name} = {sql}" for name, sql in assign.items())
    where = "target.id = source.id" + ("" if condition is None else f" AND ({condition})")
    con.sql(f"UPDATE target SET {sets} FROM source WHERE {where}")
    if insert:
        names = [n for n in data.column_names if n in source.column_names]
        con.sql(
            f"INSERT INTO target ({', '.join(names)}) SELECT {', '.join(names)} FROM source "
            "WHERE id NOT IN (SELECT id FROM t0)"
        )
    return con.sql("SELECT * FROM target").to_arrow_table().cast(data.schema)


@pytest.mark.matrix(3)
@pytest.mark.parametrize("kind", sorted(SPECS))
def test_set_expressions_match_the_oracle_on_every_transform(tmp_path: Path, kind: str) -> None:
    """An expression of both sides, a source column, and a partition source column (the
    row moves when its partition changes) on every transform kind."""
    data = rows(120, seed=51)
    ns = create(tmp_path / kind, SPECS[kind], data)
    source = rows(40, seed=52, first_id=100)  # 20 matches, 20 inserts
    assign = {
        "amount": "coalesce(target.amount, 0) + coalesce(source.amount, 0)",
        "name": "source.name",
        "user_id": "target.user_id + 1",
        "country": "source.country",
    }
    result = (
        ns.merge(source, on="id")
        .when_matched_update(set=assign)
        .when_not_matched_insert_all()
        .execute()
    )
    assert contents(ns) == expected(_oracle(data, source, assign))
    assert (result.rows_updated, result.rows_inserted) == (20, 20)
    assert ns.count_rows() == 140


def test_columns_not_assigned_keep_the_target_values(tmp_path: Path) -> None:
    """The source's values of columns not in ``set`` are not used: the target's stay."""
    data = rows(30, seed=53)
    ns = create(tmp_path / "ns", "country", data)
    source = data.slice(0, 10).set_column(
        SCHEMA.get_field_index("name"), "name", pa.array(["zed"] * 10)
    )
    ns.merge(source, on="id").when_matched_update(set={"amount": "source.amount * 2"}).execute()
    assert contents(ns) == expected(_oracle(data, source, {"amount": "source.amount * 2"}))
    assert "zed" not in {r["name"] for r in contents(ns)}


def test_a_partial_source_and_a_condition(tmp_path: Path) -> None:
    """A source of the key and one column; the assignment applies only where the condition
    holds (a NULL condition does not), and with when_matched_delete first, a pair the delete
    takes is not updated."""
    data = rows(60, seed=54)
    ns = create(tmp_path / "ns", "year(ts), country", data)
    source = pa.table(
        {"id": pa.array(range(0, 60, 2), pa.int64()), "amount": [float(i) for i in range(30)]}
    )
    assign = {"amount": "target.amount - source.amount"}
    condition = "source.amount > 10"
    (
        ns.merge(source, on="id")
        .when_matched_delete(condition="source.amount > 25")
        .when_matched_update(set=assign, condition=condition)
        .execute()
    )
    deleted = {r["id"] for r in source.to_pylist() if r["amount"] > 25}
    want = _oracle(data, source, assign, condition=condition, insert=False)
    assert contents(ns) == [r for r in expected(want) if r["id"] not in deleted]


def test_a_cast_to_the_column_type_and_typed_errors(tmp_path: Path) -> None:
    data = rows(20, seed=55)
    ns = create(tmp_path / "ns", "country", data)
    version = ns.version
    source = data.slice(0, 5)
    # an integer expression into the float column: converted
    ns.merge(source, on="id").when_matched_update(set={"amount": "target.id * 10"}).execute()
    assert [r["amount"] for r in contents(ns)[:5]] == [0.0, 10.0, 20.0, 30.0, 40.0]
    version = ns.refresh().version
    bad: list[dict[str, str]] = [
        {"nope": "source.amount"},  # no such column
        {"amount": "source.nope + 1"},  # no such source column
        {"amount": "target.amount +"},  # not SQL
        {"user_id": "'not a number'"},  # does not convert to int64
    ]
    for assign in bad:
        with pytest.raises(lp.errors.InvalidInputError):
            ns.merge(source, on="id").when_matched_update(set=assign).execute()
        assert ns.refresh().version == version
    with pytest.raises(lp.errors.InvalidInputError):
        ns.merge(source, on="id").when_matched_update(set={})
    with pytest.raises(lp.errors.InvalidInputError):
        ns.merge(source, on="id").when_matched_update(set={"amount": 1})  # type: ignore[dict-item]


def test_a_bad_expression_fails_before_any_leaf_is_read_even_with_no_match(
    tmp_path: Path,
) -> None:
    ns = create(tmp_path / "empty", "country")
    with pytest.raises(lp.errors.InvalidInputError, match="cannot evaluate"):
        ns.merge(rows(3, seed=56), on="id").when_matched_update(
            set={"amount": "upper(target.amount"}
        ).execute()
    assert ns.refresh().count_rows() == 0


def test_several_source_rows_assigning_one_target_row_are_a_duplicate_key_error(
    tmp_path: Path,
) -> None:
    data = rows(10, seed=57)
    ns = create(tmp_path / "ns", "country", data)
    source = pa.concat_tables([data.slice(3, 1), data.slice(3, 1)])
    version = ns.version
    with pytest.raises(lp.errors.DuplicateKeyError):
        ns.merge(source, on="id").when_matched_update(set={"amount": "source.amount"}).execute()
    assert ns.refresh().version == version


def test_update_all_after_set_replaces_the_set_clause(tmp_path: Path) -> None:
    data = rows(10, seed=58)
    ns = create(tmp_path / "ns", "country", data)
    source = data.slice(0, 4).set_column(
        SCHEMA.get_field_index("amount"), "amount", pa.array([-1.0] * 4)
    )
    (
        ns.merge(source, on="id")
        .when_matched_update(set={"name": "'x'"})
        .when_matched_update_all()
        .execute()
    )
    assert [r["amount"] for r in contents(ns)[:4]] == [-1.0] * 4
    assert "x" not in {r["name"] for r in contents(ns)}
