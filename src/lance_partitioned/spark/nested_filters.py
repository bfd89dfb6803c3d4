"""Spark's pushed filters on struct fields (``df.filter("device.os = 'ios'")``).

Spark names a struct field by its path, ``("device", "os")``. Such a filter converts when
the path reaches, through structs only, a boolean, integer, string, date, timestamp (in
microseconds) or decimal field of a column Spark reads with its own type: it becomes an
:class:`~lance_partitioned.expressions.tree.Unknown` whose SQL names the field by its
backtick-quoted path (```device`.`os` = 'ios'``, as Lance and DataFusion read it) and
whose column is the top-level one. It filters rows inside Lance, and prunes leaves when the
field is a partition source (see
:func:`~lance_partitioned.spec.sourcepaths.lift_struct_conditions`).

>>> import pyarrow as pa
>>> from pyspark.sql.datasource import EqualTo, Not
>>> device = pa.field("device", pa.struct([("os", pa.utf8()), ("ratio", pa.float64())]))
>>> paths = pushable_paths([device])
>>> sorted(paths)
['`device`.`os`']
>>> nested_predicate(EqualTo(("device", "os"), "ios"), paths)
Unknown(sql="`device`.`os` = 'ios'", columns=('device',))
>>> nested_predicate(Not(EqualTo(("device", "ratio"), 1.0)), paths) is None
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import datasource as sds

from lance_partitioned.errors import InvalidInputError
from lance_partitioned.expressions.render import quote_identifier, to_sql
from lance_partitioned.expressions.tree import Not, Predicate, Unknown
from lance_partitioned.spark.filters import native, to_predicate

__all__ = ["nested_predicate", "path_sql", "pushable_paths"]

_PLACEHOLDER = "__lp_struct_field__"


def _pushable(dtype: pa.DataType) -> bool:
    """The field types pushed: those of top-level columns (:mod:`.filters`) but binary."""
    t = pa.types
    return native(dtype) and not (t.is_binary(dtype) or t.is_large_binary(dtype))


def path_sql(path: Sequence[str]) -> str | None:
    """The backtick-quoted path (None when a segment cannot be quoted)."""
    try:
        return ".".join(quote_identifier(segment) for segment in path)
    except InvalidInputError:
        return None


def pushable_paths(fields: Iterable[pa.Field]) -> frozenset[str]:
    """The quoted paths of the struct fields below ``fields`` that filters may be pushed on."""

    def below(field: pa.Field, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        dtype = field.type
        if pa.types.is_struct(dtype):
            for i in range(dtype.num_fields):
                child = dtype.field(i)
                yield from below(child, (*path, child.name))
        elif len(path) > 1 and _pushable(dtype):
            yield path

    found = (path_sql(p) for f in fields for p in below(f, (f.name,)))
    return frozenset(p for p in found if p is not None)


def nested_predicate(spark_filter: sds.Filter, paths: Collection[str]) -> Predicate | None:
    """The predicate of a Spark filter on one struct field in ``paths``
    (:func:`pushable_paths`), or None."""
    if isinstance(spark_filter, sds.Not):
        child = nested_predicate(spark_filter.child, paths)
        return None if child is None else Not(child)
    attribute: Sequence[str] = getattr(spark_filter, "attribute", ())
    if len(attribute) < 2 or not dataclasses.is_dataclass(spark_filter):
        return None
    quoted = path_sql(attribute)
    if quoted is None or quoted not in paths:
        return None
    stand_in = dataclasses.replace(spark_filter, attribute=(_PLACEHOLDER,))  # type: ignore[call-arg]
    leaf = to_predicate(stand_in, {_PLACEHOLDER})
    if leaf is None:
        return None
    sql = to_sql(leaf).replace(quote_identifier(_PLACEHOLDER), quoted)
    return Unknown(sql, (attribute[0],))
