"""``PartitionedNamespace.update`` on real Lance tables, against a DuckDB oracle."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors, transaction

from .helpers import SPECS, contents, create, expected, oracle, rows

# (where, assignments, the same in DuckDB's SQL): some assign partition source columns, so
# rows move between leaves; some set NULL partitions or take rows out of NULL partitions
CASES = [
    ("country = 'US'", {"amount": "amount + 1"}, "amount + 1 AS amount"),
    ("id % 5 = 0", {"country": "'DE'"}, "'DE' AS country"),
    ("country IS NULL", {"country": "'FR'", "name": "'moved'"}, "'FR' AS country, 'moved' AS name"),
    (
        "ts < TIMESTAMP '2025-01-02 00:00:00'",
        {"ts": "ts + INTERVAL '40 days'"},
        "ts + INTERVAL '40 days' AS ts",
    ),
    ("user_id < 10", {"user_id": "user_id + 17"}, "user_id + 17 AS user_id"),
    ("id % 7 = 3", {"id": "id + 100000", "name": "NULL"}, "id + 100000 AS id, NULL AS name"),
    ("name = 'bob'", {"ts": "NULL", "country": "NULL"}, "NULL AS ts, NULL AS country"),
]


def _after_update(table: pa.Table, where: str, duck: str) -> pa.Table:
    """The oracle: matching rows with ``duck`` (DuckDB ``expr AS col`` items) replacing
    their columns, the others unchanged."""
    con_sql = (
        f"SELECT * REPLACE ({duck}) FROM t WHERE coalesce(({where}), false) "
        f"UNION ALL SELECT * FROM t WHERE NOT coalesce(({where}), false)"
    )
    return oracle(table, con_sql)


# seven updates on 300 rows per transform (3-10 s each on 2 CPUs): the inner loop
# (scripts/test --fast) runs three kinds of transform, the full run every one
_FAST_KINDS = {"identity", "day", "truncate_str"}


@pytest.mark.parametrize(
    "kind",
    [pytest.param(k, marks=[] if k in _FAST_KINDS else [pytest.mark.slow]) for k in sorted(SPECS)],
)
def test_update_matches_the_oracle_on_every_transform(tmp_path: Path, kind: str) -> None:
    data = rows(300, seed=31)
    ns = create(tmp_path / kind, SPECS[kind], data)
    for where, assignments, duck in CASES:
        want = _after_update(data, where, duck)
        matched = oracle(data, f"SELECT * FROM t WHERE coalesce(({where}), false)").num_rows
        result = ns.update(where, set=assignments)
        assert contents(ns) == expected(want), where
        assert result.rows_updated == matched, where
        data = want


def test_rows_that_change_partition_move_without_duplicates(tmp_path: Path) -> None:
    data = rows(200, seed=32)
    ns = create(tmp_path / "ns", "year(ts), country", data)
    result = ns.update("country = 'US'", set={"country": "'FR'"})
    us = data.filter(pa.compute.equal(data.column("country"), "US")).num_rows
    assert result.rows_moved == us == result.rows_updated
    assert ns.count_rows("country = 'US'") == 0
    assert ns.partitions("country = 'US'").num_rows >= 1  # emptied leaves stay, with no rows
    assert contents(ns) == expected(_after_update(data, "country = 'US'", "'FR' AS country"))
    ids = ns.to_table(columns=["id"]).column("id").to_pylist()
    assert len(ids) == len(set(ids)) == data.num_rows


def test_update_of_rows_in_old_spec_leaves_moves_them_to_the_current_spec(
    tmp_path: Path,
) -> None:
    data = rows(150, seed=33)
    ns = create(tmp_path / "ns", "country", data)
    ns.update_partition_spec("year(ts), country")
    ns.update("id < 50", set={"amount": "0.0"})
    assert contents(ns) == expected(_after_update(data, "id < 50", "0.0 AS amount"))
    current = ns.partitions(f"spec_version = {ns.current_spec.version}")
    assert current.num_rows > 0


@pytest.mark.parametrize(
    ("where", "assignments", "error"),
    [
        ("id < 3", {}, errors.InvalidInputError),
        ("id < 3", {"nope": "1"}, errors.InvalidInputError),
        ("id < 3", {"country_year": "1"}, errors.InvalidInputError),
        ("id < 3", {"amount": "no_such_column + 1"}, errors.InvalidInputError),
        ("id < 3", {"amount": ""}, errors.InvalidInputError),
        ("id < 3", {"user_id": "'not a number'"}, errors.CastError),
        ("no_such = 1", {"amount": "1.0"}, errors.InvalidInputError),
    ],
)
def test_bad_assignments_are_typed_errors_and_change_nothing(
    tmp_path: Path, where: str, assignments: dict[str, str], error: type[Exception]
) -> None:
    data = rows(20, seed=34)
    ns = create(tmp_path / "ns", "country", data)
    version = ns.version
    with pytest.raises(error):
        ns.update(where, set=assignments)
    assert ns.refresh().version == version
    assert contents(ns) == expected(data)


def test_an_injected_failure_leaves_the_namespace_as_before(tmp_path: Path) -> None:
    data = rows(100, seed=35)
    ns = create(tmp_path / "ns", "country", data)
    version = ns.version

    def crash() -> None:
        raise RuntimeError("injected")

    with (
        transaction.pause_at("leaves_committed", crash),
        pytest.raises(RuntimeError, match="injected"),
    ):
        ns.update("id % 2 = 0", set={"country": "'DE'"})
    assert ns.refresh().version == version
    assert contents(ns) == expected(data)
    ns.update("id % 2 = 0", set={"country": "'DE'"})
    assert contents(ns) == expected(_after_update(data, "id % 2 = 0", "'DE' AS country"))


def test_a_reader_pinned_to_an_older_version_still_reads_the_old_values(tmp_path: Path) -> None:
    data = rows(60, seed=36)
    ns = create(tmp_path / "ns", "country", data)
    version = ns.version
    ns.update("true", set={"country": "'US'", "amount": "NULL"})
    pinned = lp.PartitionedNamespace.open(str(tmp_path / "ns"), version=version)
    assert pinned.to_table().sort_by("id").to_pylist() == expected(data)


def test_values_takes_python_values(tmp_path: Path) -> None:
    import datetime

    data = rows(60, seed=37)
    ns = create(tmp_path / "ns", "country", data)
    moment = datetime.datetime(2025, 3, 1, 12, 30)
    result = ns.update(
        "id % 3 = 0",
        values={"country": "O'Hare", "amount": 2, "name": None, "ts": moment},
    )
    duck = (
        "'O''Hare' AS country, 2.0 AS amount, NULL AS name, TIMESTAMP '2025-03-01 12:30:00' AS ts"
    )
    assert result.rows_updated == sum(1 for i in data.column("id").to_pylist() if i % 3 == 0)
    assert contents(ns) == expected(_after_update(data, "id % 3 = 0", duck))
    assert ns.count_rows("country = 'O''Hare'") == result.rows_updated


def test_set_and_values_together_or_neither_is_a_typed_error(tmp_path: Path) -> None:
    ns = create(tmp_path / "ns", "country", rows(10, seed=38))
    version = ns.version
    with pytest.raises(errors.InvalidInputError, match="not both"):
        ns.update("true", set={"name": "'a'"}, values={"name": "a"})
    with pytest.raises(errors.InvalidInputError, match=r"set= .* or values="):
        ns.update("true")
    with pytest.raises(errors.InvalidInputError, match="value for column 'name'"):
        ns.update("true", values={"name": ["a", "list"]})
    assert ns.refresh().version == version


def test_a_leaf_whose_rows_stay_gets_one_lance_version(tmp_path: Path) -> None:
    """Deleting the old rows and appending the new ones is one Lance ``Update`` commit per
    leaf (as pylance's own update), not a delete and then an append; the leaf at that one
    version holds the right rows, and the version before the update reads as before."""
    data = rows(80, seed=37)
    ns = create(tmp_path / "ns", "country", data)
    tasks = {t.object_id: t for t in ns.plan_scan("country = 'US'")}
    ((object_id, task),) = tasks.items()
    before = task.read_version
    assert before is not None
    ns.update("country = 'US' AND id % 2 = 0", set={"amount": "amount + 1"})
    after = ns.snapshot.read_version(object_id)
    assert after == before + 1
    leaf = lance.dataset(task.uri, version=after)
    changed = {r["id"]: r["amount"] for r in leaf.to_table(columns=["id", "amount"]).to_pylist()}
    old = {r["id"]: r["amount"] for r in data.to_pylist() if r["country"] == "US"}
    assert changed.keys() == old.keys()
    for key, amount in old.items():
        want = None if amount is None else amount + 1 if key % 2 == 0 else amount
        assert changed[key] == want
    assert lance.dataset(task.uri, version=before).count_rows() == len(old)
