"""Inclusive projection: a predicate on source columns → a predicate on partition columns.

Every row that matches the predicate lies in a partition whose values match the projection
(PyIceberg's ``inclusive_projection``), so the projection filters the ``__manifest`` without
losing a leaf. Each transform projects what it can (a dispatch table here, keyed by the
transform classes of :mod:`lance_partitioned.spec.transforms`):

==============  ==============================================================================
transform       projects
==============  ==============================================================================
identity        everything: the same test on the partition column
year            ``=``, IN, ranges (``ts < X`` → ``year <= year(X - 1 unit)``)
month/day/hour  ``=``, IN; a bounded range → the set of values it covers when smaller than the
                domain; with year (and month, day) of the same source: ranges jointly, as
                an interval of (year, month, day, hour) in lexicographic order
bucket          ``=`` and IN, by hashing the literals
truncate        strings: ``=``, IN, ranges, ``LIKE 'p%'`` (``len(p) >= W``: ``= p[:W]``,
                shorter: ``LIKE 'p%'`` on the partition); numbers: ``=``, IN, ranges
opaque          ``=`` and IN, evaluating the expression on the literal with DataFusion
==============  ==============================================================================

Comparisons (and ranges) within one conjunction are first merged into one interval per
column: an empty interval projects to AlwaysFalse. NULL follows SQL: ``x IS NULL`` projects to
``part IS NULL`` (every transform maps NULL to NULL), and any other test implies
``part IS NOT NULL`` except for opaque expressions, which may map a value to NULL. A column
with no partition field, and an :class:`Unknown`, project to AlwaysTrue.

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

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from lance_partitioned.errors import InvalidInputError, SchemaError
from lance_partitioned.expressions import dateparts
from lance_partitioned.expressions.ranges import FAILED, Interval, transform_literal
from lance_partitioned.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Comparison,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    Or,
    Predicate,
    StartsWith,
    Unknown,
    and_,
    or_,
)
from lance_partitioned.expressions.visitors import bind, rewrite_not
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.transforms import (
    Bucket,
    Day,
    Hour,
    Identity,
    Month,
    Opaque,
    Transform,
    Truncate,
    Year,
)

__all__ = ["conjuncts", "project", "source_fields", "term_interval"]

_RANGE = (EqualTo, LessThan, LessThanOrEqual, GreaterThan, GreaterThanOrEqual)


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
    return projector.visit(rewrite_not(predicate))


def conjuncts(predicate: Predicate) -> list[Predicate]:
    """The operands of a chain of ANDs (the predicate itself if it is not an And).

    >>> from lance_partitioned.expressions.tree import IsNull
    >>> conjuncts(IsNull("a") & IsNull("b") & IsNull("c"))
    [IsNull(term='a'), IsNull(term='b'), IsNull(term='c')]
    """
    if isinstance(predicate, And):
        return conjuncts(predicate.left) + conjuncts(predicate.right)
    return [predicate]


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
    fields = [
        f
        for f in spec.fields
        if f.source_id == field_id and _applies(f.transform, source, f.result_type)
    ]
    return fields, source


def _applies(transform: Transform, source: pa.DataType, result: pa.DataType) -> bool:
    if isinstance(transform, Opaque):
        return True  # evaluated on demand; a failure projects to AlwaysTrue
    try:
        return transform.can_apply(source)
    except Exception:  # a transform that cannot even say: prune nothing with it
        return False


def term_interval(leaves: list[Predicate], source: pa.DataType) -> Interval | None:
    """The interval that the comparisons among ``leaves`` allow (None: none constrain).

    Only for ordered types without NaN (integers, decimals, dates, timestamps, strings);
    strict bounds are closed where the type is discrete.

    >>> import pyarrow as pa
    >>> from lance_partitioned.expressions.tree import GreaterThan, LessThanOrEqual
    >>> term_interval([GreaterThan("x", 1), LessThanOrEqual("x", 5)], pa.int32())
    Interval(low=2, low_inclusive=True, high=5, high_inclusive=True)
    """
    t = pa.types
    ordered = (
        t.is_integer(source)
        or t.is_decimal(source)
        or t.is_date(source)
        or t.is_timestamp(source)
        or t.is_string(source)
        or t.is_large_string(source)
    )
    if not ordered:
        return None
    interval: Interval | None = None
    for leaf in leaves:
        if not isinstance(leaf, _RANGE):
            continue
        value = leaf.value
        if isinstance(leaf, EqualTo):
            bound = Interval(value, True, value, True)
        elif isinstance(leaf, (LessThan, LessThanOrEqual)):
            bound = Interval(high=value, high_inclusive=isinstance(leaf, LessThanOrEqual))
        else:
            bound = Interval(low=value, low_inclusive=isinstance(leaf, GreaterThanOrEqual))
        try:
            interval = bound if interval is None else interval.intersect(bound)
        except TypeError:  # literals of mixed types: an unbound predicate
            return None
    return None if interval is None else interval.closed(source)


class _Projector:
    def __init__(self, spec: PartitionSpec, schema: NamespaceSchema) -> None:
        self.spec = spec
        self.schema = schema
        self.partition_schema = pa.schema([(f.name, f.result_type) for f in spec.fields])

    def visit(self, p: Predicate) -> Predicate:
        if isinstance(p, Or):
            return or_(self.visit(p.left), self.visit(p.right))
        groups: dict[str, list[Predicate]] = {}
        parts: list[Predicate] = []
        for leaf in conjuncts(p):
            if isinstance(leaf, (AlwaysTrue, AlwaysFalse)):
                parts.append(leaf)
            elif isinstance(leaf, Or):
                parts.append(self.visit(leaf))
            elif isinstance(leaf, Unknown):
                continue
            else:
                term = getattr(leaf, "term", None)
                if not isinstance(term, str):
                    raise InvalidInputError(f"cannot project {leaf!r}: not a bound predicate")
                groups.setdefault(term, []).append(leaf)
        for term, leaves in groups.items():
            parts.append(self.term(term, leaves))
        return and_(*parts)

    def bound(self, p: Predicate) -> Predicate:
        """``p`` with literals coerced to the partition columns' types (AlwaysTrue if not)."""
        try:
            return bind(p, self.partition_schema)
        except InvalidInputError:
            return AlwaysTrue()

    def term(self, term: str, leaves: list[Predicate]) -> Predicate:
        fields, source = source_fields(self.spec, self.schema, term)
        if not fields or source is None:
            return AlwaysTrue()
        interval = term_interval(leaves, source)
        if interval is not None and interval.is_empty():
            return AlwaysFalse()
        chain = dateparts.chain(fields)
        parts: dict[Predicate, None] = {}
        if interval is not None and chain:
            parts[self.bound(dateparts.lexicographic(chain, interval))] = None
        for f in fields:
            for leaf in leaves:
                parts[self.bound(_project_leaf(f, leaf, source))] = None
            if interval is not None and f not in chain:
                parts[self.bound(_project_interval(f, interval, source))] = None
        return _without_implied(list(parts))


