"""The counts every commit records in its history row (``ns.versions()``): rows added,
removed and updated, and the leaves it wrote, changed or dropped, exact for every operation;
and how many ``__manifest`` versions each evolution makes.

``rows_added`` and ``rows_removed`` are net of updates: an updated row (one that moved to
another partition included) counts in ``rows_updated`` only, so that every version's row count
is the previous one's plus ``rows_added`` minus ``rows_removed``.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import transaction

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("country", pa.string()), ("n", pa.int32())]
)


def rows(ids: range | list[int], countries: tuple[str, ...] = ("US", "FR")) -> pa.Table:
    """Rows ``ids``; country by ``id % len(countries)`` (US even, FR odd by default)."""
    listed = list(ids)
    return pa.table(
        {
            "id": listed,
            "country": [countries[i % len(countries)] for i in listed],
            "n": pa.array([i % 7 for i in listed], pa.int32()),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def ns(tmp_path: os.PathLike[str]) -> lp.PartitionedNamespace:
    """Ten rows: ids 0-9, US even ids, FR odd ids (two leaves of five rows)."""
    made = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    made.write(rows(range(10)))
    return made


def history(ns: lp.PartitionedNamespace, after: int) -> list[dict[str, Any]]:
    return [row for row in ns.versions().to_pylist() if row["version"] > after]


def counts(row: dict[str, Any]) -> tuple[int, int, int, int]:
    """(rows added, rows removed, rows updated, partitions touched) of a history row."""
    return (
        row["rows_added"],
        row["rows_removed"],
        row["rows_updated"],
        row["partitions_touched"],
    )


def committed(ns: lp.PartitionedNamespace, action: Any) -> dict[str, Any]:
    """Run ``action`` and return the one history row it added, checking that the row counts
    add up: the namespace's rows after = before + added - removed."""
    before_version, before_rows = ns.version, ns.count_rows()
    action()
    ns.refresh()
    new = history(ns, after=before_version)
    assert len(new) == 1, new
    row = new[0]
    assert ns.count_rows() == before_rows + row["rows_added"] - row["rows_removed"]
    return row


# ------------------------------------------------------------------------- writes


def test_an_append_records_its_rows_and_leaves(tmp_path: os.PathLike[str]) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    row = committed(ns, lambda: ns.write(rows(range(7), ("US", "FR", "DE"))))
    assert (row["operation"], row["mode"]) == ("write", "append")
    assert counts(row) == (7, 0, 0, 3)


def test_an_overwrite_counts_the_leaves_it_drops(ns: lp.PartitionedNamespace) -> None:
    row = committed(ns, lambda: ns.write(rows(range(20, 23), ("DE",)), mode="overwrite"))
    assert (row["operation"], row["mode"]) == ("write", "overwrite")
    assert counts(row) == (3, 10, 0, 3)  # DE written, US and FR dropped


def test_an_overwrite_of_a_partition_it_also_writes(ns: lp.PartitionedNamespace) -> None:
    row = committed(ns, lambda: ns.write(rows(range(20, 22), ("US",)), mode="overwrite"))
    assert counts(row) == (2, 10, 0, 2)  # US replaced, FR dropped


def test_overwrite_partitions_records_the_rows_it_replaces(ns: lp.PartitionedNamespace) -> None:
    row = committed(ns, lambda: ns.write(rows(range(10, 14), ("US",)), mode="overwrite_partitions"))
    assert (row["operation"], row["mode"]) == ("write", "overwrite_partitions")
    assert counts(row) == (4, 5, 0, 1)


def test_overwrite_partitions_under_a_new_spec_counts_the_old_spec_rows(
    tmp_path: os.PathLike[str],
) -> None:
    """Spec v2 names the country partition ``c2``: its leaf replaces the ten rows of the v1
    leaf, which is dropped (the adversarial case recorded ``+1 -0``)."""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    ns.write(rows(range(10), ("US",)))
    ns.update_partition_spec("country AS c2")
    row = committed(ns, lambda: ns.write(rows([100], ("US",)), mode="overwrite_partitions"))
    assert counts(row) == (1, 10, 0, 2)  # the v2 leaf written, the v1 leaf dropped
    assert ns.count_rows() == 1


def test_overwrite_partitions_under_a_new_spec_deleting_some_old_rows(
    ns: lp.PartitionedNamespace,
) -> None:
    """Spec v2 is ``country, n``: its (US, n = 0) partition replaces the rows of the v1 US
    leaf with n = 0 (ids 0 and 14) by a row-level delete there."""
    ns.write(rows([14]))  # US, n = 0
    ns.update_partition_spec("country, n")
    row = committed(ns, lambda: ns.write(rows([28, 42]), mode="overwrite_partitions"))
    assert counts(row) == (2, 2, 0, 2)  # one v2 leaf written, the v1 US leaf changed
    assert sorted(ns.to_table(filter="n = 0 AND country = 'US'").column("id").to_pylist()) == [
        28,
        42,
    ]


