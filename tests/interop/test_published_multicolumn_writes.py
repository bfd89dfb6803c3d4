"""Writes into published fields over several source columns (``multi_bucket`` over several
``source_ids``, an ``expression`` over ``col0..colN``) on namespaces built by pylance + pyarrow
alone: each row lands in the leaf of the value the published text gives it (the builder's
oracle: murmur3 of the non-NULL inputs, NULL only if all are), and pruned scans read what a
filtered full scan reads."""

from __future__ import annotations

import os
from typing import Any

import duckdb
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from tests.interop.published import build, field_value
from tests.interop.test_published_dialect import (
    IDENTITY_S,
    MULTI_BUCKET,
    MULTI_EXPRESSION,
    ROWS,
    SCHEMA,
)

pytestmark = pytest.mark.interop

MARKED = {**MULTI_BUCKET, "transform": {**MULTI_BUCKET["transform"], "hash_encoding": "iceberg"}}
NEW = [
    dict(ROWS[1], id=500),
    dict(ROWS[2], id=501, s=None),  # one NULL input: skipped
    dict(ROWS[3], id=502, s=None, n=None),  # every input NULL: NULL
    dict(ROWS[4], id=503, s="zeta", n=99),  # a combination no leaf has yet
]


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["id"])


def _rows_in_their_leaves(ns: lp.PartitionedNamespace, multi: dict[str, Any]) -> None:
    name = f"partition_field_{multi['field_id']}"
    for task in ns.plan_scan():
        value = dict(task.partition_values)[name]
        for row in task.open().to_table().to_pylist():
            assert field_value(multi, SCHEMA, row) == value, (row, value)


# a published namespace built, appended to and read leaf by leaf, per field
@pytest.mark.matrix(2)  # the inner loop runs half of the cases
@pytest.mark.parametrize("multi", [MARKED, MULTI_EXPRESSION], ids=["multi_bucket", "expr"])
def test_append_routes_rows_by_every_source(
    tmp_path: os.PathLike[str], multi: dict[str, Any]
) -> None:
    built = build(str(tmp_path), SCHEMA, [IDENTITY_S, multi], ROWS)
    ns = lp.PartitionedNamespace.open(built.root)
    ns.write(pa.Table.from_pylist(NEW, schema=SCHEMA))
    ns = lp.PartitionedNamespace.open(built.root)
    expected = _sorted([*ROWS, *NEW])
    assert _sorted(ns.to_table().to_pylist()) == expected
    _rows_in_their_leaves(ns, multi)
    for where in ("s = 'zeta' AND n = 99", "s IN ('alpha', 'beta') AND n IN (7, -13)", "n = 7"):
        full = [r for r in ns.to_table().to_pylist() if r["id"] in _ids(ns, where)]
        assert _sorted(ns.to_table(where).to_pylist()) == _sorted(full)
    if multi is MARKED:  # equality on every source prunes to the new row's leaf
        assert len(ns.plan_scan("s = 'zeta' AND n = 99")) == 1


def _ids(ns: lp.PartitionedNamespace, where: str) -> set[int]:
    """The ids a full scan keeps under ``where`` (evaluated on every row, no pruning)."""
    every = ns.to_table()  # noqa: F841 (read by DuckDB by name)
    kept = duckdb.sql(f"SELECT id FROM every WHERE {where}").fetchall()
    return {row[0] for row in kept}


@pytest.mark.parametrize("multi", [MARKED, MULTI_EXPRESSION], ids=["multi_bucket", "expr"])
def test_dml_merge_and_overwrite_recompute_the_field(
    tmp_path: os.PathLike[str], multi: dict[str, Any]
) -> None:
    built = build(str(tmp_path), SCHEMA, [IDENTITY_S, multi], ROWS)
    ns = lp.PartitionedNamespace.open(built.root)
    expected = {r["id"]: dict(r) for r in ROWS}
    ns.update("id = 4", {"n": "5"})  # a source of the field changes: the row moves
    expected[4]["n"] = 5
    changed = [dict(ROWS[9], n=-3), dict(ROWS[10], id=600, n=None)]
    merge = ns.merge(pa.Table.from_pylist(changed, schema=SCHEMA), on="id")
    merge.when_matched_update_all().when_not_matched_insert_all().execute()
    expected.update({r["id"]: r for r in changed})
    keyed = [dict(ROWS[11], id=700, s="zeta"), dict(ROWS[5], id=701)]
    merge = ns.merge(pa.Table.from_pylist(keyed, schema=SCHEMA), on=["s", "n"])
    merge.when_not_matched_insert_all().execute()  # keyed on every source of the field
    expected[700] = keyed[0]  # ROWS[5]'s (s, n) is matched: not inserted
    ns = lp.PartitionedNamespace.open(built.root)
    assert _sorted(ns.to_table().to_pylist()) == _sorted(list(expected.values()))
    _rows_in_their_leaves(ns, multi)
    ns.write(pa.Table.from_pylist([dict(ROWS[12], id=800)], schema=SCHEMA), mode="overwrite")
    ns = lp.PartitionedNamespace.open(built.root)
    assert ns.to_table().to_pylist() == [dict(ROWS[12], id=800)]
    _rows_in_their_leaves(ns, multi)


def test_multi_bucket_of_unknown_encoding_is_refused(tmp_path: os.PathLike[str]) -> None:
    built = build(str(tmp_path), SCHEMA, [IDENTITY_S, MULTI_BUCKET], ROWS)
    ns = lp.PartitionedNamespace.open(built.root)
    with pytest.raises(errors.TransformError, match="hash_encoding"):
        ns.write(pa.Table.from_pylist(NEW, schema=SCHEMA))
    assert _sorted(lp.PartitionedNamespace.open(built.root).to_table().to_pylist()) == ROWS
