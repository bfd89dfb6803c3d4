"""``merge``'s rules on columns the source lacks, duplicate source keys and the condition of
``when_not_matched_by_source_delete``, with pylance's ``merge_insert`` as the oracle."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned import errors

from .helpers import contents, expected

SCHEMA = pa.schema(
    [("id", pa.int64()), ("country", pa.string()), ("x", pa.int64()), ("note", pa.string())]
)
TARGET = pa.table(
    {
        "id": [1, 2, 3],
        "country": ["US", "FR", "US"],
        "x": [10, 20, 30],
        "note": ["keep me", "two", "three"],
    },
    schema=SCHEMA,
)


def _namespace(root: Path, schema: pa.Schema = SCHEMA, data: pa.Table = TARGET) -> Any:
    ns = lp.PartitionedNamespace.create(str(root), schema=schema, partition_by="country")
    ns.write(data)
    return ns


def _sorted(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r["id"], repr(r)))


def test_update_all_keeps_the_target_value_of_a_column_the_source_lacks(tmp_path: Path) -> None:
    """The reported data loss: a source without ``note`` set it to NULL."""
    ns = _namespace(tmp_path / "ns")
    source = pa.table({"id": [1], "country": ["US"], "x": [11]})
    result = ns.merge(source, on="id").when_matched_update_all().execute()
    assert result.rows_updated == 1
    assert ns.to_table("id = 1").to_pylist() == [
        {"id": 1, "country": "US", "x": 11, "note": "keep me"}
    ]


def test_an_updated_row_keeps_a_partition_source_column_the_source_lacks(tmp_path: Path) -> None:
    ns = _namespace(tmp_path / "ns")
    result = ns.merge(pa.table({"id": [2], "x": [21]}), on="id").when_matched_update_all().execute()
    assert result.rows_updated == 1
    assert ns.to_table("country = 'FR'").to_pylist() == [
        {"id": 2, "country": "FR", "x": 21, "note": "two"}
    ]
    assert sorted(ns.partitions().column("country").to_pylist()) == ["FR", "US"]


def test_a_row_that_moves_keeps_a_column_the_source_lacks(tmp_path: Path) -> None:
    ns = _namespace(tmp_path / "ns")
    source = pa.table({"id": [3], "country": ["DE"], "x": [31]})
    ns.merge(source, on="id").when_matched_update_all().execute()
    assert ns.to_table("country = 'DE'").to_pylist() == [
        {"id": 3, "country": "DE", "x": 31, "note": "three"}
    ]
    assert ns.count_rows("country = 'US'") == 1


def test_a_conditional_update_keeps_a_column_the_source_lacks(tmp_path: Path) -> None:
    ns = _namespace(tmp_path / "ns")
    source = pa.table({"id": [1, 2, 9], "country": ["US", "FR", "FR"], "x": [5, 25, 90]})
    result = (
        ns.merge(source, on="id")
        .when_matched_update_all("source.x > target.x")
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.rows_updated, result.rows_inserted) == (1, 1)
    assert _sorted(ns.to_table()) == [
        {"id": 1, "country": "US", "x": 10, "note": "keep me"},
        {"id": 2, "country": "FR", "x": 25, "note": "two"},
        {"id": 3, "country": "US", "x": 30, "note": "three"},
        {"id": 9, "country": "FR", "x": 90, "note": None},
    ]


def test_a_struct_column_the_source_lacks(tmp_path: Path) -> None:
    note = pa.struct([("text", pa.string()), ("n", pa.int32())])
    schema = pa.schema([("id", pa.int64()), ("country", pa.string()), ("note", note)])
    data = pa.table(
        {"id": [1, 2], "country": ["US", "FR"], "note": [{"text": "keep me", "n": 1}, None]},
        schema=schema,
    )
    ns = _namespace(tmp_path / "ns", schema, data)
    source = pa.table({"id": [1, 3], "country": ["FR", "US"]})
    ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert _sorted(ns.to_table()) == [
        {"id": 1, "country": "FR", "note": {"text": "keep me", "n": 1}},
        {"id": 2, "country": "FR", "note": None},
        {"id": 3, "country": "US", "note": None},
    ]


def test_an_insert_without_a_not_null_column_is_a_typed_error(tmp_path: Path) -> None:
    schema = pa.schema([*list(SCHEMA)[:3], pa.field("note", pa.string(), nullable=False)])
    ns = _namespace(tmp_path / "ns", schema, TARGET.cast(schema))
    version = ns.version
    source = pa.table({"id": [1, 7], "country": ["US", "US"], "x": [11, 70]})
    merge = ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all()
    with pytest.raises(errors.InvalidInputError, match=r"\['note'\].*not nullable"):
        merge.execute()
    assert ns.refresh().version == version
    assert contents(ns) == expected(TARGET.cast(schema))
    # an update alone never inserts: the rows keep their note
    ns.merge(source, on="id").when_matched_update_all().execute()
    assert ns.to_table("id = 1").to_pylist() == [
        {"id": 1, "country": "US", "x": 11, "note": "keep me"}
    ]


def test_a_condition_on_a_column_the_source_lacks_is_a_typed_error(tmp_path: Path) -> None:
    """``source.note`` is not NULL-filled: the source has no such column."""
    ns = _namespace(tmp_path / "ns")
    version = ns.version
    merge = ns.merge(pa.table({"id": [1], "x": [0]}), on="id").when_matched_update_all(
        "source.note IS NULL"
    )
    with pytest.raises(errors.InvalidInputError, match="note"):
        merge.execute()
    assert ns.refresh().version == version


# ------------------------------------------------------------------ pylance as the oracle
Clauses = Callable[[Any], Any]

CASES: dict[str, tuple[pa.Table, Clauses]] = {
    "update_missing_column": (
        pa.table({"id": [1, 3], "country": ["US", "FR"], "x": [11, 31]}),
        lambda m: m.when_matched_update_all(),
    ),
    "upsert_missing_column": (
        pa.table({"id": [1, 5], "country": ["FR", "DE"], "x": [11, 50]}),
        lambda m: m.when_matched_update_all().when_not_matched_insert_all(),
    ),
    "conditional_update_missing_columns": (
        pa.table({"id": [1, 2, 6], "x": [1, 99, 60]}),
        lambda m: m.when_matched_update_all("source.x > target.x").when_not_matched_insert_all(),
    ),
    "insert_only_duplicate_keys": (
        pa.table({"id": [7, 7, 1, 1], "country": ["US", "FR", "US", "US"], "x": [1, 2, 3, 4]}),
        lambda m: m.when_not_matched_insert_all(),
    ),
    "upsert_duplicate_new_keys": (
        pa.table({"id": [8, 8, 2], "country": ["US", "FR", "DE"], "x": [1, 2, 3]}),
        lambda m: m.when_matched_update_all().when_not_matched_insert_all(),
    ),
    "duplicates_of_which_one_updates": (
        pa.table({"id": [2, 2], "country": ["US", "FR"], "x": [1, 200]}),
        lambda m: m.when_matched_update_all("source.x > target.x"),
    ),
    "insert_and_delete_by_source_duplicate_keys": (
        pa.table({"id": [9, 9, 3], "country": ["US", "FR", "US"], "x": [1, 2, 3]}),
        lambda m: m.when_not_matched_insert_all().when_not_matched_by_source_delete(),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_merge_matches_pylance_merge_insert(tmp_path: Path, case: str) -> None:
    source, clauses = CASES[case]
    plain = lance.write_dataset(TARGET, str(tmp_path / "plain"))
    clauses(plain.merge_insert("id")).execute(source)
    ns = _namespace(tmp_path / "ns")
    clauses(ns.merge(source, on="id")).execute()
    assert _sorted(ns.to_table()) == _sorted(lance.dataset(str(tmp_path / "plain")).to_table())


# ------------------------------------------------------------------ duplicate source keys
def test_source_rows_that_update_one_target_row_are_a_duplicate_key_error(
    tmp_path: Path,
) -> None:
    """Several source rows updating one target row: an error; several matching it of
    which one satisfies the update's condition: that one updates it."""
    ns = _namespace(tmp_path / "ns")
    version = ns.version
    source = pa.table(
        {"id": [2, 2, 7, 7], "country": ["US", "FR", "US", "US"], "x": [21, 22, 3, 4]}
    )
    merge = ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all()
    with pytest.raises(errors.DuplicateKeyError, match=r"\{'id': 2\}"):
        merge.execute()
    assert ns.refresh().version == version
    assert contents(ns) == expected(TARGET)
    result = (
        ns.merge(source, on="id")
        .when_matched_update_all("source.country = 'FR'")
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.rows_updated, result.rows_inserted) == (1, 2)
    assert ns.to_table("id = 2").to_pylist() == [{"id": 2, "country": "FR", "x": 22, "note": "two"}]


