"""The DataFusion reference path: evaluate a partition expression over a column.

Spec 000 defines a partition expression as DataFusion SQL over the placeholder ``col``. This
module runs ``SELECT (<expression>) FROM t`` with the values bound as column ``col`` of a
one-partition table ``t`` (so row order is kept) and casts the result to the declared
``result_type``. The fast paths of :mod:`lance_partitioned.spec.transforms` must agree with it.

Two things to know about the binding:

- **Time zones.** A tz-aware column is bound with its zone, as any other client binds it:
  DataFusion 55 computes ``date_part`` on it in the zone's *local* time
  (``date_part('hour', col)`` of 2025-01-01T23:30Z is 18 in ``America/New_York``), and so do
  the fast paths. (lance-partitioned before issue 15 bound the UTC instant instead.)
- **hash().** DataFusion has no ``hash()``; each session registers the scalar UDF ``hash`` over
  :func:`lance_partitioned.spec.hashing.hash_array`. A Python UDF has one exact signature, so
  before each query ``hash`` is re-registered for the type of ``col``: ``hash`` accepts
  arguments of ``col``'s type (or types DataFusion coerces to it).

>>> import pyarrow as pa
>>> evaluate("date_part('year', col)", pa.array([0, None], pa.timestamp("s"))).to_pylist()
[1970, None]
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Sequence
from typing import cast

import datafusion
import pyarrow as pa

from lance_partitioned.errors import PartitionExpressionError, TransformError
from lance_partitioned.spec.hashing import can_hash, hash_array
from lance_partitioned.spec.murmur3 import can_murmur3, murmur3_array

__all__ = [
    "bind_type",
    "cast_result",
    "check_expression",
    "evaluate",
    "evaluate_columns",
    "session_context",
    "valid_time_zone",
]

_TABLE = "t"
_COLUMN = "col"
_local = threading.local()


def session_context() -> datafusion.SessionContext:
    """This thread's DataFusion session, with the scalar UDF ``hash`` registered.

    The session has one target partition, so a projection keeps the row order.

    Examples
    --------
    >>> ctx = session_context()
    >>> ctx is session_context()
    True
    >>> ctx.sql("SELECT hash(CAST(1 AS BIGINT)) AS h").to_pydict()
    {'h': [-6977822845260490347]}
    """
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        config = datafusion.SessionConfig().with_target_partitions(1)
        ctx = datafusion.SessionContext(config)
        _register(ctx, pa.int64())
        _local.ctx = ctx
    return ctx


def bind_type(source: pa.DataType) -> pa.DataType:
    """The type ``col`` has inside DataFusion for a source column of type ``source``.

    Every type is bound as itself: a tz-aware timestamp keeps its zone, so ``date_part`` is
    taken in the zone's local time.

    >>> bind_type(pa.timestamp("ms", tz="Europe/Paris"))
    TimestampType(timestamp[ms, tz=Europe/Paris])
    """
    return source


def evaluate(
    expression: str,
    values: pa.Array | pa.ChunkedArray,
    result_type: pa.DataType | None = None,
) -> pa.Array:
    """Evaluate a DataFusion SQL expression over ``col`` for every value.

    Parameters
    ----------
    expression : str
        A row-wise DataFusion SQL expression that uses ``col`` for the column.
    values : pyarrow.Array or pyarrow.ChunkedArray
        The column. A tz-aware timestamp keeps its zone (see the module notes).
    result_type : pyarrow.DataType, optional
        Cast the result to this type (a safe cast). By default the result keeps DataFusion's type.

    Returns
    -------
    pyarrow.Array
        One value per input row, in the input order.

    Raises
    ------
    TransformError
        If DataFusion cannot plan or run the expression (the message names the expression), if
        it does not return one row per input row, or if the cast to ``result_type`` is lossy.

    Examples
    --------
    >>> import pyarrow as pa
    >>> evaluate("abs(hash(col)) % 16", pa.array([1, None])).to_pylist()
    [11, None]
    >>> evaluate("col - (col % 10)", pa.array([-3, 17], pa.int32()), pa.int32()).to_pylist()
    [0, 10]
    """
    column = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    bound = bind_type(column.type)
    if bound != column.type:
        column = column.cast(bound)
    batch = pa.RecordBatch.from_arrays([column], names=[_COLUMN])
    result = _run(expression, batch, bound)
    if result_type is None:
        return result
    return cast_result(result, result_type, expression)


def evaluate_columns(
    expression: str,
    columns: Sequence[pa.Array | pa.ChunkedArray],
    result_type: pa.DataType | None = None,
) -> pa.Array:
    """Evaluate a DataFusion SQL expression over ``col0..colN`` (the published dialect's
    fields over several source columns), one value per row, in row order.

    ``murmur3`` and ``hash`` are registered over ``col0``'s type.

    Raises
    ------
    TransformError
        As :func:`evaluate`.

    Examples
    --------
    >>> import pyarrow as pa
    >>> evaluate_columns("col0 + col1", [pa.array([1, None]), pa.array([2, 3])]).to_pylist()
    [3, None]
    """
    arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
    if not arrays:
        raise TransformError(f"partition expression {expression!r} has no source column")
    batch = pa.RecordBatch.from_arrays(arrays, names=[f"col{i}" for i in range(len(arrays))])
    result = _run(expression, batch, arrays[0].type)
    return result if result_type is None else cast_result(result, result_type, expression)


def _run(expression: str, batch: pa.RecordBatch, hashed: pa.DataType) -> pa.Array:
    """``expression`` over ``batch`` by DataFusion, one value per row, with ``hash`` and
    ``murmur3`` registered over ``hashed`` (int64 is the registration left in place)."""
    ctx = session_context()
    rebind = hashed != pa.int64() and (can_hash(hashed) or can_murmur3(hashed))
    if rebind:
        _register(ctx, hashed)
    ctx.register_record_batches(_TABLE, [[batch]])
    try:
        table = ctx.sql(f"SELECT ({expression}) AS value FROM {_TABLE}").to_arrow_table()
    except Exception as exc:  # DataFusion raises plain Exception / ValueError subclasses
        raise TransformError(f"cannot evaluate partition expression {expression!r}: {exc}") from exc
    finally:
        ctx.deregister_table(_TABLE)
        if rebind:
            _register(ctx, pa.int64())
    if table.num_columns != 1 or table.num_rows != batch.num_rows:
        raise TransformError(
            f"partition expression {expression!r} is not row-wise: it returned "
            f"{table.num_rows} rows for {batch.num_rows} input rows"
        )
    return table.column(0).combine_chunks()


def cast_result(values: pa.Array, result_type: pa.DataType, expression: str) -> pa.Array:
    """Cast the result of ``expression`` to ``result_type``; a lossy cast is an error.

    Raises
    ------
    TransformError
        Naming the expression and the type, if a value does not fit or the cast does not exist.

    Examples
    --------
    >>> import pyarrow as pa
    >>> cast_result(pa.array([2025]), pa.int32(), "date_part('year', col)").type
    DataType(int32)
    >>> cast_result(pa.array([300]), pa.int8(), "col")
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.TransformError: cannot cast ... 'col' from int64 to int8: ...
    """
    if values.type == result_type:
        return values
    try:
        return values.cast(result_type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise TransformError(
            f"cannot cast the result of partition expression {expression!r} "
            f"from {values.type} to {result_type}: {exc}"
        ) from exc


def _register(ctx: datafusion.SessionContext, input_type: pa.DataType) -> None:
    """Register ``hash`` and the published dialect's ``murmur3`` over ``input_type``."""
    if can_hash(input_type):
        ctx.register_udf(_hash_udf(input_type))
    if can_murmur3(input_type):
        ctx.register_udf(_murmur3_udf(input_type))


