"""Published-dialect namespaces, built from the published text with pylance + pyarrow alone:
they open, read back every row, and prune on every transform."""

from __future__ import annotations

import datetime as dt
import math
import os
from typing import Any

import lance_namespace as ln
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.spec.dialects import Murmur3Bucket, PublishedSpec
from lance_partitioned.verify import verify
from tests.interop.published import build, field_value, partition_value, pin

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("s", pa.utf8()),
        pa.field("n", pa.int64()),
    ]
)
SOURCE = {"d": 1, "ts": 2, "s": 3, "n": 4}
ROWS = [
    {
        "id": i,
        "d": None if i == 7 else dt.date(2024, 1, 1) + dt.timedelta(days=53 * i),
        "ts": dt.datetime(2025, 3, 1, 0, 30) + dt.timedelta(hours=5 * i),
        "s": [None, "alpha", "beta", "gamma", "alps", "delta"][i % 6],
        "n": [None, -13, -3, 0, 7, 27, 104, 1 << 40][i % 8],
    }
    for i in range(24)
]

# (field key, source column, transform, result type, filter, python predicate)
CASES: list[tuple[str, str, dict[str, Any], pa.DataType, str, Any]] = [
    ("s", "s", {"type": "identity"}, pa.utf8(), "s = 'beta'", lambda r: r["s"] == "beta"),
    (
        "d_year",
        "d",
        {"type": "year"},
        pa.int32(),
        "d < DATE '2025-01-01'",
        lambda r: r["d"] is not None and r["d"] < dt.date(2025, 1, 1),
    ),
    (
        "d_month",
        "d",
        {"type": "month"},
        pa.int32(),
        "d = DATE '2024-02-23'",
        lambda r: r["d"] == dt.date(2024, 2, 23),
    ),
    (
        "d_day",
        "d",
        {"type": "day"},
        pa.int32(),
        "d = DATE '2024-02-23'",
        lambda r: r["d"] == dt.date(2024, 2, 23),
    ),
    (
        "ts_hour",
        "ts",
        {"type": "hour"},
        pa.int32(),
        "ts = TIMESTAMP '2025-03-01 10:30:00'",
        lambda r: r["ts"] == dt.datetime(2025, 3, 1, 10, 30),
    ),
    (
        "n_bucket",
        "n",
        {"type": "bucket", "num_buckets": 4, "hash_encoding": "iceberg"},
        pa.int32(),
        "n = 27",
        lambda r: r["n"] == 27,
    ),
    (
        "s_bucket",
        "s",
        {"type": "bucket", "num_buckets": 3},
        pa.int32(),
        "s IN ('alpha', 'delta')",
        lambda r: r["s"] in ("alpha", "delta"),
    ),
    (
        "n_trunc",
        "n",
        {"type": "truncate", "width": 10},
        pa.int64(),
        "n >= 0 AND n < 10",
        lambda r: r["n"] is not None and 0 <= r["n"] < 10,
    ),
    (
        "s_trunc",
        "s",
        {"type": "truncate", "width": 2},
        pa.utf8(),
        "s LIKE 'al%'",
        lambda r: r["s"] is not None and r["s"].startswith("al"),
    ),
]


def _field(key: str, column: str, transform: dict[str, Any], result: pa.DataType) -> dict[str, Any]:
    return {
        "field_id": key,
        "source_ids": [SOURCE[column]],
        "transform": transform,
        "result_type": result,
    }


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["id"])


@pytest.mark.parametrize(
    ("key", "column", "transform", "result", "where", "keep"), CASES, ids=[c[0] for c in CASES]
)
def test_opens_reads_and_prunes(
    tmp_path: os.PathLike[str],
    key: str,
    column: str,
    transform: dict[str, Any],
    result: pa.DataType,
    where: str,
    keep: Any,
) -> None:
    built = build(str(tmp_path), SCHEMA, [_field(key, column, transform, result)], ROWS)
    ns = lp.PartitionedNamespace.open(built.root)
    spec = ns.current_spec
    assert isinstance(spec, PublishedSpec)
    assert [f.name for f in spec.fields] == [f"partition_field_{key}"]
    assert _sorted(ns.to_table().to_pylist()) == _sorted(ROWS)
    assert _sorted(ns.to_table(where).to_pylist()) == [r for r in _sorted(ROWS) if keep(r)]
    # pruning: only leaves whose partition value some matching row has are scanned
    wanted = {partition_value(transform, r[column]) for r in ROWS if keep(r)}
    scanned = {dict(t.partition_values)[f"partition_field_{key}"] for t in ns.plan_scan(where)}
    assert scanned == wanted
    assert len(built.leaves) > len(scanned)


