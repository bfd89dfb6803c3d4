"""Where a ``__manifest`` keeps the root namespace properties.

The spec (both dialects) keeps them in the ``__manifest`` table's metadata; Daft's branch keeps
them in its Arrow schema metadata. Readers take the table metadata when it holds a
``partition_spec_v<N>`` key, else the schema metadata when that one does; writers always
write the table metadata.
"""

from __future__ import annotations

from typing import Any

from lance_partitioned.spec.metadata import NamespaceMetadata

__all__ = ["root_properties"]


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
