"""Spark's pushed filters as predicates of :mod:`lance_partitioned.expressions`.

PySpark hands a Python data source the conjuncts of a query's ``WHERE`` clause that it can
express (``EqualTo``, ``EqualNullSafe``, the four comparisons, ``In``, ``IsNull``,
``IsNotNull``, ``StringStartsWith``, ``StringEndsWith``, ``StringContains``, each possibly
under ``Not``). A filter converts when it reads one top-level column whose Spark type is the
column's own (not a widened or truncated form, see :mod:`.types`) and not a floating-point
type (Spark orders ``NaN`` and ``-0.0`` its own way), and its literal is a scalar. What does
not convert stays with Spark.

``a <=> v`` becomes ``a IS NOT NULL AND a = v`` (``a IS NULL`` for ``v`` NULL), which keeps
its meaning under ``NOT``; ``a IN (…, NULL)`` stays with Spark, since its negation is never
true.

>>> from pyspark.sql.datasource import EqualTo, In, Not, StringEndsWith
>>> to_predicate(EqualTo(("country",), "US"), {"country"})
EqualTo(term='country', value='US')
>>> to_predicate(Not(In(("year",), [2024, 2025])), {"year"})
Not(child=In(term='year', values=(2024, 2025)))
>>> to_predicate(StringEndsWith(("country",), "S"), {"country"}) is None
True
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Collection, Sequence

import pyarrow as pa
from pyspark.sql import datasource as sds

from lance_partitioned.expressions.tree import (
    And,
    Comparison,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    NotNull,
    Predicate,
    StartsWith,
)

__all__ = ["native", "pushable_columns", "to_predicate"]

_SCALARS = (bool, int, float, str, bytes, datetime.date, datetime.time, decimal.Decimal)
_COMPARISONS: dict[type[sds.Filter], type[Comparison]] = {
    sds.EqualTo: EqualTo,
    sds.GreaterThan: GreaterThan,
    sds.GreaterThanOrEqual: GreaterThanOrEqual,
    sds.LessThan: LessThan,
    sds.LessThanOrEqual: LessThanOrEqual,
}


def native(dtype: pa.DataType) -> bool:
    """Whether Spark reads this Arrow type as itself, with the same order and equality."""
    t = pa.types
    if t.is_floating(dtype) or t.is_unsigned_integer(dtype):
        return False
    if t.is_timestamp(dtype):
        return bool(dtype.unit == "us")
    if t.is_decimal(dtype):
        return bool(dtype.precision <= 38)
    return bool(
        t.is_boolean(dtype)
        or t.is_integer(dtype)
        or t.is_string(dtype)
        or t.is_large_string(dtype)
        or t.is_binary(dtype)
        or t.is_large_binary(dtype)
        or t.is_date32(dtype)
    )


def pushable_columns(schema: pa.Schema) -> frozenset[str]:
    """Top-level columns of a namespace read schema that Spark filters may be pushed on.

    >>> pushable_columns(pa.schema([("id", pa.int64()), ("x", pa.float64())]))
    frozenset({'id'})
    """
    return frozenset(f.name for f in schema if native(f.type))


def _scalar(value: object) -> bool:
    return value is not None and isinstance(value, _SCALARS)


def to_predicate(spark_filter: sds.Filter, columns: Collection[str]) -> Predicate | None:
    """The predicate of one Spark filter, or None when it must stay with Spark.

    ``columns`` are the columns filters may read (:func:`pushable_columns`).
    """
    if isinstance(spark_filter, sds.Not):
        child = to_predicate(spark_filter.child, columns)
        return None if child is None else Not(child)
    attribute: Sequence[str] = getattr(spark_filter, "attribute", ())
    if len(attribute) != 1 or attribute[0] not in columns:
        return None
    name = attribute[0]
    if isinstance(spark_filter, sds.IsNull):
        return IsNull(name)
    if isinstance(spark_filter, sds.IsNotNull):
        return NotNull(name)
    value = getattr(spark_filter, "value", None)
    if isinstance(spark_filter, sds.EqualNullSafe):
        if value is None:
            return IsNull(name)
        return And(NotNull(name), EqualTo(name, value)) if _scalar(value) else None
    node = _COMPARISONS.get(type(spark_filter))
    if node is not None:
        return node(name, value) if _scalar(value) else None
    if isinstance(spark_filter, sds.In):
        values = tuple(value) if isinstance(value, (list, tuple)) else ()
        if not values or not all(_scalar(v) for v in values):
            return None
        return In(name, values)
    if isinstance(spark_filter, sds.StringStartsWith) and isinstance(value, str):
        return StartsWith(name, value)
    return None
