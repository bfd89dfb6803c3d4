"""Re-staging: staged, uncommitted fragments converted to a type promoted meanwhile.

A write stages its fragments in the leaf schema of the ``__manifest`` version it read. When a
column's type is promoted (``alter_column_type``) before the write commits, its staged values
no longer have the namespace type. Every promotion is exact, so the commit protocol converts
them rather than failing the write: each staged data file is read back, cast to the promoted
type (the write rules' conversion) and staged again, still uncommitted. Nothing here commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import lance.fragment
import pyarrow as pa
from lance.file import LanceFileReader

from lance_partitioned import errors
from lance_partitioned.consistency import leaf_field_id
from lance_partitioned.spec.promotion import can_promote

__all__ = ["current_names", "promoted_schema", "restage_fragments"]


def promoted_schema(staged: pa.Schema, current: pa.Schema) -> pa.Schema | None:
    """``staged`` with the types ``current`` now gives its columns (matched by field id), or
    None when no type changed.

    >>> from lance_partitioned.consistency import LEAF_FIELD_ID_KEY as K
    >>> staged = pa.schema([pa.field("w", pa.int32(), metadata={K: "1"})])
    >>> current = pa.schema([pa.field("w2", pa.int64(), metadata={K: "1"})])
    >>> promoted_schema(staged, current).field("w").type
    DataType(int64)
    >>> promoted_schema(staged, staged) is None
    True
    """
    now = {leaf_field_id(f): f for f in current}
    fields = []
    changed = []
    for field in staged:
        other = now.get(leaf_field_id(field))
        if other is not None and pa.types.is_struct(other.type):
            other = _renamed([other], [field])[0]  # a renamed struct child is no type change
        if other is None or other.type == field.type:
            fields.append(field)
        elif can_promote(field.type, other.type):
            fields.append(field.with_type(other.type))
            changed.append(field.name)
        else:
            raise errors.ConcurrentSchemaChangeError(
                f"column {field.name!r} was staged as {field.type}, but the namespace schema "
                f"now has {other.type}, which it cannot be converted to: nothing was changed; "
                "write the data again"
            )
    return None if not changed else pa.schema(fields, metadata=staged.metadata)


def _by_key(fields: list[pa.Field]) -> dict[int | None, pa.Field]:
    return {leaf_field_id(f): f for f in fields if leaf_field_id(f) is not None}


def _renamed(fields: list[pa.Field], current: list[pa.Field]) -> list[pa.Field]:
    now = _by_key(current)
    out = []
    for field in fields:
        other = now.get(leaf_field_id(field))
        if other is None:
            out.append(field)
            continue
        renamed = field.with_name(other.name)
        if pa.types.is_struct(field.type) and pa.types.is_struct(other.type):
            children = _renamed(list(field.type), list(other.type))
            renamed = renamed.with_type(pa.struct(children))
        out.append(renamed)
    return out


def current_names(staged: pa.Schema, current: pa.Schema) -> pa.Schema:
    """``staged`` with the names ``current`` now gives its columns (matched by field id, at
    every struct level): a column renamed while a write was staged keeps the new name in the
    leaves the write creates or changes. Staged data is matched by field id, not by name.

    >>> from lance_partitioned.consistency import LEAF_FIELD_ID_KEY as K
    >>> staged = pa.schema([pa.field("w", pa.int32(), metadata={K: "1"})])
    >>> current_names(staged, pa.schema([pa.field("w2", pa.int64(), metadata={K: "1"})]))
    w2: int32 ...
    """
    return pa.schema(_renamed(list(staged), list(current)), metadata=staged.metadata)


def restage_fragments(
    uri: str,
    fragments: Sequence[Any],
    schema: pa.Schema,
    options: dict[str, str] | None,
) -> list[Any]:
    """The staged ``fragments`` of the leaf at ``uri``, read back, cast to ``schema`` (the
    same columns, promoted types) and staged again as uncommitted fragments."""
    tables = []
    for fragment in fragments:
        if len(fragment.files) != 1:
            raise errors.ConcurrentSchemaChangeError(
                f"a staged fragment of {uri!r} has {len(fragment.files)} data files and cannot "
                "be converted to the promoted column types: write the data again"
            )
        path = f"{uri}/data/{fragment.files[0].path}"
        tables.append(LanceFileReader(path, storage_options=options).read_all().to_table())
    if not tables:
        return []
    data = pa.concat_tables(tables).cast(schema)
    staged = lance.fragment.write_fragments(
        data, uri, schema=schema, mode="overwrite", storage_options=options
    )
    return cast(list[Any], staged)
