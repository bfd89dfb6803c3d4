"""``PartitionedNamespace.delete`` on real Lance tables, against a DuckDB oracle."""

from __future__ import annotations

from pathlib import Path

import pytest

from lance_partitioned import errors, transaction
from lance_partitioned.expressions import EqualTo

from .helpers import SPECS, after_delete, contents, create, expected, rows

# predicates: decided by partition values for some specs, row-level for others, NULL tests
PREDICATES = [
    "country = 'US'",
    "country IS NULL",
    "ts < TIMESTAMP '2025-01-01 00:00:00'",
    "ts >= TIMESTAMP '2025-02-01 00:00:00' AND country <> 'FR'",
    "ts IS NULL OR user_id = 7",
    "id % 3 = 0",
    "name LIKE 'a%'",
    "id >= 20 AND id < 40",
    "amount > 50",
]


# a namespace and its oracle per transform
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("kind", sorted(SPECS))
def test_delete_matches_the_oracle_on_every_transform(tmp_path: Path, kind: str) -> None:
    """Each predicate deletes from what the previous ones left."""
    data = rows(400, seed=1)
    ns = create(tmp_path / kind, SPECS[kind], data)
    for where in PREDICATES:
        want = after_delete(data, where)
        result = ns.delete(where)
        assert contents(ns) == expected(want), where
        assert result.rows_deleted == data.num_rows - want.num_rows, where
        assert ns.count_rows() == want.num_rows
        data = want
    assert data.num_rows > 0  # some rows survive every predicate (NULLs among them)


def test_a_delete_decided_by_partition_values_drops_leaves_without_reading(
    tmp_path: Path,
) -> None:
    data = rows(200, seed=2)
    ns = create(tmp_path / "ns", "year(ts), country", data)
    us = ns.partitions("country = 'US'").num_rows
    assert us > 1
    result = ns.delete("country = 'US'")
    assert result.leaves_dropped == us
    assert result.leaves_rewritten == 0
    assert contents(ns) == expected(after_delete(data, "country = 'US'"))
    assert "US" not in ns.partitions().column("country").to_pylist()


def test_a_row_level_delete_rewrites_leaves_with_deletion_files(tmp_path: Path) -> None:
    data = rows(200, seed=3)
    ns = create(tmp_path / "ns", "country", data)
    result = ns.delete("id % 2 = 0")
    assert result.leaves_dropped == 0
    assert result.leaves_rewritten == ns.partitions().num_rows
    assert contents(ns) == expected(after_delete(data, "id % 2 = 0"))


def test_a_delete_that_matches_nothing_commits_nothing(tmp_path: Path) -> None:
    data = rows(50, seed=4)
    ns = create(tmp_path / "ns", "country", data)
    version = ns.version
    result = ns.delete("country = 'XX' OR id < 0")
    assert (result.rows_deleted, result.version) == (0, version)
    assert contents(ns) == expected(data)


def test_delete_takes_a_predicate_object(tmp_path: Path) -> None:
    data = rows(60, seed=5)
    ns = create(tmp_path / "ns", "country", data)
    ns.delete(EqualTo("country", "FR"))
    assert contents(ns) == expected(after_delete(data, "country = 'FR'"))


def test_delete_on_leaves_of_older_schemas_and_specs(tmp_path: Path) -> None:
    """Leaves written before a rename, a type promotion and a spec change: the residual is
    applied to each leaf's own columns."""
    import pyarrow as pa

    data = rows(120, seed=6)
    ns = create(tmp_path / "ns", "country", data.slice(0, 60))
    ns.rename_column("amount", "price")
    ns.update_partition_spec("year(ts), country")
    renamed = data.rename_columns([("price" if n == "amount" else n) for n in data.column_names])
    ns.write(renamed.slice(60))
    ns.delete("price > 50 OR ts_year = 2024")
    table = renamed
    want = after_delete(table, "price > 50 OR year(ts) = 2024")
    assert contents(ns) == expected(want)
    assert pa.types.is_float64(ns.schema.field("price").type)


@pytest.mark.parametrize("where", ["no_such_column = 1", "country = ", 42, "", "   "], ids=repr)
def test_bad_predicates_are_typed_errors_and_change_nothing(tmp_path: Path, where: object) -> None:
    data = rows(30, seed=7)
    ns = create(tmp_path / "ns", "country", data)
    version = ns.version
    with pytest.raises(errors.InvalidInputError):
        ns.delete(where)  # type: ignore[arg-type]
    assert ns.refresh().version == version


@pytest.mark.parametrize("point", ["leaf_commit", "leaves_committed"])
def test_a_failure_before_the_manifest_commit_leaves_the_namespace_as_before(
    tmp_path: Path, point: str
) -> None:
    data = rows(100, seed=8)
    ns = create(tmp_path / "ns", "year(ts), country", data)
    version = ns.version

    def crash() -> None:
        raise RuntimeError("injected")

    with (
        transaction.pause_at(point, crash),
        pytest.raises(RuntimeError, match="injected"),
    ):
        ns.delete("id % 2 = 0 OR country = 'US'")
    assert ns.refresh().version == version
    assert contents(ns) == expected(data)
    # and the namespace still takes the same delete afterwards
    ns.delete("id % 2 = 0 OR country = 'US'")
    assert contents(ns) == expected(after_delete(data, "id % 2 = 0 OR country = 'US'"))


def test_a_reader_pinned_to_an_older_version_still_reads_the_deleted_rows(
    tmp_path: Path,
) -> None:
    import lance_partitioned as lp

    data = rows(80, seed=9)
    ns = create(tmp_path / "ns", "country", data)
    version = ns.version
    ns.delete("country = 'US' OR id < 10")
    pinned = lp.PartitionedNamespace.open(str(tmp_path / "ns"), version=version)
    assert pinned.to_table().sort_by("id").to_pylist() == expected(data)
