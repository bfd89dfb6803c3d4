"""What an append asks S3 for, counted by the proxy of ``conftest.py`` (issue 31): the write
commits on the ``__manifest`` snapshot it staged on, read just before, so the
``__manifest/_versions/`` listings in its chain are the refresh's and Lance's commit's only;
a writer who committed in between is still caught, at the compare-and-swap."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.transaction import write as transaction_write
from lance_partitioned.transaction.leaves import pause_at
from tests.objectstore.conftest import KEYS

pytestmark = pytest.mark.s3


def _manifest_listings(requests: list[tuple[str, str]]) -> list[str]:
    return [
        p
        for _, p in ((m, unquote(p)) for m, p in requests)
        if "list-type=2" in p and "__manifest" in p
    ]


def test_an_append_lists_the_manifest_versions_twice_and_each_leaf_once(
    proxy: Any, namespace: lp.PartitionedNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    # staging within the window however slow the machine is today (1 s by default)
    monkeypatch.setattr(transaction_write, "FRESH_WRITE_SECONDS", 600.0)
    proxy.reset()
    namespace.write(pa.table({"k": list(KEYS), "v": [100, 101, 102]}))
    requests = proxy.requests()
    # the refresh before staging, and Lance's commit of the __manifest: none in between
    assert len(_manifest_listings(requests)) == 2, requests
    leaves = [(m, unquote(p)) for m, p in requests if "$dataset" in unquote(p)]
    # per leaf: its data file, Lance's listing of its versions, transaction file, manifest
    assert len(leaves) <= 4 * len(KEYS), leaves
    # the __manifest commit: its data file (and a deletion file), transaction file, manifest
    assert len(requests) <= 2 + 4 * len(KEYS) + 4, requests
    assert namespace.count_rows() == 15


def test_a_writer_committing_after_the_refresh_is_caught_at_the_compare_and_swap(
    s3_uri: str,
    counted_options: dict[str, str],
    namespace: lp.PartitionedNamespace,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the other writer commits within the window, however slow the machine is today
    monkeypatch.setattr(transaction_write, "FRESH_WRITE_SECONDS", 600.0)
    other = lp.PartitionedNamespace.open(s3_uri, storage_options=counted_options)

    def append_meanwhile() -> None:  # staged data, nothing committed yet by `namespace`
        other.write(pa.table({"k": ["a", "z"], "v": [200, 201]}))

    with pause_at("staged", append_meanwhile):
        result = namespace.write(pa.table({"k": ["a", "b"], "v": [100, 101]}))
    # the first attempt, on the snapshot read before staging, lost to the other writer
    assert result.attempts == 2
    got = lp.PartitionedNamespace.open(s3_uri, storage_options=counted_options).to_table()
    assert sorted(got.column("v").to_pylist()) == [*range(12), 100, 101, 200, 201]
    assert got.filter(pa.compute.equal(got.column("k"), "a")).num_rows == 6
