"""The DataFusion reference path: SQL over `col`, in UTC, cast to the declared type."""

from __future__ import annotations

import datetime
import re
import threading

import datafusion
import pyarrow as pa
import pytest

from lance_partitioned.errors import PartitionExpressionError, TransformError
from lance_partitioned.spec.evaluate import (
    bind_type,
    cast_result,
    check_expression,
    evaluate,
    session_context,
)
from lance_partitioned.spec.hashing import bucket_array, hash_array

NEW_YORK = pa.timestamp("us", tz="America/New_York")


def test_session_is_cached_per_thread() -> None:
    ctx = session_context()
    assert session_context() is ctx
    other: list[datafusion.SessionContext] = []
    thread = threading.Thread(target=lambda: other.append(session_context()))
    thread.start()
    thread.join()
    assert other
    assert other[0] is not ctx


def test_session_has_hash_registered() -> None:
    result = session_context().sql("SELECT hash(CAST(1 AS BIGINT)) AS h").to_pydict()
    assert result == {"h": [-6977822845260490347]}


def test_session_hash_takes_int64_again_after_an_evaluation_on_strings() -> None:
    evaluate("hash(col)", pa.array(["a"]))
    result = session_context().sql("SELECT hash(CAST(1 AS BIGINT)) AS h").to_pydict()
    assert result == {"h": [-6977822845260490347]}


def test_hash_udf_matches_hash_array_for_strings_and_dates() -> None:
    for values in (pa.array(["US", None, "FR"]), pa.array([datetime.date(2025, 1, 1), None])):
        assert evaluate("hash(col)", values).to_pylist() == hash_array(values).to_pylist()


def test_bucket_expression_matches_bucket_array() -> None:
    values = pa.array([*range(-20, 20), None], pa.int32())
    result = evaluate("abs(hash(col)) % 16", values, pa.int64())
    assert result.to_pylist() == bucket_array(values, 16).to_pylist()


def test_date_part_returns_int32_by_default() -> None:
    result = evaluate("date_part('year', col)", pa.array([datetime.date(2025, 12, 10), None]))
    assert result.type == pa.int32()
    assert result.to_pylist() == [2025, None]


def test_tz_aware_timestamps_are_bound_with_their_zone() -> None:
    # 23:30 UTC is 18:30 in New York: date parts are local, as any client evaluating the SQL
    # gets them (issue 15 item 6; before, the UTC instant was bound and this answered 23 and 2).
    instant = datetime.datetime(2025, 1, 1, 23, 30, tzinfo=datetime.timezone.utc)
    values = pa.array([instant, None], NEW_YORK)
    assert evaluate("date_part('hour', col)", values).to_pylist() == [18, None]
    late = pa.array([datetime.datetime(2025, 1, 2, 3, 0, tzinfo=datetime.timezone.utc)], NEW_YORK)
    assert evaluate("date_part('day', col)", late).to_pylist() == [1]


def test_datafusion_alone_computes_date_parts_in_local_time() -> None:
    # What evaluate() and the fast paths agree with: if this starts failing, DataFusion changed.
    instant = datetime.datetime(2025, 1, 1, 23, 30, tzinfo=datetime.timezone.utc)
    ctx = datafusion.SessionContext()
    batch = pa.RecordBatch.from_arrays([pa.array([instant], NEW_YORK)], names=["col"])
    ctx.register_record_batches("raw", [[batch]])
    result = ctx.sql("SELECT date_part('hour', col) AS h FROM raw").to_pydict()
    assert result == {"h": [18]}


def test_identity_on_tz_aware_keeps_the_zone_and_the_instant() -> None:
    instant = datetime.datetime(2025, 1, 1, 23, 30, tzinfo=datetime.timezone.utc)
    values = pa.array([instant], NEW_YORK)
    result = evaluate("col", values, NEW_YORK)
    assert result.type == NEW_YORK
    assert result.equals(values)


