"""``cleanup`` on an S3-compatible object store (moto's server): listing, ages and deletions
through ``pyarrow.fs`` with the namespace's Lance storage options."""

from __future__ import annotations

import datetime as dt
from typing import Any

import lance
import lance.fragment
import pytest

import lance_partitioned as lp
from tests.conftest import BUCKET, s3_client
from tests.maintenance.helpers import rows_of, table

pytestmark = pytest.mark.s3


def _objects(endpoint: str, uri: str) -> dict[str, int]:
    prefix = uri.split(f"s3://{BUCKET}/", 1)[1]
    client = s3_client(endpoint)
    out: dict[str, int] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for item in page.get("Contents", []):
            out[item["Key"]] = int(item["Size"])
    return out


def test_cleanup_on_s3(s3_uri: str, s3_endpoint: str, storage_options: dict[str, str]) -> None:
    ns = lp.PartitionedNamespace.create(
        s3_uri, schema=table([], []).schema, partition_by="k", storage_options=storage_options
    )
    ns.write(table([1, 2], ["a", "b"]))
    ns.write(table([3], ["a"]))
    tagged = ns.version
    tagged_rows = rows_of(ns)
    ns.write(table([4], ["c"]), mode="overwrite")
    ns.write(table([5], ["c"]))
    lance.dataset(f"{s3_uri}/__manifest", storage_options=storage_options).tags.create(
        "keep", tagged
    )
    crashed = f"{s3_uri}/0badf00d_v1$zzz$dataset"
    lance.fragment.write_fragments(table([9], ["z"]), crashed, storage_options=storage_options)
    before = _objects(s3_endpoint, s3_uri)

    preview = ns.cleanup(dt.timedelta(0), dry_run=True)
    assert _objects(s3_endpoint, s3_uri) == before
    done = ns.cleanup(dt.timedelta(0))
    after = _objects(s3_endpoint, s3_uri)

    kinds: list[Any] = ["manifest_versions", "leaf_versions", "leaf_directories", "staged_files"]
    assert [getattr(preview, k) for k in kinds] == [getattr(done, k) for k in kinds]
    gone = set(before) - set(after)
    assert done.files == len(gone)
    assert done.bytes == sum(before[key] for key in gone)
    assert done.kept_manifest_versions == (tagged, ns.version)
    assert done.leaf_directories.count == 1  # the crashed writer's; a and b: the tag reads them
    assert not any("0badf00d" in key for key in after)
    old = lp.PartitionedNamespace.open(s3_uri, storage_options=storage_options, version=tagged)
    assert rows_of(old) == tagged_rows
    assert sorted(ns.refresh().to_table().column("id").to_pylist()) == [4, 5]
    assert ns.cleanup(dt.timedelta(0)).files == 0