def _without_implied(parts: list[Predicate]) -> Predicate:
    """The conjunction of ``parts`` without ``NotNull(c)`` where a test of ``c`` implies it."""
    flat = [leaf for part in parts for leaf in conjuncts(part)]
    tested = {
        leaf.term
        for leaf in flat
        if isinstance(leaf, (Comparison, In, NotIn, StartsWith, NotStartsWith))
    }
    kept = dict.fromkeys(
        leaf for leaf in flat if not (isinstance(leaf, NotNull) and leaf.term in tested)
    )
    return and_(*kept)


def _project_interval(f: PartitionField, interval: Interval, source: pa.DataType) -> Predicate:
    """A range on a monotonic transform, or the set of values a bounded range covers."""
    t = f.transform
    if isinstance(t, (Month, Day, Hour)):
        return dateparts.covered(f.name, t, interval)
    if not isinstance(t, (Year, Truncate)):
        return AlwaysTrue()
    if isinstance(t, Truncate) and t.string:
        return _string_range(f.name, t.width, interval)

    def image(value: Any) -> Any:
        return transform_literal(t, value, source, f.result_type)

    if interval.low is not None and interval.low == interval.high:
        return EqualTo(f.name, image(interval.low))
    parts: list[Predicate] = []
    if interval.low is not None:
        parts.append(GreaterThanOrEqual(f.name, image(interval.low)))
    if interval.high is not None:
        parts.append(LessThanOrEqual(f.name, image(interval.high)))
    return and_(*parts)


