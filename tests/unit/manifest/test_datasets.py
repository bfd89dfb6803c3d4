"""Opening a table under a local path that is a file fails at once, with the typed errors
Lance's own failure maps to (Lance takes seconds there: it retries)."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.manifest.datasets import file_on_the_way, open_leaf


def test_file_on_the_way_finds_the_file_among_the_parents(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert file_on_the_way(str(blocker)) == str(blocker)
    assert file_on_the_way(f"{blocker}/ns/__manifest") == str(blocker)
    assert file_on_the_way(f"file://{blocker}/ns") == str(blocker)
    assert file_on_the_way(str(tmp_path)) is None  # a directory
    assert file_on_the_way(f"{tmp_path}/missing/ns") is None  # Lance says it is not there
    assert file_on_the_way(f"s3://bucket{blocker}") is None  # an object store: not ours to stat


def test_open_create_and_open_leaf_under_a_file_fail_at_once(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    schema = pa.schema([("id", pa.int64()), ("k", pa.string())])
    start = time.monotonic()
    with pytest.raises(errors.StorageError, match="a path on the way is a file"):
        open_leaf(f"{blocker}/leaf")
    with pytest.raises(errors.StorageError, match="a path on the way is a file"):
        lp.PartitionedNamespace.create(f"{blocker}/ns", schema=schema, partition_by="k")
    with pytest.raises(errors.NamespaceNotFoundError, match=str(blocker)):
        lp.PartitionedNamespace.open(str(blocker))
    assert time.monotonic() - start < 2  # Lance alone takes 2.5 s for each of the three
    assert blocker.read_text() == "x"
