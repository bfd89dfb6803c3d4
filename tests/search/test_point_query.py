"""A point filter no partition prunes, answered by a BTREE on each leaf: leaves opened at a
fixed version are reused (their index metadata loaded once), and the per-leaf work runs on
long-lived threads."""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors

from .helpers import namespace


def test_a_leaf_version_is_opened_once_and_still_checked(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    ns.create_index("grp", "BTREE")
    ns = ns.refresh()
    first = {t.object_id: t.open() for t in ns.plan_scan("grp = 3")}
    again = {t.object_id: t.open() for t in ns.plan_scan("grp = 3")}
    assert all(again[key] is first[key] for key in first)
    assert ns.count_rows("grp = 3") == ns.to_table("grp = 3").num_rows == 9

    # a caller that commits through the dataset it was handed: the next open is a fresh one
    [task] = ns.plan_scan("tenant = 'b'")
    moved = task.open()
    moved.delete("id >= 0")
    reopened = task.open()
    assert reopened is not moved
    assert reopened.version == task.read_version
    assert reopened.count_rows() == 5

    # a cleanup removes the versions an old handle pins: it is told so, as without a cache
    old = lp.PartitionedNamespace.open(ns.uri, version=ns.version)
    assert old.count_rows("grp = 3") == 9
    ns.update("grp = 3", {"grp": "4"})
    ns.cleanup(dt.timedelta(0))
    with pytest.raises(errors.TableVersionNotFoundError):
        old.count_rows("grp = 3")


def test_counts_reuse_their_leaf_threads(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    assert ns.count_rows("grp = 3") == 9

    def leaf_threads() -> set[int | None]:
        return {t.ident for t in threading.enumerate() if t.name.startswith("lp-leaves")}

    started = leaf_threads()
    assert started
    assert ns.count_rows("grp = 2") == 9
    assert ns.to_table("grp = 2").num_rows == 9
    assert leaf_threads() == started


def test_a_namespace_written_again_at_the_same_path_is_read_as_it_is_now(tmp_path: Path) -> None:
    """The leaf cache is keyed by path and version; a namespace deleted and written again at
    the same path has the same leaf versions in other files (new data files), which a cached
    leaf would still point at."""
    import shutil

    root = tmp_path / "ns"
    first = pa.table({"k": ["a", "a"], "v": [1, 2]})
    ns = lp.PartitionedNamespace.create(str(root), schema=first.schema, partition_by="k")
    ns.write(first)
    assert sorted(ns.to_table().column("v").to_pylist()) == [1, 2]
    shutil.rmtree(root)
    second = pa.table({"k": ["a", "a", "a"], "v": [7, 8, 9]})
    again = lp.PartitionedNamespace.create(str(root), schema=second.schema, partition_by="k")
    again.write(second)
    assert sorted(again.to_table().column("v").to_pylist()) == [7, 8, 9]
    assert again.count_rows("v > 7") == 2
