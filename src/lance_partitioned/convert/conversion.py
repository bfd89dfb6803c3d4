"""Convert a namespace between the two dialects of its partition specs (issue 28).

:func:`convert` rewrites every ``partition_spec_v<N>`` in the other dialect
(:mod:`lance_partitioned.spec.dialects`) and moves each partition value of the ``__manifest``
to the column the new spec names: ``<name>`` (spec 000) becomes ``partition_field_<name>``
(the published text), and ``partition_field_<key>`` becomes ``<key>``. Leaves are not touched:
a field's values, and so the leaf a row lives in, stay the same, except for a ``bucket`` field:
spec 000 buckets hash with xxhash64, published ones with murmur3, so their leaves hold
different rows. The leaves of every spec version with a bucket field are re-bucketed
(:mod:`lance_partitioned.convert.rebucket`): one commit of the commit protocol replaces them
by leaves of the new function. ``rebucket=False`` refuses such a conversion instead, with
:class:`~lance_partitioned.errors.UnsupportedOperationError` listing the fields; a bucket
field of a spec version without leaves converts as any other field.

pylance 14 cannot change a dataset's columns, its rows and its table metadata in one commit
(see :mod:`lance_partitioned.evolution`), so a conversion is up to four ``__manifest``
versions, each readable as the namespace before it: ``prepare`` adds the new columns (a Lance
``Merge``, every row NULL in them); ``mark`` records the moves under the table metadata key
:data:`~lance_partitioned.convert.marker.MARKER`; ``rows`` fills the new columns in every
partition row and rewrites the spec version rows (one ``Update``); the first three are
invisible to readers because no spec names the new columns yet. ``publish`` then sets every
spec in the new dialect and removes the marker in one compare-and-swap, after checking that
the specs and schema are still those the conversion was computed from. The old columns stay
(unused, like those an evolution leaves), so every version before reads as it did.

Concurrent writers: the publishing commit is a table-metadata change, which Lance does not
make conflict with a concurrent write, so a partition row created between ``rows`` and
``publish`` must not hold its values in the old columns only. Making the publish step re-plan
over such rows (as the commit protocol re-plans) would need rows and table metadata in one
commit, which pylance 14 lacks; instead the intermediate state is one every writer of ours
completes: while the marker is set, each ``__manifest`` commit of the transaction protocol
fills the new columns of the partition rows it writes (:mod:`lance_partitioned.convert.marker`).
A writer that planned before the marker conflicts with ``rows`` (both rewrite the spec
version rows) and plans again on a snapshot with the marker, so every partition row, whenever
it was committed, has its values in the new columns by ``publish``; a write staged before
the conversion and committed after it names its values for the converted specs
(:func:`~lance_partitioned.convert.marker.named_for`). A writer that does not
follow this library's marker (another client) is not covered: convert while no other client
writes. A crash between the steps leaves every version readable (only the old columns are
named); running the conversion again finishes it.

Re-bucketing adds a step between ``rows`` and ``publish``: ``rebucket``, the commit of the new
leaves (pylance 14 cannot commit them with the specs either). The marker also records the
re-bucketed fields and the converted specs, and writers copy no re-bucketed field's old value
to its new column, so a leaf not re-bucketed yet is one with an old bucket value and no new
one. Once the ``rebucket`` commit is in (no such leaf:
:func:`~lance_partitioned.convert.marker.rebucket_done`), this library reads and writes the
``__manifest`` with the converted specs
(:func:`~lance_partitioned.convert.marker.effective_metadata`), so the versions before
``publish`` read the same rows and prune right; a rerun after a crash there only publishes.
A write committed before ``rebucket`` is re-bucketed with the rest (the plan reads every
leaf it replaces and is serializable: it plans again when one moved); a write staged before
the conversion and committed after ``rebucket`` grouped its rows by the old hash, and is
refused with
:class:`~lance_partitioned.errors.ConcurrentSchemaChangeError`.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("k", pa.utf8())]), partition_by="k")
>>> ns.convert("published").dialect
'published'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors
from lance_partitioned.convert.marker import MARKER, marker_value, rebucket_done
from lance_partitioned.convert.rebucket import rebucket_plan
from lance_partitioned.manifest import CommitConflict, Manifest, ManifestSnapshot
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.spec.dialects import Dialect, Murmur3Bucket, PublishedSpec, in_dialect
from lance_partitioned.spec.metadata import SPEC_KEY_PREFIX, NamespaceMetadata
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.transforms import Bucket
from lance_partitioned.transaction import Backoff, commit_changes
from lance_partitioned.transaction.leaves import _pause

__all__ = ["ConvertResult", "convert", "dialect_of"]

log = logging.getLogger(__name__)

_SPEC_ROW = re.compile(r"^v([0-9]+)\$")
_SPEC_ID = re.compile(r"v[0-9]+")


@dataclass(frozen=True)
class ConvertResult:
    """What :func:`convert` did.

    Attributes
    ----------
    version : int
        The ``__manifest`` version after it (the version read for a no-op).
    dialect : str
        The dialect of the namespace now: ``"spec000"`` or ``"published"``.
    columns : dict of str to str
        Each old ``__manifest`` partition column to its new one (empty for a no-op).
    rows : int
        The partition rows of the ``__manifest`` rewritten.
    rebucketed : int
        The leaves written by re-bucketing (0: no bucket field had leaves).
    """

    version: int
    dialect: str
    columns: dict[str, str] = field(default_factory=dict)
    rows: int = 0
    rebucketed: int = 0


def dialect_of(metadata: NamespaceMetadata) -> Dialect:
    """The dialect of a namespace's specs (one namespace never mixes them)."""
    return (
        Dialect.PUBLISHED if isinstance(metadata.current_spec, PublishedSpec) else Dialect.SPEC000
    )


