"""``partitions()`` carries each leaf's rows, bytes and fragments (``sizes.partition_sizes``),
checked against each leaf opened with pylance at its ``read_version`` and against the sizes
of its data files on disk."""

from __future__ import annotations

import os
import shutil
import warnings
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.sizes import SIZE_COLUMNS, UnreadableLeafWarning

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.string())])


def rows(ids: range, countries: list[str]) -> pa.Table:
    return pa.table(
        {"id": list(ids), "country": [countries[i % len(countries)] for i in ids]}, schema=SCHEMA
    )


def oracle(ns: lp.PartitionedNamespace, leaf: dict[str, Any]) -> dict[str, Any]:
    """The leaf's sizes from pylance and the file system, not from our code."""
    uri = os.path.join(ns.uri, leaf["location"])
    dataset = lance.dataset(uri, version=leaf["read_version"])
    fragments = dataset.get_fragments()
    return {
        "rows": dataset.count_rows(),
        "bytes": sum(
            os.path.getsize(os.path.join(uri, "data", f.path))
            for fragment in fragments
            for f in fragment.metadata.files
        ),
        "fragments": len(fragments),
        "small_fragments": sum(f.count_rows() < (1 << 20) for f in fragments),
    }


def assert_sizes_match(ns: lp.PartitionedNamespace) -> list[dict[str, Any]]:
    listing = ns.partitions()
    assert listing.column_names[-4:] == list(SIZE_COLUMNS)
    assert all(listing.schema.field(name).type == pa.int64() for name in SIZE_COLUMNS)
    leaves = listing.to_pylist()
    for leaf in leaves:
        assert {name: leaf[name] for name in SIZE_COLUMNS} == oracle(ns, leaf), leaf
    return leaves


@pytest.fixture
def ns(tmp_path: os.PathLike[str]) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    ns.write(rows(range(30), ["US", "FR", "DE"]))
    ns.write(rows(range(30, 40), ["US"]))  # a second fragment in US
    return ns


def test_partitions_carry_sizes_by_default(ns: lp.PartitionedNamespace) -> None:
    leaves = assert_sizes_match(ns)
    by_country = {leaf["country"]: leaf for leaf in leaves}
    assert {c: (leaf["rows"], leaf["fragments"]) for c, leaf in by_country.items()} == {
        "DE": (10, 1),
        "FR": (10, 1),
        "US": (20, 2),
    }
    assert all(leaf["bytes"] > 0 for leaf in leaves)
    assert ns.partitions("country = 'US'").column("rows").to_pylist() == [20]


def test_sizes_false_lists_the_manifest_alone(ns: lp.PartitionedNamespace) -> None:
    cheap = ns.partitions(sizes=False)
    assert not set(SIZE_COLUMNS) & set(cheap.column_names)
    assert cheap.equals(ns.partitions().drop_columns(list(SIZE_COLUMNS)))


def test_deleted_rows_are_not_counted(ns: lp.PartitionedNamespace) -> None:
    ns.delete("id < 25 AND country = 'US'")
    leaves = assert_sizes_match(ns)
    us = next(leaf for leaf in leaves if leaf["country"] == "US")
    assert us["rows"] == 20 - len([i for i in range(25) if i % 3 == 0])


def test_sizes_after_optimize(ns: lp.PartitionedNamespace) -> None:
    ns.optimize()
    leaves = assert_sizes_match(ns)
    assert {leaf["country"]: leaf["fragments"] for leaf in leaves}["US"] == 1
    assert sum(leaf["rows"] for leaf in leaves) == 40


def test_an_unreadable_leaf_gets_null_sizes_and_one_warning(
    ns: lp.PartitionedNamespace,
) -> None:
    """A deleted leaf directory: the listing still has every leaf, the broken one with NULL
    sizes, and one warning names it; ``sizes=False`` does not open leaves and does not warn."""
    listing = ns.partitions(sizes=False).to_pylist()
    gone = next(leaf for leaf in listing if leaf["country"] == "FR")
    shutil.rmtree(os.path.join(ns.uri, gone["location"]))
    with pytest.warns(UnreadableLeafWarning, match="1 of 3 leaves") as caught:
        leaves = ns.partitions().to_pylist()
    assert len(caught) == 1
    assert gone["object_id"] in str(caught[0].message)
    assert "verify" in str(caught[0].message)
    assert [leaf["object_id"] for leaf in leaves] == [leaf["object_id"] for leaf in listing]
    for leaf in leaves:
        sizes = {name: leaf[name] for name in SIZE_COLUMNS}
        if leaf["object_id"] == gone["object_id"]:
            assert set(sizes.values()) == {None}
        else:
            assert sizes == oracle(ns, leaf)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ns.partitions(sizes=False).num_rows == 3


def test_many_leaves_are_measured_in_order(tmp_path: os.PathLike[str]) -> None:
    """Enough leaves for the thread pool: every leaf gets its own sizes."""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    countries = [f"c{i:03d}" for i in range(150)]
    ns.write(rows(range(150 * 3), countries))
    ns.write(rows(range(150 * 3, 150 * 3 + 7), countries))  # c000..c006 get 4 rows
    leaves = ns.partitions().to_pylist()
    assert len(leaves) == 150
    assert {leaf["country"]: leaf["rows"] for leaf in leaves} == {
        c: 4 if i < 7 else 3 for i, c in enumerate(countries)
    }
    assert {leaf["country"]: leaf["fragments"] for leaf in leaves} == {
        c: 2 if i < 7 else 1 for i, c in enumerate(countries)
    }
