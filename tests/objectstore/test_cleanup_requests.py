"""What a cleanup of an unchanged namespace asks S3 for, counted by a proxy in front of the
test server (``benchmarks/_proxy.py``): a leaf with nothing old enough to go is not opened,
and a leaf with one version has its manifest read once."""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.maintenance.cleanup import on_step
from lance_partitioned.maintenance.files import Store
from lance_partitioned.runtime import leaf_cache
from tests.conftest import BUCKET, s3_client
from tests.objectstore.conftest import KEYS

pytestmark = pytest.mark.s3


def _leaf_versions(requests: list[tuple[str, str]], method: str) -> list[str]:
    """Requests of ``method`` on a leaf's ``_versions/`` (a manifest read, or a listing)."""
    return [
        path
        for m, path in requests
        if m == method and "/_versions/" in unquote(path) and "__manifest" not in unquote(path)
    ]


def test_a_cleanup_does_not_open_a_leaf_younger_than_its_retention(
    proxy: Any, namespace: lp.PartitionedNamespace
) -> None:
    proxy.reset()
    result = namespace.cleanup(dt.timedelta(hours=1))
    requests = proxy.requests()
    assert result.files == 0
    assert result.kept_leaf_versions == len(KEYS)
    assert _leaf_versions(requests, "GET") == [], requests
    assert _leaf_versions(requests, "HEAD") == [], requests


def test_a_cleanup_reads_a_one_version_leaf_manifest_once(
    proxy: Any, namespace: lp.PartitionedNamespace
) -> None:
    namespace.write(pa.table({"k": list(KEYS), "v": [20, 21, 22]}))
    first = namespace.cleanup(dt.timedelta(0))
    assert first.leaf_versions.count == len(KEYS)

    leaf_cache.clear()  # as in another process: the leaf versions are not known yet
    proxy.reset()
    again = namespace.cleanup(dt.timedelta(0))
    requests = proxy.requests()
    assert (again.files, again.kept_leaf_versions) == (0, len(KEYS))
    reads = [p for p in _leaf_versions(requests, "GET") if ".manifest" in p]
    assert len(reads) == len(KEYS), requests
    assert namespace.count_rows() == 15


def _leaf_listings(requests: list[tuple[str, str]]) -> list[str]:
    """Listings (``GET ?list-type=2``) of a prefix inside a leaf directory."""
    return [
        path
        for method, path in requests
        if method == "GET" and "list-type=2" in path and "$dataset" in unquote(path)
    ]


def test_a_cleanup_lists_the_root_once_rather_than_each_leaf(
    proxy: Any, namespace: lp.PartitionedNamespace
) -> None:
    leaf_cache.clear()
    proxy.reset()
    result = namespace.cleanup(dt.timedelta(0))
    requests = proxy.requests()
    assert (result.leaf_versions.count, result.staged_files.count) == (0, 0)
    assert result.kept_leaf_versions == len(KEYS)
    assert _leaf_listings(requests) == [], requests
    reads = [p for p in _leaf_versions(requests, "GET") if ".manifest" in p]
    assert len(reads) == len(KEYS), requests  # each leaf's one version, read once


def test_a_cleanup_does_not_read_the_leaf_versions_this_process_committed(
    proxy: Any, namespace: lp.PartitionedNamespace
) -> None:
    proxy.reset()
    result = namespace.cleanup(dt.timedelta(0))
    requests = proxy.requests()
    assert (result.leaf_versions.count, result.staged_files.count) == (0, 0)
    assert result.kept_leaf_versions == len(KEYS)
    assert _leaf_versions(requests, "GET") == [], requests
    assert _leaf_versions(requests, "HEAD") == [], requests
    assert namespace.count_rows() == 12


def _leaf_objects(endpoint: str, uri: str) -> dict[str, int]:
    """The objects inside leaf directories under ``uri`` (key -> size), behind the proxy."""
    prefix = uri.split(f"s3://{BUCKET}/", 1)[1]
    found = s3_client(endpoint).list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"]: int(o["Size"]) for o in found if "$dataset/" in o["Key"]}


def test_a_cleanup_removes_the_old_versions_this_process_committed_without_listing_them(
    proxy: Any, namespace: lp.PartitionedNamespace, s3_uri: str, s3_endpoint: str
) -> None:
    namespace.write(pa.table({"k": list(KEYS), "v": [20, 21, 22]}))
    before = _leaf_objects(s3_endpoint, s3_uri)
    proxy.reset()
    result = namespace.cleanup(dt.timedelta(0))
    requests = proxy.requests()
    after = _leaf_objects(s3_endpoint, s3_uri)
    assert (result.leaf_versions.count, result.kept_leaf_versions) == (len(KEYS), len(KEYS))
    # this process opened both versions of each leaf, and the root's listing has their files:
    # nothing is listed inside a leaf (Lance's cleanup lists 10 prefixes of each), and no
    # manifest is read (the old version's opened manifest names its transaction file)
    assert _leaf_listings(requests) == [], requests
    assert _leaf_versions(requests, "GET") == [], requests
    gone = set(before) - set(after)
    assert result.leaf_versions.files == len(gone) == 2 * len(KEYS)  # a manifest, its .txn
    assert result.leaf_versions.bytes == sum(before[key] for key in gone)
    assert sorted(key.rsplit("/", 2)[1] for key in gone) == sorted(
        ["_transactions", "_versions"] * 3
    )
    assert namespace.count_rows() == 15
    again = lp.PartitionedNamespace.open(s3_uri, storage_options=namespace.storage_options)
    assert again.to_table().num_rows == 15


