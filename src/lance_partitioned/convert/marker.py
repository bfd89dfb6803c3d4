"""The marker of a dialect conversion under way, and how writers honour it (issue 28).

:func:`lance_partitioned.convert.convert` moves each partition value of the ``__manifest`` to
the column the other dialect names, in several commits (pylance 14 cannot change columns, rows
and table metadata in one). Between its ``rows`` commit (every partition row filled in the new
columns) and its ``publish`` commit (the specs in the new dialect), a writer can still create
partition rows. So that none of them holds its values in the old columns only, the conversion
first records the moves in the ``__manifest`` table metadata under :data:`MARKER`, and every
``__manifest`` commit of the transaction protocol fills, in each partition row it writes, the
new column of each moved field from the old one (:func:`fill_moved`). ``publish`` removes the
marker in the same commit that publishes the specs.

Why that suffices: the marker is committed before ``rows``, and ``rows`` rewrites the spec
version rows (``v1``, ``v2``, …), which every protocol commit rewrites too, so any commit
planned on a snapshot older than ``rows`` conflicts with it and is planned again on a newer
snapshot, which has the marker. A marker left by a crashed conversion is harmless (the old
columns stay those the specs name) and is replaced by the next conversion.

A conversion that re-buckets (:mod:`lance_partitioned.convert.rebucket`) records in the marker its
re-bucketed fields (left out of the moves: an old bucket value is not the new one) and the
converted specs, which :func:`effective_metadata` makes the ones this library reads and writes
with once the re-bucketed leaves are committed (:func:`rebucket_done`), until ``publish``;
:func:`refuse_rebucketed` refuses a write whose rows were grouped by the other hash.

>>> moves = {1: [("s", "partition_field_s")]}
>>> fill_moved([{"object_id": "v1$a", "s": "a"}], moves, ["s", "partition_field_s"])
[{'object_id': 'v1$a', 's': 'a', 'partition_field_s': 'a'}]
>>> pending_moves({MARKER: marker_value(moves)}) == moves
True
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.spec.dialects import Murmur3Bucket
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.spec.transforms import Bucket

__all__ = [
    "MARKER",
    "effective_metadata",
    "fill_moved",
    "marker_value",
    "named_for",
    "pending_moves",
    "rebucket_done",
    "rebucket_moves",
    "refuse_rebucketed",
]

log = logging.getLogger(__name__)

MARKER = "lance_partitioned.converting"
"""The ``__manifest`` table metadata key of a conversion under way: JSON, spec version to the
list of ``[old column, new column]`` of its fields. Written to disk, so it keeps the name of
the module that introduced it (``lance_partitioned.converting``, now this one)."""

_PARTITION_ROW = re.compile(r"^v([0-9]+)\$")

Moves = Mapping[int, Sequence[tuple[str, str]]]


def marker_value(
    moves: Moves,
    rebucket: Moves | None = None,
    specs: Mapping[str, str] | None = None,
) -> str:
    """The :data:`MARKER` value recording ``moves`` (only the columns that change) and, for
    a conversion that re-buckets, the ``[old column, new column]`` of each re-bucketed field
    by spec version (``rebucket``, not in ``moves``) and the converted specs' table metadata
    (``specs``: what :func:`effective_metadata` reads once the re-bucketed leaves are in)."""
    value: dict[str, Any] = {
        str(v): [[a, b] for a, b in pairs if a != b] for v, pairs in sorted(moves.items())
    }
    if rebucket:
        value[_REBUCKET] = {str(v): [[a, b] for a, b in pairs] for v, pairs in rebucket.items()}
        value[_SPECS] = dict(specs or {})
    return json.dumps(value, sort_keys=True)


def pending_moves(table_metadata: Mapping[str, str]) -> dict[int, list[tuple[str, str]]]:
    """The moves of the conversion under way recorded in ``table_metadata`` (empty: none).

    A value we cannot read is logged and ignored: the specs still name the old columns, so a
    row written without the new ones stays readable (the conversion's ``rows`` step, rerun,
    fills them).
    """
    raw = _marker(table_metadata)
    try:
        return {
            int(version): [(str(a), str(b)) for a, b in pairs]
            for version, pairs in raw.items()
            if version.isdigit()
        }
    except (ValueError, TypeError, AttributeError) as exc:
        log.warning("ignoring an unreadable %s marker: %s", MARKER, exc)
        return {}


_REBUCKET = "rebucket"
_SPECS = "specs"


def _marker(table_metadata: Mapping[str, str]) -> dict[str, Any]:
    """The parsed :data:`MARKER` (empty: none, or unreadable)."""
    text = table_metadata.get(MARKER)
    if not text:
        return {}
    try:
        raw = json.loads(text)
    except ValueError as exc:
        log.warning("ignoring an unreadable %s marker: %s", MARKER, exc)
        return {}
    return raw if isinstance(raw, dict) else {}


def rebucket_moves(table_metadata: Mapping[str, str]) -> dict[int, list[tuple[str, str]]]:
    """The re-bucketed fields of the conversion under way, by spec version: ``[(old column,
    new column)]`` (empty: none)."""
    found = _marker(table_metadata).get(_REBUCKET)
    if not isinstance(found, dict):
        return {}
    try:
        return {int(v): [(str(a), str(b)) for a, b in pairs] for v, pairs in found.items()}
    except (ValueError, TypeError) as exc:
        log.warning("ignoring an unreadable %s marker: %s", MARKER, exc)
        return {}


def rebucket_done(table_metadata: Mapping[str, str], rows: pa.Table) -> bool:
    """Whether the ``rows`` and re-bucketing commits of the conversion under way are in
    ``rows`` (the ``__manifest`` rows of the version whose table metadata is
    ``table_metadata``): no partition row of a spec version the :data:`MARKER` names holds a
    value in the old column of a moved or re-bucketed field and NULL in its new one.

    Before the ``rows`` commit, every partition row with a value has the new columns NULL.
    After it, writers fill the moved columns, but not the re-bucketed ones (an old bucket
    value is not the new one), so each old leaf of a re-bucketed field keeps its old value
    without a new one until the re-bucketing commit replaces it by a leaf holding the new
    value only (:mod:`lance_partitioned.convert.rebucket` leaves the old column NULL). A partition
    whose bucket is NULL (its source NULL) is the same under both hash functions: whether it
    was replaced yet does not matter.
    """
    rebucket = rebucket_moves(table_metadata)
    if not rebucket:
        return False
    moves = pending_moves(table_metadata)
    ids = rows.column("object_id").to_pylist()
    for version in moves.keys() | rebucket.keys():
        prefix = f"v{version}$"
        picked = [i for i, oid in enumerate(ids) if oid.startswith(prefix)]
        if not picked:
            continue
        for old, new in [*moves.get(version, ()), *rebucket.get(version, ())]:
            if old not in rows.column_names:
                continue  # (a column no row of this version can hold)
            if new not in rows.column_names:
                return False
            olds = rows.column(old).take(picked).to_pylist()
            news = rows.column(new).take(picked).to_pylist()
            if any(a is not None and b is None for a, b in zip(olds, news, strict=True)):
                return False
    return True


def effective_metadata(
    metadata: NamespaceMetadata, table_metadata: Mapping[str, str], rows: pa.Table
) -> NamespaceMetadata:
    """The specs this library reads and writes a ``__manifest`` version with: those of its
    table metadata (``metadata``), or, once a conversion that re-buckets has committed its
    re-bucketed leaves (:func:`rebucket_done`) and before its ``publish`` commit, the
    converted specs the :data:`MARKER` records. pylance 14 cannot commit rows and table
    metadata together, so those versions have new leaves under old specs: read with the old
    specs, pruning would look for a row in the leaf of its old bucket.
    """
    specs = _marker(table_metadata).get(_SPECS)
    if not isinstance(specs, dict) or not rebucket_done(table_metadata, rows):
        return metadata
    return NamespaceMetadata.from_table_metadata({**table_metadata, **specs})


def refuse_rebucketed(
    specs: Sequence[PartitionSpec], leaves: Iterable[Any], table_metadata: Mapping[str, str]
) -> None:
    """Refuse leaf writes (:class:`~lance_partitioned.transaction.LeafWrite`) staged under
    the other dialect's bucket function: a leaf's values name a bucket field of its spec
    version (in ``specs``) by the field's column in the other dialect, so it was staged before
    a conversion that re-bucketed the field, and its rows, grouped by the other hash, would
    land in the wrong leaves. Not refused: the leaves of the re-bucketing commit itself,
    named for the converted specs while the :data:`MARKER` (of ``table_metadata``, the
    ``__manifest`` version committed on) records the re-bucketing of that field.

    Raises
    ------
    ConcurrentSchemaChangeError
        Nothing was made visible; the data must be written again.
    """
    by_version = {spec.version: spec for spec in specs}
    rebucketing = rebucket_moves(table_metadata)
    for leaf in leaves:
        match = _PARTITION_ROW.match(leaf.object_id)
        spec = by_version.get(int(match[1])) if match else None
        if spec is None:
            continue
        for spec_field in spec.fields:
            if not isinstance(spec_field.transform, (Bucket, Murmur3Bucket)):
                continue
            name = spec_field.name
            if (name, _other_name(name)) in rebucketing.get(spec.version, ()):
                continue
            if name not in leaf.values and _other_name(name) in leaf.values:
                raise errors.ConcurrentSchemaChangeError(
                    f"leaf {leaf.object_id!r} was staged before a dialect conversion "
                    f"re-bucketed partition field {name!r} of partition spec v{spec.version} "
                    "(another hash function): nothing was changed; write the data again"
                )


def fill_moved(
    rows: list[dict[str, Any]], moves: Moves, columns: Collection[str]
) -> list[dict[str, Any]]:
    """``rows`` (``__manifest`` rows about to be committed) with, in each partition row
    (``v<N>$...``) of a spec version in ``moves``, every new column of ``columns`` that is
    NULL holding the value of its old column."""
    if not moves:
        return rows
    out = []
    for row in rows:
        match = _PARTITION_ROW.match(str(row.get("object_id", "")))
        pairs = moves.get(int(match[1]), ()) if match else ()
        filled = {
            new: row[old]
            for old, new in pairs
            if new in columns and row.get(new) is None and row.get(old) is not None
        }
        out.append({**row, **filled} if filled else row)
    return out


_PUBLISHED_PREFIX = "partition_field_"


def _other_name(name: str) -> str:
    """The ``__manifest`` column of the same field in the other dialect."""
    if name.startswith(_PUBLISHED_PREFIX):
        return name[len(_PUBLISHED_PREFIX) :]
    return _PUBLISHED_PREFIX + name


def named_for(fields: Sequence[str], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (partition values by ``__manifest`` column, computed when a write was
    staged) with the value of each field of ``fields`` (the columns of its spec version now)
    that it lacks taken from the field's column in the other dialect: a write staged before a
    conversion and committed after it.

    >>> named_for(["partition_field_s"], {"s": "a"})
    {'s': 'a', 'partition_field_s': 'a'}
    """
    found = {
        name: values[_other_name(name)]
        for name in fields
        if name not in values and _other_name(name) in values
    }
    return {**values, **found} if found else dict(values)
