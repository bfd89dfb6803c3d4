"""Strict when authoring, typed when storage fails (issue 15 items 5, 7, 9; issue 16 item 7).

Every failure is a typed error of our hierarchy that names the thing at fault, and leaves the
namespace as it was: the ``__manifest`` version does not move and nothing staged stays behind.
Full and read-only file systems are real: a tmpfs mounted for the test when we run as root
(remounted read-only), otherwise a write-size limit (``RLIMIT_FSIZE``) in a child process and a
read-only directory.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance.namespace import DirectoryNamespace

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.manifest import GUARD_KEY, Manifest
from tests.integration.helpers import Boom, small_filesystem

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string())])


def _files(root: str | os.PathLike[str]) -> dict[str, int]:
    """Every file under ``root`` with its size (what is on disk)."""
    out = {}
    for directory, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            out[os.path.relpath(path, root)] = os.path.getsize(path)
    return out


def _namespace(root: str) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k")
    ns.write(pa.table({"id": [1, 2], "k": ["a", "b"]}, schema=SCHEMA))
    return ns


# ------------------------------------------------------------------ issue 15 item 5


@pytest.mark.parametrize(
    ("partition_by", "why"),
    [
        ("expr('coalesce(col, 0)', n, 'int64') AS c", "maps NULL to 0"),
        ("expr('CAST(random() * 4 AS BIGINT)', n, 'int64') AS r", "random()"),
        ("expr('date_part(''year'', now())', n, 'int32') AS y", "now()"),
    ],
)
def test_create_and_update_refuse_what_breaks_the_expression_musts(
    tmp_path: Path, partition_by: str, why: str
) -> None:
    schema = pa.schema([("id", pa.int64()), ("n", pa.int64())])
    with pytest.raises(errors.PartitionExpressionError, match=re.escape(why)):
        lp.PartitionedNamespace.create(
            str(tmp_path / "a"), schema=schema, partition_by=partition_by
        )
    assert not (tmp_path / "a").exists()
    ns = lp.PartitionedNamespace.create(str(tmp_path / "b"), schema=schema, partition_by="n")
    before = ns.version
    with pytest.raises(errors.PartitionExpressionError):
        ns.update_partition_spec(partition_by)
    assert lp.PartitionedNamespace.open(ns.uri).version == before


# ------------------------------------------------------------------ issue 15 item 7


def test_create_interrupted_between_its_commits_is_finished_by_exist_ok(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(tmp_path)

    def crash(self: Manifest, version: int, metadata: Any) -> None:
        raise Boom("killed between the two commits of create")

    with monkeypatch.context() as patch:
        patch.setattr(Manifest, "_publish_first", crash)
        with pytest.raises(Boom):
            lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k")
    with pytest.raises(errors.NotAPartitionedNamespaceError, match="exist_ok=True"):
        lp.PartitionedNamespace.open(root)
    with pytest.raises(errors.NamespaceAlreadyExistsError, match="exist_ok=True"):
        lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k")
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k", exist_ok=True)
    assert lance.dataset(f"{root}/__manifest").metadata[GUARD_KEY]
    ns.write(pa.table({"id": [1], "k": ["a"]}, schema=SCHEMA))
    assert lp.PartitionedNamespace.open(root).to_table().to_pylist() == [{"id": 1, "k": "a"}]
    with pytest.raises(ln.errors.LanceNamespaceError):  # the guard stops pylance's writes
        DirectoryNamespace(root=root).create_namespace(ln.CreateNamespaceRequest(id=["x"]))
    # created once: a second create(exist_ok=True) returns it as it is
    again = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k", exist_ok=True)
    assert again.version == lp.PartitionedNamespace.open(root).version


def test_a_directory_namespace_with_content_is_not_an_unfinished_create(tmp_path: Path) -> None:
    root = str(tmp_path)
    DirectoryNamespace(root=root).create_namespace(ln.CreateNamespaceRequest(id=["team"]))
    with pytest.raises(errors.NamespaceAlreadyExistsError, match="content"):
        lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k", exist_ok=True)


# ------------------------------------------------------------------ issue 15 item 9


def test_writing_past_a_promoted_identity_partition_type_is_a_cast_error(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("k", pa.int32())])
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=schema, partition_by="k")
    ns.write(pa.table({"id": [1], "k": pa.array([1], pa.int32())}))
    ns.alter_column_type("k", pa.int64())
    before, files = ns.version, _files(tmp_path)
    with pytest.raises(errors.CastError, match=r"partition field 'k' .* int32"):
        ns.write(pa.table({"id": [2], "k": pa.array([2**40], pa.int64())}))
    assert lp.PartitionedNamespace.open(ns.uri).version == before
    assert _files(tmp_path) == files
    ns.update_partition_spec("k AS k_wide")  # the way out the message names
    ns.write(pa.table({"id": [2], "k": pa.array([2**40], pa.int64())}))
    assert sorted(ns.to_table().column("k").to_pylist()) == [1, 2**40]


@pytest.mark.parametrize("name", ["dot.ted", "we`ird"])
def test_column_names_lance_cannot_store_or_select_are_refused(tmp_path: Path, name: str) -> None:
    schema = pa.schema([("id", pa.int64()), (name, pa.int64())])
    with pytest.raises(errors.SchemaError, match=repr(name)):
        lp.PartitionedNamespace.create(str(tmp_path / "a"), schema=schema, partition_by="id")
    ns = lp.PartitionedNamespace.create(str(tmp_path / "b"), schema=SCHEMA, partition_by="k")
    with pytest.raises(errors.SchemaError, match=repr(name)):
        ns.add_columns([pa.field(name, pa.int64())])
    with pytest.raises(errors.SchemaError, match=repr(name)):
        ns.rename_column("id", name)
    assert lp.PartitionedNamespace.open(ns.uri).schema.names == ["id", "k"]


def test_an_unknown_time_zone_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """Before: create accepted ``Mars/Olympus`` and every write then failed evaluating the
    partition expression."""
    zoned = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", "Mars/Olympus"))])
    with pytest.raises(errors.SchemaError, match="'Mars/Olympus'"):
        lp.PartitionedNamespace.create(str(tmp_path / "a"), schema=zoned, partition_by="year(ts)")
    assert not (tmp_path / "a" / "__manifest").exists()
    ns = lp.PartitionedNamespace.create(str(tmp_path / "b"), schema=SCHEMA, partition_by="k")
    with pytest.raises(errors.SchemaError, match="'utc'"):
        ns.add_columns([pa.field("ts", pa.timestamp("us", "utc"))])
    ns.add_columns([pa.field("ts", pa.timestamp("us", "+05:30"))])
    assert lp.PartitionedNamespace.open(ns.uri).schema.names == ["id", "k", "ts"]


# ------------------------------------------------------------------ issue 16 item 7


def test_record_batches_of_different_schemas_are_a_schema_mismatch(tmp_path: Path) -> None:
    ns = _namespace(str(tmp_path))
    before, files = ns.version, _files(tmp_path)
    batches = [
        pa.record_batch({"id": [3], "k": ["c"]}),
        pa.record_batch({"id": pa.array([4], pa.int32()), "k": ["d"]}),
    ]
    with pytest.raises(errors.SchemaMismatchError, match="share one schema"):
        ns.write(batches)
    assert lp.PartitionedNamespace.open(ns.uri).version == before
    assert _files(tmp_path) == files


def _leaf(ns: lp.PartitionedNamespace, k: str) -> dict[str, Any]:
    return next(p for p in ns.partitions().to_pylist() if p["k"] == k)


def test_a_missing_leaf_directory_is_a_corrupt_namespace(tmp_path: Path) -> None:
    ns = _namespace(str(tmp_path))
    leaf = _leaf(ns, "a")
    shutil.rmtree(tmp_path / leaf["location"])
    before, files = ns.version, _files(tmp_path)
    for read in (lambda: ns.to_table(), lambda: ns.count_rows("id > 0")):
        with pytest.raises(errors.CorruptNamespaceError) as raised:
            read()
        assert leaf["object_id"] in str(raised.value)
        assert leaf["location"] in str(raised.value)
    with pytest.raises(errors.CorruptNamespaceError, match=r"leaf table 'v1\$"):
        ns.write(pa.table({"id": [3], "k": ["a"]}, schema=SCHEMA))
    assert lp.PartitionedNamespace.open(ns.uri).version == before
    assert _files(tmp_path) == files
    assert ns.count_rows("k = 'b'") == 1  # the other partitions still read


def test_a_missing_pinned_version_is_a_corrupt_namespace(tmp_path: Path) -> None:
    ns = _namespace(str(tmp_path))
    ns.write(pa.table({"id": [3], "k": ["a"]}, schema=SCHEMA))
    leaf = _leaf(ns, "a")
    versions = tmp_path / leaf["location"] / "_versions"
    # Lance's V2 manifest paths: version v is the file named u64::MAX - v
    pinned = versions / f"{(1 << 64) - 1 - leaf['read_version']:020d}.manifest"
    assert pinned.exists()
    pinned.unlink()
    (versions / "latest_version_hint.json").unlink(missing_ok=True)
    before, files = ns.version, _files(tmp_path)
    problem = f"pinned version {leaf['read_version']}"
    with pytest.raises(errors.CorruptNamespaceError, match=problem):
        ns.to_table("k = 'a'")
    with pytest.raises(errors.CorruptNamespaceError, match=problem):
        ns.write(pa.table({"id": [4], "k": ["a"]}, schema=SCHEMA))
    assert lp.PartitionedNamespace.open(ns.uri).version == before
    assert _files(tmp_path) == files


def test_a_root_that_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "not-a-directory"
    path.write_text("x")
    with pytest.raises(errors.StorageError, match="a path on the way is a file") as raised:
        lp.PartitionedNamespace.create(str(path), schema=SCHEMA, partition_by="k")
    assert str(path) in str(raised.value)
    with pytest.raises(errors.NamespaceNotFoundError, match=str(path)):
        lp.PartitionedNamespace.open(str(path))
    assert path.read_text() == "x"


def _big_rows(first: int, count: int, k: str) -> pa.Table:
    payload = pa.array([os.urandom(2048).hex() for _ in range(count)])
    ids = pa.array(range(first, first + count), pa.int64())
    return pa.table({"id": ids, "k": pa.array([k] * count), "payload": payload})


_SCHEMA_PAYLOAD = pa.schema([*SCHEMA, pa.field("payload", pa.string())])


def test_a_full_disk_is_a_storage_error_and_leaves_nothing_staged() -> None:
    with small_filesystem("2m") as mount:
        if mount is None:
            _full_disk_in_a_child_process()
            return
        root = str(mount / "ns")
        ns = lp.PartitionedNamespace.create(root, schema=_SCHEMA_PAYLOAD, partition_by="k")
        ns.write(_big_rows(0, 10, "a"))
        before, files = ns.version, _files(root)
        # several partitions: some are staged before the disk fills up
        big = pa.concat_tables([_big_rows(100 + 300 * i, 300, k) for i, k in enumerate("bcdef")])
        with pytest.raises(errors.StorageError, match="no space left") as raised:
            ns.write(big, options=lp.WriteOptions(flush_bytes=1 << 16, threads=2))
        assert root in str(raised.value)
        assert lp.PartitionedNamespace.open(root).version == before
        assert _files(root) == files  # what was staged before the failure is gone
        ns.write(_big_rows(20, 10, "b"))  # and the space it took is free again
        assert ns.count_rows() == 20


_CHILD = textwrap.dedent(
    """
    import json, os, resource, signal, sys
    import pyarrow as pa
    import lance_partitioned as lp
    from lance_partitioned import errors
    root, limit = sys.argv[1], int(sys.argv[2])
    schema = pa.schema([("id", pa.int64()), ("k", pa.string()), ("payload", pa.string())])
    ns = lp.PartitionedNamespace.create(root, schema=schema, partition_by="k")
    ns.write(pa.table({"id": [0], "k": ["a"], "payload": ["x"]}, schema=schema))
    before = ns.version
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    rows = 4000
    data = pa.table({"id": list(range(1, rows + 1)), "k": ["b", "c"] * (rows // 2),
                     "payload": [os.urandom(1024).hex() for _ in range(rows)]}, schema=schema)
    try:
        ns.write(data, options=lp.WriteOptions(flush_bytes=1 << 16, threads=2))
        outcome = "written"
    except errors.StorageError as exc:
        outcome = type(exc).__name__ + ": " + str(exc)
    print(json.dumps({"outcome": outcome, "before": before,
                      "after": lp.PartitionedNamespace.open(root).version}))
    """
)


def _full_disk_in_a_child_process() -> None:
    root = tempfile.mkdtemp()
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, root, str(256 << 10)],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["outcome"].startswith("StorageError"), result
        assert root in result["outcome"]
        assert result["after"] == result["before"]
        leaves = [p for p in os.listdir(root) if p != "__manifest"]
        assert len(leaves) == 1  # the partition written before the limit, nothing staged
    finally:
        shutil.rmtree(root)
    assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] == resource.RLIM_INFINITY


def test_a_read_only_root_is_a_permission_error_naming_it() -> None:
    with small_filesystem("4m") as mount:
        root = str(mount / "ns") if mount is not None else tempfile.mkdtemp()
        ns = _namespace(root)
        before, files = ns.version, _files(root)
        if mount is not None:
            subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        else:
            for directory, _dirs, _names in os.walk(root):
                os.chmod(directory, 0o555)
        try:
            with pytest.raises(errors.PermissionDeniedError) as raised:
                ns.write(pa.table({"id": [3], "k": ["a"]}, schema=SCHEMA))
            assert root in str(raised.value)
            assert isinstance(raised.value, ln.errors.PermissionDeniedError)
            with pytest.raises(errors.PermissionDeniedError, match=root):
                ns.add_columns([pa.field("note", pa.string())])
            with pytest.raises(errors.PermissionDeniedError):
                lp.PartitionedNamespace.create(
                    os.path.join(root, "inner"), schema=SCHEMA, partition_by="k"
                )
            assert lp.PartitionedNamespace.open(root).version == before
            assert _files(root) == files
            assert ns.count_rows() == 2  # reads still work
        finally:
            if mount is not None:
                subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
            else:
                for directory, _dirs, _names in os.walk(root):
                    os.chmod(directory, 0o755)
                shutil.rmtree(root)


def test_an_unfinished_create_is_finished_only_with_compatible_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = str(tmp_path)

    def crash(self: Manifest, version: int, metadata: Any) -> None:
        raise Boom("killed between the two commits of create")

    with monkeypatch.context() as patch:
        patch.setattr(Manifest, "_publish_first", crash)
        with pytest.raises(Boom):
            lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k")
    other = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.int64())])
    with pytest.raises(errors.NamespaceAlreadyExistsError, match="other partition columns"):
        lp.PartitionedNamespace.create(root, schema=other, partition_by="k", exist_ok=True)
    # another spec over new columns is fine: they are added before publishing
    wider = pa.schema([*SCHEMA, ("region", pa.string())])
    ns = lp.PartitionedNamespace.create(root, schema=wider, partition_by="k, region", exist_ok=True)
    ns.write(pa.table({"id": [1], "k": ["a"], "region": ["eu"]}, schema=wider))
    assert ns.partitions().column("region").to_pylist() == ["eu"]
