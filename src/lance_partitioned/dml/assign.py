"""The assignments of ``update``: SQL expressions over a row, checked against the namespace
schema and computed by DataFusion (one session per thread), each cast to its column's type.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.expressions.sqltext import deep

__all__ = ["assign", "assignments", "check_assignments"]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def check_assignments(assignments: Mapping[str, str], schema: pa.Schema) -> dict[str, str]:
    """The assignments, checked: a non-empty mapping from live column names to SQL text,
    each of which DataFusion can plan over ``schema`` (a typed error otherwise)."""
    if not isinstance(assignments, Mapping) or not assignments:
        raise errors.InvalidInputError(
            "set must be a non-empty mapping from column names to SQL expressions, like "
            "{'amount': 'amount * 2'}"
        )
    checked: dict[str, str] = {}
    for name, sql in assignments.items():
        if name not in schema.names:
            raise errors.InvalidInputError(
                f"cannot assign column {name!r}: it is not a column of the namespace (its "
                f"columns are {schema.names}); partition field names cannot be assigned, "
                "assign their source column"
            )
        if not isinstance(sql, str) or not sql.strip():
            raise errors.InvalidInputError(
                f"the value assigned to {name!r} must be SQL text, like '{name}' or 'NULL', "
                f"got {sql!r}"
            )
        checked[name] = sql
    assign(schema.empty_table(), checked)  # plans every expression: errors come first
    return checked


def assignments(
    set: Mapping[str, str] | None, values: Mapping[str, Any] | None
) -> Mapping[str, str]:
    """The SQL assignments of ``update(where, set=...)`` or ``update(where, values=...)``:
    ``set`` as it is; ``values`` (column -> Python value, None for NULL) as SQL literals,
    which the update casts to each column's type.

    >>> assignments(None, {"country": "US", "note": None, "n": 2})
    {'country': "'US'", 'note': 'NULL', 'n': '2'}
    """
    if set is not None and values is not None:
        raise errors.InvalidInputError(
            "give set= (SQL expressions, {'amount': 'amount * 2'}) or values= (Python values, "
            "{'country': 'US'}), not both"
        )
    if values is None:
        if set is None:
            raise errors.InvalidInputError(
                "update needs set= (column -> SQL expression) or values= (column -> Python value)"
            )
        return set
    if not isinstance(values, Mapping) or not values:
        raise errors.InvalidInputError(
            "values must be a non-empty mapping from column names to Python values, like "
            "{'country': 'US'}"
        )
    from lance_partitioned.expressions.render import sql_literal

    converted: dict[str, str] = {}
    for name, value in values.items():
        try:
            converted[name] = "NULL" if value is None else sql_literal(value)
        except errors.InvalidInputError as exc:
            raise errors.InvalidInputError(
                f"values: the value for column {name!r} cannot be assigned: {exc} (pass "
                "None, a bool, int, float, Decimal, str, bytes, date, datetime or time; or "
                "SQL text with set=)"
            ) from exc
    return converted


_SHALLOW_QUERY = 2_000  # characters: a query this short runs on the calling thread
_sessions = threading.local()


def _session() -> Any:
    """This thread's DataFusion session, made once: the leaves of an update assign on the
    workers of a pool, each worker with its own session (creating one per leaf costs as
    much as the query of a few rows)."""
    import datafusion

    ctx = getattr(_sessions, "ctx", None)
    if ctx is None:
        ctx = _sessions.ctx = datafusion.SessionContext()
    return ctx


def assign(table: pa.Table, assignments: Mapping[str, str]) -> pa.Table:
    """``table`` with each assigned column replaced by its SQL expression's value, computed
    by DataFusion over the row (the other columns unchanged), cast to the column's type.

    >>> t = pa.table({"id": [1, 2], "n": [10, 20]})
    >>> assign(t, {"n": "n + id"}).column("n").to_pylist()
    [11, 22]
    """
    items = [
        f"({assignments[f.name]}) AS {_quoted(f.name)}"
        if f.name in assignments
        else _quoted(f.name)
        for f in table.schema
    ]
    query = f"SELECT {', '.join(items)} FROM t"

    def run() -> pa.Table:
        ctx = _session()
        batches = table.to_batches() or [pa.RecordBatch.from_pylist([], schema=table.schema)]
        ctx.register_record_batches("t", [batches])
        try:
            return ctx.sql(query).to_arrow_table()
        finally:
            ctx.deregister_table("t")

    try:
        # a short query cannot nest deep enough to need deep()'s big stack, and deep() runs
        # one call at a time: the leaves of an update assign in parallel
        result = run() if len(query) <= _SHALLOW_QUERY else deep(run)
    except Exception as exc:
        raise errors.InvalidInputError(
            f"cannot compute the assignments {dict(assignments)}: {exc}"
        ) from exc
    columns = []
    for target, column in zip(table.schema, result.columns, strict=True):
        if column.type == target.type:
            columns.append(column)
            continue
        try:
            columns.append(column.cast(target.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise errors.CastError(
                f"the value assigned to column {target.name!r} ({column.type}) does not fit "
                f"its type {target.type}: {exc}"
            ) from exc
    if not result.num_rows:
        return table.slice(0, 0)
    return pa.Table.from_arrays(columns, schema=table.schema)