def _rebucketed(
    snapshot: ManifestSnapshot, old: NamespaceMetadata, new: NamespaceMetadata
) -> dict[int, list[tuple[str, str]]]:
    """For each spec version that has leaves, the (old column, new column) of each of its
    bucket fields: its hash function differs between the dialects, so its leaves need
    re-bucketing (a bucket field without data converts as any other)."""
    with_leaves = {
        int(m[1])
        for oid in snapshot.tables.column("object_id").to_pylist()
        if (m := _SPEC_ROW.match(oid))
    }
    by_version = {spec.version: spec for spec in new.specs}
    found: dict[int, list[tuple[str, str]]] = {}
    for spec in old.specs:
        if spec.version not in with_leaves:
            continue
        pairs = [
            (a.name, b.name)
            for a, b in zip(spec.fields, by_version[spec.version].fields, strict=True)
            if isinstance(a.transform, (Bucket, Murmur3Bucket))
        ]
        if pairs:
            found[spec.version] = pairs
    return found


def _to_spec000(metadata: NamespaceMetadata) -> tuple[PartitionSpec, ...]:
    """The published specs of ``metadata`` as spec 000: each field named by its published
    ``field_id`` (its key), numbered by its stand-in id; a murmur3 ``bucket`` becomes spec
    000's (xxhash64, int64)."""
    out: list[PartitionSpec] = []
    for spec in metadata.specs:
        fields: list[PartitionField] = []
        for f in spec.fields:
            expression, result_type = f.expression, f.result_type
            if isinstance(f.transform, Murmur3Bucket):  # no leaves (else refused): xxhash64
                spec000 = Bucket(f.transform.num_buckets)
                source = metadata.schema.field_by_id(f.source_id).type
                expression, result_type = spec000.expression, spec000.result_type(source)
            name = getattr(f, "key", "") or f.name
            fields.append(PartitionField(f.field_id, name, f.source_id, expression, result_type))
        out.append(PartitionSpec(spec.version, tuple(fields)))
    return tuple(out)


def converted(metadata: NamespaceMetadata, to: Dialect) -> NamespaceMetadata:
    """``metadata`` with every spec version in dialect ``to`` (validated)."""
    if to is Dialect.PUBLISHED:
        specs = in_dialect(metadata.specs, metadata.schema, Dialect.PUBLISHED)
    else:
        specs = _to_spec000(metadata)
    return NamespaceMetadata(metadata.schema, specs)


def _moves(old: NamespaceMetadata, new: NamespaceMetadata) -> dict[int, list[tuple[str, str]]]:
    """For each spec version, each (old column, new column) of its fields, in field order."""
    by_version = {spec.version: spec for spec in new.specs}
    return {
        spec.version: [
            (a.name, b.name)
            for a, b in zip(spec.fields, by_version[spec.version].fields, strict=True)
        ]
        for spec in old.specs
    }


def _rewritten(rows: pa.Table, moves: Mapping[int, list[tuple[str, str]]]) -> pa.Table:
    """The partition rows of ``rows`` (object id ``v<N>$...``) with every new column holding
    the value of the old column of the same field of spec ``N``."""
    ids = rows.column("object_id").to_pylist()
    versions = [int(m[1]) if (m := _SPEC_ROW.match(oid)) else None for oid in ids]
    # the spec version rows too, unchanged: every commit of the transaction protocol rewrites
    # them, so each one planned before this commit conflicts with it (and plans again)
    keep = pa.array(
        [
            v is not None or _SPEC_ID.fullmatch(oid) is not None
            for v, oid in zip(versions, ids, strict=True)
        ]
    )
    version_col = pa.array(versions, pa.int64())
    columns = {name: rows.column(name) for name in rows.column_names}
    for version, pairs in moves.items():
        mask = pc.fill_null(pc.equal(version_col, version), False)
        for old, new in pairs:
            if old == new:
                continue
            target = columns[new]
            source = rows.column(old).cast(target.type)
            columns[new] = pc.if_else(mask, source, target)
    table = pa.table(columns, schema=rows.schema)
    return table.filter(keep)