def test_bucket_of_unknown_encoding_is_scanned_not_pruned(tmp_path: os.PathLike[str]) -> None:
    transform = {"type": "bucket", "num_buckets": 4}  # another client's int64 hash: unknown bytes
    built = build(str(tmp_path), SCHEMA, [_field("nb", "n", transform, pa.int32())], ROWS)
    ns = lp.PartitionedNamespace.open(built.root)
    bucket = ns.current_spec.fields[0].transform
    assert isinstance(bucket, Murmur3Bucket)
    assert not bucket.known_encoding
    assert len(ns.plan_scan("n = 27")) == len([v for v in built.leaves if v != (None,)])
    assert _sorted(ns.to_table("n = 27").to_pylist()) == [r for r in _sorted(ROWS) if r["n"] == 27]


IDENTITY_S = _field("s", "s", {"type": "identity"}, pa.utf8())


def test_root_properties_in_the_arrow_schema_metadata(tmp_path: os.PathLike[str]) -> None:
    built = build(str(tmp_path), SCHEMA, [IDENTITY_S], ROWS, properties_in_schema=True)
    ns = lp.PartitionedNamespace.open(built.root)
    assert [f.name for f in ns.current_spec.fields] == ["partition_field_s"]
    assert _sorted(ns.to_table("s = 'beta'").to_pylist()) == [
        r for r in _sorted(ROWS) if r["s"] == "beta"
    ]


def test_table_version_rows_and_unknown_columns_are_ignored(tmp_path: os.PathLike[str]) -> None:
    extra = [
        {"object_id": "v1$t$1", "object_type": "table_version", "location": "x", "owner": "dir"},
    ]
    built = build(str(tmp_path), SCHEMA, [IDENTITY_S], ROWS, extra_rows=extra)
    ns = lp.PartitionedNamespace.open(built.root)
    assert _sorted(ns.to_table().to_pylist()) == _sorted(ROWS)
    assert len(ns.partitions()) == len(built.leaves)


def test_leaves_without_partition_columns_read_their_values(tmp_path: os.PathLike[str]) -> None:
    built = build(str(tmp_path), SCHEMA, [IDENTITY_S], ROWS, leaves_without_partition_columns=True)
    ns = lp.PartitionedNamespace.open(built.root)
    assert _sorted(ns.to_table().to_pylist()) == _sorted(ROWS)
    assert _sorted(ns.to_table("s = 'beta'", columns=["id", "s"]).to_pylist()) == [
        {"id": r["id"], "s": r["s"]} for r in _sorted(ROWS) if r["s"] == "beta"
    ]


@pytest.mark.parametrize("column", ["read_branch", "read_tag"])
def test_a_leaf_pinned_to_a_branch_or_tag_reads_the_ref_not_main(
    tmp_path: os.PathLike[str], column: str
) -> None:
    built = build(str(tmp_path), SCHEMA, [IDENTITY_S], ROWS)
    pinned = pin(built, ("beta",), column, "exp")
    ns = lp.PartitionedNamespace.open(built.root)
    assert _sorted(ns.to_table().to_pylist()) == _sorted(built.rows)
    assert _sorted(ns.to_table("s = 'beta'").to_pylist()) == _sorted(pinned)
    [task] = ns.plan_scan("s = 'beta'")
    assert (task.read_branch, task.read_tag) == (
        ("exp", None) if column == "read_branch" else (None, "exp")
    )


@pytest.mark.parametrize("column", ["read_branch", "read_tag"])
def test_writing_to_a_pinned_leaf_is_refused_naming_the_ref(
    tmp_path: os.PathLike[str], column: str
) -> None:
    built = build(str(tmp_path), SCHEMA, [IDENTITY_S], ROWS)
    pin(built, ("beta",), column, "exp")
    ns = lp.PartitionedNamespace.open(built.root)
    with pytest.raises(errors.UnsupportedOperationError, match=f"{column} = 'exp'"):
        ns.write(pa.Table.from_pylist([dict(ROWS[2], id=500)], schema=SCHEMA))
    with pytest.raises(errors.UnsupportedOperationError, match=column):
        ns.delete("s = 'beta'")
    # a write elsewhere still works, and the pinned leaf still reads its ref
    ns.write(pa.Table.from_pylist([dict(ROWS[1], id=501)], schema=SCHEMA))
    assert _sorted(ns.to_table().to_pylist()) == _sorted([*built.rows, dict(ROWS[1], id=501)])


