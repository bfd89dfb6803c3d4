"""What each ``__manifest`` version changed (the streaming source's increments), on real
namespaces written through the Python API."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.history import changes as changes_module
from lance_partitioned.history.changes import ChangeLog

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string())])


def rows(ids: list[int], k: str) -> pa.Table:
    return pa.table({"id": ids, "k": [k] * len(ids)}, schema=SCHEMA)


def namespace(tmp_path: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=SCHEMA, partition_by="k")
    ns.write(pa.concat_tables([rows([1, 2], "a"), rows([3], "b")]))
    return ns


def appended_ids(ns: lp.PartitionedNamespace, version: int) -> list[int]:
    """The ids in the fragments ``version`` appended, read from those fragments only."""
    change = ChangeLog(ns._manifest).change(version)
    assert change.rewritten == ()
    from lance_partitioned.scan import to_table

    table = to_table([a.task for a in change.appended], ns.namespace_schema)
    return sorted(table.column("id").to_pylist())


def test_appends_are_the_new_fragments_only(tmp_path: Path) -> None:
    ns = namespace(tmp_path)
    first = ns.version
    assert appended_ids(ns, first) == [1, 2, 3]  # new leaves: every fragment
    # from version 0 (nothing) on: the creation's commits change nothing, then the write
    since_creation = list(ChangeLog(ns._manifest).changes(0, first))
    assert [len(c.appended) for c in since_creation] == [0] * (first - 1) + [2]
    ns.write(pa.concat_tables([rows([4], "a"), rows([5, 6], "c")]))  # old leaf + new leaf
    assert appended_ids(ns, ns.version) == [4, 5, 6]
    change = ChangeLog(ns._manifest).change(ns.version)
    assert sorted(a.rows for a in change.appended) == [1, 2]
    assert change.describe() == "write (mode append): appended to 2 leaves"


@pytest.mark.parametrize(
    ("what", "operation"),
    [
        ("overwrite_partitions", "write (mode overwrite_partitions)"),
        ("overwrite", "write (mode overwrite)"),
        ("delete", "delete (predicate: id = 1)"),
        ("update", "update"),
        ("merge", "merge"),
    ],
)
def test_versions_that_change_rows_are_rewrites(tmp_path: Path, what: str, operation: str) -> None:
    ns = namespace(tmp_path)
    if what in ("overwrite_partitions", "overwrite"):
        ns.write(rows([9], "a"), mode=what)
    elif what == "delete":
        ns.delete("id = 1")
    elif what == "update":
        ns.update("id = 1", {"id": "10"})
    else:
        merge = ns.merge(rows([1, 7], "a"), on="id").when_matched_update_all()
        merge.when_not_matched_insert_all().execute()
    change = ChangeLog(ns._manifest).change(ns.version)
    assert change.rewritten, change
    assert change.operation_text().startswith(operation)
    leaf_a = ns.plan_scan("k = 'a'")[0].object_id
    assert leaf_a in change.rewritten
    if what == "overwrite":  # leaf b is dropped: also a rewrite
        assert len(change.rewritten) == 2


def test_compaction_and_evolution_change_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = namespace(tmp_path)
    ns.write(rows([4], "a"))
    before = ns.version
    assert ns.optimize().leaves_compacted == 1
    log = ChangeLog(ns._manifest)
    changes = list(log.changes(before, ns.version))
    assert changes
    assert all(c.appended == () and c.rewritten == () for c in changes)
    assert {c.operation.name for c in changes if c.operation} <= {"optimize", "optimize_manifest"}
    # the leaves alone say the compaction rewrote leaf a: its recorded operation decides
    monkeypatch.setattr(changes_module, "DATA_PRESERVING", frozenset())
    assert [c.rewritten for c in ChangeLog(ns._manifest).changes(before, before + 1)] == [
        (ns.plan_scan("k = 'a'")[0].object_id,)
    ]
    monkeypatch.undo()
    before = ns.version
    ns.add_columns([pa.field("note", pa.string())])
    ns.rename_column("note", "remark")
    evolved = list(log.changes(before, ns.version))
    assert evolved
    assert all(c.rewritten + c.appended == () for c in evolved)
    assert {c.operation.name for c in evolved if c.operation} == {"evolve"}


def test_the_filter_limits_the_leaves_compared(tmp_path: Path) -> None:
    ns = namespace(tmp_path)
    ns.write(rows([9], "a"), mode="overwrite_partitions")  # rewrites leaf a only
    assert ChangeLog(ns._manifest, "k = 'b'").change(ns.version).rewritten == ()
    assert ChangeLog(ns._manifest, "k = 'a'").change(ns.version).rewritten != ()


def test_a_version_that_does_not_exist_is_named(tmp_path: Path) -> None:
    ns = namespace(tmp_path)
    ns.write(rows([4], "a"))
    log = ChangeLog(ns._manifest)
    with pytest.raises(
        errors.TableVersionNotFoundError, match=r"version 99 of .* is not there: the latest"
    ):
        log.change(100)


def test_a_stream_behind_a_cleanup_is_told_so(tmp_path: Path) -> None:
    """A stream read version 3; version 4 appends, then a cleanup removes every
    __manifest version but the latest, and the leaf versions only they pinned. The changes
    of version 4 need version 3, and the leaf versions it pins (the log has them cached:
    opening leaf 'a' at its removed version reported a damaged namespace)."""
    ns = namespace(tmp_path)
    log = ChangeLog(ns._manifest)
    assert log.change(ns.version).appended  # version 3, and its leaves, now cached
    read = ns.version
    ns.write(rows([4], "a"))
    assert ns.cleanup(dt.timedelta(0)).removed_manifest_versions == tuple(range(1, read + 1))
    leaf = ns.partitions("k = 'a'").column("object_id")[0].as_py()
    with pytest.raises(errors.TableVersionNotFoundError) as caught:
        log.change(read + 1)
    message = str(caught.value)
    assert not isinstance(caught.value, errors.CorruptNamespaceError)
    assert f"__manifest version {read} of " in message
    assert f"of leaf {leaf!r}" in message
    assert "a cleanup removed them" in message
    assert "startingVersion='latest'" in message
    assert "cleanup(older_than=...)" in message
    # read afresh (a restarted stream), the __manifest version itself is reported
    with pytest.raises(errors.TableVersionNotFoundError, match="a cleanup removed it ") as fresh:
        ChangeLog(ns._manifest).change(read + 1)
    assert f"__manifest version {read} of " in str(fresh.value)
    assert sorted(ns.refresh().to_table().column("id").to_pylist()) == [1, 2, 3, 4]


def test_a_stream_behind_a_cleanup_resumes_from_the_oldest_kept_version(tmp_path: Path) -> None:
    ns = namespace(tmp_path)
    gone = ns.version
    ns.write(rows([4], "a"))
    ns.cleanup(dt.timedelta(0))
    kept = ns.version
    ns.write(rows([5], "a"))
    with pytest.raises(
        errors.TableVersionNotFoundError,
        match=rf"versions kept start at {kept}\).* startingVersion={kept + 1} or later",
    ):
        ChangeLog(ns._manifest).change(gone + 1)
    assert appended_ids(ns, kept + 1) == [5]


def test_a_leaf_version_missing_under_a_kept_version_is_damage(tmp_path: Path) -> None:
    """A leaf version removed behind the __manifest's back (pylance's own cleanup run on
    the leaf) while the __manifest version that pins it is still there."""
    ns = namespace(tmp_path)
    ns.write(rows([4], "a"))
    log = ChangeLog(ns._manifest)
    before = log.leaves(ns.version - 1).tasks
    task = next(t for t in before.values() if dict(t.partition_values)["k"] == "a")
    assert task.read_version is not None
    names = (f"{task.read_version}.manifest", f"{2**64 - 1 - task.read_version}.manifest")
    removed = [p for p in (Path(task.uri) / "_versions").iterdir() if p.name in names]
    assert len(removed) == 1
    removed[0].unlink()
    with pytest.raises(errors.CorruptNamespaceError, match="damaged"):
        log.change(ns.version)