@pytest.mark.parametrize(
    ("where", "data", "expected"),
    [
        # the US leaf is also written: a Lance delete of its five rows, then the append
        ("country = 'US'", rows([20, 22], ("US",)), (2, 5, 0, 1)),
        # US is written, FR is dropped: ten rows replaced by two
        ("country = 'US' OR country = 'FR'", rows([20, 22], ("US",)), (2, 10, 0, 2)),
        # row-level deletes in both leaves (ids 0-3), and both written
        ("id < 4", rows([0, 1]), (2, 4, 0, 2)),
    ],
)
def test_replace_where_records_the_rows_it_deletes(
    ns: lp.PartitionedNamespace, where: str, data: pa.Table, expected: tuple[int, ...]
) -> None:
    row = committed(ns, lambda: ns.write(data, mode="overwrite", where=where))
    assert (row["operation"], row["mode"]) == ("write", "replace_where")
    assert counts(row) == expected


# ------------------------------------------------------------------------- row-level changes


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("id < 3", (0, 3, 0, 2)),  # row-level deletes in US (0, 2) and FR (1)
        ("country = 'FR'", (0, 5, 0, 1)),  # the whole FR leaf dropped
        ("country = 'FR' OR id = 0", (0, 6, 0, 2)),  # FR dropped, one US row deleted
    ],
)
def test_delete_records_the_rows_it_removes(
    ns: lp.PartitionedNamespace, where: str, expected: tuple[int, ...]
) -> None:
    result: list[Any] = []
    row = committed(ns, lambda: result.append(ns.delete(where)))
    assert row["operation"] == "delete"
    assert counts(row) == expected
    assert row["rows_removed"] == result[0].rows_deleted


def test_update_records_the_rows_it_updates(ns: lp.PartitionedNamespace) -> None:
    result: list[Any] = []
    row = committed(ns, lambda: result.append(ns.update("id < 4", {"n": "n + 1"})))
    assert row["operation"] == "update"
    assert counts(row) == (0, 0, 4, 2)
    assert row["rows_updated"] == result[0].rows_updated


def test_an_update_that_moves_rows_counts_both_leaves(ns: lp.PartitionedNamespace) -> None:
    """ids 0 and 2 (US) move to DE, id 1 (FR) stays: US and FR changed, DE and FR written."""
    row = committed(
        ns, lambda: ns.update("id < 3", {"country": "CASE WHEN id = 1 THEN 'FR' ELSE 'DE' END"})
    )
    assert counts(row) == (0, 0, 3, 3)
    assert ns.count_rows("country = 'DE'") == 2


def test_merge_records_inserted_updated_and_deleted_rows(ns: lp.PartitionedNamespace) -> None:
    """id 0 updated in place (US), id 1 updated and moved to DE, id 100 inserted (DE), ids 8
    and 9 deleted by the source: US and FR changed, DE created, US written."""
    source = pa.table(
        {"id": [0, 1, 100], "country": ["US", "DE", "DE"], "n": pa.array([5, 5, 5], pa.int32())},
        schema=SCHEMA,
    )
    result: list[Any] = []
    row = committed(
        ns,
        lambda: result.append(
            ns.merge(source, on="id")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete("id >= 8")
            .execute()
        ),
    )
    assert row["operation"] == "merge"
    assert counts(row) == (1, 2, 2, 3)
    done = result[0]
    assert (done.rows_inserted, done.rows_deleted, done.rows_updated) == (1, 2, 2)


def test_the_counts_are_those_of_the_attempt_that_committed(
    ns: lp.PartitionedNamespace,
) -> None:
    """A concurrent delete changes a leaf in place between this delete's leaf commits and its
    ``__manifest`` commit: the delete is planned again on the new snapshot, where one row it
    matched is gone, and records the rows of that attempt."""
    other = lp.PartitionedNamespace.open(ns.uri)

    def concurrent() -> None:
        other.delete("id = 3")  # FR; matched by the delete's "id < 5" too

    with transaction.pause_at("leaves_committed", concurrent):
        result = ns.delete("id < 5")
    assert result.attempts == 2
    last = history(ns.refresh(), after=0)[-1]
    assert last["operation"] == "delete"
    assert counts(last) == (0, 4, 0, 2)
    assert result.rows_deleted == 4
    assert ns.count_rows() == 5


