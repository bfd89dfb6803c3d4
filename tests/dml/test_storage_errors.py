"""Storage failures in ``delete``, ``update`` and ``merge`` are typed errors of our hierarchy
that name the namespace, as they are for ``write``, and leave the namespace as it was.

The read-only file system is real: a tmpfs remounted read-only when we run as root (root
ignores directory permissions), otherwise a read-only directory tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import lance_namespace as ln
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from tests.integration.helpers import small_filesystem

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string())])

Operation = Callable[[lp.PartitionedNamespace], object]

OPERATIONS: dict[str, Operation] = {
    "delete by partition": lambda ns: ns.delete("k = 'a'"),
    "delete by row": lambda ns: ns.delete("id = 1"),
    "update": lambda ns: ns.update("id = 1", set={"id": "id + 100"}),
    "update moving rows": lambda ns: ns.update("id = 1", set={"k": "'c'"}),
    "merge": lambda ns: (
        ns.merge(pa.table({"id": [1, 9], "k": ["a", "c"]}, schema=SCHEMA), on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    ),
}


def _namespace(root: str) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k")
    ns.write(pa.table({"id": [1, 2, 3], "k": ["a", "a", "b"]}, schema=SCHEMA))
    return ns


def _files(root: str) -> dict[str, int]:
    out = {}
    for directory, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            out[os.path.relpath(path, root)] = os.path.getsize(path)
    return out


@contextmanager
def _read_only_namespace() -> Iterator[lp.PartitionedNamespace]:
    with small_filesystem("8m") as mount:
        root = str(mount / "ns") if mount is not None else tempfile.mkdtemp()
        ns = _namespace(root)
        if mount is not None:
            subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        else:
            for directory, _dirs, _names in os.walk(root):
                os.chmod(directory, 0o555)
        try:
            yield ns
        finally:
            if mount is not None:
                subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
            else:
                for directory, _dirs, _names in os.walk(root):
                    os.chmod(directory, 0o755)
                shutil.rmtree(root)


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_a_read_only_root_is_a_permission_error_naming_it(name: str) -> None:
    with _read_only_namespace() as ns:
        before, files = ns.version, _files(ns.uri)
        with pytest.raises(errors.PermissionDeniedError) as raised:
            OPERATIONS[name](ns)
        assert ns.uri in str(raised.value)
        assert isinstance(raised.value, ln.errors.PermissionDeniedError)
        assert lp.PartitionedNamespace.open(ns.uri).version == before
        assert _files(ns.uri) == files
        assert ns.count_rows() == 3  # reads still work


@pytest.mark.parametrize("name", ["delete by row", "update", "update moving rows", "merge"])
def test_a_missing_leaf_directory_is_a_corrupt_namespace(tmp_path: Path, name: str) -> None:
    ns = _namespace(str(tmp_path / "ns"))
    leaf = next(p for p in ns.partitions().to_pylist() if p["k"] == "a")
    shutil.rmtree(Path(ns.uri) / leaf["location"])
    before = ns.version
    with pytest.raises(errors.CorruptNamespaceError) as raised:
        OPERATIONS[name](ns)
    assert leaf["object_id"] in str(raised.value)
    assert leaf["location"] in str(raised.value)
    assert lp.PartitionedNamespace.open(ns.uri).version == before
    assert ns.count_rows("k = 'b'") == 1


def test_a_delete_decided_by_partition_values_needs_no_leaf_directory(tmp_path: Path) -> None:
    """Dropping a leaf is metadata only: its directory is never opened, even when gone."""
    ns = _namespace(str(tmp_path / "ns"))
    leaf = next(p for p in ns.partitions().to_pylist() if p["k"] == "a")
    shutil.rmtree(Path(ns.uri) / leaf["location"])
    result = ns.delete("k = 'a'")
    assert (result.leaves_dropped, result.rows_deleted) == (1, 2)
    assert ns.to_table().to_pylist() == [{"id": 3, "k": "b"}]