@functools.lru_cache(maxsize=64)
def _murmur3_udf(input_type: pa.DataType) -> datafusion.ScalarUDF:
    return datafusion.udf(
        murmur3_array, [input_type], pa.int32(), volatility="immutable", name="murmur3"
    )


@functools.lru_cache(maxsize=64)
def _hash_udf(input_type: pa.DataType) -> datafusion.ScalarUDF:
    return datafusion.udf(hash_array, [input_type], pa.int64(), volatility="immutable", name="hash")


def _volatile_functions() -> frozenset[str]:
    """The functions DataFusion itself reports as not deterministic (``random``, ``now``,
    ``uuid``, …), from its ``information_schema.routines``."""
    cached = getattr(_local, "volatile", None)
    if cached is None:
        config = datafusion.SessionConfig().with_information_schema(True)
        routines = (
            datafusion.SessionContext(config)
            .sql("SELECT routine_name FROM information_schema.routines WHERE NOT is_deterministic")
            .to_arrow_table()
        )
        cached = frozenset(name.lower() for name in routines.column(0).to_pylist())
        _local.volatile = cached
    return cast(frozenset[str], cached)


_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def check_expression(expression: str, source: pa.DataType, result_type: pa.DataType) -> None:
    """Check the two MUSTs of spec 000 on a partition expression: it is deterministic and it
    returns NULL for a NULL source value.

    Determinism is DataFusion's own verdict: no function of the planned expression may be
    one its ``information_schema.routines`` lists as not deterministic. NULL→NULL is checked
    by evaluating the expression on a NULL of the source type.

    Raises
    ------
    PartitionExpressionError
        Naming the expression and the rule it breaks.
    TransformError
        The expression cannot be planned or evaluated on ``source``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> check_expression("abs(hash(col)) % 4", pa.int64(), pa.int64())
    >>> check_expression("coalesce(col, 0)", pa.int64(), pa.int64())
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.PartitionExpressionError: ... maps NULL to 0; ...
    >>> check_expression("CAST(random() * 4 AS BIGINT)", pa.int64(), pa.int64())
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.PartitionExpressionError: ... calls random(), which ...
    """
    bound = bind_type(source)
    ctx = session_context()
    rebind = bound != pa.int64() and (can_hash(bound) or can_murmur3(bound))
    if rebind:
        _register(ctx, bound)
    empty = pa.RecordBatch.from_arrays([pa.array([], bound)], names=[_COLUMN])
    ctx.register_record_batches(_TABLE, [[empty]])
    try:
        plan = ctx.sql(f"SELECT ({expression}) AS value FROM {_TABLE}").logical_plan()
        planned = " ".join(str(e) for e in plan.to_variant().projections())
    except Exception as exc:
        raise TransformError(f"cannot plan partition expression {expression!r}: {exc}") from exc
    finally:
        ctx.deregister_table(_TABLE)
        if rebind:
            _register(ctx, pa.int64())
    volatile = _volatile_functions()
    for name in _CALL.findall(_QUOTED.sub('""', planned)):
        if name.lower() in volatile:
            raise PartitionExpressionError(
                f"partition expression {expression!r} calls {name}(), which DataFusion does not "
                "consider deterministic; spec 000 requires deterministic partition expressions"
            )
    value = evaluate(expression, pa.nulls(1, source), result_type)[0]
    if value.is_valid:
        raise PartitionExpressionError(
            f"partition expression {expression!r} maps NULL to {value.as_py()!r}; spec 000 "
            "requires NULL for a NULL source value (a NULL partition is a partition of its own)"
        )


@functools.lru_cache(maxsize=256)
def valid_time_zone(zone: str) -> bool:
    """Whether DataFusion reads timestamps in ``zone`` (an IANA name or a fixed offset).

    >>> valid_time_zone("America/New_York"), valid_time_zone("-09:45"), valid_time_zone("utc")
    (True, True, False)
    """
    try:
        evaluate("date_part('hour', col)", pa.array([0], pa.timestamp("s", zone)))
    except TransformError:
        return False
    return True
