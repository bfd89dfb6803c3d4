"""Residual filters of a scan task: what Lance evaluates in a leaf, what runs in memory.

A task's residual goes into the leaf's Lance scanner as SQL (:func:`leaf_filter`) when the
leaf stores the columns it reads under their namespace names and types and Lance can parse
it; otherwise :func:`post_filter` evaluates it on the conformed batches (pyarrow, or
DataFusion for SQL only it knows; conditions on partition field names are computed over
their source columns).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

import lance
import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.expressions import Predicate, filter_arrow, terms, to_sql
from lance_partitioned.expressions.sqltext import deep
from lance_partitioned.expressions.tree import Unknown
from lance_partitioned.expressions.visitor import leaves, map_leaves
from lance_partitioned.pruning.fieldnames import (
    FieldCondition,
    FieldExpression,
    field_conditions,
    field_expressions,
)
from lance_partitioned.runtime.leaf_cache import leaf_schema
from lance_partitioned.spec.evaluate import evaluate

__all__ = [
    "leaf_filter",
    "post_filter",
    "pushdown_filter",
    "residual_fields",
    "sql_filter",
]


def residual_fields(predicate: Predicate, read: pa.Schema) -> list[pa.Field]:
    """The read-schema fields a residual reads: its terms, or every column when it holds an
    Unknown that does not name its columns.

    >>> from lance_partitioned.expressions import EqualTo, GreaterThan, and_
    >>> read = pa.schema([("id", pa.int64()), ("c", pa.string()), ("n", pa.int64())])
    >>> [f.name for f in residual_fields(and_(GreaterThan("n", 1), EqualTo("c", "US")), read)]
    ['c', 'n']
    """
    if any(not node.columns for node in _unknowns(predicate)):
        return list(read)
    return [read.field(name) for name in sorted(terms(predicate))]


def pushdown_filter(
    predicate: Predicate, fields: Sequence[pa.Field], sources: Sequence[pa.Field | None]
) -> str | None:
    """The residual as Lance SQL when the leaf stores every column it reads (``fields``, see
    :func:`residual_fields`) under its namespace name and type (``sources[i]`` is the leaf's
    field holding ``fields[i]``, None when absent), else None: then it is evaluated in
    memory by :func:`post_filter` (so are conditions on partition field names).

    >>> from lance_partitioned.expressions import GreaterThan
    >>> n = pa.field("n", pa.int64())
    >>> pushdown_filter(GreaterThan("n", 1), [n], [n])
    '`n` > 1'
    >>> pushdown_filter(GreaterThan("n", 1), [n], [pa.field("n", pa.int32())]) is None
    True
    """
    if (
        not field_conditions(predicate)
        and not field_expressions(predicate)
        and all(
            source is not None and source.name == field.name and source.type == field.type
            for field, source in zip(fields, sources, strict=True)
        )
    ):
        return to_sql(predicate)
    return None


def leaf_filter(
    dataset: lance.LanceDataset,
    predicate: Predicate,
    fields: Sequence[pa.Field],
    sources: Sequence[pa.Field | None],
) -> str | None:
    """:func:`pushdown_filter` for one opened leaf: also None when the residual holds SQL
    Lance's filter cannot evaluate (``CASE``: Lance parses a subset of DataFusion's SQL),
    which :func:`post_filter` then evaluates in memory with DataFusion."""
    sql = pushdown_filter(predicate, fields, sources)
    if sql is None or not _unknowns(predicate):
        return sql  # a tree of plain leaves: Lance takes its SQL
    return sql if _lance_accepts(dataset, sql) else None


_ACCEPTED: dict[tuple[str, pa.Schema], bool] = {}
_ACCEPTED_LOCK = threading.Lock()
_ACCEPTED_SIZE = 1024


def _lance_accepts(dataset: lance.LanceDataset, sql: str) -> bool:
    """Whether Lance plans a scan of ``dataset`` with the filter ``sql`` (by filter and leaf
    schema, the schema converted once per dataset object; cached: planning reads no data,
    about 0.2 ms)."""
    key = (sql, leaf_schema(dataset))
    with _ACCEPTED_LOCK:
        known = _ACCEPTED.get(key)
    if known is not None:
        return known
    try:
        dataset.scanner(columns=[], with_row_id=True, filter=sql).explain_plan()
        accepted = True
    except (OSError, ValueError):  # "... is not supported SQL in lance", a type error
        accepted = False
    with _ACCEPTED_LOCK:
        if len(_ACCEPTED) >= _ACCEPTED_SIZE:
            _ACCEPTED.clear()
        _ACCEPTED[key] = accepted
    return accepted


def _unknowns(predicate: Predicate) -> list[Unknown]:
    """The Unknown nodes of a predicate (any depth)."""
    return leaves(predicate, Unknown)


def sql_filter(table: pa.Table, condition: str, what: str = "filter") -> pa.Table:
    """The rows of an in-memory table for which the SQL ``condition`` holds (DataFusion).

    An invalid condition raises :class:`~lance_partitioned.errors.InvalidInputError` that
    calls it ``what``.

    >>> sql_filter(pa.table({"n": [1, 2, 3]}), "n % 2 = 1").column("n").to_pylist()
    [1, 3]
    """
    import datafusion

    def run() -> pa.Table:
        ctx = datafusion.SessionContext()
        ctx.register_record_batches(
            "t", [table.to_batches() or [pa.record_batch([], schema=table.schema)]]
        )
        return ctx.sql(f"SELECT * FROM t WHERE {condition}").to_arrow_table()

    try:
        result = deep(run)  # DataFusion recurses as deep as the condition nests
    except Exception as exc:
        raise errors.InvalidInputError(f"cannot apply {what} {condition!r}: {exc}") from exc
    return result.cast(table.schema) if result.num_rows else table.slice(0, 0)


def post_filter(batch: pa.RecordBatch, predicate: Predicate) -> pa.RecordBatch:
    """Filter a batch conformed to the namespace read schema in memory: residuals Lance
    cannot evaluate in the leaf (over renamed or cast columns), and conditions on partition
    field names (each field's expression is computed over its source column with
    DataFusion, as the transform's reference path does).

    >>> from lance_partitioned.expressions import GreaterThan
    >>> batch = pa.record_batch({"n": [1, 2, 3]})
    >>> post_filter(batch, GreaterThan("n", 1)).column("n").to_pylist()
    [2, 3]
    """
    conditions = field_conditions(predicate)
    if conditions:
        batch, predicate = _field_columns(batch, predicate, conditions)
    expressions = field_expressions(predicate)
    if expressions:
        batch = _named_fields(batch, expressions)
    if not _unknowns(predicate):
        return filter_arrow(batch, predicate)
    table = sql_filter(pa.Table.from_batches([batch]), to_sql(predicate))
    return table.combine_chunks().to_batches()[0] if table.num_rows else batch.slice(0, 0)


def _field_columns(
    batch: pa.RecordBatch, predicate: Predicate, conditions: list[FieldCondition]
) -> tuple[pa.RecordBatch, Predicate]:
    """``batch`` with one computed column per field condition, and ``predicate`` with each
    condition replaced by its leaf on that column."""
    columns = list(batch.columns)
    names = list(batch.schema.names)
    computed: dict[tuple[str, str, pa.DataType], str] = {}
    swap: dict[int, Predicate] = {}
    for node in conditions:
        key = (node.columns[0], node.expression, node.result_type)
        if key not in computed:
            computed[key] = name = f"__lp_field_{len(computed)}__"
            source = batch.column(names.index(node.columns[0]))
            columns.append(evaluate(node.expression, source, node.result_type))
            names.append(name)
        swap[id(node)] = dataclasses.replace(node.leaf, term=computed[key])  # type: ignore[type-var]

    swapped = map_leaves(predicate, lambda p: swap.get(id(p), p))
    return pa.RecordBatch.from_arrays(columns, names=names), swapped


def _named_fields(batch: pa.RecordBatch, expressions: list[FieldExpression]) -> pa.RecordBatch:
    """``batch`` with one column per partition field the expressions read, named as the
    field and computed over its source column (field names are never read-schema columns)."""
    columns = list(batch.columns)
    names = list(batch.schema.names)
    for node in expressions:
        for term in node.fields:
            if term.name not in names:
                source = batch.column(names.index(term.source))
                columns.append(evaluate(term.expression, source, term.result_type))
                names.append(term.name)
    return pa.RecordBatch.from_arrays(columns, names=names)
