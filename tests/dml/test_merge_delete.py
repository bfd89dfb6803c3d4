"""``MergeBuilder.when_matched_delete``: matched target rows deleted, Delta's clause order,
against a DuckDB oracle (two spec versions, NULL partition values)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned import errors

from .helpers import SCHEMA, contents, create, expected, rows


def _namespace(root: Path) -> tuple[lp.PartitionedNamespace, pa.Table]:
    """Rows under ``country`` then under ``country, bucket(4, user_id)`` (NULLs in both)."""
    first, second = rows(60, seed=61), rows(60, seed=62, first_id=60)
    ns = create(root, "country", first)
    ns.update_partition_spec("country, bucket(4, user_id)")
    ns.write(second)
    return ns, pa.concat_tables([first, second])


def _source(target: pa.Table) -> pa.Table:
    """Copies of every third target row (a new amount; every other one changes country,
    so it moves if updated) and 20 new rows."""
    picked = target.take(pa.array(range(0, target.num_rows, 3)))
    amounts = [None if a is None else a + 1 for a in picked.column("amount").to_pylist()]
    countries = [
        c if i % 2 else ("DE" if c != "DE" else None)
        for i, c in enumerate(picked.column("country").to_pylist())
    ]
    picked = picked.set_column(5, "amount", pa.array(amounts, pa.float64()))
    picked = picked.set_column(2, "country", pa.array(countries, pa.string()))
    return pa.concat_tables([picked, rows(20, seed=63, first_id=500)])


def _oracle(
    target: pa.Table,
    source: pa.Table,
    *,
    update: str | None,
    delete: str,
    delete_first: bool,
    insert: bool = True,
) -> pa.Table:
    """Delta's merge keyed by ``id``: the first WHEN MATCHED clause whose condition holds
    applies (``update`` None: no update clause)."""
    con = duckdb.connect()
    con.register("target", target)
    con.register("source", source)
    d = f"(({delete}) IS TRUE)"
    u = "FALSE" if update is None else f"(({update}) IS TRUE)"
    deleted = d if delete_first else f"NOT {u} AND {d}"
    updated = f"NOT {d} AND {u}" if delete_first else u
    pairs = "FROM target JOIN source ON target.id = source.id"
    sql = f"""
        SELECT target.* FROM target WHERE NOT EXISTS
            (SELECT 1 FROM source WHERE source.id = target.id)
        UNION ALL SELECT target.* {pairs} WHERE NOT ({deleted}) AND NOT ({updated})
        UNION ALL SELECT source.* {pairs} WHERE {updated}
    """
    if insert:
        sql += """UNION ALL SELECT source.* FROM source WHERE NOT EXISTS
            (SELECT 1 FROM target WHERE target.id = source.id)"""
    return con.sql(sql).to_arrow_table().cast(SCHEMA)


@pytest.mark.parametrize(
    ("update", "delete", "delete_first"),
    [
        (None, "true", True),  # delete every matched row
        (None, "target.country IS NULL OR source.amount > 50", True),
        ("true", "source.amount > 50", True),  # delete where it holds, update the others
        ("source.amount < 30", "true", False),  # update where it holds, delete the others
        ("target.country = 'FR'", "source.user_id > 20", False),  # some pairs: neither
    ],
)
def test_matched_delete_follows_the_first_matching_clause(
    tmp_path: Path, update: str | None, delete: str, delete_first: bool
) -> None:
    ns, target = _namespace(tmp_path / "ns")
    source = _source(target)
    builder = ns.merge(source, on="id")
    condition = None if delete == "true" else delete
    update_condition = None if update == "true" else update
    if delete_first:
        builder = builder.when_matched_delete(condition)
    if update is not None:
        builder = builder.when_matched_update_all(update_condition)
    if not delete_first:
        builder = builder.when_matched_delete(condition)
    version = ns.version
    result = builder.when_not_matched_insert_all().execute()
    want = _oracle(target, source, update=update, delete=delete, delete_first=delete_first)
    assert contents(ns) == expected(want)
    assert result.version == version + 1
    kept = target.num_rows + result.rows_inserted - result.rows_deleted
    assert kept == want.num_rows
    assert result.rows_inserted == 20
    assert result.rows_deleted > 0


def test_matched_delete_with_a_condition_over_null_partition_keys(tmp_path: Path) -> None:
    """Keyed on a partition source with NULLs (matched NULL-safely): the NULL-country
    rows are found and deleted."""
    ns, target = _namespace(tmp_path / "ns")
    source = target.filter(pc.is_null(target.column("country")))
    assert source.num_rows
    result = (
        ns.merge(source, on=["id", "country"]).when_matched_delete("target.id % 2 = 0").execute()
    )
    con = duckdb.connect()
    con.register("t", target)
    want = con.sql("SELECT * FROM t WHERE NOT (country IS NULL AND id % 2 = 0)").to_arrow_table()
    assert contents(ns) == expected(want.cast(SCHEMA))
    assert result.rows_deleted == target.num_rows - want.num_rows
    assert result.rows_updated == result.rows_inserted == 0


def test_several_source_rows_deleting_one_row_delete_it_once(tmp_path: Path) -> None:
    ns, target = _namespace(tmp_path / "ns")
    source = pa.concat_tables([target.slice(0, 3), target.slice(1, 1)])
    result = ns.merge(source, on="id").when_matched_delete().execute()
    assert result.rows_deleted == 3
    assert contents(ns) == expected(target.slice(3))


def test_one_source_row_updating_and_another_deleting_a_row_is_a_typed_error(
    tmp_path: Path,
) -> None:
    ns, target = _namespace(tmp_path / "ns")
    version = ns.version
    row = target.slice(5, 1)
    changed = row.set_column(5, "amount", pa.array([-1.0], pa.float64()))
    source = pa.concat_tables([row, changed])
    with pytest.raises(errors.DuplicateKeyError, match="several source rows"):
        (
            ns.merge(source, on="id")
            .when_matched_delete("source.amount >= 0")
            .when_matched_update_all()
            .execute()
        )
    assert ns.refresh().version == version
