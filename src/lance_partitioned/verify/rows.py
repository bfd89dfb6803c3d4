"""The checks of the ``__manifest`` itself: its partition columns, and every row's name,
parent namespace, location and inherited partition values (no leaf is opened)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

import pyarrow as pa

from lance_partitioned.manifest import LEAF_NAME, ManifestEntry, properties_error
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.verify.report import Problem

__all__ = ["check_columns", "check_rows", "spec_of"]

_PARTITION_NAME = re.compile(r"[0-9a-z]{16}")
_SPEC_NAMESPACE = re.compile(r"v([1-9][0-9]*)")
_LOCATION = re.compile(r"[0-9a-f]+_(?P<object_id>.+)")


def check_columns(metadata: NamespaceMetadata, columns: Mapping[str, pa.DataType]) -> list[Problem]:
    """The ``__manifest`` has a column of the ``result_type`` of every partition field name."""
    out = []
    for name, dtype in metadata.partition_columns():
        found = columns.get(name)
        if found is None:
            out.append(
                Problem(
                    "metadata", None, f"the __manifest has no column for partition field {name!r}"
                )
            )
        elif found != dtype:
            out.append(
                Problem(
                    "metadata",
                    None,
                    f"the __manifest column {name!r} is {found}, but the partition field's "
                    f"result_type is {dtype}",
                )
            )
    return out


def spec_of(entry: ManifestEntry, metadata: NamespaceMetadata | None) -> PartitionSpec | None:
    match = _SPEC_NAMESPACE.fullmatch(entry.path[0])
    if match is None or metadata is None:
        return None
    version = int(match.group(1))
    return next((s for s in metadata.specs if s.version == version), None)


def check_rows(
    entries: Sequence[ManifestEntry], metadata: NamespaceMetadata | None
) -> list[Problem]:
    problems: list[Problem] = []
    by_id = {entry.object_id: entry for entry in entries}
    for object_id, count in sorted(Counter(e.object_id for e in entries).items()):
        if count > 1:
            problems.append(
                Problem("name", object_id, f"object id appears in {count} __manifest rows")
            )
    for entry in sorted(entries, key=lambda e: e.object_id):
        problems.extend(_check_row(entry, by_id, metadata))
    return problems


def _check_row(
    entry: ManifestEntry, by_id: Mapping[str, ManifestEntry], metadata: NamespaceMetadata | None
) -> list[Problem]:
    oid = entry.object_id
    out: list[Problem] = []
    reason = properties_error(entry.metadata)
    if reason is not None:
        out.append(Problem("properties", oid, f"the row's metadata JSON is {reason}"))
    if not (entry.is_table or entry.is_namespace):
        out.append(Problem("name", oid, f"unknown object_type {entry.object_type!r}"))
        return out
    path = entry.path
    if _SPEC_NAMESPACE.fullmatch(path[0]) is None:
        out.append(Problem("name", oid, f"{path[0]!r} is not a spec version namespace (v<N>)"))
        return out
    spec = spec_of(entry, metadata)
    if metadata is not None and spec is None:
        out.append(Problem("name", oid, f"there is no partition spec {path[0]}"))
        return out
    names = path[1:-1] if entry.is_table else path[1:]
    for name in names:
        if _PARTITION_NAME.fullmatch(name) is None:
            out.append(
                Problem("name", oid, f"partition namespace name {name!r} is not 16 base36 chars")
            )
    if entry.is_table:
        out.extend(_check_leaf_name(entry, spec))
    if len(path) > 1:
        parent = by_id.get("$".join(path[:-1]))
        if parent is None or not parent.is_namespace:
            out.append(
                Problem("parent", oid, f"parent namespace {'$'.join(path[:-1])!r} is missing")
            )
        elif spec is not None:
            out.extend(_check_inherited(entry, parent, spec))
    return out


def _check_leaf_name(entry: ManifestEntry, spec: PartitionSpec | None) -> list[Problem]:
    oid = entry.object_id
    path = entry.path
    out = []
    if path[-1] != LEAF_NAME:
        out.append(Problem("name", oid, f"a leaf table must be named {LEAF_NAME!r}"))
    if spec is not None and len(path) != len(spec.fields) + 2:
        out.append(
            Problem(
                "name",
                oid,
                f"a leaf of v{spec.version} sits under {len(spec.fields)} partition "
                f"level(s), this one under {len(path) - 2}",
            )
        )
    location = entry.location
    if not location:
        out.append(Problem("location", oid, "the leaf has no location"))
    elif "://" not in location and not location.startswith("/"):
        match = _LOCATION.fullmatch(location)
        if match is None or match.group("object_id") != oid:
            out.append(Problem("location", oid, f"location {location!r} is not <hash>_<object_id>"))
    return out


def _check_inherited(
    entry: ManifestEntry, parent: ManifestEntry, spec: PartitionSpec
) -> list[Problem]:
    """The row carries its parent's partition values (levels above the parent's depth)."""
    depth = len(parent.path) - 1  # partition levels the parent namespace stands for
    out = []
    for spec_field in spec.fields[:depth]:
        mine = entry.values.get(spec_field.name)
        theirs = parent.values.get(spec_field.name)
        if mine != theirs:
            out.append(
                Problem(
                    "partition_value",
                    entry.object_id,
                    f"{spec_field.name} is {mine!r} but its parent namespace's is {theirs!r}",
                )
            )
    return out
