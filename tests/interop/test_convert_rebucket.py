"""``convert`` re-buckets the leaves of bucket fields (issue 28): spec 000 hashes with xxhash64,
the published dialect with murmur3, so each leaf of a spec version with a bucket field is
rewritten into the leaves of the other function, in one ``__manifest`` commit of the commit
protocol; a crash between the steps and a write during the conversion keep every row."""

from __future__ import annotations

from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance.namespace import DirectoryNamespace

import lance_partitioned as lp
from lance_partitioned import errors, transaction
from lance_partitioned.convert.marker import MARKER
from lance_partitioned.ingest import partition_values
from lance_partitioned.spec.dialects import Dialect
from lance_partitioned.verify import verify
from tests.interop.test_convert import _dialects

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.utf8())])

#: (partition_by of v1, partition_by of v2 or None)
LAYOUTS = {
    "bucket": ("bucket(4, id) AS id_bucket", None),
    "bucket_identity": ("bucket(4, id) AS id_bucket, s", None),
    "two_versions": ("bucket(4, id) AS id_bucket", "s, bucket(3, id) AS id_b3"),
}


def _rows(start: int, count: int) -> pa.Table:
    """``count`` rows from id ``start``; every seventh id NULL (a NULL bucket)."""
    ids = [None if i % 7 == 3 else i for i in range(start, start + count)]
    strings = [["a", "b", None][i % 3] for i in range(start, start + count)]
    return pa.table({"id": pa.array(ids, pa.int64()), "s": strings}, schema=SCHEMA)


def _sorted(table: pa.Table) -> list[dict[str, object]]:
    rows = table.select(SCHEMA.names).to_pylist()
    return sorted(rows, key=lambda r: (r["id"] is None, r["id"] or 0, str(r["s"])))


def _create(root: Path, layout: str, dialect: str = "spec000") -> pa.Table:
    """A namespace of ``layout`` in ``dialect`` with its rows; returns them."""
    first, second = LAYOUTS[layout]
    ns = lp.PartitionedNamespace.create(
        str(root), schema=SCHEMA, partition_by=first, dialect=dialect
    )
    written = [_rows(0, 30)]
    ns.write(written[0])
    if second is not None:
        ns.update_partition_spec(second)
        written.append(_rows(30, 30))
        ns.write(written[1])
    return pa.concat_tables(written)


def _check(root: Path, to: str, expected: pa.Table) -> None:
    """Everything a converted namespace must satisfy: its dialect, its rows, every leaf's
    rows in the leaf of their partition values under the new specs (pylance opening each
    leaf), pruning by ``id``, verify clean, pylance's DirectoryNamespace listing the leaves."""
    assert _dialects(root) == {Dialect(to)}
    ns = lp.PartitionedNamespace.open(str(root))
    assert _sorted(ns.to_table()) == _sorted(expected)
    manifest = lance.dataset(str(root / "__manifest"))
    assert MARKER not in manifest.metadata
    specs = {spec.version: spec for spec in ns.partition_specs}
    leaves = [
        r
        for r in manifest.to_table().to_pylist()
        if r["object_type"] == "table" and "$" in r["object_id"]
    ]
    for row in leaves:
        spec = specs[int(row["object_id"].split("$")[0][1:])]
        data = lance.dataset(str(root / row["location"]), version=row["read_version"]).to_table()
        assert data.num_rows > 0
        keys = partition_values(data, spec, ns.namespace_schema)
        for spec_field, values in zip(spec.fields, keys, strict=True):
            assert set(values.to_pylist()) == {row[spec_field.name]}, (row, spec_field.name)
    assert sum(r["metadata"] is not None for r in leaves) == len(leaves)
    for target in (5, 12, 41):
        want = [r for r in _sorted(expected) if r["id"] == target]
        assert _sorted(ns.to_table(filter=f"id = {target}")) == want
        assert len(ns.plan_scan(f"id = {target}")) < len(leaves)
    assert _sorted(ns.to_table(filter="id IS NULL")) == [
        r for r in _sorted(expected) if r["id"] is None
    ]
    assert not verify(str(root)).problems
    pylance_ns = DirectoryNamespace(root=str(root))
    listed = 0
    for version in specs:
        stack = [[f"v{version}"]]
        while stack:
            parent = stack.pop()
            request = ln.ListTablesRequest(id=parent)
            listed += len(pylance_ns.list_tables(request).tables)
            children = pylance_ns.list_namespaces(ln.ListNamespacesRequest(id=parent))
            stack += [[*parent, child] for child in children.namespaces]
    assert listed == len(leaves)


