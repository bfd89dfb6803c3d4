"""What each ``__manifest`` version changed: the fragments it appended, or the leaves whose
rows it rewrote. The incremental reads of the Spark streaming source are built on it.

A version is compared with the one before it, leaf by leaf (leaves are matched by object
id; with a ``filter``, only the leaves a scan with that filter would read are compared):

- a leaf absent before: every fragment of it at its new ``read_version`` is appended;
- a leaf whose ``(location, read_version)`` did not move: unchanged;
- a leaf that moved, every fragment of which at the old ``read_version`` is still there,
  unchanged (same data files, same deletion file, same row count), at the new one: the
  fragments with new ids are appended (a retried append may restore the leaf first: the
  fragments still compare equal);
- anything else (a fragment gone, rewritten or deleted from; a leaf dropped) is a
  *rewrite*: the version changed or removed rows that were there.

A stream reads each version's changes against the version before it: both ``__manifest``
versions, and the leaf versions they pin, must still be there. When a ``cleanup`` has
removed them (the stream fell behind its retention),
:class:`~lance_partitioned.errors.TableVersionNotFoundError` says so, names the versions,
and how to resume; a leaf version missing while the ``__manifest`` version that pins it is
still there is damage (:class:`~lance_partitioned.errors.CorruptNamespaceError`).

Versions whose commit records an operation that keeps every row as it is (``evolve``:
schema and spec changes; ``optimize`` and ``optimize_manifest``: compactions, which
rewrite fragments but not rows, like Delta's ``dataChange=false``) append and rewrite
nothing, whatever their leaves show. Every other version, another client's included, is
judged by its leaves alone; its recorded operation only names it in messages.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("k", pa.string())]),
...     partition_by="k")
>>> _ = ns.write(pa.table({"id": [1, 2], "k": ["a", "b"]}))
>>> _ = ns.write(pa.table({"id": [3], "k": ["a"]}))
>>> log = ChangeLog(ns._manifest)
>>> change = log.change(ns.version)
>>> [(a.task.partition_values, a.rows) for a in change.appended], change.rewritten
([((('k', 'a'),), 1)], ())
>>> _ = ns.delete("id = 3")
>>> log.change(ns.version).describe()
"delete (predicate: id = 3): rewrote leaf 'v1$...$dataset'"
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from lance_partitioned import errors
from lance_partitioned.manifest import Manifest
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.manifest.versions import list_versions, version_properties
from lance_partitioned.scan import Filter, ScanTask, plan_scan
from lance_partitioned.spec.schema import NamespaceSchema

__all__ = [
    "DATA_PRESERVING",
    "AppendedFragments",
    "ChangeLog",
    "Leaves",
    "VersionChange",
    "kept_versions",
    "removed_by_cleanup",
]

#: Operations whose versions keep every row as it was (their leaves are not compared).
DATA_PRESERVING = frozenset({"evolve", "optimize", "optimize_manifest"})
_THREADS = 8
_CACHED_VERSIONS = 4


@dataclass(frozen=True)
class AppendedFragments:
    """Fragments one version appended to one leaf.

    Attributes
    ----------
    task : ScanTask
        The leaf at the version's ``read_version``, restricted to the appended fragments
        (``fragment_ids``), with the scan's residual filter.
    sizes : tuple of int
        Bytes on disk of each fragment, in ``task.fragment_ids`` order.
    rows : int
        Rows the fragments hold (deletions not subtracted).
    """

    task: ScanTask
    sizes: tuple[int, ...]
    rows: int


@dataclass(frozen=True)
class VersionChange:
    """What one ``__manifest`` version did to the rows a scan reads.

    Attributes
    ----------
    version : int
        The version.
    operation : Operation or None
        What its commit recorded (None: nothing, e.g. another client's commit).
    appended : tuple of AppendedFragments
        Fragments it appended, by leaf object id.
    rewritten : tuple of str
        Object ids of the leaves whose existing rows it changed or removed (dropped leaves
        included). Empty for an append-only version.
    """

    version: int
    operation: Operation | None
    appended: tuple[AppendedFragments, ...] = ()
    rewritten: tuple[str, ...] = ()

    def operation_text(self) -> str:
        """The recorded operation in words: ``write (mode overwrite_partitions)``."""
        op = self.operation
        if op is None:
            return "a commit that records no lance-partitioned operation (another client's)"
        details = [f"mode {op.mode}"] if op.mode else []
        details += [f"{key}: {value}" for key, value in sorted(op.details.items())]
        return f"{op.name} ({', '.join(details)})" if details else op.name

    def describe(self) -> str:
        """One line for messages: the operation and the leaves it rewrote."""
        text = self.operation_text()
        if self.rewritten:
            shown = ", ".join(repr(i) for i in self.rewritten[:3])
            more = f" and {len(self.rewritten) - 3} more" if len(self.rewritten) > 3 else ""
            noun = "leaf" if len(self.rewritten) == 1 else "leaves"
            return f"{text}: rewrote {noun} {shown}{more}"
        return f"{text}: appended to {len(self.appended)} leaves"


@dataclass(frozen=True)
class Leaves:
    """The leaves a scan reads at one ``__manifest`` version, by object id, and the
    namespace schema of that version (None before the namespace has one: version 0, and
    the first commit of its creation)."""

    version: int
    schema: NamespaceSchema | None
    tasks: dict[str, ScanTask]


_Signature = tuple[str, int, int]  # (fragment metadata JSON, physical rows, bytes)


def _fragments(task: ScanTask) -> dict[int, _Signature]:
    """The leaf's fragments at the task's read version, by id."""
    out: dict[int, _Signature] = {}
    for fragment in task.open().get_fragments():
        metadata = fragment.metadata
        text = json.dumps(metadata.to_json(), sort_keys=True, default=str)
        size = sum(int(f.file_size_bytes or 0) for f in metadata.files)
        out[int(fragment.fragment_id)] = (text, int(metadata.physical_rows or 0), size)
    return out


def _map(function: Any, items: list[Any]) -> list[Any]:
    if len(items) <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(_THREADS, len(items))) as pool:
        return list(pool.map(function, items))


def kept_versions(manifest: Manifest) -> set[int]:
    """The ``__manifest`` versions still there."""
    return {info.version for info in list_versions(manifest, properties=False)}


def removed_by_cleanup(
    manifest: Manifest, version: int, kept: set[int], leaf: ScanTask | None = None
) -> errors.TableVersionNotFoundError | None:
    """The error for a stream that needs ``__manifest`` version ``version`` (and the leaf
    versions it pins; ``leaf``: the one found missing) after a cleanup removed it: what is
    gone and how to resume. None when ``version`` is in ``kept`` or after the latest (no
    cleanup removed it).
    """
    latest = max(kept, default=0)
    if version in kept or version > latest:
        return None
    base = latest  # the oldest version from which every later one is kept
    while base - 1 in kept:
        base -= 1
    root = manifest.root
    what = f"__manifest version {version} of {root!r} is not there: a cleanup removed it"
    if leaf is not None:
        what = (
            f"__manifest version {version} of {root!r}, and version {leaf.read_version} of "
            f"leaf {leaf.object_id!r} ({leaf.uri!r}) that it pins, are not there: a cleanup "
            "removed them"
        )
    resume = (
        f"startingVersion={base + 1} or later (what versions up to {base} appended is not emitted)"
        if base < latest
        else "startingVersion='latest'"
    )
    return errors.TableVersionNotFoundError(
        f"{what} (the __manifest versions kept start at {base}). A stream needs the versions "
        "it has not read yet and the version before them (with the leaf versions they pin): "
        "this one fell behind the cleanup's retention and cannot go on. Start a new query "
        f"(new checkpoint) with {resume}, or without startingVersion to start from a "
        "snapshot of the latest version; and keep versions longer than streams lag, with "
        "cleanup(older_than=...)"
    )


class ChangeLog:
    """Reads the changes of ``__manifest`` versions (one snapshot per version, a few cached).

    Parameters
    ----------
    manifest : Manifest
        The namespace's ``__manifest``.
    filter : str or Predicate, optional
        Compare only the leaves a scan with this filter reads, and keep its residual on
        the appended fragments.
    """

    def __init__(self, manifest: Manifest, filter: Filter = None) -> None:
        self.manifest = manifest
        self.filter = filter
        self._cache: OrderedDict[int, Leaves] = OrderedDict()
        self._operations: dict[int, Operation | None] = {}

    def leaves(self, version: int) -> Leaves:
        """The leaves at ``version`` (version 0: none)."""
        if version in self._cache:
            self._cache.move_to_end(version)
            return self._cache[version]
        if version == 0:
            found = Leaves(0, None, {})
        else:
            try:
                snapshot = self.manifest.snapshot(version)
            except errors.NotAPartitionedNamespaceError:
                snapshot = None  # the first commit of a create: no spec, no leaf yet
            except errors.TableVersionNotFoundError as exc:
                raise self._missing(version, None) from exc
            if snapshot is None:
                found = Leaves(version, None, {})
            else:
                tasks = plan_scan(self.manifest, snapshot, self.filter)
                found = Leaves(version, snapshot.metadata.schema, {t.object_id: t for t in tasks})
        self._cache[version] = found
        while len(self._cache) > _CACHED_VERSIONS:
            self._cache.popitem(last=False)
        return found

    def _missing(self, version: int, leaf: ScanTask | None) -> errors.TableVersionNotFoundError:
        """The error for ``__manifest`` version ``version`` (and ``leaf`` at the version it
        pins) not being there."""
        self._cache.pop(version, None)
        kept = kept_versions(self.manifest)
        gone = removed_by_cleanup(self.manifest, version, kept, leaf)
        if gone is not None:
            return gone
        return errors.TableVersionNotFoundError(
            f"__manifest version {version} of {self.manifest.root!r} is not there: the latest "
            f"version is {max(kept, default=0)}"
        )

    def _fragments(self, leaf: ScanTask, version: int) -> dict[int, _Signature]:
        """The leaf's fragments at the read version ``__manifest`` version ``version``
        pins; a leaf version a cleanup removed with ``version`` is reported as such."""
        try:
            return _fragments(leaf)
        except (errors.CorruptNamespaceError, errors.TableVersionNotFoundError) as exc:
            gone = removed_by_cleanup(self.manifest, version, kept_versions(self.manifest), leaf)
            if gone is None:
                raise  # the __manifest still pins it: damage, not a cleanup
            self._cache.pop(version, None)
            raise gone from exc

    def operation(self, version: int) -> Operation | None:
        """What the commit of ``version`` recorded (None: nothing)."""
        if version not in self._operations:
            self._read_operations([version])
        return self._operations.pop(version)

    def _read_operations(self, versions: list[int]) -> None:
        found = version_properties(self.manifest, versions)
        for version, properties in zip(versions, found, strict=True):
            self._operations[version] = Operation.from_properties(properties)

    def change(self, version: int) -> VersionChange:
        """What ``version`` (>= 1) changed, compared with ``version - 1``."""
        operation = self.operation(version)
        if operation is not None and operation.name in DATA_PRESERVING:
            return VersionChange(version, operation)
        before = self.leaves(version - 1).tasks
        after = self.leaves(version).tasks
        rewritten = sorted(set(before) - set(after))  # dropped leaves
        moved = []
        for object_id, task in after.items():
            old = before.get(object_id)
            if old is not None and (old.uri, old.read_version) == (task.uri, task.read_version):
                continue
            for leaf in (task, old):
                if leaf is not None and leaf.read_version is None:
                    raise errors.UnsupportedOperationError(
                        f"leaf {leaf.object_id!r} of {self.manifest.root!r} has no "
                        f"read_version at __manifest version {version}: its changes cannot "
                        "be told apart (another client wrote it without read_version)"
                    )
            moved.append((task, old))
        appended: list[AppendedFragments] = []

        def compare(pair: tuple[ScanTask, ScanTask | None]) -> AppendedFragments | str | None:
            task, old = pair
            if old is not None and old.uri != task.uri:
                return task.object_id  # moved to another table: not an append
            now = self._fragments(task, version)
            was = {} if old is None else self._fragments(old, version - 1)
            if any(now.get(i) != signature for i, signature in was.items()):
                return task.object_id
            new = sorted(set(now) - set(was))
            if not new:
                return None
            piece = dataclasses.replace(
                task, fragment_ids=tuple(new), row_count=sum(now[i][1] for i in new)
            )
            return AppendedFragments(piece, tuple(now[i][2] for i in new), piece.row_count or 0)

        for result in _map(compare, moved):
            if isinstance(result, str):
                rewritten.append(result)
            elif result is not None:
                appended.append(result)
        return VersionChange(version, operation, tuple(appended), tuple(sorted(rewritten)))

    def changes(self, start: int, end: int) -> Iterator[VersionChange]:
        """The changes of versions ``start + 1`` to ``end``, in order (their transaction
        properties read in one pass)."""
        self._read_operations(list(range(start + 1, end + 1)))
        for version in range(start + 1, end + 1):
            yield self.change(version)
