"""``WriteProgress``: rows, partitions and the bytes of the staged files, as a write runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

import lance_partitioned as lp


def _data_file_bytes(root: Path) -> int:
    """Bytes of the leaves' data files (not the ``__manifest``'s)."""
    return sum(
        p.stat().st_size
        for p in root.rglob("*.lance")
        if p.parent.name == "data" and "__manifest" not in p.parts
    )


def test_bytes_staged_grows_and_ends_at_the_staged_files(tmp_path: Path) -> None:
    rows = 200_000
    rng = np.random.default_rng(1)
    data = pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "k": pa.array(rng.integers(0, 4, rows).astype(str)),
            "x": rng.random(rows),
        }
    )
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=data.schema, partition_by="k")
    reports: list[lp.WriteProgress] = []
    options = lp.WriteOptions(chunk_bytes=256 << 10, flush_bytes=512 << 10)
    ns.write(data, options=options, progress=reports.append)

    staged = [r.bytes_staged for r in reports]
    assert len(reports) > 2
    assert staged == sorted(staged)  # never decreases
    assert any(0 < b < staged[-1] for b in staged)  # grows while the input is read
    assert reports[-1].rows == rows
    assert reports[-1].partitions == 4
    on_disk = _data_file_bytes(tmp_path)
    assert on_disk > 0
    assert staged[-1] == on_disk  # one write into a new namespace: every data file is its own


def test_a_small_write_reports_its_bytes_at_the_end(tmp_path: Path) -> None:
    data = pa.table({"id": [1, 2, 3], "k": ["a", "b", "a"]})
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=data.schema, partition_by="k")
    reports: list[lp.WriteProgress] = []
    ns.write(data, progress=reports.append)
    assert reports[-1].bytes_staged == _data_file_bytes(tmp_path) > 0
