"""``restore``: make the rows of an earlier ``__manifest`` version the current ones.

As Delta's ``RESTORE``, a restore is a new commit: the versions in between stay (time travel
still reads them, and a restore can itself be restored away). The rows of the chosen
version are read as a stream at that version (its leaves at their ``read_version``) and
written back as a whole-namespace ``overwrite`` through the commit protocol of
:mod:`lance_partitioned.transaction`, in one ``__manifest`` commit recorded as operation
``restore`` (its ``restored_version`` among the details). Memory stays bounded whatever the
size.

The namespace keeps its current schema and partition spec: columns are matched by field id
(a column renamed since has its new name), a column added since is NULL, a column dropped
since is left out, and the rows are laid out in the partitions of the current spec. The
data files of the old version must still exist (a ``cleanup`` may have removed them).

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("k", pa.utf8()), ("v", pa.int64())]),
...     partition_by="k")
>>> first = ns.write(pa.table({"k": ["a", "b"], "v": [1, 2]})).version
>>> _ = ns.delete("k = 'a'")
>>> result = ns.restore(first)
>>> sorted(ns.to_table().column("v").to_pylist()), result.restored_version == first
([1, 2], True)
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from lance_partitioned import errors, scan
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.history import resolve_version
from lance_partitioned.ingest import WriteOptions, stage
from lance_partitioned.manifest import Manifest, ManifestSnapshot
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.spec.schema import FIELD_ID_KEY, NamespaceSchema
from lance_partitioned.transaction import ChangePlan, commit_changes
from lance_partitioned.transaction.write import Tally, replaced_rows

__all__ = ["RestoreResult", "restore"]


@dataclass(frozen=True)
class RestoreResult:
    """What :meth:`~lance_partitioned.PartitionedNamespace.restore` did.

    Attributes
    ----------
    version : int
        The new ``__manifest`` version, whose rows are those of ``restored_version``.
    restored_version : int
        The version restored.
    rows : int
        Rows the new version holds.
    partitions_written : int
        Leaf tables written.
    partitions_removed : int
        Leaf tables of the version before that the new one no longer lists.
    seconds : float
        Wall time.
    """

    version: int
    restored_version: int
    rows: int
    partitions_written: int
    partitions_removed: int
    seconds: float


def _mapped(old: pa.Schema, now: NamespaceSchema) -> tuple[list[int], list[str]]:
    """The positions of ``old``'s columns that are live now, and their current names."""
    positions, names = [], []
    live = set(now.read_schema().names)
    for i, field in enumerate(old):
        raw = (field.metadata or {}).get(FIELD_ID_KEY.encode())
        if raw is None:
            raise errors.InternalError(f"column {field.name!r} of a read has no field id")
        field_id = int(raw)
        try:
            if now.is_deprecated(field_id):
                continue
            name = now.name_of(field_id)
        except errors.LancePartitionedError:
            continue
        if name in live:
            positions.append(i)
            names.append(name)
    return positions, names


def _rows_of(
    manifest: Manifest, old: ManifestSnapshot, now: NamespaceSchema
) -> pa.RecordBatchReader:
    """The rows of ``old``, streamed, with the current names of the columns live now."""
    namespace_schema = old.metadata.schema
    tasks = scan.plan_scan(manifest, old, None, None)
    reader = scan.to_batches(tasks, namespace_schema, None, None)
    positions, names = _mapped(reader.schema, now)
    schema = pa.schema(
        [reader.schema.field(i).with_name(n) for i, n in zip(positions, names, strict=True)]
    )

    def batches() -> Iterator[pa.RecordBatch]:
        for batch in reader:
            yield pa.RecordBatch.from_arrays([batch.column(i) for i in positions], schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


def restore(
    manifest: Manifest,
    version: int | str | dt.datetime,
    *,
    options: WriteOptions | None = None,
) -> RestoreResult:
    """Commit a new ``__manifest`` version whose rows are those of ``version`` (a number, a
    tag, or a time: see :func:`lance_partitioned.history.resolve_version`)."""
    started = time.perf_counter()
    number = resolve_version(manifest, version)
    if number is None:
        raise errors.InvalidInputError("restore needs the version to restore")
    old = manifest.snapshot(number)
    current = manifest.snapshot()
    if number > current.version:
        raise errors.TableVersionNotFoundError(
            f"__manifest version {number} does not exist at {manifest.root!r}: the latest is "
            f"{current.version}"
        )
    schema = current.metadata.schema
    pending = stage(
        manifest,
        current,
        _rows_of(manifest, old, schema),
        mode="overwrite",
        target=leaf_schema(schema),
        options=options or WriteOptions(),
    )
    operation = Operation("restore", mode="overwrite", details={"restored_version": str(number)})

    def plan(snapshot: ManifestSnapshot) -> ChangePlan:
        removed = replaced_rows(manifest, snapshot, pending)
        tally = Tally(operation, written=pending.leaves, removed=removed)
        return ChangePlan(writes=pending, properties=tally.properties)

    result = commit_changes(manifest, plan, leaf_threads=(options or WriteOptions()).threads)
    return RestoreResult(
        version=result.version,
        restored_version=number,
        rows=result.rows,
        partitions_written=len(result.leaf_versions),
        partitions_removed=result.deleted_leaves,
        seconds=time.perf_counter() - started,
    )
