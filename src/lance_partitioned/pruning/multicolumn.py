"""Pruning on published ``multi_bucket`` fields: a conjunction that fixes every source column
(``=`` or IN on each) fixes the field's buckets; anything less prunes nothing (a value of one
column does not decide the field's value).

>>> import pyarrow as pa
>>> from lance_partitioned.expressions.tree import EqualTo, In
>>> from lance_partitioned.spec.dialects import load_spec
>>> from lance_partitioned.spec.schema import NamespaceSchema
>>> schema = NamespaceSchema.from_arrow(pa.schema([("s", pa.utf8()), ("n", pa.int64())]))
>>> spec = load_spec(1, {"id": 1, "fields": [{"field_id": "m", "source_ids": [0, 1],
...     "transform": {"type": "multi_bucket", "num_buckets": 4, "hash_encoding": "iceberg"},
...     "result_type": {"type": "int32"}}]})
>>> multi_bucket_parts(spec, schema, {"s": [EqualTo("s", "a")], "n": [In("n", (1, 2))]})
[In(term='partition_field_m', values=(0,))]
>>> multi_bucket_parts(spec, schema, {"s": [EqualTo("s", "a")]})
[]
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lance_partitioned.errors import SchemaError
from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.spec.multicolumn import MultiColumn
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.transforms.base import members

__all__ = ["MAX_COMBINATIONS", "multi_bucket_parts"]

MAX_COMBINATIONS = 1024
"""Above this many combinations of source values, a ``multi_bucket`` field is not pruned on."""


def _allowed(leaves: Sequence[Predicate]) -> list[Any] | None:
    """The values that the ``=`` / IN among ``leaves`` allow (None: none constrain)."""
    allowed: dict[Any, None] | None = None
    for leaf in leaves:
        values = members(leaf)
        if values is None:
            continue
        kept = dict.fromkeys(v for v in values if v is not None)
        allowed = kept if allowed is None else {v: None for v in allowed if v in kept}
    return None if allowed is None else list(allowed)


def multi_bucket_parts(
    spec: PartitionSpec, schema: NamespaceSchema, leaves: Mapping[str, Sequence[Predicate]]
) -> list[Predicate]:
    """``In(field, buckets)`` for each ``multi_bucket`` field of ``spec`` whose every source
    column the conjunction's ``leaves`` (by column) fix to a few values.

    A field whose sources are not all live columns, whose bytes are not known to be ours
    (see :meth:`~lance_partitioned.spec.multicolumn.MultiColumn.buckets`), or whose
    combinations exceed :data:`MAX_COMBINATIONS` gives nothing.
    """
    out: list[Predicate] = []
    for spec_field in spec.fields:
        transform = spec_field.transform
        if not isinstance(transform, MultiColumn) or transform.num_buckets is None:
            continue
        choices: list[list[Any]] = []
        types: list[pa.DataType] = []
        for source_id in transform.source_ids:
            try:
                if schema.is_deprecated(source_id):
                    break
                name = schema.name_of(source_id)
                source = schema.field_by_id(source_id).type
                allowed = _allowed(leaves.get(name, ()))
            except (SchemaError, TypeError):  # a removed column; an unhashable literal
                break
            if allowed is None:
                break
            choices.append(allowed)
            types.append(source)
        else:
            count = 1
            for allowed in choices:
                count *= len(allowed)
            if count > MAX_COMBINATIONS:
                continue
            if count == 0:
                out.append(t.AlwaysFalse())
                continue
            buckets = transform.buckets(list(itertools.product(*choices)), types)
            if buckets is not None:
                out.append(t.In(spec_field.name, tuple(dict.fromkeys(buckets))))
    return out