def _attempt(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    old: NamespaceMetadata,
    new: NamespaceMetadata,
    rebucket: Mapping[int, list[tuple[str, str]]],
    operation: Operation,
) -> ConvertResult:
    existing = snapshot.rows.schema
    missing: list[tuple[str, pa.DataType]] = []
    for name, dtype in new.partition_columns():
        if name not in existing.names:
            missing.append((name, dtype))
        elif existing.field(name).type != dtype:
            raise errors.PartitionSpecError(
                f"cannot convert: the __manifest has a column {name!r} of type "
                f"{existing.field(name).type}, the converted field needs {dtype}"
            )
    version = snapshot.version
    if missing:
        properties = operation.counted().with_details(step="prepare").to_properties()
        version = manifest.add_partition_columns(snapshot, missing, properties=properties)
    # a re-bucketed field's old value is not its new one: writers do not copy it (the
    # re-bucketing commit writes new leaves instead)
    moves = {
        v: [pair for pair in pairs if pair not in rebucket.get(v, ())]
        for v, pairs in _moves(old, new).items()
    }
    specs = {
        key: value
        for key, value in new.to_table_metadata().items()
        if key.startswith(SPEC_KEY_PREFIX)
    }
    marker = marker_value(moves, rebucket, specs)
    if manifest.table_metadata(version).get(MARKER) != marker:
        properties = operation.counted().with_details(step="mark").to_properties()
        version = manifest.commit_table_metadata(version, {MARKER: marker}, properties=properties)
    base = manifest.snapshot(version)
    table = _rewritten(base.rows, moves)
    done = bool(rebucket) and rebucket_done(base.table_metadata, base.rows)
    if not done:  # (a rerun after the re-bucketing commit: its rows are in)
        properties = operation.counted().with_details(step="rows").to_properties()
        version = manifest.commit_rows(base, table, properties=properties)
    leaves = 0
    if rebucket and not done:
        plan = rebucket_plan(manifest, new, rebucket, operation)
        committed = commit_changes(manifest, plan)
        version, leaves = committed.version, len(committed.leaf_versions)
    _pause("converted_rows")
    if NamespaceMetadata.own_keys(manifest.table_metadata(version)) != NamespaceMetadata.own_keys(
        snapshot.table_metadata
    ):
        raise CommitConflict("the namespace metadata changed while converting")
    properties = operation.counted().with_details(step="publish").to_properties()
    updates: dict[str, str | None] = {**new.to_table_metadata(), MARKER: None}
    version = manifest.commit_table_metadata(version, updates, properties=properties)
    columns = {a: b for pairs in _moves(old, new).values() for a, b in pairs if a != b}
    partition_rows = sum(1 for oid in table.column("object_id").to_pylist() if "$" in oid)
    return ConvertResult(version, dialect_of(new).value, columns, partition_rows, leaves)


def convert(
    manifest: Manifest,
    to: str | Dialect,
    *,
    rebucket: bool = True,
    backoff: Backoff | None = None,
) -> ConvertResult:
    """Rewrite every partition spec version and the ``__manifest`` partition columns in
    dialect ``to`` (see the module docstring). A namespace in ``to`` already is a no-op.

    Parameters
    ----------
    manifest : Manifest
        The namespace's ``__manifest``.
    to : {"published", "spec000"}
        The dialect to convert to.
    rebucket : bool
        Re-bucket the leaves of bucket fields (their hash function differs between the
        dialects); False: refuse a conversion with such leaves, listing the fields.
    backoff : Backoff, optional
        Retry policy when a concurrent commit wins.

    Raises
    ------
    InvalidInputError
        ``to`` is not a dialect.
    UnsupportedOperationError
        ``rebucket=False`` and a spec version with leaves has a bucket field (listed).
    PartitionSpecError
        A field cannot be written in the other dialect (a published key that is not a valid
        spec 000 name, a column of the new name with another type).
    ConcurrentModificationError
        Concurrent commits kept winning.
    """
    try:
        target = Dialect(to)
    except ValueError:
        raise errors.InvalidInputError(
            f"convert: 'to' must be 'published' or 'spec000', got {to!r}"
        ) from None
    backoff = backoff or Backoff()
    operation = Operation("convert", target.value)
    for attempt in range(backoff.attempts):
        snapshot = manifest.snapshot()
        # the specs of the table metadata, not those a re-bucketed conversion reads before
        # its publish commit (a rerun after a crash there finishes it)
        old = NamespaceMetadata.from_table_metadata(snapshot.table_metadata)
        if dialect_of(old) is target:
            return ConvertResult(snapshot.version, target.value)
        new = converted(old, target)
        buckets = _rebucketed(snapshot, old, new)
        if buckets and not rebucket:
            listed = ", ".join(f"v{v}.{a}" for v, pairs in buckets.items() for a, _ in pairs)
            raise errors.UnsupportedOperationError(
                f"cannot convert to {target.value}: bucket fields {listed} hash with xxhash64 "
                "in spec 000 and murmur3 in the published dialect, so their leaves need "
                "re-bucketing, and --no-rebucket (rebucket=False) was given"
            )
        try:
            return _attempt(manifest, snapshot, old, new, buckets, operation)
        except CommitConflict as exc:
            log.info("convert conflict on attempt %d: %s", attempt + 1, exc)
            backoff.sleep(attempt)
    raise errors.ConcurrentModificationError(
        f"the __manifest at {manifest.root!r} kept changing under this conversion: gave up "
        f"after {backoff.attempts} commit attempts"
    )
