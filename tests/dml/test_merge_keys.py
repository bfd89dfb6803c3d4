"""A merge without clause conditions matches each leaf's keys by probing the source's keys,
encoded once (``dml/merge_keys.py``, issue 31): no DataFusion context per leaf searched, and
the same rows as the SQL join."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datafusion
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.dml import merge_keys

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string()), ("c", pa.string()), ("n", pa.int64())])


def _namespace(root: Path, leaves: int) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="c", max_workers=2)
    rows = 4 * leaves
    ns.write(
        pa.table(
            {
                "id": list(range(rows)),
                "k": [None if i % 5 == 0 else f"k{i % 3}" for i in range(rows)],
                "c": [None if i % leaves == 0 else f"c{i % leaves}" for i in range(rows)],
                "n": [0] * rows,
            },
            schema=SCHEMA,
        )
    )
    return ns


def test_no_datafusion_context_per_leaf_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = []
    init = datafusion.SessionContext.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        created.append(1)
        init(self, *args, **kwargs)

    monkeypatch.setattr(datafusion.SessionContext, "__init__", counted)
    made = {}
    for leaves in (3, 12):
        ns = _namespace(tmp_path / str(leaves), leaves)
        source = pa.table({"id": [1, 2, 1000], "n": [5, 6, 7]})
        del created[:]
        result = ns.merge(source, on="id").when_matched_update_all().execute()
        assert result.leaves_read == leaves
        assert result.rows_updated == 2
        made[leaves] = len(created)
    # searching four times as many leaves creates no more contexts (one per leaf before)
    assert made[12] == made[3] < 3


CASES: list[tuple[str, Any]] = [
    ("id", lambda m: m.when_matched_update_all().when_not_matched_insert_all()),
    ("k", lambda m: m.when_matched_delete()),  # several source and target rows per key
    (["k", "c"], lambda m: m.when_matched_delete().when_matched_update_all()),
    (["id", "c"], lambda m: m.when_matched_update_all().when_matched_delete()),
    ("id", lambda m: m.when_matched_update_all().when_not_matched_by_source_delete("id > 20")),
    (["id", "k"], lambda m: m.when_not_matched_insert_all().when_not_matched_by_source_delete()),
]


def _run(
    root: Path, on: Any, clauses: Any, source: pa.Table, null_safe: bool = False
) -> tuple[Any, list[dict[str, Any]]]:
    ns = _namespace(root, 5)
    try:
        result = clauses(ns.merge(source, on=on, null_safe=null_safe)).execute()
    except errors.DuplicateKeyError:
        return "duplicate", []
    counts = (result.rows_updated, result.rows_inserted, result.rows_deleted)
    rows = sorted(ns.to_table().to_pylist(), key=repr)
    return counts, rows


@pytest.mark.parametrize("null_safe", [False, True])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_probe_finds_what_the_sql_join_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: int, null_safe: bool
) -> None:
    on, clauses = CASES[case]
    source = pa.table(
        {
            "id": [0, 3, 5, 5, 7, 40, 41, None],
            "k": ["k1", None, "k2", "k2", None, "k9", "k1", "k0"],
            "c": [None, "c3", None, "c5", "c2", "c1", None, "c4"],
            "n": [10, 11, 12, 13, 14, 15, 16, 17],
        },
        schema=SCHEMA,
    )
    probed = _run(tmp_path / "probe", on, clauses, source, null_safe)
    monkeypatch.setattr(merge_keys.SourceKeys, "build", classmethod(lambda *a: None))
    joined = _run(tmp_path / "sql", on, clauses, source, null_safe)
    assert probed == joined


def test_pairs_with_null_safe_and_repeated_keys() -> None:
    source = pa.table({"a": [1, 1, None, 2], "b": ["x", "x", "y", None]})
    keys = merge_keys.SourceKeys.build(source, ["a", "b"], frozenset({"b"}))
    assert keys is not None
    target = pa.table({"a": [1, None, 2, 2, 3], "b": ["x", "y", None, "z", "x"]})
    left, right = keys.pairs(target) or ((), ())
    assert list(zip(left.tolist(), right.tolist(), strict=True)) == [(0, 0), (0, 1), (2, 3)]
    # only some source rows may match this leaf
    left, right = keys.pairs(target, rows=pa.array([1, 3]).to_numpy()) or ((), ())
    assert list(zip(left.tolist(), right.tolist(), strict=True)) == [(0, 1), (2, 3)]


def test_float_keys_and_other_types_are_left_to_sql() -> None:
    assert merge_keys.SourceKeys.build(pa.table({"f": [1.0]}), ["f"], frozenset()) is None
    keys = merge_keys.SourceKeys.build(pa.table({"i": [1]}), ["i"], frozenset())
    assert keys is not None
    assert keys.pairs(pa.table({"i": pa.array([1], pa.int32())})) is None


def test_integer_keys_null_safe_or_not() -> None:
    source = pa.table({"a": pa.array([5, None, -3, 5], pa.int8())})
    target = pa.table({"a": pa.array([None, 5, 7, -3, -128], pa.int8())})
    safe = merge_keys.SourceKeys.build(source, ["a"], frozenset({"a"}))
    plain = merge_keys.SourceKeys.build(source, ["a"], frozenset())
    assert safe is not None
    assert plain is not None
    left, right = safe.pairs(target) or ((), ())
    assert list(zip(left.tolist(), right.tolist(), strict=True)) == [(0, 1), (1, 0), (1, 3), (3, 2)]
    left, right = plain.pairs(target) or ((), ())
    assert list(zip(left.tolist(), right.tolist(), strict=True)) == [(1, 0), (1, 3), (3, 2)]
    # a source without NULL keys: a NULL-safe NULL target key matches nothing
    first = merge_keys.SourceKeys.build(source.slice(0, 1), ["a"], frozenset({"a"}))
    assert first is not None
    left, _ = first.pairs(target) or ((), ())
    assert left.tolist() == [1]
