"""An import holds bounded memory, whatever the source's size: run in a subprocess with a
small write buffer and small commit groups over a Hive tree many times larger than the
buffer, its peak RSS stays well below what holding the tree would take (the issue's bound is
1 GB for any size; the default ``commit_rows`` and ``max_buffer_bytes`` are what bound it).

The peak is ``ru_maxrss`` of the child itself, against a baseline child that imports a tiny
tree through the same code (the interpreter, pyarrow, Lance and DataFusion loaded)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytestmark = pytest.mark.interop

CHILD = """
import json, resource, sys
import lance_partitioned as lp
from lance_partitioned.ingest import WriteOptions

options = WriteOptions(
    chunk_bytes=1 << 20, flush_bytes=2 << 20, max_buffer_bytes=8 << 20, threads=1
)
result = lp.import_(sys.argv[1], sys.argv[2], commit_rows=500_000, write_options=options)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
print(json.dumps({"rows": result.rows, "peak": peak}))
"""


def _tree(root: Path, files: int, rows: int) -> int:
    """A Hive tree of ``files`` uncompressed Parquet files of ``rows`` rows over 8 ``k``
    directories, written one file at a time; the bytes its rows take in memory."""
    total = 0
    for i in range(files):
        start = i * rows
        ids = np.arange(start, start + rows, dtype=np.int64)
        table = pa.table({"id": ids, "a": ids * 3, "b": ids % 1000, "c": ids.astype(np.float64)})
        folder = root / f"k={i % 8}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, folder / f"part-{i}.parquet", compression="none")
        total += table.nbytes + rows * 8  # the partition column k, as int64
    return total


def _peak(src: Path, dst: Path) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(src), str(dst)],
        capture_output=True,
        text=True,
        check=False,
        env=os.environ.copy(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


@pytest.mark.slow  # soak: two child interpreters, one importing a tree many times its buffer
def test_import_memory_stays_bounded(tmp_path: Path) -> None:
    tree_bytes = _tree(tmp_path / "tree", files=16, rows=500_000)  # 320 MB in memory
    _tree(tmp_path / "tiny", files=1, rows=1000)
    baseline = _peak(tmp_path / "tiny", tmp_path / "tiny-ns")
    big = _peak(tmp_path / "tree", tmp_path / "ns")
    assert big["rows"] == 16 * 500_000
    grown = big["peak"] - baseline["peak"]
    # holding the tree would add at least tree_bytes; the import adds its buffers (8 MB),
    # the chunks being grouped, one commit group's staging (commit_rows) and Lance's
    # encoders: well under half of the tree (about a third here, on 2 CPUs)
    assert grown < tree_bytes // 2, (grown >> 20, tree_bytes >> 20, baseline["peak"] >> 20)
