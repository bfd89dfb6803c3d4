"""Where a ``__manifest`` keeps the root namespace properties.

The spec (both dialects) keeps them in the ``__manifest`` table's metadata; Daft's branch keeps
them in its Arrow schema metadata. Readers take the table metadata when it holds a
``partition_spec_v<N>`` key, else the schema metadata when that one does; writers always
write the table metadata.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors
from lance_partitioned.spec.metadata import NamespaceMetadata

__all__ = ["READ_REFS", "refuse_read_refs", "root_properties"]


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
"""The published text's ``__manifest`` columns that pin a leaf to a branch or a tag."""


def refuse_read_refs(rows: pa.Table, root: str) -> None:
    """Refuse a ``__manifest`` whose leaves are pinned to a branch or a tag (not supported
    yet): reading main instead would silently show other rows.

    Raises
    ------
    UnsupportedOperationError
        A row has a non-NULL ``read_branch`` or ``read_tag``; names the column and the rows.

    >>> refuse_read_refs(pa.table({"object_id": ["a"], "read_tag": [None]}), "/ns")
    """
    for name in READ_REFS:
        if name not in rows.column_names:
            continue
        pinned = rows.filter(pc.is_valid(rows.column(name)))
        if pinned.num_rows:
            ids = pinned.column("object_id").to_pylist()[:5]
            raise errors.UnsupportedOperationError(
                f"the __manifest at {root!r} pins {pinned.num_rows} table(s) to a {name} "
                f"(e.g. {ids}): reading a leaf's {name} is not supported yet, and reading "
                "its main branch instead would show other rows"
            )
