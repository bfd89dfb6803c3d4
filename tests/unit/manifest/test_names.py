"""Partition names derived from value tokens: a write names a new partition from the tokens
of its input chunk's group values (``token_name``) and finds an existing one by them
(``ManifestSnapshot.leaf_of_tokens``/``namespace_of_token``); both must agree with the
names and the look-ups by scalar value, for every kind of partition value."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.manifest import (
    leaf_object_id,
    partition_name,
    spec_namespace_id,
    token_name,
    value_tokens,
)

_ARRAYS = [
    pa.array([1, -7, None], pa.int32()),
    pa.array([2**40, 0, None], pa.int64()),
    pa.array([1.5, -0.0, 0.0, float("nan"), None], pa.float64()),
    pa.array(["US", "", None]),
    pa.array([b"\x00\xff", b"", None], pa.binary()),
    pa.array([True, False, None]),
    pa.array([dt.date(2024, 2, 29), None], pa.date32()),
    pa.array([dt.datetime(2024, 1, 1, 12), None], pa.timestamp("us", tz="UTC")),
    pa.array([decimal.Decimal("1.25"), None], pa.decimal128(10, 2)),
]


@pytest.mark.parametrize("values", _ARRAYS, ids=lambda a: str(a.type))
def test_a_name_from_a_token_is_the_name_from_the_value(values: pa.Array) -> None:
    tokens = value_tokens(values)
    for parent in ("v1", "v2$0123456789abcdef"):
        names = [token_name(2, parent, values.type, token) for token in tokens]
        assert names == [partition_name(2, parent, values[i]) for i in range(len(values))]
    assert len(set(names)) == len(values)  # -0.0 and 0.0, NULL and "": distinct partitions


def test_leaves_and_namespaces_are_found_by_their_tokens(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("k", pa.string())])
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=schema, partition_by="day, k")
    days = [dt.date(2025, 1, 1), None]
    ns.write(pa.table({"id": [0, 1], "day": days, "k": ["a", None]}, schema=schema))
    snapshot = lp.PartitionedNamespace.open(str(tmp_path))._manifest.snapshot()
    for day, k in zip(days, ["a", None], strict=True):
        scalars = [pa.scalar(day, pa.date32()), pa.scalar(k, pa.string())]
        tokens = tuple(value_tokens(pa.array([s], s.type))[0] for s in scalars)
        found = snapshot.leaf_of_tokens(1, tokens)
        assert found is not None
        assert found == snapshot.find_leaf(1, scalars)
        parent = snapshot.namespace_of_token(spec_namespace_id(1), tokens[0])
        assert parent == snapshot.find_namespace(spec_namespace_id(1), scalars[0])
        assert parent is not None
        assert found == leaf_object_id(f"{parent}${token_name(1, parent, pa.string(), tokens[1])}")
    assert snapshot.leaf_of_tokens(1, ("t0", "va")) is None  # (1970-01-01, "a") is not there
