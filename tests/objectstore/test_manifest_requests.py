"""What an open + plan asks S3 for, counted by a proxy in front of the test server
(``benchmarks/_proxy.py``): the ``__manifest`` is read whole, one request per file."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp

pytestmark = pytest.mark.s3


def test_open_and_plan_read_each_manifest_file_once(
    s3_uri: str, proxy: Any, counted_options: dict[str, str]
) -> None:
    # partition values of 4,000 random hex characters: a __manifest data file above Lance's
    # default smallest read on an object store (64 KiB), which took three requests
    keys = [os.urandom(2000).hex() for _ in range(24)]
    ns = lp.PartitionedNamespace.create(
        s3_uri,
        schema=pa.schema([("k", pa.string()), ("v", pa.int64())]),
        partition_by="k",
        storage_options=counted_options,
    )
    ns.write(pa.table({"k": keys, "v": range(len(keys))}))

    proxy.reset()
    opened = lp.PartitionedNamespace.open(s3_uri, storage_options=counted_options)
    assert len(opened.plan_scan()) == len(keys)
    requests = proxy.requests()
    files = Counter(path for method, path in requests if "/__manifest/data/" in path)
    assert files, requests
    assert max(files.values()) == 1, requests
