"""import_ from object storage: a Hive Parquet tree and a spec-001 layout written to a bucket
of moto's S3 server on 127.0.0.1 (pyarrow and pylance alone), read with ``source_options``."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pytest

import lance_partitioned as lp
from tests.cli.helpers import cli
from tests.conftest import BUCKET
from tests.interop._oracle import same_rows

pytestmark = [pytest.mark.s3, pytest.mark.interop]

ROWS = pa.table(
    {
        "id": pa.array(range(12), pa.int64()),
        "v": [i / 2 for i in range(12)],
        "country": ["US", "FR", "C N", None] * 3,
    }
)


def _s3fs(endpoint: str) -> pafs.S3FileSystem:
    host = endpoint.split("://", 1)[1]
    return pafs.S3FileSystem(
        access_key="test", secret_key="test", region="us-east-1", endpoint_override=host,
        scheme="http",
    )  # fmt: skip


def test_hive_tree_on_s3(tmp_path: Path, s3_endpoint: str, storage_options: dict[str, str]) -> None:
    prefix = f"{BUCKET}/{uuid.uuid4().hex}/tree"
    ds.write_dataset(
        ROWS,
        prefix,
        filesystem=_s3fs(s3_endpoint),
        format="parquet",
        partitioning=ds.partitioning(pa.schema([("country", pa.string())]), flavor="hive"),
        max_rows_per_file=2,
        max_rows_per_group=2,
    )
    src, dst = f"s3://{prefix}", str(tmp_path / "ns")
    result = lp.import_(src, dst, source_options=storage_options, commit_rows=4)
    assert result.rows == ROWS.num_rows
    assert result.units == 8  # two files (of 2 and 1 rows) per country, NULL included
    ns = lp.PartitionedNamespace.open(dst)
    assert [f.name for f in ns.current_spec.fields] == ["country"]
    same_rows(ns.to_table(), ROWS)
    assert ns.count_rows("country = 'C N'") == 3
    options = [a for k, v in storage_options.items() for a in ("--source-option", f"{k}={v}")]
    again = cli("import", src, dst, *options, "--json")  # the same import: nothing to do
    assert again.code == 0, again.err
    assert (json.loads(again.out)["rows"], json.loads(again.out)["units_skipped"]) == (0, 8)


def test_spec001_layout_on_s3_into_s3(s3_uri: str, storage_options: dict[str, str]) -> None:
    root = s3_uri.rsplit("/", 1)[0] + "/table"
    for country, name in [("US", "US"), ("C N", "C%20N")]:
        rows = ROWS.filter(pa.compute.equal(ROWS["country"], country)).drop_columns("country")
        lance.write_dataset(rows, f"{root}/country={name}.lance", storage_options=storage_options)
    expected = ROWS.filter(pa.compute.is_in(ROWS["country"], pa.array(["US", "C N"])))
    lp.import_(root, s3_uri, source_options=storage_options, storage_options=storage_options)
    ns = lp.PartitionedNamespace.open(s3_uri, storage_options=storage_options)
    assert [f.name for f in ns.current_spec.fields] == ["country"]
    same_rows(ns.to_table(), expected)
