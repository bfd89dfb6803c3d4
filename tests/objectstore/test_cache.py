"""What a second read of the same version asks S3 for, counted by a proxy in front of the
test server (``benchmarks/_proxy.py``): the immutable leaf manifests are not read again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import lance_partitioned as lp
from lance_partitioned.runtime import leaf_cache

pytestmark = pytest.mark.s3


def _leaf_manifest_gets(requests: list[tuple[str, str]]) -> list[str]:
    return [
        path
        for method, path in requests
        if method == "GET" and "/_versions/" in path and "__manifest" not in path
    ]


def test_a_second_read_of_the_same_version_reads_no_leaf_manifest(
    proxy: Any, counted_namespace: Callable[[int], lp.PartitionedNamespace]
) -> None:
    ns = counted_namespace(10)  # "a", "b", "c": 10 rows each
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

    fresh = lp.PartitionedNamespace.open(ns.uri, storage_options=ns.storage_options)
    proxy.reset()
    assert fresh.to_table().sort_by("v").equals(expected)
    again = proxy.requests()
    assert _leaf_manifest_gets(again) == [], again
    assert len(again) == len(second), again

    proxy.reset()
    sizes = ns.partitions()
    assert sizes.column("rows").to_pylist() == [10, 10, 10]
    assert _leaf_manifest_gets(proxy.requests()) == [], proxy.requests()
