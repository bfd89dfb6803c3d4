"""Grouping a chunk's rows by partition key (ingest.grouping.group_rows): an integer-backed key
of a small span (a day, a year, a bucket) is numbered by value, without a hash."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lance_partitioned.ingest import group_rows

DAY = dt.date(2024, 1, 1)


def _groups(key: pa.Array | pa.ChunkedArray) -> list[list[object]]:
    """The key values of each group, in group order, read back through ``order``."""
    order, offsets, first = group_rows([key])
    values = key.to_pylist()
    rows = list(range(len(values))) if order is None else order.tolist()
    groups = [
        [values[r] for r in rows[offsets[g] : offsets[g + 1]]] for g in range(len(offsets) - 1)
    ]
    assert [values[i] for i in first.tolist()] == [group[0] for group in groups]
    return groups


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (pa.array([3, 1, 3, None, 1]), [[None], [1, 1], [3, 3]]),
        (pa.array([127, -128, 0, 127], pa.int8()), [[-128], [0], [127, 127]]),
        (pa.array([2**64 - 1, 2**64 - 3, 2**64 - 1], pa.uint64()), [[2**64 - 3], [2**64 - 1] * 2]),
        (
            pa.array([DAY + dt.timedelta(2), DAY, None, DAY + dt.timedelta(2)]).slice(0),
            [[None], [DAY], [DAY + dt.timedelta(2)] * 2],
        ),
        (
            pa.array([None, DAY + dt.timedelta(5), DAY, DAY]).slice(1),
            [[DAY, DAY], [DAY + dt.timedelta(5)]],
        ),
        (pa.chunked_array([[9, 4], [9, None]], pa.int32()), [[None], [4], [9, 9]]),
        (
            pa.array([5_000, 1_000], pa.timestamp("us")),
            [[dt.datetime(1970, 1, 1, 0, 0, 0, 1_000)], [dt.datetime(1970, 1, 1, 0, 0, 0, 5_000)]],
        ),
    ],
    ids=["int64-null", "int8-extremes", "uint64-top", "date32", "date32-sliced", "chunked", "ts"],
)
def test_an_integer_key_of_a_small_span_is_grouped_in_value_order(
    key: pa.Array | pa.ChunkedArray, expected: list[list[object]]
) -> None:
    # NULL first, then the values in increasing order: numbered by value (no hash), where a
    # dictionary encoding numbers them in order of first appearance
    assert _groups(key) == expected
