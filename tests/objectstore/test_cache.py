"""What a second read of the same version asks S3 for, counted by a proxy in front of the
test server (``benchmarks/_proxy.py``): the immutable leaf manifests are not read again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.runtime import leaf_cache
from tests.benchmarks.helpers import load

pytestmark = pytest.mark.s3

SCHEMA = pa.schema([("k", pa.string()), ("v", pa.int64())])


@pytest.fixture
def proxy(s3_endpoint: str) -> Iterator[Any]:
    port = urlparse(s3_endpoint).port
    assert port is not None
    with load("_proxy").DelayProxy(port, delay=0.0) as running:
        yield running


def _leaf_manifest_gets(requests: list[tuple[str, str]]) -> list[str]:
    return [
        path
        for method, path in requests
        if method == "GET" and "/_versions/" in path and "__manifest" not in path
    ]


def test_a_second_read_of_the_same_version_reads_no_leaf_manifest(
    proxy: Any, s3_uri: str, storage_options: dict[str, str]
) -> None:
    options = {**storage_options, "aws_endpoint": proxy.endpoint}
    ns = lp.PartitionedNamespace.create(
        s3_uri, schema=SCHEMA, partition_by="k", storage_options=options
    )
    ns.write(pa.table({"k": ["a", "b", "c"] * 10, "v": list(range(30))}))
    leaf_cache.clear()  # else the leaf versions the write committed are read from it at once

    proxy.reset()
    expected = ns.to_table().sort_by("v")
    assert expected.num_rows == 30
    first = proxy.requests()
    assert len(_leaf_manifest_gets(first)) == 3, first

    proxy.reset()
    assert ns.to_table().sort_by("v").equals(expected)
    second = proxy.requests()
    assert len(second) < len(first), second
    assert _leaf_manifest_gets(second) == [], second
    data_reads = [p for m, p in second if m == "GET" and "/data/" in p]
    assert len(data_reads) == 3, second

    fresh = lp.PartitionedNamespace.open(s3_uri, storage_options=options)
    proxy.reset()
    assert fresh.to_table().sort_by("v").equals(expected)
    again = proxy.requests()
    assert _leaf_manifest_gets(again) == [], again
    assert len(again) == len(second), again

    proxy.reset()
    sizes = ns.partitions()
    assert sizes.column("rows").to_pylist() == [10, 10, 10]
    assert _leaf_manifest_gets(proxy.requests()) == [], proxy.requests()
