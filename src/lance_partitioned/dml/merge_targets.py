"""The leaves a merge's source rows can match, from the keys alone.

For each partition spec version, the partition values that the key columns determine (the
fields whose source column is a key) are computed for every source row, and looked up among
the leaves' partition values in the ``__manifest``: when ``on`` includes every partition
source column, exactly the leaves the source rows belong to. Used by
:class:`~lance_partitioned.dml.merge.MergeBuilder` and by the Spark merge's routing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned.ingest import group_rows, partition_values
from lance_partitioned.manifest import DELIMITER, ManifestSnapshot
from lance_partitioned.spec.multicolumn import sources_of
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema

__all__ = ["source_groups"]


def source_groups(
    snapshot: ManifestSnapshot,
    spec: PartitionSpec,
    schema: NamespaceSchema,
    source: pa.Table,
    on: Sequence[str],
    safe: frozenset[str],
) -> dict[str, np.ndarray] | None:
    """For each leaf of ``spec`` that a source row can match (one with no NULL in the keys
    that are not NULL-safe, ``safe``), the positions of those source rows: a key match
    means equal (or, NULL-safely, both NULL) partition source values, so equal values of
    every field whose source column is a key (None: no field is).

    The source rows are grouped by those values (NULL is a value) and each group is looked
    up among the leaves' partition values in the ``__manifest``.
    """
    determined = [
        f
        for f in spec.fields
        if all(not schema.is_deprecated(s) and schema.name_of(s) in on for s in sources_of(f))
    ]
    if not determined:
        return None
    tables = snapshot.tables
    prefix = f"v{spec.version}{DELIMITER}"
    rows = tables.filter(pc.starts_with(tables.column("object_id"), prefix))
    names = [f.name for f in determined]
    leaves: dict[tuple[Any, ...], list[str]] = {}
    for row in rows.select(["object_id", *names]).to_pylist():
        leaves.setdefault(tuple(row[n] for n in names), []).append(row["object_id"])
    valid = np.ones(source.num_rows, dtype=bool)
    for name in on:
        if name in safe:
            continue
        valid &= ~np.asarray(source.column(name).is_null().to_numpy(zero_copy_only=False))
    positions = np.flatnonzero(valid)
    if not len(positions) or not leaves:
        return {}
    keyed = source.take(pa.array(positions))
    keys = partition_values(keyed, PartitionSpec(spec.version, tuple(determined)), schema)
    keys = [k.combine_chunks() if isinstance(k, pa.ChunkedArray) else k for k in keys]
    order, offsets, first = group_rows(keys, keyed.num_rows)
    groups: dict[str, np.ndarray] = {}
    for g in range(len(offsets) - 1):
        members = (
            np.arange(offsets[g], offsets[g + 1])
            if order is None
            else order[offsets[g] : offsets[g + 1]]
        )
        values = tuple(key[int(first[g])].as_py() for key in keys)
        for object_id in leaves.get(values, ()):
            groups[object_id] = positions[members]
    return groups