def test_runtime_properties_are_named_by_field_id(tmp_path: os.PathLike[str]) -> None:
    built = build(str(tmp_path), SCHEMA, [IDENTITY_S], ROWS)
    adapter = lp.PartitionedNamespace.open(built.root).as_lance_namespace()
    level = built.leaves[("beta",)].split("$")[:2]
    described = adapter.describe_namespace(ln.DescribeNamespaceRequest(id=level))
    assert (described.properties or {}).get("partition.s") == "beta"


MULTI_BUCKET = {
    "field_id": "m",
    "source_ids": [SOURCE["s"], SOURCE["n"]],
    "transform": {"type": "multi_bucket", "num_buckets": 4},
    "result_type": pa.int32(),
}
MULTI_EXPRESSION = {
    "field_id": "e",
    "source_ids": [SOURCE["n"], 0],
    "expression": "coalesce(col0, 0) % 2 + col1 % 3",
    "result_type": pa.int64(),
    "oracle": lambda n, i: int(math.fmod(n or 0, 2)) + i % 3,
}


@pytest.mark.parametrize("multi", [MULTI_BUCKET, MULTI_EXPRESSION], ids=["multi_bucket", "expr"])
def test_multi_column_fields_read_and_scan(
    tmp_path: os.PathLike[str], multi: dict[str, Any]
) -> None:
    built = build(str(tmp_path), SCHEMA, [IDENTITY_S, multi], ROWS)
    ns = lp.PartitionedNamespace.open(built.root)
    name = f"partition_field_{multi['field_id']}"
    assert [f.name for f in ns.current_spec.fields] == ["partition_field_s", name]
    assert _sorted(ns.to_table().to_pylist()) == _sorted(ROWS)
    where = "s = 'beta' AND n = 7"
    keep = [r for r in _sorted(ROWS) if r["s"] == "beta" and r["n"] == 7]
    assert len(keep) == 1
    assert _sorted(ns.to_table(where).to_pylist()) == keep
    # the identity field prunes; the multi-column one never wrongly does
    scanned = ns.plan_scan("n = 7")
    assert len(scanned) == len(built.leaves)
    assert {dict(t.partition_values)["partition_field_s"] for t in ns.plan_scan(where)} == {"beta"}
    assert not verify(built.root).problems  # (verify does not compute the field either)
    # each leaf's rows have the leaf's values (the builder's oracle)
    for task in ns.plan_scan():
        value = dict(task.partition_values)[name]
        for row in task.open().to_table().to_pylist():
            assert field_value(multi, SCHEMA, row) == value


@pytest.mark.parametrize("marked", [True, False], ids=["our_encoding", "unknown_encoding"])
def test_equality_on_every_source_prunes_a_multi_bucket(
    tmp_path: os.PathLike[str], marked: bool
) -> None:
    encoding = {"hash_encoding": "iceberg"} if marked else {}
    multi = {**MULTI_BUCKET, "transform": {**MULTI_BUCKET["transform"], **encoding}}
    built = build(str(tmp_path), SCHEMA, [multi], ROWS)
    ns = lp.PartitionedNamespace.open(built.root)
    cases = [("s = 'beta' AND n = 7", ["beta"], [7]), (
        "s IN ('alpha', 'beta') AND n IN (7, -13) AND id > 0", ["alpha", "beta"], [7, -13]
    )]  # fmt: skip
    present = {values[0] for values in built.leaves}
    for where, strings, numbers in cases:
        expected = [r for r in _sorted(ROWS) if r["s"] in strings and r["n"] in numbers]
        assert expected
        assert _sorted(ns.to_table(where).to_pylist()) == expected
        scanned = {dict(t.partition_values)["partition_field_m"] for t in ns.plan_scan(where)}
        if marked:  # pruned to the buckets of the combinations (the builder's oracle)
            combos = [{"s": s, "n": n} for s in strings for n in numbers]
            assert scanned == {field_value(multi, SCHEMA, r) for r in combos} & present
            assert scanned < present
        else:  # another client's bytes for int64: never pruned
            assert len(scanned) == len(built.leaves)
    # equality on one source only never prunes
    assert len(ns.plan_scan("s = 'beta'")) == len(built.leaves)