def test_a_delete_rebased_over_an_append_counts_its_own_rows(
    ns: lp.PartitionedNamespace,
) -> None:
    """A concurrent append to a leaf this delete changes: the delete is rebased over it
    (WriteSerializable), the appended row stays although it matches, and the counts are the
    delete's own."""
    other = lp.PartitionedNamespace.open(ns.uri)

    def concurrent() -> None:
        other.write(rows([4]))  # US; matches the delete's "id < 5", appended meanwhile

    with transaction.pause_at("leaves_committed", concurrent):
        result = ns.delete("id < 5")
    assert result.attempts == 2
    last = history(ns.refresh(), after=0)[-1]
    assert counts(last) == (0, 5, 0, 2)
    assert result.rows_deleted == 5
    assert ns.count_rows() == 6


def test_an_update_retried_counts_the_rows_of_its_last_attempt(
    ns: lp.PartitionedNamespace,
) -> None:
    other = lp.PartitionedNamespace.open(ns.uri)

    def concurrent() -> None:
        other.update("id = 1", {"n": "7"})  # FR, in place: the update plans again

    with transaction.pause_at("leaves_committed", concurrent):
        result = ns.update("id > 8 OR id = 1", {"n": "0"})
    assert result.attempts == 2
    last = history(ns.refresh(), after=0)[-1]
    assert counts(last) == (0, 0, 2, 1)  # ids 1 and 9, both in FR
    assert ns.to_table(filter="id = 1").column("n").to_pylist() == [0]


# ------------------------------------------------------------------------- evolution

EVOLUTIONS = [
    ("add_columns", lambda ns: ns.add_columns([pa.field("note", pa.string())])),
    ("drop_columns", lambda ns: ns.drop_columns(["n"])),
    ("alter_column_type", lambda ns: ns.alter_column_type("n", pa.int64())),
]


@pytest.mark.parametrize(("kind", "change"), EVOLUTIONS)
def test_a_schema_change_is_one_version(
    ns: lp.PartitionedNamespace, kind: str, change: Any
) -> None:
    row = committed(ns, lambda: change(ns))
    assert (row["operation"], row["mode"]) == ("evolve", kind)
    assert counts(row) == (0, 0, 0, 0)


def test_a_partition_spec_update_is_two_versions(ns: lp.PartitionedNamespace) -> None:
    """pylance 14 cannot change the ``__manifest``'s rows or columns and its table metadata
    in one commit: the column of the new field and the ``v2`` row are one commit
    (``prepare``), the spec another (``publish``)."""
    before = ns.version
    ns.update_partition_spec("country, n")
    new = history(ns.refresh(), after=before)
    assert [dict(r["properties"])["lance_partitioned.step"] for r in new] == [
        "prepare",
        "publish",
    ]
    assert all((r["operation"], r["mode"]) == ("evolve", "update_partition_spec") for r in new)
    assert [counts(r) for r in new] == [(0, 0, 0, 0)] * 2
    assert ns.partitions().num_rows == 2
    ns.write(rows([20]))  # a write under v2 works: (US, n = 6)
    assert ns.partitions().num_rows == 3
    assert sorted(ns.to_table(filter="n = 6").column("id").to_pylist()) == [6, 20]


def test_a_partition_spec_update_without_a_new_column_is_two_versions(
    tmp_path: os.PathLike[str],
) -> None:
    """Spec v2 ``country`` after v1 ``country, n``: no new ``__manifest`` column, the ``v2``
    row (``prepare``) and the spec (``publish``)."""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country, n")
    before = ns.version
    ns.update_partition_spec("country")
    new = history(ns.refresh(), after=before)
    assert [(dict(r["properties"])["lance_partitioned.step"], counts(r)) for r in new] == [
        ("prepare", (0, 0, 0, 0)),
        ("publish", (0, 0, 0, 0)),
    ]


def test_a_rename_is_two_versions_when_there_are_leaves(ns: lp.PartitionedNamespace) -> None:
    """The leaves are renamed and their ``read_version``s moved in one commit, the schema
    published in another (rows and table metadata: two Lance operations)."""
    before = ns.version
    ns.rename_column("n", "m")
    new = history(ns.refresh(), after=before)
    assert [dict(r["properties"])["lance_partitioned.step"] for r in new] == [
        "rename_leaves",
        "publish",
    ]
    assert [counts(r) for r in new] == [(0, 0, 0, 2), (0, 0, 0, 0)]


def test_a_rename_without_leaves_is_one_version(tmp_path: os.PathLike[str]) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    row = committed(ns, lambda: ns.rename_column("n", "m"))
    assert counts(row) == (0, 0, 0, 0)
