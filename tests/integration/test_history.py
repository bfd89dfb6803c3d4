"""History, time travel and tags on real namespaces: every commit records its operation,
``versions()`` lists every ``__manifest`` version, ``open(version=...)`` takes a number, a tag
or a time, and tags survive later writes."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from tests.interop.foreign.builders import hand_written_without_read_version, rows_table

UTC = dt.timezone.utc
SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("country", pa.string()), ("n", pa.int32())]
)


def rows(ids: range, countries: tuple[str, ...] = ("US", "FR")) -> pa.Table:
    return pa.table(
        {
            "id": list(ids),
            "country": [countries[i % len(countries)] for i in ids],
            "n": pa.array([i % 7 for i in ids], pa.int32()),
        },
        schema=SCHEMA,
    )


def ids(ns: lp.PartitionedNamespace) -> list[int]:
    return sorted(ns.to_table(columns=["id"]).column("id").to_pylist())


@pytest.fixture
def ns(tmp_path: os.PathLike[str]) -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")


def history(ns: lp.PartitionedNamespace, after: int = 0) -> list[dict[str, Any]]:
    return [row for row in ns.versions().to_pylist() if row["version"] > after]


# ------------------------------------------------------------------------- operations


def test_versions_lists_every_manifest_version_with_its_operation(
    ns: lp.PartitionedNamespace,
) -> None:
    ns.write(rows(range(10)))  # US and FR
    ns.write(rows(range(10, 14), ("US",)), mode="overwrite_partitions")
    ns.write(rows(range(20, 23), ("DE",)), mode="overwrite")
    table = ns.versions()
    assert table.schema.field("version").type == pa.int64()
    assert table.schema.field("timestamp").type == pa.timestamp("us", "UTC")
    assert table.schema.field("properties").type == pa.map_(pa.string(), pa.string())
    found = table.to_pylist()
    manifest = lance.dataset(f"{ns.uri}/__manifest")
    assert [r["version"] for r in found] == [v["version"] for v in manifest.versions()]
    assert found[-1]["version"] == ns.version
    assert {r["operation"] for r in found[:-3]} == {"create"}
    stamps = [r["timestamp"] for r in found]
    assert stamps == sorted(stamps)
    assert all(s.tzinfo is not None for s in stamps)
    append, partial, overwrite = found[-3:]
    assert (append["operation"], append["mode"]) == ("write", "append")
    assert (append["rows_added"], append["rows_removed"], append["partitions_touched"]) == (
        10,
        0,
        2,
    )
    assert (partial["operation"], partial["mode"]) == ("write", "overwrite_partitions")
    assert (partial["rows_added"], partial["partitions_touched"]) == (4, 1)
    assert partial["rows_removed"] == 5  # the 5 US rows it replaced
    assert (overwrite["operation"], overwrite["mode"]) == ("write", "overwrite")
    assert (overwrite["rows_added"], overwrite["partitions_touched"]) == (3, 3)  # DE, US, FR
    assert overwrite["rows_removed"] == 9  # every row: 4 US and 5 FR
    properties = dict(overwrite["properties"])
    assert properties["lance_partitioned.operation"] == "write"
    assert properties["lance_partitioned.client"].startswith("lance-partitioned ")


@pytest.mark.parametrize(
    ("kind", "change"),
    [
        ("update_partition_spec", lambda ns: ns.update_partition_spec("country, n")),
        ("add_columns", lambda ns: ns.add_columns([pa.field("note", pa.string())])),
        ("drop_columns", lambda ns: ns.drop_columns(["n"])),
        ("rename_column", lambda ns: ns.rename_column("n", "m")),
        ("alter_column_type", lambda ns: ns.alter_column_type("n", pa.int64())),
    ],
)
def test_every_evolution_records_its_operation(
    ns: lp.PartitionedNamespace, kind: str, change: Any
) -> None:
    ns.write(rows(range(6)))
    before = ns.version
    change(ns)
    new = history(ns, after=before)
    assert new, "the evolution committed nothing"
    assert [(r["operation"], r["mode"]) for r in new] == [("evolve", kind)] * len(new)
    assert dict(new[-1]["properties"])["lance_partitioned.step"] == "publish"


def test_the_creation_commits_are_recorded(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    found = history(ns)
    assert [r["operation"] for r in found] == ["create"] * len(found)
    assert len(found) == ns.version


def test_versions_of_a_namespace_written_by_another_client(tmp_path: Path) -> None:
    """pylance + pyarrow only: no transaction properties; still listed, with nulls."""
    root = str(tmp_path)
    hand_written_without_read_version(root)
    ns = lp.PartitionedNamespace.open(root)
    foreign = history(ns)
    assert [r["version"] for r in foreign] == [1, 2]
    for row in foreign:
        assert row["timestamp"] is not None
        assert (row["operation"], row["mode"], row["rows_added"]) == (None, None, None)
        assert not any(k.startswith("lance_partitioned.") for k, _ in row["properties"] or [])
    before = ns.version
    ns.write(rows_table([(20, dt.date(2026, 1, 1), "US")]))
    ours = history(ns, after=before)
    # the read_version column added to the foreign manifest is a commit of this write too
    assert [r["operation"] for r in ours] == ["write"] * len(ours)
    assert len(ours) == 2
    assert ours[-1]["rows_added"] == 1


def test_an_overwrite_counts_the_rows_of_another_clients_leaves(tmp_path: Path) -> None:
    """Leaves whose row count the ``__manifest`` does not record (a foreign manifest without
    ``read_version``) are counted from the leaves themselves."""
    root = str(tmp_path)
    foreign = hand_written_without_read_version(root)
    ns = lp.PartitionedNamespace.open(root)
    leaves = set(ns.partitions().column("object_id").to_pylist())
    before = ns.version
    ns.write(rows_table([(20, dt.date(2026, 1, 1), "US")]), mode="overwrite")
    last = history(ns, after=before)[-1]
    assert (last["rows_added"], last["rows_removed"]) == (1, foreign.expected.num_rows)
    assert last["rows_updated"] == 0
    leaves |= set(ns.partitions().column("object_id").to_pylist())  # the one written
    assert last["partitions_touched"] == len(leaves)


def test_versions_lists_tags_next_to_their_versions(ns: lp.PartitionedNamespace) -> None:
    for i in range(40):  # metadata-only commits: many __manifest versions cheaply
        if i % 10 == 0:
            ns.tags.create(f"t{i}")
        ns.add_columns([pa.field(f"c{i}", pa.int32())])
    found = history(ns)
    assert [r["version"] for r in found] == list(range(1, ns.version + 1))
    tagged = {r["version"]: r["tags"] for r in found if r["tags"]}
    assert tagged == {ns.tags.list()[f"t{i}"].version: [f"t{i}"] for i in range(0, 40, 10)}
    assert all(r["tags"] == [] for r in found if r["version"] not in tagged)


# ------------------------------------------------------------------------- time travel


def test_time_travel_by_number_tag_and_time(ns: lp.PartitionedNamespace) -> None:
    first = ns.write(rows(range(5))).version
    ns.tags.create("first")
    second = ns.write(rows(range(5, 9))).version
    stamps = {r["version"]: r["timestamp"] for r in history(ns)}
    assert stamps[second] > stamps[first]

    by_number = lp.PartitionedNamespace.open(ns.uri, version=first)
    by_tag = lp.PartitionedNamespace.open(ns.uri, version="first")
    at_commit = lp.PartitionedNamespace.open(ns.uri, version=stamps[first])
    just_before_second = stamps[second] - dt.timedelta(microseconds=1)
    between = lp.PartitionedNamespace.open(ns.uri, version=just_before_second)
    naive = lp.PartitionedNamespace.open(
        ns.uri, version=just_before_second.astimezone(UTC).replace(tzinfo=None)
    )
    for old in (by_number, by_tag, at_commit, between, naive):
        assert old.version == first
        assert ids(old) == list(range(5))
    later = lp.PartitionedNamespace.open(ns.uri, version=dt.datetime(2999, 1, 1, tzinfo=UTC))
    assert later.version == second
    assert ids(later) == list(range(9))
    other_zone = stamps[second].astimezone(dt.timezone(dt.timedelta(hours=-7)))
    assert lp.PartitionedNamespace.open(ns.uri, version=other_zone).version == second


def test_a_time_before_the_first_version_is_a_typed_error(ns: lp.PartitionedNamespace) -> None:
    first = history(ns)[0]["timestamp"]
    with pytest.raises(errors.TableVersionNotFoundError) as caught:
        lp.PartitionedNamespace.open(ns.uri, version=first - dt.timedelta(seconds=1))
    assert first.isoformat() in str(caught.value)
    assert "version 1" in str(caught.value)


def test_a_string_that_is_not_a_tag_says_so(ns: lp.PartitionedNamespace) -> None:
    ns.write(rows(range(3)))
    with pytest.raises(errors.TagNotFoundError, match=r"'3' is not a tag.*version=3"):
        lp.PartitionedNamespace.open(ns.uri, version="3")
    with pytest.raises(errors.TagNotFoundError, match=r"'nope' is not a tag"):
        lp.PartitionedNamespace.open(ns.uri, version="nope")
    # still a TableVersionNotFoundError for code that caught the old error
    with pytest.raises(errors.TableVersionNotFoundError):
        lp.PartitionedNamespace.open(ns.uri, version="nope")


@pytest.mark.parametrize("version", [-1, 0, 2**63, 2**64, 10**30])
def test_an_impossible_version_number_is_a_typed_error(
    ns: lp.PartitionedNamespace, version: int
) -> None:
    with pytest.raises(errors.TableVersionNotFoundError, match=str(version)):
        lp.PartitionedNamespace.open(ns.uri, version=version)


@pytest.mark.parametrize("version", [1.5, True, b"1", dt.date(2025, 1, 1)])
def test_a_version_of_another_type_is_a_typed_error(
    ns: lp.PartitionedNamespace, version: Any
) -> None:
    with pytest.raises(errors.InvalidInputError, match="version"):
        lp.PartitionedNamespace.open(ns.uri, version=version)


# ------------------------------------------------------------------------- tags


def test_tags_create_list_delete(ns: lp.PartitionedNamespace) -> None:
    ns.write(rows(range(4)))
    pinned = ns.version
    before = dt.datetime.now(UTC)
    tag = ns.tags.create("release-1.0")
    assert (tag.name, tag.version) == ("release-1.0", pinned)
    ns.tags.create("start", version=1)
    listed = ns.tags.list()
    assert list(listed) == ["release-1.0", "start"]
    assert listed["release-1.0"].version == pinned
    assert listed["start"].version == 1
    created = listed["release-1.0"].created_at
    assert created is not None
    assert created.tzinfo is not None
    assert before - dt.timedelta(seconds=5) <= created <= dt.datetime.now(UTC)
    ns.tags.delete("start")
    assert list(ns.tags.list()) == ["release-1.0"]


def test_a_tag_survives_later_writes(ns: lp.PartitionedNamespace) -> None:
    ns.write(rows(range(4)))
    ns.tags.create("snapshot")
    tagged = ns.version
    for n in range(3):
        ns.write(rows(range(100 + 10 * n, 105 + 10 * n)), mode="overwrite_partitions")
    ns.add_columns([pa.field("extra", pa.string())])
    assert ns.tags.list()["snapshot"].version == tagged
    old = lp.PartitionedNamespace.open(ns.uri, version="snapshot")
    assert old.version == tagged
    assert ids(old) == [0, 1, 2, 3]
    assert "extra" not in old.schema.names


def test_a_tag_names_the_version_of_a_time_travelled_namespace(
    ns: lp.PartitionedNamespace,
) -> None:
    first = ns.write(rows(range(2))).version
    ns.write(rows(range(2, 4)))
    old = lp.PartitionedNamespace.open(ns.uri, version=first)
    assert old.tags.create("old").version == first
    assert ns.tags.create("by-time", version=history(ns)[first - 1]["timestamp"]).version == first
    assert ns.tags.create("by-tag", version="old").version == first


def test_tag_errors_are_typed(ns: lp.PartitionedNamespace) -> None:
    ns.tags.create("a")
    with pytest.raises(errors.TagAlreadyExistsError, match="'a'"):
        ns.tags.create("a")
    with pytest.raises(errors.TagNotFoundError, match="'b'"):
        ns.tags.delete("b")
    with pytest.raises(errors.TableVersionNotFoundError, match="99"):
        ns.tags.create("b", version=99)
    assert list(ns.tags.list()) == ["a"]


@pytest.mark.parametrize(
    "name", ["", "a b", "a/b", ".hidden", "x..y", "x.lock", "é", "123", "a" * 300, "a\nb"]
)
def test_a_bad_tag_name_is_refused_before_anything_is_written(
    ns: lp.PartitionedNamespace, name: str
) -> None:
    with pytest.raises(errors.InvalidInputError, match="tag name"):
        ns.tags.create(name)
    assert ns.tags.list() == {}
    assert not (Path(ns.uri) / "__manifest" / "_refs" / "tags").exists() or not any(
        (Path(ns.uri) / "__manifest" / "_refs" / "tags").iterdir()
    )
