"""Re-bucketing the leaves of a dialect conversion (issue 28).

Spec 000's ``bucket`` hashes with xxhash64 into int64 buckets, the published dialect's with
murmur3 into int32 ones (:mod:`lance_partitioned.spec.hashing`,
:mod:`lance_partitioned.spec.murmur3`): a row's bucket, and so the leaf it belongs in, changes
with the dialect. :func:`rebucket_plan` is the planner, for
:func:`lance_partitioned.transaction.commit_changes` (the one commit protocol), of the commit
that replaces every leaf of the spec versions with such a field: it streams each leaf's rows
(at its ``read_version``, a few batches at a time), computes their partition values under the
converted specs and stages them as new leaves (:func:`lance_partitioned.ingest.stage`, bounded
memory), and drops the old leaves and the partition namespaces no new leaf uses, in one
``__manifest`` commit.

New object ids: the stager derives each new partition's name from (spec version, parent,
typed value) (:func:`lance_partitioned.manifest.partition_name`) on a view of the snapshot
without the rows of the re-bucketed spec versions (a level above the bucket, an identity
value, gets the name it had when this library named it, and keeps its row); the bucket
level's value changes type between the dialects (int64 and int32), so a new leaf's object id
and directory differ from every old leaf's of the same commit (checked: an
:class:`~lance_partitioned.errors.InternalError` otherwise). A directory left by an earlier
conversion (a round trip back to the first dialect) is written as a new Lance version over it:
older ``__manifest`` versions read their pinned versions of it.

The plan depends on every leaf it replaces (``reads``) and is ``serializable``: a concurrent
commit that creates, removes or moves a leaf makes the protocol plan it again (staging again
only when a re-bucketed leaf moved).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors, scan
from lance_partitioned.consistency import leaf_schema
from lance_partitioned.ingest import WriteOptions, stage
from lance_partitioned.manifest import TABLE, Manifest, ManifestSnapshot
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.transaction import ChangePlan, LeafWrite, PendingWrite

__all__ = ["rebucket_plan"]

log = logging.getLogger(__name__)

_NULL_READ = -2  # the protocol's expected state of a leaf row with a NULL read_version


def _prefix(version: int) -> str:
    return f"v{version}$"


def _of_versions(rows: pa.Table, versions: Collection[int]) -> pa.Array:
    """A mask of the rows of ``rows`` that belong to one of the spec ``versions``."""
    ids = rows.column("object_id")
    mask = pa.array([False] * rows.num_rows)
    for version in versions:
        mask = pc.or_(mask, pc.starts_with(ids, _prefix(version)))
    return mask


def _stage_version(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    new: NamespaceMetadata,
    version: int,
    options: WriteOptions,
) -> PendingWrite:
    """The rows of every leaf of spec ``version`` in ``snapshot``, staged as leaves of the
    converted spec ``version`` (of ``new``) with fresh partition names."""
    schema = snapshot.metadata.schema
    tasks = [
        task
        for task in scan.plan_scan(manifest, snapshot, None, None)
        if task.spec_version == version
    ]
    view = ManifestSnapshot(
        snapshot.version,
        NamespaceMetadata(new.schema, tuple(s for s in new.specs if s.version <= version)),
        snapshot.table_metadata,
        snapshot.rows.filter(pc.invert(_of_versions(snapshot.rows, [version]))),
    )
    reader = scan.to_batches(tasks, schema, None, None, options.threads)
    return stage(manifest, view, reader, mode="append", target=leaf_schema(schema), options=options)


def _cleared(values: Mapping[str, Any], old: Collection[str]) -> dict[str, Any]:
    """``values`` with the old column of each re-bucketed field NULL, not the new value
    (which the commit protocol would copy there, naming the leaf for the old specs): an old
    bucket value without a new one is what marks a leaf not re-bucketed yet
    (:func:`~lance_partitioned.convert.marker.rebucket_done`)."""
    return {**values, **dict.fromkeys(old)}


def _combined(writes: list[PendingWrite], target: pa.Schema, old: Collection[str]) -> PendingWrite:
    """The staged leaves of several spec versions as one write (each leaf's values are
    named for its own spec version; the commit protocol reads them per object id)."""
    leaves: list[LeafWrite] = [
        dataclasses.replace(leaf, values=_cleared(leaf.values, old))
        for write in writes
        for leaf in write.leaves
    ]
    namespaces: dict[str, dict[str, Any]] = {}
    for write in writes:
        for object_id, values in write.namespaces.items():
            namespaces[object_id] = _cleared(values, old)
    version = max(write.spec_version for write in writes)
    return PendingWrite(version, target, leaves, namespaces, mode="append")


def rebucket_plan(
    manifest: Manifest,
    new: NamespaceMetadata,
    versions: Mapping[int, Sequence[tuple[str, str]]],
    operation: Operation,
    options: WriteOptions | None = None,
) -> Callable[[ManifestSnapshot], ChangePlan]:
    """The planner of the commit that re-buckets every leaf of spec ``versions`` (the keys)
    under the converted specs ``new``; each value is the (old column, new column) of the
    version's re-bucketed fields (see the module docstring)."""
    options = options or WriteOptions()
    cache: dict[tuple[tuple[str, int], ...], PendingWrite] = {}

    def plan(snapshot: ManifestSnapshot) -> ChangePlan:
        rows = snapshot.rows.filter(_of_versions(snapshot.rows, list(versions)))
        ids = rows.column("object_id").to_pylist()
        kinds = rows.column("object_type").to_pylist()
        reads = {}
        for oid, kind in zip(ids, kinds, strict=True):
            if kind == TABLE:
                read_version = snapshot.read_version(oid)
                reads[oid] = _NULL_READ if read_version is None else read_version
        key = tuple(sorted(reads.items()))
        if key not in cache:
            cache.clear()
            writes = [
                _stage_version(manifest, snapshot, new, version, options)
                for version in sorted(versions)
            ]
            old = {a for pairs in versions.values() for a, _ in pairs}
            cache[key] = _combined(writes, leaf_schema(snapshot.metadata.schema), old)
        pending = cache[key]
        written = {leaf.object_id for leaf in pending.leaves}
        if written & reads.keys():
            raise errors.InternalError(
                f"re-bucketing would write leaves {sorted(written & reads.keys())} that it "
                "also replaces"
            )
        kept = written | pending.namespaces.keys()
        drops = [oid for oid in ids if oid not in kept]
        log.info(
            "re-bucketing %d leaves of spec versions %s into %d",
            len(reads),
            sorted(versions),
            len(pending.leaves),
        )
        properties = operation.counted().with_details(step="rebucket").to_properties()
        return ChangePlan(
            writes=pending,
            drops=drops,
            reads=reads,
            properties=properties,
            serializable=True,
        )

    return plan
