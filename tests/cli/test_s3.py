"""--storage-option against a real S3-compatible server (moto's, on 127.0.0.1)."""

from __future__ import annotations

import pytest

import lance_partitioned as lp
from tests.cli.helpers import SCHEMA, cli, console_script, events

pytestmark = [pytest.mark.s3, pytest.mark.console_script]


def test_commands_reach_s3_through_storage_options(
    s3_uri: str, storage_options: dict[str, str]
) -> None:
    ns = lp.PartitionedNamespace.create(
        s3_uri, schema=SCHEMA, partition_by="country", storage_options=storage_options
    )
    ns.write(events(0, 12))
    options = [arg for k, v in storage_options.items() for arg in ("--storage-option", f"{k}={v}")]
    # the real entry point, in a subprocess: the server is reachable over HTTP
    leaves = console_script("partitions", s3_uri, *options, "--json")
    assert leaves.code == 0, leaves.err
    assert sorted(leaf["rows"] for leaf in leaves.json()) == [2, 2, 2, 6]  # FR, DE, NULL, US
    checked = cli("verify", s3_uri, *options, "--json")
    assert checked.code == 0, checked.err
    assert checked.json()["orphans"] is None  # not listed on an object store
    assert checked.json()["rows_sampled"] == 12
    # without the options, Lance cannot reach the bucket: one line, not a traceback
    assert cli("describe", s3_uri).code == 2
