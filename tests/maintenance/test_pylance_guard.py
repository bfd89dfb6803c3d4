"""Why pylance's own ``cleanup_old_versions`` on one leaf is unsafe (the guard documented in
docs/operations.md): it removes leaf versions that older ``__manifest`` versions still pin
through ``read_version``, so time travel to them fails; ``ns.cleanup`` keeps them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string())])


def _three_appends(root: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="k")
    for i in range(3):
        ns.write(pa.table({"id": [i], "k": ["a"]}))
    return ns


def test_pylance_cleanup_on_a_leaf_breaks_older_manifest_versions(tmp_path: Path) -> None:
    ns = _three_appends(tmp_path)
    old = ns.version - 1
    assert lp.PartitionedNamespace.open(str(tmp_path), version=old).count_rows() == 2
    location = ns.partitions().column("location")[0].as_py()
    lance.dataset(f"{tmp_path}/{location}").cleanup_old_versions(older_than=dt.timedelta(0))
    assert ns.refresh().count_rows() == 3  # the latest version still reads
    with pytest.raises(lp.errors.CorruptNamespaceError, match="pinned version 2"):
        lp.PartitionedNamespace.open(str(tmp_path), version=old).to_table()
