"""What S3 is asked for right after this process committed leaves, counted by a proxy in front
of the test server (``benchmarks/_proxy.py``): the leaf versions a commit returned are kept
(:func:`lance_partitioned.runtime.leaf_cache.remember_leaf`), so a read, a delete's plan or an
optimize of those versions does not open them again (on S3: a ``HEAD`` and a ``GET`` of the
version's manifest per leaf)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest

import lance_partitioned as lp

pytestmark = pytest.mark.s3


def _leaf_manifests(requests: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Reads (``HEAD``, ``GET``) of a leaf version's Lance manifest."""
    return [
        (method, path)
        for method, path in requests
        if method in ("HEAD", "GET")
        and path.endswith(".manifest")
        and "/_versions/" in path
        and "__manifest" not in path
    ]


def _leaves(requests: list[tuple[str, str]]) -> set[str]:
    """The leaf directories the requests touch (``<id>_v1$<key>$dataset``)."""
    found = set()
    for _, path in requests:
        for part in unquote(path).replace("prefix=", "/").split("/"):
            if part.endswith("$dataset"):
                found.add(part)
    return found


def test_a_read_right_after_a_write_opens_no_leaf(
    proxy: Any, namespace: lp.PartitionedNamespace
) -> None:
    proxy.reset()
    assert namespace.to_table().num_rows == 12
    requests = proxy.requests()
    assert _leaf_manifests(requests) == [], requests
    assert len([p for m, p in requests if m == "GET" and "/data/" in p]) == 3, requests


def test_an_optimize_does_not_open_the_leaves_this_process_committed(
    proxy: Any, namespace: lp.PartitionedNamespace
) -> None:
    before = _leaves(proxy.requests())
    assert len(before) == 3
    proxy.reset()
    namespace.write(pa.table({"k": ["a"], "v": [12]}))  # leaf "a" gets a second fragment
    (appended,) = _leaves(proxy.requests())

    proxy.reset()
    result = namespace.optimize()
    requests = proxy.requests()
    assert result.leaves_compacted == 1
    assert _leaves(requests) == {appended}, requests  # "b" and "c": nothing asked for
    assert [m for m, _ in _leaf_manifests(requests)].count("HEAD") == 0, requests
    assert namespace.count_rows() == 13


def test_a_delete_plans_on_the_leaf_version_the_write_committed(
    proxy: Any, namespace: lp.PartitionedNamespace
) -> None:
    proxy.reset()
    result = namespace.delete("k = 'a' AND v = 0")
    requests = proxy.requests()
    assert result.rows_deleted == 1
    # the leaf at its read_version is not opened (a HEAD, then a GET, of that manifest)
    assert [m for m, _ in _leaf_manifests(requests)].count("HEAD") == 0, requests
    assert namespace.count_rows() == 11


def test_an_append_commits_through_the_leaf_version_the_write_committed(
    proxy: Any, namespace: lp.PartitionedNamespace
) -> None:
    proxy.reset()
    namespace.write(pa.table({"k": ["a"], "v": [12]}))
    requests = [(m, p) for m, p in proxy.requests() if "__manifest" not in p]
    # staging writes the data file without opening the leaf (its format is that of the leaf
    # version this process committed); the leaf commit lists the versions once (Lance's check
    # for a newer one) and reads nothing again: a PUT of the data, a LIST, two PUTs
    listings = [p for m, p in requests if "list-type=2" in p and "_versions" in unquote(p)]
    assert len(listings) == 1, requests
    assert _leaf_manifests(requests) == [], requests
    assert [m for m, _ in requests] == ["PUT", "GET", "PUT", "PUT"], requests
    assert namespace.count_rows() == 13
