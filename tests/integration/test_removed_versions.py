"""A reader whose ``__manifest`` version a cleanup removed: an outdated reader, not damage.

A namespace handle (and the pyarrow dataset, Polars scan or DuckDB query made from it) reads
the ``__manifest`` version it had. Another handle then changes the leaves and runs
``cleanup(older_than=0)``, which removes that version and the leaf versions only it pinned.
Reading through the old handle says so (``TableVersionNotFoundError``: refresh and read
again), while a leaf missing under a ``__manifest`` version still there stays a
``CorruptNamespaceError``.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import lance_namespace
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string()), ("v", pa.int64())])


def rows(ids: list[int], k: str) -> pa.Table:
    return pa.table({"id": ids, "k": [k] * len(ids), "v": [i * 10 for i in ids]}, schema=SCHEMA)


def namespace(root: Path) -> lp.PartitionedNamespace:
    """Leaves ``a`` (two fragments: ids 1, 2) and ``b`` (id 3)."""
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="k")
    ns.write(pa.concat_tables([rows([1], "a"), rows([3], "b")]))
    ns.write(rows([2], "a"))
    return ns


def _merge(ns: lp.PartitionedNamespace) -> None:
    source = rows([1, 4], "a")
    ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()


CHANGES: dict[str, Callable[[lp.PartitionedNamespace], Any]] = {
    "overwrite": lambda ns: ns.write(rows([7], "a"), mode="overwrite"),
    "delete": lambda ns: ns.delete("id = 1"),
    "update": lambda ns: ns.update("id = 2", {"v": "v + 1"}),
    "merge": _merge,
    "optimize": lambda ns: ns.optimize(),
    "overwrite_partitions": lambda ns: ns.write(rows([8], "a"), mode="overwrite_partitions"),
}


def _duckdb(ns: lp.PartitionedNamespace) -> Callable[[], Any]:
    con = duckdb.connect()
    con.register("t", ns.to_pyarrow_dataset())
    return lambda: con.sql("SELECT count(*) FROM t WHERE id > 0").fetchall()


# each made from the handle before the change, read after it
READERS: dict[str, Callable[[lp.PartitionedNamespace], Callable[[], Any]]] = {
    "to_table": lambda ns: ns.to_table,
    "count_rows": lambda ns: ns.count_rows,
    "pyarrow_dataset": lambda ns: ns.to_pyarrow_dataset().to_table,
    "polars": lambda ns: ns.scan_polars().collect,
}


def _changed_and_cleaned(
    tmp_path: Path, change: str, reader: Callable[[lp.PartitionedNamespace], Callable[[], Any]]
) -> tuple[lp.PartitionedNamespace, Callable[[], Any], int]:
    """The old handle, its read (made before), and the version the handle reads."""
    namespace(tmp_path)
    old = lp.PartitionedNamespace.open(str(tmp_path))
    read = reader(old)
    writer = lp.PartitionedNamespace.open(str(tmp_path))
    CHANGES[change](writer)
    assert old.version in writer.cleanup(dt.timedelta(0)).removed_manifest_versions
    return old, read, old.version


def _assert_removed_by_cleanup(message: str, version: int) -> None:
    assert f"__manifest version {version} of " in message
    assert "a cleanup removed" in message
    assert "refresh()" in message
    assert "not damaged" in message
    assert "restore the leaf directory" not in message


# every change x every reader
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("change", list(CHANGES))
def test_an_old_handle_after_a_cleanup_is_told_its_version_is_gone(
    tmp_path: Path, change: str, reader: str
) -> None:
    old, read, version = _changed_and_cleaned(tmp_path, change, READERS[reader])
    with pytest.raises(lance_namespace.TableVersionNotFoundError) as raised:
        read()
    assert isinstance(raised.value, errors.TableVersionNotFoundError)
    assert not isinstance(raised.value, errors.CorruptNamespaceError)
    _assert_removed_by_cleanup(str(raised.value), version)
    # as the message says: refresh (and make readers again), and the namespace reads
    expected = lp.PartitionedNamespace.open(str(tmp_path)).to_table().num_rows
    assert old.refresh().to_table().num_rows == expected
    assert READERS[reader](old)() is not None


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_duckdb_query_of_an_old_dataset_says_the_version_is_gone(
    tmp_path: Path, change: str
) -> None:
    """DuckDB wraps the error of a dataset it scans in its own exception: the message is ours."""
    _, query, version = _changed_and_cleaned(tmp_path, change, _duckdb)
    with pytest.raises(duckdb.Error) as raised:
        query()
    _assert_removed_by_cleanup(str(raised.value), version)


def test_a_time_travel_handle_after_a_cleanup_is_told_its_version_is_gone(
    tmp_path: Path,
) -> None:
    ns = namespace(tmp_path)
    pinned = lp.PartitionedNamespace.open(str(tmp_path), version=ns.version)
    ns.update("id = 1", {"v": "0"})
    ns.cleanup(dt.timedelta(0))
    with pytest.raises(errors.TableVersionNotFoundError) as raised:
        pinned.count_rows("v > 0")
    _assert_removed_by_cleanup(str(raised.value), pinned.version)
    with pytest.raises(errors.TableVersionNotFoundError):  # as opening it again says
        lp.PartitionedNamespace.open(str(tmp_path), version=pinned.version)


# ----------------------------------------------------------------------------- real damage


def _leaf(ns: lp.PartitionedNamespace, k: str) -> dict[str, Any]:
    return next(p for p in ns.partitions(sizes=False).to_pylist() if p["k"] == k)


def _remove_leaf_directory(ns: lp.PartitionedNamespace) -> None:
    shutil.rmtree(Path(ns.uri) / _leaf(ns, "a")["location"])


def _remove_pinned_version(ns: lp.PartitionedNamespace) -> None:
    """The leaf version ``ns`` pins removed by hand (Lance's V2 manifest paths: version v is
    the file named u64::MAX - v)."""
    leaf = _leaf(ns, "a")
    versions = Path(ns.uri) / leaf["location"] / "_versions"
    pinned = versions / f"{(1 << 64) - 1 - leaf['read_version']:020d}.manifest"
    pinned.unlink()
    (versions / "latest_version_hint.json").unlink(missing_ok=True)


DAMAGE = {
    "leaf-directory-removed": _remove_leaf_directory,
    "pinned-leaf-version-removed": _remove_pinned_version,
}


# every damage x reader x version kept
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("damage", list(DAMAGE))
@pytest.mark.parametrize("kept_by", ["latest", "tag"])
def test_a_leaf_missing_under_a_kept_version_is_damage(
    tmp_path: Path, kept_by: str, damage: str, reader: str
) -> None:
    """The handle's ``__manifest`` version is still there (the latest, or an older one a tag
    kept through a cleanup): a leaf it pins that cannot be opened is damage, not an outdated
    reader."""
    ns = namespace(tmp_path)
    old = lp.PartitionedNamespace.open(str(tmp_path))
    read = READERS[reader](old)
    if kept_by == "tag":
        ns.tags.create("kept", old.version)
        ns.update("id = 1", {"v": "0"})  # a newer version of leaf 'a'
        ns.cleanup(dt.timedelta(0))  # keeps the tagged version and what it pins
    DAMAGE[damage](old)
    with pytest.raises(errors.CorruptNamespaceError, match="The namespace is damaged") as raised:
        read()
    assert _leaf(old, "a")["object_id"] in str(raised.value)
    assert not isinstance(raised.value, lance_namespace.TableVersionNotFoundError)
