"""``convert`` between the two dialects: every row kept, every version before readable, the
dialect detected after, pruning on the moved ``__manifest`` columns; bucket fields refused with
``--no-rebucket`` (re-bucketing: test_convert_rebucket.py)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.spec.dialects import Dialect, detect_dialect
from tests.cli.helpers import cli, one_line_error
from tests.interop.published import build

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("d", pa.date32()), ("s", pa.utf8()), ("n", pa.int64())])


def _batch(start: int, count: int) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "id": i,
                "d": dt.date(2023, 1, 1) + dt.timedelta(days=97 * i),
                "s": ["alpha", "alps", "beta", None][i % 4],
                "n": i % 5,
            }
            for i in range(start, start + count)
        ],
        schema=SCHEMA,
    )


def _sorted(table: pa.Table) -> pa.Table:
    return table.select(SCHEMA.names).sort_by("id")


def _dialects(root: Path) -> set[Dialect]:
    """The dialect of every ``partition_spec_v<N>``, read with pylance alone."""
    metadata = lance.dataset(str(root / "__manifest")).metadata
    return {
        detect_dialect(json.loads(value))
        for key, value in metadata.items()
        if key.startswith("partition_spec_v")
    }


def _two_versions(root: Path, second: str) -> lp.PartitionedNamespace:
    """Spec v1 ``s`` with one write, spec v2 ``second`` with another."""
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="s")
    ns.write(_batch(0, 12))
    ns.update_partition_spec(second)
    ns.write(_batch(12, 12))
    return ns


FIRST = 2  # create commits the __manifest, then its metadata


def _all_versions(root: Path, upto: int) -> dict[int, pa.Table]:
    return {
        v: _sorted(lp.PartitionedNamespace.open(str(root), version=v).to_table())
        for v in range(FIRST, upto + 1)
    }


SPECS = ["year(d) AS d_year", "truncate(2, s) AS s2", "year(d) AS d_year, month(d) AS d_month, s"]


# two conversions per spec
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("second", SPECS)
def test_convert_both_ways_keeps_rows_and_versions(tmp_path: Path, second: str) -> None:
    ns = _two_versions(tmp_path, second)
    rows = _sorted(ns.to_table())
    assert rows.num_rows == 24
    before = ns.version
    history = _all_versions(tmp_path, before)

    result = ns.convert("published")
    assert result.dialect == "published"
    assert result.version > before
    assert _dialects(tmp_path) == {Dialect.PUBLISHED}
    assert set(result.columns.values()) >= {"partition_field_s"}
    reopened = lp.PartitionedNamespace.open(str(tmp_path))
    assert _sorted(reopened.to_table()).equals(rows)
    # every version before, and every intermediate one, reads as it did
    after = _all_versions(tmp_path, result.version)
    for v in range(FIRST, result.version):
        assert after[v].equals(history[min(v, before)]), v
    # the moved columns prune right: filters on every field read the oracle rows
    for where, keep in [
        ("s = 'alps'", lambda r: r["s"] == "alps"),
        ("d >= DATE '2025-01-01'", lambda r: r["d"] >= dt.date(2025, 1, 1)),
    ]:
        got = _sorted(reopened.to_table(filter=where)).to_pylist()
        assert got == [r for r in rows.to_pylist() if r[where.split()[0]] is not None and keep(r)]
    # writes keep the namespace in its dialect
    reopened.write(_batch(24, 4))
    assert _dialects(tmp_path) == {Dialect.PUBLISHED}
    rows = _sorted(reopened.to_table())
    assert rows.num_rows == 28

    back = reopened.convert("spec000")
    assert back.dialect == "spec000"
    assert _dialects(tmp_path) == {Dialect.SPEC000}
    assert _sorted(lp.PartitionedNamespace.open(str(tmp_path)).to_table()).equals(rows)
    assert _all_versions(tmp_path, result.version) == after
    got = _sorted(reopened.to_table(filter="s = 'alpha'")).to_pylist()
    assert got == [r for r in rows.to_pylist() if r["s"] == "alpha"]


def test_convert_is_a_noop_in_its_dialect(tmp_path: Path) -> None:
    ns = _two_versions(tmp_path, "year(d) AS d_year")
    before = ns.version
    result = ns.convert("spec000")
    assert (result.version, result.dialect, result.columns) == (before, "spec000", {})
    assert lp.PartitionedNamespace.open(str(tmp_path)).version == before


def test_convert_without_rebucket_refuses_bucket_fields(tmp_path: Path) -> None:
    ns = _two_versions(tmp_path, "bucket(4, n) AS n_bucket")
    before = ns.version
    with pytest.raises(errors.UnsupportedOperationError, match=r"v2\.n_bucket"):
        ns.convert("published", rebucket=False)
    assert lp.PartitionedNamespace.open(str(tmp_path)).version == before
    assert _dialects(tmp_path) == {Dialect.SPEC000}


def test_convert_refuses_an_unknown_dialect(tmp_path: Path) -> None:
    ns = _two_versions(tmp_path, "year(d) AS d_year")
    with pytest.raises(errors.InvalidInputError, match="'published' or 'spec000'"):
        ns.convert("iceberg")


def test_convert_a_namespace_built_from_the_published_text(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = _batch(0, 16).to_pylist()
    fields: list[dict[str, Any]] = [
        {"field_id": "s", "source_ids": [2], "transform": {"type": "identity"}},
        {"field_id": "d_year", "source_ids": [1], "transform": {"type": "year"}},
    ]
    for f, dtype in zip(fields, [pa.utf8(), pa.int32()], strict=True):
        f["result_type"] = dtype
    built = build(str(tmp_path), SCHEMA, fields, rows)
    ns = lp.PartitionedNamespace.open(str(tmp_path))
    before = ns.version
    result = ns.convert("spec000")
    assert result.columns == {"partition_field_s": "s", "partition_field_d_year": "d_year"}
    assert _dialects(tmp_path) == {Dialect.SPEC000}
    reopened = lp.PartitionedNamespace.open(str(tmp_path))
    expected = sorted(built.expected(), key=lambda r: r["id"])
    assert _sorted(reopened.to_table()).to_pylist() == expected
    assert _sorted(reopened.to_table(filter="s = 'beta'")).to_pylist() == [
        r for r in expected if r["s"] == "beta"
    ]
    old = lp.PartitionedNamespace.open(str(tmp_path), version=before)
    assert _sorted(old.to_table()).to_pylist() == expected


def test_cli_convert(tmp_path: Path) -> None:
    _two_versions(tmp_path, "year(d) AS d_year")
    done = cli("convert", tmp_path, "--to", "published", "--json")
    assert done.code == 0, done.err
    out = done.json()
    assert out["dialect"] == "published"
    assert out["changed"] is True
    assert out["columns"] == {"s": "partition_field_s", "d_year": "partition_field_d_year"}
    assert _dialects(tmp_path) == {Dialect.PUBLISHED}
    again = cli("convert", tmp_path, "--to", "published")
    assert again.code == 0
    assert "already published" in again.out
    text = cli("convert", tmp_path, "--to", "spec000")
    assert text.code == 0, text.err
    assert "converted to spec000" in text.out
    assert lp.PartitionedNamespace.open(str(tmp_path)).to_table().num_rows == 24


def test_cli_convert_no_rebucket_lists_the_fields(tmp_path: Path) -> None:
    _two_versions(tmp_path, "bucket(4, n) AS n_bucket")
    result = cli("convert", tmp_path, "--to", "published", "--no-rebucket")
    line = one_line_error(result)
    assert "v2.n_bucket" in line
    assert "--no-rebucket" in line


def test_convert_refuses_a_published_key_that_names_a_manifest_column(tmp_path: Path) -> None:
    fields: list[dict[str, Any]] = [
        {
            "field_id": "location",
            "source_ids": [2],
            "transform": {"type": "identity"},
            "result_type": pa.utf8(),
        }
    ]
    build(str(tmp_path), SCHEMA, fields, _batch(0, 4).to_pylist())
    ns = lp.PartitionedNamespace.open(str(tmp_path))
    before = ns.version
    with pytest.raises(errors.PartitionSpecError, match="location"):
        ns.convert("spec000")
    assert lp.PartitionedNamespace.open(str(tmp_path)).version == before
    assert _dialects(tmp_path) == {Dialect.PUBLISHED}


def test_convert_a_bucket_field_without_leaves(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path),
        schema=SCHEMA,
        partition_by="s, bucket(4, n) AS n_bucket",
        dialect="published",
    )
    assert ns.convert("spec000").dialect == "spec000"
    bucket = lp.PartitionedNamespace.open(str(tmp_path)).current_spec.fields[1]
    assert (bucket.name, bucket.expression) == ("n_bucket", "abs(hash(col)) % 4")
    ns.write(_batch(0, 8))
    with pytest.raises(errors.UnsupportedOperationError, match=r"v1\.n_bucket"):
        ns.convert("published", rebucket=False)
    assert _sorted(lp.PartitionedNamespace.open(str(tmp_path)).to_table()).equals(
        _sorted(_batch(0, 8))
    )