def test_an_insert_only_merge_inserts_every_row_of_a_new_key(tmp_path: Path) -> None:
    ns = _namespace(tmp_path / "ns")
    source = pa.table({"id": [7, 7, 1], "country": ["US", "FR", "DE"], "x": [1, 2, 3]})
    result = ns.merge(source, on="id").when_not_matched_insert_all().execute()
    assert result.rows_inserted == 2
    assert ns.to_table("id = 7", columns=["country"]).column("country").to_pylist() in (
        ["FR", "US"],
        ["US", "FR"],
    )
    assert ns.to_table("id = 1").to_pylist() == TARGET.slice(0, 1).to_pylist()


# ------------------------------------------------- the condition of delete-by-source
SPEC_SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us")), ("amount", pa.float64())])


def _evolved(root: Path) -> lp.PartitionedNamespace:
    """Leaves of ``amount``-free spec ``bucket(2, id)`` then of ``year(ts)``: ``ts_year`` is
    a field name of the second spec only, so leaves of the first need it computed."""
    ns = lp.PartitionedNamespace.create(str(root), schema=SPEC_SCHEMA, partition_by="bucket(2, id)")
    at = datetime.datetime

    def batch(first: int) -> pa.Table:
        years = [2023, 2024, 2025, None]
        return pa.table(
            {
                "id": range(first, first + 16),
                "ts": [None if years[i % 4] is None else at(years[i % 4], 3, 1) for i in range(16)],
                "amount": [float(i) for i in range(16)],
            },
            schema=SPEC_SCHEMA,
        )

    ns.write(batch(0))
    ns.update_partition_spec("year(ts)")
    ns.write(batch(100))
    return ns


@pytest.mark.parametrize(
    "condition", ["ts_year = 2024", "ts_year >= 2024 AND amount > 5", "ts_year IS NULL"]
)
def test_delete_by_source_accepts_what_delete_accepts(tmp_path: Path, condition: str) -> None:
    merged = _evolved(tmp_path / "merged")
    deleted = _evolved(tmp_path / "deleted")
    everything = merged.to_table()
    source = everything.filter(pc.is_in(everything.column("id"), pa.array([1, 5, 101])))
    result = merged.merge(source, on="id").when_not_matched_by_source_delete(condition).execute()
    # the same rows as a delete of the condition, among the rows the source does not hold
    want = deleted.delete(f"({condition}) AND id NOT IN (1, 5, 101)")
    assert want.rows_deleted > 0
    assert result.rows_deleted == want.rows_deleted
    assert contents(merged) == contents(deleted)
