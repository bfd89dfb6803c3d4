"""The namespace on object storage: every operation through ``storage_options`` on S3."""

from __future__ import annotations

import threading

import lance
import lance_namespace as ln
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lance.namespace import DirectoryNamespace

import lance_partitioned as lp
from lance_partitioned import errors, transaction
from tests.integration.helpers import Boom, crash_after_leaf_commits, read_leaves

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("k", pa.string()), ("amount", pa.float64())]
)
pytestmark = pytest.mark.s3

KEYS = ["a", "b", "a$b/c=d", None]


def rows(ids: range, keys: list[str | None] = KEYS) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "k": [keys[i % len(keys)] for i in ids],
            "amount": [i / 4 for i in ids],
        },
        schema=SCHEMA,
    )


def leaf_ids(ns: lp.PartitionedNamespace) -> list[int]:
    return sorted(read_leaves(ns).column("id").to_pylist())


@pytest.fixture
def ns(s3_uri: str, storage_options: dict[str, str]) -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(
        s3_uri, schema=SCHEMA, partition_by="k", storage_options=storage_options
    )


def test_write_open_and_scan_with_pruning(
    ns: lp.PartitionedNamespace, storage_options: dict[str, str]
) -> None:
    result = ns.write(rows(range(100)))
    assert (result.rows_written, result.partitions_created) == (100, 4)
    reopened = lp.PartitionedNamespace.open(ns.uri, storage_options=storage_options)
    assert reopened.version == ns.version
    assert reopened.schema == ns.schema
    assert sorted(reopened.partitions().column("k").to_pylist(), key=str) == sorted(KEYS, key=str)
    assert leaf_ids(reopened) == list(range(100))
    full = reopened.to_table()
    for where, mask in [
        ("k = 'a$b/c=d'", pc.equal(full["k"], "a$b/c=d")),
        ("k IS NULL", pc.is_null(full["k"])),
        (
            "k = 'b' AND amount > 10",
            pc.and_(pc.equal(full["k"], "b"), pc.greater(full["amount"], 10)),
        ),
    ]:
        assert len(reopened.plan_scan(where)) < 4
        assert reopened.to_table(filter=where).sort_by("id").equals(full.filter(mask).sort_by("id"))


def test_every_write_mode(ns: lp.PartitionedNamespace) -> None:
    ns.write(rows(range(40)))
    ns.write(rows(range(40, 60), ["a", "b"]), mode="append")
    assert leaf_ids(ns) == list(range(60))
    ns.write(rows(range(100, 110), ["a"]), mode="overwrite_partitions")
    kept = [i for i in range(60) if KEYS[i % 4] != "a" and not (i >= 40 and i % 2 == 0)]
    assert leaf_ids(ns) == sorted(kept + list(range(100, 110)))
    result = ns.write(rows(range(200, 205), ["b"]), mode="overwrite")
    assert result.partitions_removed == 3
    assert leaf_ids(ns) == list(range(200, 205))
    assert ns.partitions().column("k").to_pylist() == ["b"]


def test_create_refuses_an_existing_namespace_and_open_an_empty_prefix(
    ns: lp.PartitionedNamespace, s3_uri: str, storage_options: dict[str, str]
) -> None:
    with pytest.raises(errors.NamespaceAlreadyExistsError):
        lp.PartitionedNamespace.create(
            ns.uri, schema=SCHEMA, partition_by="k", storage_options=storage_options
        )
    same = lp.PartitionedNamespace.create(
        ns.uri, schema=SCHEMA, partition_by="k", storage_options=storage_options, exist_ok=True
    )
    assert same.version == ns.version
    with pytest.raises(errors.NamespaceNotFoundError, match="no partitioned namespace"):
        lp.PartitionedNamespace.open(s3_uri + "-elsewhere", storage_options=storage_options)


def test_a_write_failing_after_some_leaf_commits_is_invisible(
    ns: lp.PartitionedNamespace,
    storage_options: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ns.write(rows(range(40)))
    before = (ns.version, ns.partitions(), leaf_ids(ns))
    real_commit_leaf = transaction.commit_leaf
    committed: list[str] = []
    monkeypatch.setattr(transaction, "commit_leaf", crash_after_leaf_commits(2, committed))
    with pytest.raises(Boom):
        ns.write(rows(range(100, 140)), options=lp.WriteOptions(threads=1))
    assert len(committed) == 2
    reader = lp.PartitionedNamespace.open(ns.uri, storage_options=storage_options)
    assert reader.version == before[0]
    assert reader.partitions().equals(before[1])
    assert leaf_ids(reader) == before[2]

    monkeypatch.setattr(transaction, "commit_leaf", real_commit_leaf)
    ns.refresh().write(rows(range(200, 210)))
    assert leaf_ids(ns) == list(range(40)) + list(range(200, 210))


@pytest.mark.slow
def test_four_writers_appending_to_overlapping_partitions(
    ns: lp.PartitionedNamespace, storage_options: dict[str, str]
) -> None:
    """Concurrent appends on S3 rely on Lance's conditional puts for both the leaves and the
    ``__manifest``: nothing may be lost or duplicated."""
    workers, rounds, per_round = 4, 3, 20
    failures: list[BaseException] = []
    attempts: list[int] = []

    def append(worker: int) -> None:
        try:
            mine = lp.PartitionedNamespace.open(ns.uri, storage_options=storage_options)
            for r in range(rounds):
                start = (worker * rounds + r) * per_round
                attempts.append(
                    mine.write(rows(range(start, start + per_round), ["a", "b", "c"])).attempts
                )
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=append, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert failures == []
    assert len(attempts) == workers * rounds  # each write returned (most retried on S3)
    ns.refresh()
    assert leaf_ids(ns) == list(range(workers * rounds * per_round))
    manifest = lance.dataset(f"{ns.uri}/__manifest", storage_options=storage_options)
    object_ids = manifest.to_table(columns=["object_id"]).column("object_id").to_pylist()
    assert len(object_ids) == len(set(object_ids)), "duplicate __manifest rows"
    assert ns.partitions().num_rows == 3


def test_pylance_directory_namespace_reads_our_layout_on_s3(
    ns: lp.PartitionedNamespace, storage_options: dict[str, str]
) -> None:
    ns.write(rows(range(12)))
    properties = {"root": ns.uri, **{f"storage.{k}": v for k, v in storage_options.items()}}
    pylance_ns = DirectoryNamespace(**properties)
    assert pylance_ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["v1"]
    children = pylance_ns.list_namespaces(ln.ListNamespacesRequest(id=["v1"])).namespaces
    assert len(children) == 4
    total = 0
    for child in children:
        assert pylance_ns.list_tables(ln.ListTablesRequest(id=["v1", child])).tables == ["dataset"]
        described = pylance_ns.describe_table(ln.DescribeTableRequest(id=["v1", child, "dataset"]))
        assert described.location is not None
        total += lance.dataset(described.location, storage_options=storage_options).count_rows()
    assert total == 12
    # ours, through lance_namespace.connect: storage.<key> properties become storage options
    connected = ln.connect("partitioned", properties)
    assert connected.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["v1"]
    assert sorted(connected.list_namespaces(ln.ListNamespacesRequest(id=["v1"])).namespaces) == (
        sorted(children)
    )
