"""Residuals: what is still to filter inside one partition, given its partition values.

A partition's values guarantee facts about its rows (pyarrow.dataset calls them the
fragment's *guarantee*): ``country = 'US'`` pins the column, ``year = 2025`` bounds the
timestamps to 2025, ``id_t = 20`` (``truncate[10]``) bounds ``id`` to [20, 29], a bucket or
an opaque value rules out literals that map elsewhere. Each transform says what one of its
values proves (:meth:`~lance_partitioned.spec.transforms.Transform.preimage`); the fields that
order a source jointly (year, month, …) bound it to the cell of their leading values. A
condition the guarantee decides becomes AlwaysTrue or AlwaysFalse; the rest stays. The
residual is sound: on the partition's rows it matches exactly the rows the predicate matches.
AlwaysFalse means the partition can be skipped.

>>> import pyarrow as pa
>>> from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
>>> from lance_partitioned.spec.schema import NamespaceSchema
>>> from lance_partitioned.expressions.tree import EqualTo, GreaterThan
>>> schema = NamespaceSchema.from_arrow(pa.schema([("country", pa.utf8()), ("n", pa.int64())]))
>>> spec = PartitionSpec(1, (PartitionField(1, "country", 0, "col", pa.utf8()),))
>>> p = EqualTo("country", "US") & GreaterThan("n", 5)
>>> residual(p, spec, schema, {"country": "US"})
GreaterThan(term='n', value=5)
>>> residual(p, spec, schema, {"country": "FR"})
AlwaysFalse()
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.ranges import NOTHING, Interval
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.expressions.visitor import LeafMapper, PredicateVisitor, visit
from lance_partitioned.expressions.visitors import rewrite_not
from lance_partitioned.pruning import joint
from lance_partitioned.pruning.decisions import (
    ByImages,
    ByInterval,
    ByPrefix,
    Decider,
    decide,
    holds,
)
from lance_partitioned.pruning.projection import source_fields
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.transforms import Transform

__all__ = ["residual"]


def residual(
    predicate: Predicate,
    spec: PartitionSpec,
    schema: NamespaceSchema,
    values: Mapping[str, Any],
) -> Predicate:
    """The part of a bound predicate still to evaluate inside one partition.

    Parameters
    ----------
    predicate : Predicate
        Bound to ``schema.read_schema()``.
    spec : PartitionSpec
        The spec version the partition was written with.
    schema : NamespaceSchema
        The namespace schema (maps column names to source ids).
    values : Mapping[str, Any]
        The partition's values by partition field name (None for NULL); a field missing
        from the mapping proves nothing.

    Returns
    -------
    Predicate
        AlwaysFalse if no row of the partition can match; AlwaysTrue if every row does.

    Examples
    --------
    >>> import datetime, pyarrow as pa
    >>> from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
    >>> from lance_partitioned.spec.schema import NamespaceSchema
    >>> from lance_partitioned.expressions.tree import GreaterThanOrEqual, LessThan
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("d", pa.date32())]))
    >>> spec = PartitionSpec(1, (PartitionField(1, "y", 0, "date_part('year', col)", pa.int32()),))
    >>> march, end = datetime.date(2025, 3, 1), datetime.date(2027, 1, 1)
    >>> p = GreaterThanOrEqual("d", march) & LessThan("d", end)
    >>> residual(p, spec, schema, {"y": 2026})
    AlwaysTrue()
    >>> residual(p, spec, schema, {"y": 2025})
    GreaterThanOrEqual(term='d', value=datetime.date(2025, 3, 1))
    """
    return visit(rewrite_not(predicate), _Residual(spec, schema, values))


class _Residual(LeafMapper):
    """Each leaf decided by what the partition's values guarantee about its column."""

    def __init__(self, spec: PartitionSpec, schema: NamespaceSchema, values: Mapping[str, Any]):
        self.spec = spec
        self.schema = schema
        self.values = values
        self.guarantees: dict[str, _Guarantee | None] = {}

    def guarantee(self, term: str) -> _Guarantee | None:
        if term not in self.guarantees:
            self.guarantees[term] = _guarantee(self.spec, self.schema, self.values, term)
        return self.guarantees[term]

    def visit_true(self, p: t.AlwaysTrue) -> Predicate:
        return p

    def visit_false(self, p: t.AlwaysFalse) -> Predicate:
        return p

    def visit_unknown(self, p: t.Unknown) -> Predicate:
        return p

    def visit_leaf(self, p: Predicate) -> Predicate:
        term = getattr(p, "term", None)
        known = self.guarantee(term) if isinstance(term, str) else None
        decided = None if known is None else visit(p, known)
        if decided is None:
            return p
        return t.AlwaysTrue() if decided else t.AlwaysFalse()


