"""The Bloom filter of a Spark merge's source keys (:mod:`lance_partitioned.spark.merge_bloom`):
a key it was built from always passes, whatever the Arrow width of its type, most others
do not."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lance_partitioned.spark.merge_bloom import KeyFilter, _bits


def _filter(columns: list[pa.Array], log2: int = 16) -> KeyFilter:
    return KeyFilter(_bits(columns, log2), log2)


@pytest.mark.parametrize(
    ("built", "probed"),
    [
        (pa.array([1, 7, 2**40], pa.int64()), pa.array([1, 7, 2**40], pa.int64())),
        (pa.array([1, 7, -3], pa.int32()), pa.array([1, 7, -3], pa.int64())),  # widened
        (pa.array(["a", "é", ""], pa.string()), pa.array(["a", "é", ""], pa.large_string())),
        (pa.array([b"x", b""], pa.binary()), pa.array([b"x", b""], pa.large_binary())),
        # as Spark's join compares them: -0.0 equals 0.0, NaN equals NaN
        (pa.array([0.0, float("nan")]), pa.array([-0.0, float("nan")])),
    ],
)
def test_every_built_key_passes_the_filter_whatever_its_arrow_width(
    built: pa.Array, probed: pa.Array
) -> None:
    assert _filter([built]).may_contain([probed]).all()


def test_a_filter_drops_most_other_keys_and_passes_keys_with_a_null() -> None:
    keys = _filter([pa.array(np.arange(1000)), pa.array([str(i) for i in range(1000)])])
    assert keys.may_contain([pa.array([5]), pa.array(["5"])]).all()
    others = keys.may_contain(
        [pa.array(np.arange(1000, 11_000)), pa.array([str(i) for i in range(1000, 11_000)])]
    )
    assert others.sum() < 200  # 65,536 bits for 1,000 keys: well under 2% pass
    swapped = keys.may_contain([pa.array([5]), pa.array(["6"])])  # (each column is part)
    assert not swapped.any()
    nulls = keys.may_contain([pa.array([None, 123_456], pa.int64()), pa.array(["x", None])])
    assert nulls.all()  # (a NULL-safe key matches NULL: never dropped)
