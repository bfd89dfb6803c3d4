"""``when_matched_update(set=...)`` of a merge: the assigned columns' SQL, checked once before
any leaf is searched, evaluated with each leaf's join (one query gives the pairs an update
applies to and their new values), and the values converted to their columns' types.

>>> print(assignment_query({"n": "target.n + source.n"}, ["target.a", "source.b"], "k = k"))
SELECT target.a, source.b, (target.n + source.n) AS "__lp_set_0" FROM target JOIN source ON k = k
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors

__all__ = ["assigned_values", "assignment_query", "check_assignments_sql"]

_PREFIX = "__lp_set_"


def _alias(position: int) -> str:
    return f"{_PREFIX}{position}"


def assignment_query(assign: Mapping[str, str], selected: Sequence[str], keys: str) -> str:
    """The join of ``target`` and ``source`` on ``keys`` selecting ``selected`` and each
    assigned expression (aliased by its position in ``assign``); a clause's WHERE follows."""
    values = [f'({sql}) AS "{_alias(i)}"' for i, sql in enumerate(assign.values())]
    return f"SELECT {', '.join([*selected, *values])} FROM target JOIN source ON {keys}"


def check_assignments_sql(assign: Mapping[str, str], read: pa.Schema, source: pa.Table) -> None:
    """Refuse an assignment to a column the namespace lacks, or an expression DataFusion
    cannot evaluate over ``target.<col>`` (the namespace's columns) and ``source.<col>``
    (the source's), before anything is read.

    Raises
    ------
    InvalidInputError
        Naming the column or the expression, and DataFusion's reason.
    """
    import datafusion

    unknown = [name for name in assign if name not in read.names]
    if unknown:
        raise errors.InvalidInputError(
            f"when_matched_update: set names column(s) {unknown} that the namespace lacks "
            f"(its columns are {read.names})"
        )
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("target", [[pa.RecordBatch.from_pylist([], schema=read)]])
    empty = pa.RecordBatch.from_pylist([], schema=source.schema)
    ctx.register_record_batches("source", [[empty]])
    for name, sql in assign.items():
        try:
            ctx.sql(f"SELECT ({sql}) AS v FROM target CROSS JOIN source").to_arrow_table()
        except Exception as exc:  # DataFusion raises plain Exception subclasses
            raise errors.InvalidInputError(
                f"when_matched_update: cannot evaluate {name} = {sql!r} over target.<col> "
                f"and source.<col>: {exc}"
            ) from exc


def assigned_values(updates: pa.Table, assign: Mapping[str, str], read: pa.Schema) -> pa.Table:
    """The assigned columns of ``updates`` (the rows of :func:`assignment_query`) in their
    columns' types (nullable: a NULL of a NOT NULL column is refused when staged).

    Raises
    ------
    InvalidInputError
        A value that does not convert to its column's type (a safe cast).
    """
    fields: list[pa.Field] = []
    arrays: list[pa.ChunkedArray] = []
    for position, name in enumerate(assign):
        target = read.field(name)
        column = updates.column(_alias(position))
        try:
            arrays.append(pc.cast(column, target.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise errors.InvalidInputError(
                f"when_matched_update: {name} = {assign[name]!r} gives {column.type} values "
                f"that do not convert to the column's type {target.type}: {exc}. Nothing "
                "was changed"
            ) from exc
        fields.append(target.with_nullable(True))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