def test_a_cleanup_takes_dropped_leaf_directories_from_the_root_listing(
    proxy: Any, namespace: lp.PartitionedNamespace
) -> None:
    namespace.write(pa.table({"k": ["z"], "v": [9]}), mode="overwrite")
    proxy.reset()
    result = namespace.cleanup(dt.timedelta(0))
    requests = proxy.requests()
    assert result.leaf_directories.count == len(KEYS)
    assert _leaf_listings(requests) == [], requests
    roots = [p for m, p in requests if "delimiter=" in p and unquote(p).endswith("/ns/")]
    assert roots == [], requests  # no listing of the root's directories either
    assert namespace.to_table().column("k").to_pylist() == ["z"]


def test_a_cleanup_takes_journals_and_models_from_the_root_listing(
    proxy: Any, namespace: lp.PartitionedNamespace, s3_uri: str, s3_endpoint: str
) -> None:
    client = s3_client(s3_endpoint)  # behind the proxy's back
    prefix = s3_uri.split(f"s3://{BUCKET}/", 1)[1]
    stray = ("_spark_staging/job-1/0-0.json", "_index_models/stale.model", "notes/readme.txt")
    for key in stray:
        client.put_object(Bucket=BUCKET, Key=f"{prefix}/{key}", Body=b"{}")
    proxy.reset()
    result = namespace.cleanup(dt.timedelta(0))
    requests = proxy.requests()
    assert result.staged_files.count == 2  # the journal's file and the model
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]
    left = {item["Key"][len(prefix) + 1 :] for item in listed}
    assert set(stray) & left == {"notes/readme.txt"}  # not a leaf: never touched
    listings = [
        unquote(p)
        for m, p in requests
        if "list-type=2" in p and "/__manifest/" not in unquote(p) and "$dataset" not in unquote(p)
    ]
    assert len(listings) == 1, listings  # the root's, once
    assert namespace.count_rows() == 12


def test_a_cleanup_deletes_the_old_versions_of_every_leaf_in_two_requests(
    proxy: Any, namespace: lp.PartitionedNamespace, s3_uri: str, s3_endpoint: str
) -> None:
    """With ``obstore`` (the ``s3`` extra), the removed leaf versions' files of every leaf go
    in DeleteObjects requests: one of their manifests, then one of the files only they read
    (one request per file before); the __manifest's likewise."""
    pytest.importorskip("obstore")
    namespace.write(pa.table({"k": list(KEYS), "v": [20, 21, 22]}))
    namespace.write(pa.table({"k": list(KEYS), "v": [30, 31, 32]}))
    before = _leaf_objects(s3_endpoint, s3_uri)
    marks: list[int] = []  # requests made when the leaves' removal starts (step 1 is done)
    proxy.reset()
    with on_step("leaf_versions", lambda _: marks.append(len(proxy.requests()))):
        result = namespace.cleanup(dt.timedelta(0))
    requests = proxy.requests()
    gone = set(before) - set(_leaf_objects(s3_endpoint, s3_uri))
    assert (result.leaf_versions.count, result.kept_leaf_versions) == (2 * len(KEYS), len(KEYS))
    assert result.leaf_versions.files == len(gone) == 4 * len(KEYS)  # 2 manifests, 2 .txn
    assert marks
    deletions = [path for method, path in requests[min(marks) :] if method == "POST"]
    assert len(deletions) == 2, requests[min(marks) :]
    assert all(path.endswith("?delete") for path in deletions)
    # and the expired __manifest versions' files (named from what every version references):
    # their manifests, then the rest; one request per file before
    assert result.manifest_versions.files > 2
    assert [method for method, _ in requests].count("POST") == 4, requests
    assert namespace.count_rows() == 18
    again = lp.PartitionedNamespace.open(s3_uri, storage_options=namespace.storage_options)
    assert again.to_table().num_rows == 18


def test_storage_options_obstore_does_not_take_delete_one_file_a_request(
    s3_uri: str, storage_options: dict[str, str]
) -> None:
    pytest.importorskip("obstore")
    assert Store(s3_uri, storage_options).bulk
    assert not Store(s3_uri, {**storage_options, "no_such_option": "1"}).bulk
    assert not Store(f"/tmp/{s3_uri.rsplit('/', 2)[1]}", {}).bulk  # a local disk