def _string_range(name: str, width: int, interval: Interval) -> Predicate:
    """``left(x, W)`` is monotonic; a strict bound shorter than W stays strict."""
    low, high = interval.low, interval.high
    if low is not None and low == high and interval.low_inclusive and interval.high_inclusive:
        return EqualTo(name, low[:width])
    parts: list[Predicate] = []
    if low is not None:
        strict = not interval.low_inclusive and len(low) < width
        parts.append(GreaterThan(name, low) if strict else GreaterThanOrEqual(name, low[:width]))
    if high is not None:
        strict = not interval.high_inclusive and len(high) <= width
        parts.append(LessThan(name, high) if strict else LessThanOrEqual(name, high[:width]))
    return and_(*parts)


def _project_leaf(f: PartitionField, leaf: Predicate, source: pa.DataType) -> Predicate:
    """The projection of one leaf through one field (ranges aside, see ``_project_interval``)."""
    t, name = f.transform, f.name
    if isinstance(leaf, IsNull):
        return IsNull(name)
    if isinstance(t, Opaque):
        return _opaque(f, leaf, source)
    projector = _LEAF_PROJECTIONS.get(type(t))
    projected = None if projector is None else projector(f, leaf, source)
    return NotNull(name) if projected is None else projected


def _images(f: PartitionField, values: tuple[Any, ...], source: pa.DataType) -> list[Any] | None:
    images = [transform_literal(f.transform, v, source, f.result_type) for v in values]
    return None if any(i is FAILED for i in images) else list(dict.fromkeys(images))


def _opaque(f: PartitionField, leaf: Predicate, source: pa.DataType) -> Predicate:
    """Opaque expressions project ``=`` and IN only; they may map a value to NULL."""
    if isinstance(leaf, EqualTo):
        values: tuple[Any, ...] = (leaf.value,)
    elif isinstance(leaf, In):
        values = leaf.values
    else:
        return AlwaysTrue()
    images = _images(f, values, source)
    if images is None:
        return AlwaysTrue()
    kept = tuple(i for i in images if i is not None)
    return or_(In(f.name, kept), IsNull(f.name) if None in images else AlwaysFalse())


def _identity(f: PartitionField, leaf: Predicate, source: pa.DataType) -> Predicate | None:
    if isinstance(leaf, NotNull):
        return NotNull(f.name)
    if isinstance(leaf, Comparison):
        return type(leaf)(f.name, leaf.value)
    if isinstance(leaf, (In, NotIn)):
        return type(leaf)(f.name, leaf.values)
    if isinstance(leaf, (StartsWith, NotStartsWith)):
        return type(leaf)(f.name, leaf.prefix)
    return None


def _by_value(f: PartitionField, leaf: Predicate, source: pa.DataType) -> Predicate | None:
    """``=`` (where no interval does it) and IN through the transform of each literal."""
    values: tuple[Any, ...]
    if isinstance(leaf, EqualTo) and isinstance(f.transform, Bucket):
        values = (leaf.value,)
    elif isinstance(leaf, In):
        values = leaf.values
    else:
        return None
    images = _images(f, values, source)
    return None if images is None else In(f.name, tuple(images))


def _truncate(f: PartitionField, leaf: Predicate, source: pa.DataType) -> Predicate | None:
    t = f.transform
    assert isinstance(t, Truncate)
    if not t.string:
        return _by_value(f, leaf, source)
    width = t.width
    if isinstance(leaf, StartsWith):
        if len(leaf.prefix) >= width:
            return EqualTo(f.name, leaf.prefix[:width])
        return StartsWith(f.name, leaf.prefix)
    if isinstance(leaf, NotStartsWith) and len(leaf.prefix) <= width:
        return NotStartsWith(f.name, leaf.prefix)  # left(x, W) starts with p iff x does
    # A partition value shorter than W is the whole source value.
    if isinstance(leaf, NotEqualTo) and len(leaf.value) < width:
        return NotEqualTo(f.name, leaf.value)
    if isinstance(leaf, NotIn):
        short = tuple(v for v in leaf.values if len(v) < width)
        return NotIn(f.name, short) if short else None
    return _by_value(f, leaf, source)


_LEAF_PROJECTIONS: dict[
    type[Transform], Callable[[PartitionField, Predicate, pa.DataType], Predicate | None]
] = {
    Identity: _identity,
    Bucket: _by_value,
    Truncate: _truncate,
    Year: _by_value,
    Month: _by_value,
    Day: _by_value,
    Hour: _by_value,
}