def test_bind_type() -> None:
    assert bind_type(NEW_YORK) == NEW_YORK
    assert bind_type(pa.timestamp("ns")) == pa.timestamp("ns")
    assert bind_type(pa.utf8()) == pa.utf8()


def test_row_order_and_length_are_kept_across_chunks() -> None:
    chunks = [list(range(i * 1000, (i + 1) * 1000)) for i in range(5)]
    values = pa.chunked_array(chunks, pa.int64())
    result = evaluate("col * 2", values)
    assert isinstance(result, pa.Array)
    assert result.to_pylist() == [2 * v for chunk in chunks for v in chunk]


def test_empty_input_gives_an_empty_typed_result() -> None:
    result = evaluate("date_part('year', col)", pa.array([], pa.date32()))
    assert len(result) == 0
    assert result.type == pa.int32()


def test_result_is_cast_to_the_declared_type() -> None:
    result = evaluate("col - (col % 10)", pa.array([-3, 17, None], pa.int32()), pa.int32())
    assert result.type == pa.int32()
    assert result.to_pylist() == [0, 10, None]


def test_lossy_cast_names_the_expression_and_the_type() -> None:
    with pytest.raises(TransformError, match=r"'col \* 1000'.*int8"):
        evaluate("col * 1000", pa.array([1], pa.int64()), pa.int8())


def test_datafusion_errors_name_the_expression() -> None:
    with pytest.raises(TransformError, match="no_such_function"):
        evaluate("no_such_function(col)", pa.array([1]))
    with pytest.raises(TransformError, match=r"'col \+'"):
        evaluate("col +", pa.array([1]))


def test_an_aggregate_is_not_row_wise() -> None:
    with pytest.raises(TransformError, match="not row-wise"):
        evaluate("count(col)", pa.array([1, 2, 3]))


def test_cast_result_is_safe() -> None:
    assert cast_result(pa.array([1, None]), pa.int8(), "col").to_pylist() == [1, None]
    with pytest.raises(TransformError, match=r"from string to int32"):
        cast_result(pa.array(["x"]), pa.int32(), "upper(col)")


# ------------------------------------------- spec 000's MUSTs on expressions (issue 15 item 5)


@pytest.mark.parametrize(
    ("expression", "source", "result_type", "why"),
    [
        ("coalesce(col, 0)", pa.int64(), pa.int64(), "maps NULL to 0"),
        ("CASE WHEN col IS NULL THEN 'none' ELSE col END", pa.utf8(), pa.utf8(), "'none'"),
        ("CAST(random() * 4 AS BIGINT)", pa.int64(), pa.int64(), "random()"),
        ("date_part('year', now())", pa.date32(), pa.int32(), "now()"),
        ("concat(uuid(), col)", pa.utf8(), pa.utf8(), "uuid()"),
        ("CAST(current_date AS DATE)", pa.date32(), pa.date32(), "current_date()"),
    ],
)
def test_volatile_or_null_to_value_expressions_are_refused(
    expression: str, source: pa.DataType, result_type: pa.DataType, why: str
) -> None:
    with pytest.raises(PartitionExpressionError, match=re.escape(why)):
        check_expression(expression, source, result_type)


@pytest.mark.parametrize(
    ("expression", "source", "result_type"),
    [
        ("col", pa.utf8(), pa.utf8()),
        ("date_part('hour', col)", pa.timestamp("us", "America/New_York"), pa.int32()),
        ("abs(hash(col)) % 16", pa.utf8(), pa.int64()),
        ("left(col, 2)", pa.utf8(), pa.utf8()),
        ("upper(col || 'random(')", pa.utf8(), pa.utf8()),  # a string, not a call
        ("col * 2", pa.int32(), pa.int64()),
    ],
)
def test_deterministic_null_preserving_expressions_pass(
    expression: str, source: pa.DataType, result_type: pa.DataType
) -> None:
    check_expression(expression, source, result_type)
