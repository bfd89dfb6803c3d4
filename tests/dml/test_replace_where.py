"""``write(data, mode="overwrite", where=...)``: replace the rows matching a predicate."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lance_partitioned import errors, transaction

from .helpers import SPECS, after_delete, contents, create, expected, oracle, rows

CASES = [
    ("country = 'US'", "country = 'US'"),
    ("country IS NULL", "country IS NULL"),
    ("ts >= TIMESTAMP '2025-01-15 00:00:00'", "ts >= TIMESTAMP '2025-01-15 00:00:00'"),
    ("id % 4 = 1", "id % 4 = 1"),
]


# a namespace and its oracle per transform
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("kind", sorted(SPECS))
def test_replace_where_matches_the_oracle_on_every_transform(tmp_path: Path, kind: str) -> None:
    data = rows(200, seed=21)
    ns = create(tmp_path / kind, SPECS[kind], data)
    for i, (where, duck) in enumerate(CASES):
        fresh = oracle(
            rows(60, seed=100 + i, first_id=10_000 * (i + 1)), f"SELECT * FROM t WHERE {duck}"
        )
        result = ns.write(fresh, mode="overwrite", where=where)
        data = pa.concat_tables([after_delete(data, duck), fresh])
        assert contents(ns) == expected(data), where
        assert result.rows_written == fresh.num_rows


def test_rows_outside_the_predicate_are_a_typed_error_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    data = rows(100, seed=22)
    ns = create(tmp_path / "ns", "country", data)
    version = ns.version
    fresh = rows(50, seed=23, first_id=1000)  # some rows are not in 'US'
    with pytest.raises(errors.PredicateViolationError, match="do not satisfy"):
        ns.write(fresh, mode="overwrite", where="country = 'US'")
    assert ns.refresh().version == version
    assert contents(ns) == expected(data)
    # a NULL predicate value is not "satisfied" either
    nulls = oracle(fresh, "SELECT * FROM t WHERE country IS NULL")
    with pytest.raises(errors.PredicateViolationError):
        ns.write(nulls, mode="overwrite", where="country = 'US'")


def test_where_needs_mode_overwrite(tmp_path: Path) -> None:
    ns = create(tmp_path / "ns", "country", rows(10, seed=24))
    with pytest.raises(errors.InvalidInputError, match="mode='overwrite'"):
        ns.write(rows(1, seed=25), mode="append", where="true")


def test_replace_where_on_a_partition_field_name_and_old_spec_leaves(tmp_path: Path) -> None:
    data = rows(200, seed=26)
    ns = create(tmp_path / "ns", "country", data)
    ns.update_partition_spec("year(ts), month(ts)")
    fresh = oracle(
        rows(80, seed=27, first_id=5000), "SELECT * FROM t WHERE year(ts) = 2025 AND month(ts) = 1"
    )
    ns.write(fresh, mode="overwrite", where="ts_year = 2025 AND ts_month = 1")
    kept = after_delete(data, "year(ts) = 2025 AND month(ts) = 1")
    assert contents(ns) == expected(pa.concat_tables([kept, fresh]))


def test_an_injected_failure_leaves_the_namespace_as_before(tmp_path: Path) -> None:
    data = rows(100, seed=28)
    ns = create(tmp_path / "ns", "country", data)
    version = ns.version

    def crash() -> None:
        raise RuntimeError("injected")

    fresh = oracle(rows(30, seed=29, first_id=900), "SELECT * FROM t WHERE country = 'FR'")
    with (
        transaction.pause_at("leaves_committed", crash),
        pytest.raises(RuntimeError, match="injected"),
    ):
        ns.write(fresh, mode="overwrite", where="country = 'FR' OR id < 50")
    assert ns.refresh().version == version
    assert contents(ns) == expected(data)
