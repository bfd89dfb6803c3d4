"""What removing the expired ``__manifest`` versions asks S3 for, counted by a proxy in front
of the test server (``benchmarks/_proxy.py``): the files they alone reference are named from
what every version references (read once), not from Lance's explanation of its cleanup, which
lists each directory of the ``__manifest``; and they are exactly the files Lance names."""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import unquote

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from tests.conftest import BUCKET, s3_client
from tests.objectstore.conftest import KEYS

pytestmark = pytest.mark.s3


def _manifest_objects(endpoint: str, uri: str) -> set[str]:
    """The keys under the ``__manifest`` of the namespace at ``uri``, relative to it."""
    prefix = uri.split(f"s3://{BUCKET}/", 1)[1] + "/__manifest/"
    found = s3_client(endpoint).list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {o["Key"][len(prefix) :] for o in found}


def _explained(uri: str, options: dict[str, str]) -> set[str]:
    """The files (relative to the ``__manifest``) that Lance's cleanup of every version of it
    but the latest would delete, as its explanation names them (nothing deleted)."""
    ds = lance.dataset(f"{uri}/__manifest", storage_options=options)
    versions = [int(v["version"]) for v in ds.versions() if int(v["version"]) != ds.version]
    explained = ds.explain_cleanup_old_versions(
        versions=versions,
        error_if_tagged_old_versions=False,
        delete_unverified=False,
        include_files=True,
        max_files=10_000,
    )
    key = uri.split(f"s3://{BUCKET}/", 1)[1] + "/__manifest/"  # Lance's paths: in the bucket
    return {str(c.path).lstrip("/")[len(key) :] for c in explained.candidate_files}


def test_the_expired_manifest_versions_go_without_listing_its_directories(
    proxy: Any,
    namespace: lp.PartitionedNamespace,
    s3_uri: str,
    s3_endpoint: str,
    storage_options: dict[str, str],
) -> None:
    """Lance's explanation lists ``data/``, ``_transactions/``, ``_deletions/``,
    ``_indices/``... of the ``__manifest`` and reads every manifest again (54 requests for
    the benchmark's cleanup); the files it would name go all the same, and only they."""
    pytest.importorskip("obstore")
    namespace.write(pa.table({"k": list(KEYS), "v": [20, 21, 22]}))
    namespace.delete("v = 20")
    namespace.write(pa.table({"k": ["d"], "v": [40]}), mode="overwrite")
    expected = _explained(s3_uri, storage_options)
    before = _manifest_objects(s3_endpoint, s3_uri)
    proxy.reset()
    result = namespace.cleanup(dt.timedelta(0))
    requests = proxy.requests()
    gone = before - _manifest_objects(s3_endpoint, s3_uri)
    listed = [
        unquote(path).split("__manifest/", 1)[1].split("&", 1)[0]
        for _, path in requests
        if "list-type=2" in path and "__manifest" in unquote(path)
    ]
    assert not [p for p in listed if p.startswith(("data", "_transactions", "_deletions"))], listed
    assert not [p for p in listed if p.startswith(("_indices", "_blobs", "_refs/branches"))]
    assert expected
    assert gone == expected
    assert {p.split("/", 1)[0] for p in gone} >= {"_versions", "_transactions", "data"}
    assert result.manifest_versions.files == len(gone)
    assert len(result.removed_manifest_versions) == 5
    assert len(result.kept_manifest_versions) == 1
    again = lp.PartitionedNamespace.open(s3_uri, storage_options=storage_options)
    assert again.to_table().column("k").to_pylist() == ["d"]