def _every_version(root: Path, first: int, expected: pa.Table) -> None:
    """Every ``__manifest`` version from ``first`` on reads ``expected``, and prunes by id."""
    latest = lp.PartitionedNamespace.open(str(root)).version
    for version in range(first, latest + 1):
        ns = lp.PartitionedNamespace.open(str(root), version=version)
        assert _sorted(ns.to_table()) == _sorted(expected), version
        want = [r for r in _sorted(expected) if r["id"] == 12]
        assert _sorted(ns.to_table(filter="id = 12")) == want, version


# two conversions re-bucketing every leaf, per layout
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_convert_rebuckets_both_ways(tmp_path: Path, layout: str) -> None:
    expected = _create(tmp_path, layout)
    first = lp.PartitionedNamespace.open(str(tmp_path)).version
    ns = lp.PartitionedNamespace.open(str(tmp_path))
    if layout == "two_versions":  # --no-rebucket still refuses, listing every field
        with pytest.raises(errors.UnsupportedOperationError, match=r"v1\.id_bucket, v2\.id_b3"):
            ns.convert("published", rebucket=False)
        assert lp.PartitionedNamespace.open(str(tmp_path)).version == first
    result = ns.convert("published")
    assert result.dialect == "published"
    assert result.rebucketed > 0
    _check(tmp_path, "published", expected)
    assert ns.convert("spec000").rebucketed > 0
    _check(tmp_path, "spec000", expected)
    if layout == "bucket":  # back again: the leaves of the first conversion's names
        assert ns.convert("published").dialect == "published"
        _check(tmp_path, "published", expected)
    _every_version(tmp_path, first, expected)


def test_convert_rebuckets_a_published_namespace(tmp_path: Path) -> None:
    expected = _create(tmp_path, "bucket_identity", dialect="published")
    ns = lp.PartitionedNamespace.open(str(tmp_path))
    assert ns.convert("spec000").rebucketed > 0
    _check(tmp_path, "spec000", expected)


# a conversion re-bucketing every leaf, crashed at each of its steps and run again
@pytest.mark.matrix(2)  # the inner loop runs half of the cases
@pytest.mark.parametrize("point", ["staged", "converted_rows"])
def test_a_crash_between_the_steps_then_convert_again(tmp_path: Path, point: str) -> None:
    """``staged``: after the ``rows`` commit, before the re-bucketing one;
    ``converted_rows``: after it, before ``publish`` (readers use the converted specs)."""
    expected = _create(tmp_path, "bucket_identity")
    first = lp.PartitionedNamespace.open(str(tmp_path)).version
    ns = lp.PartitionedNamespace.open(str(tmp_path))

    def crash() -> None:
        raise RuntimeError("killed between two steps")

    with transaction.pause_at(point, crash), pytest.raises(RuntimeError, match="killed"):
        ns.convert("published")
    assert _dialects(tmp_path) == {Dialect.SPEC000}
    _every_version(tmp_path, first, expected)
    reopened = lp.PartitionedNamespace.open(str(tmp_path))
    result = reopened.convert("published")
    assert result.dialect == "published"
    assert (result.rebucketed > 0) == (point == "staged")
    _check(tmp_path, "published", expected)
    _every_version(tmp_path, first, expected)


# a conversion re-bucketing every leaf, raced by a write at each of its steps
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("point", ["staged", "leaves_committed", "converted_rows"])
def test_a_write_during_the_conversion_is_kept(tmp_path: Path, point: str) -> None:
    """A write commits before the re-bucketing commit plans (it re-buckets the write's rows
    too), or after its new leaves are committed and before its ``__manifest`` commit (which
    then loses, and plans and stages again), or after it, before ``publish`` (the write goes
    under the converted specs)."""
    expected = _create(tmp_path, "bucket_identity")
    ns = lp.PartitionedNamespace.open(str(tmp_path))
    other = lp.PartitionedNamespace.open(str(tmp_path))
    more = _rows(100, 20)
    with transaction.pause_at(point, lambda: other.write(more)):
        ns.convert("published")
    _check(tmp_path, "published", pa.concat_tables([expected, more]))


def test_a_write_staged_under_the_other_hash_is_refused(tmp_path: Path) -> None:
    """Staged (grouped by xxhash64) before the conversion, committed after it: its rows would
    land in the wrong leaves, so it is refused and nothing of it is visible."""
    expected = _create(tmp_path, "bucket")
    ns = lp.PartitionedNamespace.open(str(tmp_path))
    other = lp.PartitionedNamespace.open(str(tmp_path))
    with (
        transaction.pause_at("leaves_committed", lambda: ns.convert("published")),
        pytest.raises(errors.ConcurrentSchemaChangeError, match="re-bucketed"),
    ):
        other.write(_rows(100, 20))
    _check(tmp_path, "published", expected)
