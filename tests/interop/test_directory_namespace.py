"""Interop: pylance's own DirectoryNamespace walks our layout; the guard stops its writes."""

from __future__ import annotations

import datetime as dt
import io
import os

import lance
import lance_namespace as ln
import pyarrow as pa
import pyarrow.ipc
import pytest
from lance.namespace import DirectoryNamespace

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.adapter import PartitionedLanceNamespace

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("event_date", pa.date32()), ("country", pa.string())])


@pytest.fixture
def ns(tmp_path: os.PathLike[str]) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path), schema=SCHEMA, partition_by="event_date, country"
    )
    ns.write(
        pa.table(
            {
                "id": [1, 2, 3],
                "event_date": [dt.date(2025, 12, 10), dt.date(2025, 12, 10), dt.date(2025, 12, 11)],
                "country": ["US", "FR", "US"],
            },
            schema=SCHEMA,
        )
    )
    return ns


def _walk(namespace: ln.LanceNamespace, parent: list[str]) -> list[list[str]]:
    tables = [[*parent, t] for t in namespace.list_tables(ln.ListTablesRequest(id=parent)).tables]
    for child in namespace.list_namespaces(ln.ListNamespacesRequest(id=parent)).namespaces:
        tables += _walk(namespace, [*parent, child])
    return tables


def test_pylance_directory_namespace_walks_down_to_every_leaf(ns: lp.PartitionedNamespace) -> None:
    pylance_ns = DirectoryNamespace(root=ns.uri)
    assert pylance_ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["v1"]
    leaves = _walk(pylance_ns, ["v1"])
    assert len(leaves) == 3
    assert all(leaf[-1] == "dataset" and len(leaf) == 4 for leaf in leaves)
    versions = {r["object_id"]: r["read_version"] for r in ns.partitions().to_pylist()}
    total = 0
    for leaf in leaves:
        described = pylance_ns.describe_table(ln.DescribeTableRequest(id=leaf))
        uri = described.location
        assert uri is not None
        table = lance.dataset(uri, version=versions["$".join(leaf)]).to_table()
        total += table.num_rows
    assert total == 3


def test_our_namespace_interface_matches(ns: lp.PartitionedNamespace) -> None:
    connected = ln.connect("partitioned", {"root": ns.uri})
    assert isinstance(connected, PartitionedLanceNamespace)
    assert connected.namespace.uri == ns.uri
    leaves = _walk(connected, [])
    assert len(leaves) == 3
    described = connected.describe_table(ln.DescribeTableRequest(id=leaves[0]))
    properties = described.properties or {}
    assert set(properties) == {"partition.event_date", "partition.country"}
    assert properties["partition.event_date"] in {"2025-12-10", "2025-12-11"}
    date_ns = connected.describe_namespace(ln.DescribeNamespaceRequest(id=leaves[0][:2]))
    assert set(date_ns.properties or {}) == {"partition.event_date"}
    with pytest.raises(errors.NamespaceNotFoundError):
        connected.list_tables(ln.ListTablesRequest(id=["v9"]))
    with pytest.raises(errors.TableNotFoundError):
        connected.describe_table(ln.DescribeTableRequest(id=["v1", "nope", "dataset"]))
    with pytest.raises(ln.UnsupportedOperationError):
        connected.create_table(ln.CreateTableRequest(id=["v1", "x", "dataset"]), b"")
    with pytest.raises(ln.UnsupportedOperationError):
        connected.create_namespace(ln.CreateNamespaceRequest(id=["v2"]))


def test_the_guard_makes_pylance_writes_fail_loudly(ns: lp.PartitionedNamespace) -> None:
    pylance_ns = DirectoryNamespace(root=ns.uri)
    before = lance.dataset(f"{ns.uri}/__manifest")
    with pytest.raises(ln.UnsupportedOperationError, match="writer feature flags"):
        pylance_ns.create_namespace(ln.CreateNamespaceRequest(id=["v7"]))
    sink = io.BytesIO()
    table = pa.table({"a": [1]})
    with pyarrow.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    with pytest.raises(ln.UnsupportedOperationError):
        pylance_ns.create_table(ln.CreateTableRequest(id=["v1", "t"]), sink.getvalue())
    after = lance.dataset(f"{ns.uri}/__manifest")
    assert after.version == before.version
    assert after.schema.names == before.schema.names
    assert "country" in after.schema.names
    # reads through pylance still work after the refused writes
    assert pylance_ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["v1"]


def test_as_lance_namespace_answers_from_the_namespace_version(
    ns: lp.PartitionedNamespace,
) -> None:
    adapter = ns.as_lance_namespace()
    assert isinstance(adapter, ln.LanceNamespace)
    assert adapter.namespace is ns
    assert adapter.namespace_id() == f"PartitionedNamespace {{ root: {ns.uri!r} }}"
    leaves = _walk(adapter, [])
    assert sorted("$".join(leaf) for leaf in leaves) == sorted(
        ns.partitions().column("object_id").to_pylist()
    )
    adapter.table_exists(ln.TableExistsRequest(id=leaves[0]))
    adapter.namespace_exists(ln.NamespaceExistsRequest(id=leaves[0][:2]))
    with pytest.raises(errors.NamespaceNotFoundError):
        adapter.namespace_exists(ln.NamespaceExistsRequest(id=leaves[0]))  # a table
    with pytest.raises(errors.TableNotFoundError):
        adapter.table_exists(ln.TableExistsRequest(id=leaves[0][:2]))  # a namespace
    with pytest.raises(ln.UnsupportedOperationError, match="overwrite_partitions"):
        adapter.drop_table(ln.DropTableRequest(id=leaves[0]))
    with pytest.raises(ln.UnsupportedOperationError):
        adapter.declare_table(ln.DeclareTableRequest(id=["v1", "x", "dataset"]))
    # a write through the namespace object is seen by its adapter
    ns.write(
        pa.table({"id": [9], "event_date": [dt.date(2026, 1, 1)], "country": ["DE"]}, schema=SCHEMA)
    )
    assert len(_walk(adapter, [])) == 4
