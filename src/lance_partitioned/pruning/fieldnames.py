"""Filters that name a partition field: ``WHERE event_year = 2025`` (spec 000, Appendix C).

A filter may name a partition field (of any spec version) that is not a schema column; the
name means the field's expression over its source column (``date_part('year', event_date)``).
A name that is also a schema column means the column. The filter is parsed and bound against
the read schema extended by one column per such field (:func:`field_schema`), typed as the
field's result type. Then, per spec version:

- pruning: :func:`without_fields` turns the leaves on field names into AlwaysTrue before the
  inclusive projection (a relaxation: the tree is NOT-free), and :func:`on_fields` keeps only
  the leaves on the spec's own fields, which filter the ``__manifest`` column of that name
  directly;
- per partition, :func:`substitute` decides each leaf on a field name from the partition's
  value of the field (specs that have it), or from the value the spec's own fields on the
  same source pin (an identity field, or a range the field's transform maps to one value:
  the transforms' ``preimage``); what it cannot decide becomes a :class:`FieldCondition`, an
  :class:`Unknown` that the reader evaluates in memory after reading, computing the field's
  expression over the source column with DataFusion (the transform's ``apply_reference``);
- SQL the tree cannot express that names fields (``event_year + 1 = 2026``, ``(event_year =
  2025) IS NOT TRUE``, a ``CASE``), an :class:`Unknown`, is decided per partition the same
  way when the partition pins every value it reads (DataFusion evaluates it on those
  values), else becomes a :class:`FieldExpression`, evaluated in memory on the columns read
  with one column per field computed over its source column.

>>> import pyarrow as pa
>>> from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
>>> from lance_partitioned.spec.schema import NamespaceSchema
>>> from lance_partitioned.expressions import bind, parse_sql
>>> schema = NamespaceSchema.from_arrow(pa.schema([("d", pa.date32())]))
>>> v1 = PartitionSpec(1, (PartitionField(1, "d", 0, "col", pa.date32()),))
>>> v2 = PartitionSpec(2, (PartitionField(2, "y", 0, "date_part('year', col)", pa.int32()),))
>>> fields = field_terms([v1, v2], schema)
>>> read = field_schema(schema.read_schema(), fields)
>>> p = bind(parse_sql("y = 2025", read), read)
>>> import datetime
>>> substitute(p, v1, fields, {"d": datetime.date(2024, 5, 1)})
AlwaysFalse()
>>> substitute(p, v2, fields, {"y": 2025})
AlwaysTrue()
>>> substitute(p, v1, fields, {"d": None})
AlwaysFalse()
>>> q = bind(parse_sql("y + 1 = 2026", read), read)
>>> substitute(q, v2, fields, {"y": 2025}), substitute(q, v2, fields, {"y": 2024})
(AlwaysTrue(), AlwaysFalse())
>>> substitute(q, v1, fields, {"d": None})
AlwaysFalse()
>>> v3 = PartitionSpec(3, ())
>>> substitute(q, v3, fields, {}).columns  # decided per row: reads y's source column
('d',)
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_partitioned.errors import SchemaError
from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.ranges import FAILED, NOTHING
from lance_partitioned.expressions.render import to_sql
from lance_partitioned.expressions.sqltext import deep
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.expressions.visitor import LeafMapper, leaves, map_leaves, visit
from lance_partitioned.pruning.decisions import holds
from lance_partitioned.spec.evaluate import session_context
from lance_partitioned.spec.partitioning import PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.transforms import Transform, parse_transform

__all__ = [
    "FieldCondition",
    "FieldExpression",
    "FieldTerm",
    "field_conditions",
    "field_expressions",
    "field_schema",
    "field_terms",
    "on_fields",
    "substitute",
    "without_fields",
]


@dataclass(frozen=True)
class FieldTerm:
    """A partition field name a filter may use: its expression over a live source column."""

    name: str
    source_id: int
    source: str
    source_type: pa.DataType
    expression: str
    result_type: pa.DataType

    def sql(self) -> str:
        """The expression over the (backtick-quoted) source column.

        >>> FieldTerm("y", 0, "d", pa.date32(), "date_part('year', col)", pa.int32()).sql()
        "date_part('year', `d`)"
        """
        quoted = "`" + self.source.replace("`", "``") + "`"
        parts = self.expression.split("'")  # odd pieces are inside string literals
        parts[::2] = [re.sub(r"\bcol\b", lambda _: quoted, part) for part in parts[::2]]
        return "'".join(parts)


@dataclass(frozen=True)
class FieldCondition(t.Unknown):
    """A leaf on a partition field name, in a partition whose values do not decide it.

    ``sql`` is the leaf with the field's expression over the source column in place of the
    name; the reader evaluates ``leaf`` on ``expression`` computed over ``columns[0]`` in
    memory (never pushed into Lance, which lacks functions such as ``hash()``).
    """

    leaf: Predicate = dataclasses.field(default_factory=t.AlwaysTrue)
    expression: str = "col"
    result_type: pa.DataType = dataclasses.field(default_factory=pa.null)


@dataclass(frozen=True)
class FieldExpression(t.Unknown):
    """SQL the tree cannot express that reads partition field names, in a partition whose
    values do not decide it.

    ``sql`` still names the fields; ``columns`` are the read-schema columns it reads (each
    field's source column in place of its name). The reader adds one column per field of
    ``fields``, named as the field and computed over its source column (the field's
    expression, as for a :class:`FieldCondition`), then evaluates ``sql`` in memory with
    DataFusion (never in Lance, which knows neither the names nor every function).
    """

    fields: tuple[FieldTerm, ...] = ()


def field_terms(specs: Sequence[PartitionSpec], schema: NamespaceSchema) -> dict[str, FieldTerm]:
    """The partition field names of ``specs`` that are not read-schema columns, by name.

    A field whose source column was dropped, and a name two specs give different
    expressions or sources, are left out (a filter naming them is an unknown column).
    """
    read = schema.read_schema()
    found: dict[str, FieldTerm | None] = {}
    for spec in specs:
        for field in spec.fields:
            if field.name in read.names:
                continue
            try:
                source = schema.name_of(field.source_id)
                source_type = schema.field_by_id(field.source_id).type
            except SchemaError:
                continue
            if source not in read.names:
                continue
            term = FieldTerm(
                field.name,
                field.source_id,
                source,
                source_type,
                field.expression,
                field.result_type,
            )
            if field.name in found and found[field.name] != term:
                found[field.name] = None
            else:
                found[field.name] = term
    return {name: term for name, term in found.items() if term is not None}


def field_schema(read: pa.Schema, fields: Mapping[str, FieldTerm]) -> pa.Schema:
    """``read`` extended by one column per field name, of the field's result type."""
    return pa.schema([*read, *(pa.field(ft.name, ft.result_type) for ft in fields.values())])


def _term(p: Predicate) -> str | None:
    term = getattr(p, "term", None)
    return term if isinstance(term, str) else None


def without_fields(predicate: Predicate, fields: Mapping[str, FieldTerm]) -> Predicate:
    """A NOT-free ``predicate`` with its leaves on field names relaxed to AlwaysTrue."""
    if not fields:
        return predicate
    return map_leaves(predicate, lambda p: t.AlwaysTrue() if _term(p) in fields else p)


def on_fields(
    predicate: Predicate, spec: PartitionSpec, fields: Mapping[str, FieldTerm]
) -> Predicate:
    """Only the leaves on the field names of ``spec`` (the rest relaxed to AlwaysTrue): a
    condition on the ``__manifest`` columns of those fields."""
    own = {f.name for f in spec.fields} & set(fields)
    return map_leaves(predicate, lambda p: p if _term(p) in own else t.AlwaysTrue())


def substitute(
    predicate: Predicate,
    spec: PartitionSpec,
    fields: Mapping[str, FieldTerm],
    values: Mapping[str, Any],
) -> Predicate:
    """Decide the leaves on field names in one partition of ``spec`` with ``values``.

    A leaf its value decides becomes AlwaysTrue/AlwaysFalse; the others a
    :class:`FieldCondition`.
    """
    if not fields:
        return predicate
    return visit(predicate, _Substitute(spec, fields, values))


class _Substitute(LeafMapper):
    def __init__(
        self, spec: PartitionSpec, fields: Mapping[str, FieldTerm], values: Mapping[str, Any]
    ) -> None:
        self.spec = spec
        self.fields = fields
        self.values = values
        self.own = {f.name for f in spec.fields}
        self.known: dict[str, Any] = {}

    def value(self, term: FieldTerm) -> Any:
        """The partition's value of ``term`` (None: NULL), NOTHING when not pinned."""
        if term.name not in self.known:
            if term.name in self.own:
                self.known[term.name] = self.values.get(term.name, NOTHING)
            else:
                self.known[term.name] = _derive(term, self.spec, self.values)
        return self.known[term.name]

    def decide(self, p: Predicate, test: Callable[[Any], bool | None]) -> Predicate:
        """``p`` decided by ``test`` of its field's value, if it names a field."""
        name = _term(p)
        if name is None or name not in self.fields:
            return p
        term = self.fields[name]
        v = self.value(term)
        decided = None if v is NOTHING else test(v)
        if decided is None:
            return _condition(p, term)
        return t.AlwaysTrue() if decided else t.AlwaysFalse()

    def visit_is_null(self, p: t.IsNull) -> Predicate:
        return self.decide(p, lambda v: v is None)

    def visit_not_null(self, p: t.NotNull) -> Predicate:
        return self.decide(p, lambda v: v is not None)

    def visit_unknown(self, p: t.Unknown) -> Predicate:
        if isinstance(p, (FieldCondition, FieldExpression)):
            return p  # decided already
        return _unknown(p, self.fields, self.value)

    def visit_leaf(self, p: Predicate) -> Predicate:
        return self.decide(p, lambda v: False if v is None else holds(p, v))  # NULL: never


def _unknown(
    p: t.Unknown, fields: Mapping[str, FieldTerm], value: Callable[[FieldTerm], Any]
) -> Predicate:
    """An Unknown decided when the partition pins every column it reads (all field names),
    else, when it reads field names, a :class:`FieldExpression` over their source columns."""
    named = [fields[c] for c in p.columns if c in fields]
    if not named:
        return p
    others = [c for c in p.columns if c not in fields]
    if not others:
        known = tuple((ft.name, ft.result_type, value(ft)) for ft in named)
        if all(v is not NOTHING for _, _, v in known):
            decided = _decide(p.sql, known)
            if decided is not None:
                return t.AlwaysTrue() if decided else t.AlwaysFalse()
    columns = tuple(sorted({*others, *(ft.source for ft in named)}))
    return FieldExpression(p.sql, columns, tuple(named))


def _decide(sql: str, known: tuple[tuple[str, pa.DataType, Any], ...]) -> bool | None:
    """Whether the filter ``sql`` keeps a row holding the values ``known`` (name, type,
    value; NULL as a result keeps no row), or None when it cannot be told here (DataFusion
    cannot evaluate it: the in-memory read reports why)."""
    try:
        return _decide_cached(sql, known)
    except TypeError:  # a value that cannot be hashed
        return _decide_uncached(sql, known)


@functools.lru_cache(maxsize=1024)
def _decide_cached(sql: str, known: tuple[tuple[str, pa.DataType, Any], ...]) -> bool | None:
    return _decide_uncached(sql, known)


_CONSTANTS = "__lp_partition_values__"


def _decide_uncached(sql: str, known: tuple[tuple[str, pa.DataType, Any], ...]) -> bool | None:
    try:
        row = pa.record_batch(
            [pa.array([v], type=dtype) for _, dtype, v in known],
            names=[name for name, _, _ in known],
        )
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None

    def run() -> Any:
        ctx = session_context()
        ctx.register_record_batches(_CONSTANTS, [[row]])
        try:
            return ctx.sql(f"SELECT ({sql}) AS kept FROM {_CONSTANTS}").to_arrow_table()
        finally:
            ctx.deregister_table(_CONSTANTS)

    try:
        result = deep(run)
    except Exception:  # DataFusion raises plain Exception subclasses
        return None
    if result.num_rows != 1 or not pa.types.is_boolean(result.schema.field(0).type):
        return None
    return result.column(0)[0].as_py() is True


def _derive(term: FieldTerm, spec: PartitionSpec, values: Mapping[str, Any]) -> Any:
    """The value of ``term`` on every row of a partition of ``spec`` whose own fields pin it
    (None: NULL), else NOTHING."""
    transform = _transform(term)
    for field in spec.fields:
        if field.source_id != term.source_id or field.name not in values:
            continue
        pre = field.transform.preimage(values[field.name], term.source_type, field.result_type)
        if pre.null is True:
            return None
        if pre.exact is not NOTHING:
            image = transform.apply_literal(pre.exact, term.source_type, term.result_type)
            if image is not FAILED:
                return image
        interval = pre.interval
        if (
            transform.preserves_order
            and interval is not None
            and interval.low is not None
            and interval.high is not None
        ):
            low = transform.apply_literal(interval.low, term.source_type, term.result_type)
            high = transform.apply_literal(interval.high, term.source_type, term.result_type)
            if low is not FAILED and low is not None and low == high:
                return low
    return NOTHING


def _transform(term: FieldTerm) -> Transform:
    return parse_transform(term.expression, term.result_type)


def _condition(leaf: Predicate, term: FieldTerm) -> FieldCondition:
    named = "`" + term.name.replace("`", "``") + "`"
    sql = to_sql(leaf).replace(named, f"({term.sql()})", 1)
    return FieldCondition(sql, (term.source,), leaf, term.expression, term.result_type)


def field_expressions(predicate: Predicate) -> list[FieldExpression]:
    """The :class:`FieldExpression` nodes of a predicate."""
    return leaves(predicate, FieldExpression)


def field_conditions(predicate: Predicate) -> list[FieldCondition]:
    """The :class:`FieldCondition` nodes of a predicate."""
    return leaves(predicate, FieldCondition)
