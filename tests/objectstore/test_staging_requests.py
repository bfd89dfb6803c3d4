"""What a write, a create and an optimize ask S3 for, counted by the proxy of ``conftest.py``
(issue 31): a leaf's data file is staged without looking at the leaf first (no listing of its
versions, no read of its manifest), so a new leaf costs what pylance's own ``write_dataset``
costs; the second commit of a create and the ``__manifest`` compaction of an optimize go
through the version just made or opened, reading no ``__manifest`` manifest again."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import unquote

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from tests.objectstore.conftest import KEYS, SCHEMA

pytestmark = pytest.mark.s3

NESTED = pa.schema(
    [
        ("k", pa.string()),
        ("v", pa.int64()),
        ("point", pa.struct([("x", pa.float64()), ("tags", pa.list_(pa.string()))])),
        ("vector", pa.list_(pa.float32(), 2)),
    ]
)


def _by_leaf(requests: list[tuple[str, str]]) -> dict[str, list[str]]:
    """The methods of the requests on each leaf directory (``...$dataset``), in order; a
    listing of its ``_versions/`` as ``LIST``."""
    out: dict[str, list[str]] = {}
    for method, path in requests:
        text = unquote(path)
        leaf = next((p for p in text.replace("prefix=", "/").split("/") if "$dataset" in p), None)
        if leaf is not None:
            out.setdefault(leaf, []).append("LIST" if "list-type=2" in text else method)
    return out


def _nested_rows(ids: range) -> pa.Table:
    return pa.table(
        {
            "k": [KEYS[i % len(KEYS)] for i in ids],
            "v": list(ids),
            "point": [{"x": i / 2, "tags": [str(i)] * (i % 3)} for i in ids],
            "vector": [[float(i), -float(i)] for i in ids],
        },
        schema=NESTED,
    )


def test_a_new_leaf_costs_what_pylance_write_dataset_costs(
    proxy: Any, s3_uri: str, counted_options: dict[str, str]
) -> None:
    ns = lp.PartitionedNamespace.create(
        s3_uri, schema=SCHEMA, partition_by="k", storage_options=counted_options
    )
    rows = pa.table({"k": list(KEYS) * 2, "v": list(range(6))})
    proxy.reset()
    ns.write(rows)
    ours = _by_leaf(proxy.requests())

    proxy.reset()  # the floor: pylance alone writing one of those partitions as a dataset
    floor_uri = f"{s3_uri.rsplit('/', 1)[0]}/floor-{uuid.uuid4().hex}"
    lance.write_dataset(rows.slice(0, 2), floor_uri, storage_options=counted_options)
    floor = sorted(m for m, p in proxy.requests())

    assert len(ours) == len(KEYS), ours
    for methods in ours.values():
        assert methods[0] == "PUT", ours  # the data file, before any listing
        assert sorted(m if m != "LIST" else "GET" for m in methods) == floor, (ours, floor)
    assert ns.count_rows() == 6


def test_nested_columns_staged_without_looking_read_back_also_over_an_orphan_leaf(
    proxy: Any, s3_uri: str, counted_options: dict[str, str]
) -> None:
    ns = lp.PartitionedNamespace.create(
        s3_uri, schema=NESTED, partition_by="k", storage_options=counted_options
    )
    proxy.reset()
    ns.write(_nested_rows(range(9)))
    for methods in _by_leaf(proxy.requests()).values():
        assert methods[0] == "PUT", methods
    # partitions a and b leave the __manifest; their directories stay (orphan leaves)
    ns.write(_nested_rows(range(2, 9, 3)), mode="overwrite")
    proxy.reset()
    ns.write(_nested_rows(range(20, 26)))  # new leaves again, where a Lance table already is
    assert [m[0] for m in _by_leaf(proxy.requests()).values()] == ["PUT"] * 3
    expected = pa.concat_tables([_nested_rows(range(2, 9, 3)), _nested_rows(range(20, 26))])
    assert ns.to_table().sort_by("v").equals(expected)

    wider = _nested_rows(range(30, 33)).append_column("note", pa.array(["x", "y", "z"]))
    proxy.reset()
    ns.write(wider, schema_mode="merge")  # appends to leaves this process committed
    for methods in _by_leaf(proxy.requests()).values():
        assert methods[0] == "PUT", methods
    got = ns.to_table().sort_by("v")
    assert got.num_rows == 12
    assert got.column("note").to_pylist() == [None] * 9 + ["x", "y", "z"]
    assert got.drop_columns(["note"]).slice(9).equals(_nested_rows(range(30, 33)))


def test_an_optimize_reads_no_manifest_of_the_manifest_table_again(
    proxy: Any, namespace: lp.PartitionedNamespace
) -> None:
    namespace.write(pa.table({"k": ["a"], "v": [12]}))  # leaf "a" gets a second fragment
    proxy.reset()
    result = namespace.optimize()
    requests = [(m, unquote(p)) for m, p in proxy.requests() if "__manifest" in unquote(p)]
    assert result.leaves_compacted == 1
    assert result.manifest_fragments_after < result.manifest_fragments_before
    manifests = [p for m, p in requests if m == "GET" and p.endswith(".manifest")]
    assert manifests == [], requests
    listings = [p for m, p in requests if "list-type=2" in p]
    # the plan's refresh, its commit, the compaction's open and its commit
    assert len(listings) == 4, requests
    assert namespace.count_rows() == 13


def test_a_create_reads_the_manifest_it_made_once_to_open_it(
    proxy: Any, s3_uri: str, counted_options: dict[str, str]
) -> None:
    proxy.reset()
    ns = lp.PartitionedNamespace.create(
        s3_uri, schema=SCHEMA, partition_by="k", storage_options=counted_options
    )
    requests = [(m, unquote(p)) for m, p in proxy.requests()]
    reads = [(m, p.rsplit("/", 1)[-1]) for m, p in requests if p.endswith(".manifest")]
    # the two commits write a manifest each; the namespace object reads the second
    assert [m for m, _ in reads] == ["PUT", "PUT", "GET"], requests
    assert reads[1][1] == reads[2][1], requests
    assert ns.version == 2
    assert ns.partitions().num_rows == 0
