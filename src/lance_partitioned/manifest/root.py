"""Where a ``__manifest`` keeps the root namespace properties.

The spec (both dialects) keeps them in the ``__manifest`` table's metadata; Daft's branch keeps
them in its Arrow schema metadata. Readers take the table metadata when it holds a
``partition_spec_v<N>`` key, else the schema metadata when that one does; writers always
write the table metadata.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors
from lance_partitioned.spec.metadata import NamespaceMetadata

__all__ = ["READ_REFS", "refuse_pinned_writes", "root_properties"]


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def root_properties(dataset: Any) -> dict[str, str]:
    """The root properties of an open ``__manifest`` Lance dataset.

    Parameters
    ----------
    dataset : lance.LanceDataset
        The ``__manifest`` table.

    Returns
    -------
    dict
        Its table metadata, or (no partition spec there) its Arrow schema metadata overlaid
        with the table metadata.
    """
    table = dict(dataset.metadata)
    if NamespaceMetadata.is_partitioned(table):
        return table
    schema_metadata = {_text(k): _text(v) for k, v in (dataset.schema.metadata or {}).items()}
    if NamespaceMetadata.is_partitioned(schema_metadata):
        return {**schema_metadata, **table}
    return table


READ_REFS = ("read_branch", "read_tag")
"""The published text's ``__manifest`` columns that pin a leaf to a branch or a tag: reads
open the leaf there (:func:`~lance_partitioned.manifest.datasets.open_leaf`)."""


def refuse_pinned_writes(rows: pa.Table, positions: Sequence[int], root: str) -> None:
    """Refuse a commit that replaces or deletes leaf rows pinned to a branch or a tag (the
    rows of ``rows`` at ``positions``): writes go to a leaf's main branch, so committing
    them would silently move the leaf off its ref (not supported yet).

    Raises
    ------
    UnsupportedOperationError
        One of those rows has a non-NULL ``read_branch`` or ``read_tag``; names the column,
        the ref and the leaves.

    >>> refuse_pinned_writes(pa.table({"object_id": ["a"], "read_tag": [None]}), [0], "/ns")
    """
    if not positions:
        return
    for name in READ_REFS:
        if name not in rows.column_names:
            continue
        touched = rows.take(pa.array(positions, pa.int64()))
        pinned = touched.filter(pc.is_valid(touched.column(name)))
        if pinned.num_rows:
            ids = pinned.column("object_id").to_pylist()[:5]
            ref = pinned.column(name)[0].as_py()
            raise errors.UnsupportedOperationError(
                f"the __manifest at {root!r} pins {pinned.num_rows} table(s) to a {name} "
                f"({name} = {ref!r}: {ids}): writing to a leaf pinned to a branch or a tag is "
                "not supported yet (the write would go to its main branch); reads open it there"
            )