@dataclass
class _Guarantee(PredicateVisitor[bool | None]):
    """What a partition's values prove about one source column of every row; visiting a
    leaf on the column says whether every row matches it (True), none does (False), or
    either may (None)."""

    source: pa.DataType
    is_null: bool = False
    not_null: bool = False
    exact: list[Any] = field(default_factory=list)  # the column's one value, if known
    interval: Interval | None = None
    prefix: str | None = None
    images: list[tuple[Transform, pa.DataType, Any]] = field(default_factory=list)

    def visit_and(self, parts: list[bool | None]) -> bool | None:
        return None  # asked about leaves only

    def visit_or(self, parts: list[bool | None]) -> bool | None:
        return None

    def visit_is_null(self, p: t.IsNull) -> bool | None:
        return True if self.is_null else (False if self.not_null else None)

    def visit_not_null(self, p: t.NotNull) -> bool | None:
        return False if self.is_null else (True if self.not_null else None)

    def visit_leaf(self, p: Predicate) -> bool | None:
        if self.is_null:
            return False  # every other test of NULL is NULL
        if self.exact:
            return holds(p, self.exact[0])
        facts: list[Decider] = []
        if self.interval is not None:
            facts.append(ByInterval(self.interval))
        if self.prefix is not None:
            facts.append(ByPrefix(self.prefix))
        facts.append(ByImages(self.source, self.images))
        for fact in facts:
            decided = decide(p, fact)
            if decided is not None:
                return decided
        return None


def _guarantee(
    spec: PartitionSpec, schema: NamespaceSchema, values: Mapping[str, Any], term: str
) -> _Guarantee | None:
    fields, source = source_fields(spec, schema, term)
    fields = [f for f in fields if f.name in values]
    if not fields or source is None:
        return None
    g = _Guarantee(source)
    for f in fields:
        transform, value = f.transform, values[f.name]
        known = transform.preimage(value, source, f.result_type)
        if known.null is True:
            g.is_null = True
        elif known.null is False:
            g.not_null = True
        if known.exact is not NOTHING:
            g.exact.append(known.exact)
        if known.prefix is not None:
            g.prefix = known.prefix
        if known.interval is not None:
            _narrow(g, known.interval)
        if known.image:  # literals that map elsewhere are ruled out
            g.images.append((transform, f.result_type, value))
    chain = joint.chain(fields)  # year, then month, day, hour: the cell of the leading parts
    parts: list[Any] = []
    for f in chain:
        if values[f.name] is None:
            break
        parts.append(values[f.name])
    if parts:
        cell = joint.family(chain).cell(tuple(parts), source)
        if cell is not None:
            _narrow(g, cell)
    if g.is_null and g.not_null:
        return None  # inconsistent values: prove nothing
    if g.interval is not None:
        g.interval = g.interval.closed(source)  # [2025-01-01, 2026-01-01) is [.., 2025-12-31]
    return g


def _narrow(g: _Guarantee, interval: Interval) -> None:
    g.interval = interval if g.interval is None else g.interval.intersect(interval)
