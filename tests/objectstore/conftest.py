"""What the request-counting tests of this folder share: a proxy in front of the test S3
server that records every request (``benchmarks/_proxy.py``, no delay), and namespaces written
through it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pytest

import lance_partitioned as lp
from tests.benchmarks.helpers import load

#: The schema of :func:`counted_namespace`: partitioned by ``k``.
SCHEMA = pa.schema([("k", pa.string()), ("v", pa.int64())])
#: Its partitions.
KEYS = ("a", "b", "c")


@pytest.fixture
def proxy(s3_endpoint: str) -> Iterator[Any]:
    """A :class:`DelayProxy` (no delay) in front of the test server: ``requests()`` lists
    ``(method, path)`` of each request since the last ``reset()``."""
    port = urlparse(s3_endpoint).port
    assert port is not None
    with load("_proxy").DelayProxy(port, delay=0.0) as running:
        yield running


@pytest.fixture
def counted_options(proxy: Any, storage_options: dict[str, str]) -> dict[str, str]:
    """Storage options of the test server, through :func:`proxy`."""
    return {**storage_options, "aws_endpoint": proxy.endpoint}


@pytest.fixture
def counted_namespace(
    s3_uri: str, counted_options: dict[str, str]
) -> Callable[[int], lp.PartitionedNamespace]:
    """Makes the namespace at ``s3_uri``, through :func:`proxy`: :data:`SCHEMA` partitioned
    by ``k``, written once with ``per_key`` rows in each partition of :data:`KEYS` (``v``
    from 0, the keys in turn)."""

    def make(per_key: int) -> lp.PartitionedNamespace:
        ns = lp.PartitionedNamespace.create(
            s3_uri, schema=SCHEMA, partition_by="k", storage_options=counted_options
        )
        rows = per_key * len(KEYS)
        ns.write(pa.table({"k": list(KEYS) * per_key, "v": list(range(rows))}))
        return ns

    return make


@pytest.fixture
def namespace(
    counted_namespace: Callable[[int], lp.PartitionedNamespace],
) -> lp.PartitionedNamespace:
    """:func:`counted_namespace` with 4 rows in each partition (12 in all)."""
    return counted_namespace(4)
