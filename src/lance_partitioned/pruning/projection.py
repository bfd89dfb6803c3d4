"""Inclusive projection: a predicate on source columns → a predicate on partition columns.

Every row that matches the predicate lies in a partition whose values match the projection
(PyIceberg's ``inclusive_projection``), so the projection filters the ``__manifest`` without
losing a leaf. The visitor groups the leaves of each conjunction by column and asks every
partition field on that column: :meth:`~lance_partitioned.spec.transforms.Transform.project`
for each leaf, :meth:`~lance_partitioned.spec.transforms.Transform.project_range` for the
interval the comparisons allow, and, for fields that declare a joint order (year, month, day,
hour), :func:`~lance_partitioned.pruning.joint.lexicographic` over them together. What
each transform projects is written on its class.

Comparisons (and ranges) within one conjunction are first merged into one interval per
column: an empty interval projects to AlwaysFalse. A column with no partition field, and an
:class:`Unknown`, project to AlwaysTrue.

>>> import pyarrow as pa
>>> from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
>>> from lance_partitioned.spec.schema import NamespaceSchema
>>> from lance_partitioned.expressions import bind, parse_sql
>>> arrow = pa.schema([("ts", pa.timestamp("us")), ("country", pa.utf8())])
>>> schema = NamespaceSchema.from_arrow(arrow)
>>> spec = PartitionSpec(1, (
...     PartitionField(1, "year", 0, "date_part('year', col)", pa.int32()),
...     PartitionField(2, "month", 0, "date_part('month', col)", pa.int32()),
... ))
>>> p = bind(parse_sql("ts >= DATE '2025-06-01' AND ts < DATE '2025-07-01'", arrow), arrow)
>>> project(p, spec, schema)
And(left=EqualTo(term='year', value=2025), right=EqualTo(term='month', value=6))
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from lance_partitioned.errors import InvalidInputError, SchemaError
from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.ranges import Interval
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.expressions.visitor import PredicateVisitor, visit
from lance_partitioned.expressions.visitors import bind, rewrite_not
from lance_partitioned.pruning import joint
from lance_partitioned.pruning.multicolumn import multi_bucket_parts
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema

__all__ = ["conjuncts", "project", "source_fields", "term_interval"]


def project(predicate: Predicate, spec: PartitionSpec, schema: NamespaceSchema) -> Predicate:
    """The inclusive projection of a bound predicate onto ``spec``'s partition columns.

    Parameters
    ----------
    predicate : Predicate
        Bound (:func:`~lance_partitioned.expressions.bind`) to ``schema.read_schema()``.
    spec : PartitionSpec
        One spec version; the result names its partition fields (``__manifest`` columns).
    schema : NamespaceSchema
        Maps column names to the field ids that partition fields reference.

    Returns
    -------
    Predicate
        Over partition field names, literals of each field's ``result_type``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
    >>> from lance_partitioned.spec.schema import NamespaceSchema
    >>> from lance_partitioned.expressions.tree import EqualTo, LessThan
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("id", pa.int64())]))
    >>> spec = PartitionSpec(1, (PartitionField(1, "id_b", 0, "abs(hash(col)) % 16", pa.int64()),
    ...                          PartitionField(2, "id_t", 0, "col - (col % 10)", pa.int64())))
    >>> project(EqualTo("id", 1), spec, schema)
    And(left=EqualTo(term='id_b', value=11), right=EqualTo(term='id_t', value=0))
    >>> project(LessThan("id", 30), spec, schema)
    And(left=NotNull(term='id_b'), right=LessThanOrEqual(term='id_t', value=20))
    """
    projector = _Projector(spec, schema)
    return projector.project(visit(rewrite_not(predicate), projector))


def conjuncts(predicate: Predicate) -> list[Predicate]:
    """The operands of a chain of ANDs (the predicate itself if it is not an And).

    >>> from lance_partitioned.expressions.tree import IsNull
    >>> conjuncts(IsNull("a") & IsNull("b") & IsNull("c"))
    [IsNull(term='a'), IsNull(term='b'), IsNull(term='c')]
    """
    return t.operands(predicate, t.And)


def source_fields(
    spec: PartitionSpec, schema: NamespaceSchema, term: str
) -> tuple[list[PartitionField], pa.DataType | None]:
    """The fields of ``spec`` on live column ``term`` that apply to its type, and that type.

    >>> import pyarrow as pa
    >>> from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
    >>> from lance_partitioned.spec.schema import NamespaceSchema
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("id", pa.int64())]))
    >>> spec = PartitionSpec(1, (PartitionField(1, "id", 0, "col", pa.int64()),))
    >>> [f.name for f in source_fields(spec, schema, "id")[0]], source_fields(spec, schema, "x")
    (['id'], ([], None))
    """
    try:
        field_id = schema.field_id(term)
        source = schema.field_by_id(field_id).type
    except SchemaError:
        return [], None
    fields = [f for f in spec.fields if f.source_id == field_id and f.transform.projects_on(source)]
    return fields, source


def term_interval(leaves: list[Predicate], source: pa.DataType) -> Interval | None:
    """The interval that the comparisons among ``leaves`` allow (None: none constrain).

    Only for ordered types without NaN (integers, decimals, dates, timestamps, strings);
    strict bounds are closed where the type is discrete.

    >>> import pyarrow as pa
    >>> from lance_partitioned.expressions.tree import GreaterThan, LessThanOrEqual
    >>> term_interval([GreaterThan("x", 1), LessThanOrEqual("x", 5)], pa.int32())
    Interval(low=2, low_inclusive=True, high=5, high_inclusive=True)
    """
    types = pa.types
    ordered = (
        types.is_integer(source)
        or types.is_decimal(source)
        or types.is_date(source)
        or types.is_timestamp(source)
        or types.is_string(source)
        or types.is_large_string(source)
    )
    if not ordered:
        return None
    interval: Interval | None = None
    for leaf in leaves:
        bound = visit(leaf, _BOUND)
        if bound is None:
            continue
        try:
            interval = bound if interval is None else interval.intersect(bound)
        except TypeError:  # literals of mixed types: an unbound predicate
            return None
    return None if interval is None else interval.closed(source)


class _Bound(PredicateVisitor[Interval | None]):
    """The interval a comparison allows (None for the other leaves)."""

    def visit_leaf(self, p: Predicate) -> Interval | None:
        return None

    def visit_equal_to(self, p: t.EqualTo) -> Interval | None:
        return Interval(p.value, True, p.value, True)

    def visit_less_than(self, p: t.LessThan) -> Interval | None:
        return Interval(high=p.value, high_inclusive=False)

    def visit_less_than_or_equal(self, p: t.LessThanOrEqual) -> Interval | None:
        return Interval(high=p.value, high_inclusive=True)

    def visit_greater_than(self, p: t.GreaterThan) -> Interval | None:
        return Interval(low=p.value, low_inclusive=False)

    def visit_greater_than_or_equal(self, p: t.GreaterThanOrEqual) -> Interval | None:
        return Interval(low=p.value, low_inclusive=True)


_BOUND = _Bound()


class _NotNullTerm(PredicateVisitor[str | None]):
    """The column a leaf proves not NULL by testing its value (None for the others)."""

    def visit_and(self, parts: list[str | None]) -> str | None:
        return None

    def visit_or(self, parts: list[str | None]) -> str | None:
        return None

    def visit_leaf(self, p: Predicate) -> str | None:
        return None

    def visit_comparison(self, p: t.Comparison) -> str | None:
        return p.term

    def visit_set(self, p: t.SetPredicate) -> str | None:
        return p.term

    def visit_prefix(self, p: t.StartsWith | t.NotStartsWith) -> str | None:
        return p.term


@dataclass
class _Conjunction:
    """A conjunction being projected: parts already projected (constants, ORs) and the
    leaves on each column, projected together by :meth:`_Projector.term`."""

    parts: list[Predicate] = field(default_factory=list)
    leaves: dict[str, list[Predicate]] = field(default_factory=dict)


class _Projector(PredicateVisitor[_Conjunction]):
    def __init__(self, spec: PartitionSpec, schema: NamespaceSchema) -> None:
        self.spec = spec
        self.schema = schema
        self.partition_schema = pa.schema([(f.name, f.result_type) for f in spec.fields])

    def project(self, c: _Conjunction) -> Predicate:
        multi = [self.bound(p) for p in multi_bucket_parts(self.spec, self.schema, c.leaves)]
        terms = (self.term(term, leaves) for term, leaves in c.leaves.items())
        return t.and_(*c.parts, *terms, *multi)

    def visit_and(self, parts: list[_Conjunction]) -> _Conjunction:
        merged = _Conjunction()
        for part in parts:
            merged.parts += part.parts
            for term, leaves in part.leaves.items():
                merged.leaves.setdefault(term, []).extend(leaves)
        return merged

    def visit_or(self, parts: list[_Conjunction]) -> _Conjunction:
        return _Conjunction([t.or_(*(self.project(part) for part in parts))])

    def visit_true(self, p: t.AlwaysTrue) -> _Conjunction:
        return _Conjunction([p])

    def visit_false(self, p: t.AlwaysFalse) -> _Conjunction:
        return _Conjunction([p])

    def visit_unknown(self, p: t.Unknown) -> _Conjunction:
        return _Conjunction()  # projects to AlwaysTrue

    def visit_leaf(self, p: Predicate) -> _Conjunction:
        term = getattr(p, "term", None)
        if not isinstance(term, str):
            raise InvalidInputError(f"cannot project {p!r}: not a bound predicate")
        return _Conjunction(leaves={term: [p]})

    def bound(self, p: Predicate) -> Predicate:
        """``p`` with literals coerced to the partition columns' types (AlwaysTrue if not)."""
        try:
            return bind(p, self.partition_schema)
        except InvalidInputError:
            return t.AlwaysTrue()

    def term(self, term: str, leaves: list[Predicate]) -> Predicate:
        fields, source = source_fields(self.spec, self.schema, term)
        if not fields or source is None:
            return t.AlwaysTrue()
        interval = term_interval(leaves, source)
        if interval is not None and interval.is_empty():
            return t.AlwaysFalse()
        chain = joint.chain(fields)
        parts: dict[Predicate, None] = {}
        if interval is not None and chain:
            parts[self.bound(joint.lexicographic(chain, interval, source))] = None
        for f in fields:
            transform, name, result = f.transform, f.name, f.result_type
            for leaf in leaves:
                parts[self.bound(transform.project(name, leaf, source, result))] = None
            if interval is not None and f not in chain:
                parts[self.bound(transform.project_range(name, interval, source, result))] = None
        return _without_implied(list(parts))


def _without_implied(parts: list[Predicate]) -> Predicate:
    """The conjunction of ``parts`` without ``NotNull(c)`` where a test of ``c`` implies it."""
    flat = [leaf for part in parts for leaf in conjuncts(part)]
    implied = {
        t.NotNull(term) for leaf in flat if (term := visit(leaf, _NotNullTerm())) is not None
    }
    kept = dict.fromkeys(leaf for leaf in flat if leaf not in implied)
    return t.and_(*kept)
