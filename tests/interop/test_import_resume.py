"""A killed import, run again with the same command, finishes without a row lost or
duplicated: the units done are recorded in the same __manifest commit as their rows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import lance_partitioned as lp
from tests.interop._oracle import same_rows

ROOT = Path(__file__).resolve().parents[2]
SRC = Path(lp.__file__).resolve().parents[1]  # the lance_partitioned this test imports

# Imports the tree with 100-row commits; with KILL set, SIGKILLs itself while reading the
# group after the first commit (that group's fragments are staged, not committed).
_JOB = textwrap.dedent(
    """
    import os, signal, sys
    import lance_partitioned as lp

    def progress(report):
        if os.environ.get("KILL") and report.commits >= 1 and report.rows > 150:
            os.kill(os.getpid(), signal.SIGKILL)

    result = lp.import_(sys.argv[1], sys.argv[2], commit_rows=100, progress=progress)
    print(result.rows, result.units_skipped, result.commits)
    """
)


def _run(tree: Path, uri: Path, kill: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(ROOT)])}
    if kill:
        env["KILL"] = "1"
    else:
        env.pop("KILL", None)
    return subprocess.run(
        [sys.executable, "-c", _JOB, str(tree), str(uri)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow  # integration: two child interpreters, the first killed by SIGKILL mid-import
def test_sigkill_then_rerun_imports_every_row_once(tmp_path: Path) -> None:
    table = pa.table(
        {
            "id": pa.array(range(500), pa.int64()),
            "k": [f"k{i % 10}" for i in range(500)],
            "v": [float(i) for i in range(500)],
        }
    )
    tree = tmp_path / "tree"
    ds.write_dataset(table, tree, format="parquet", partitioning=["k"], partitioning_flavor="hive")
    uri = tmp_path / "ns"

    killed = _run(tree, uri, kill=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    partial = lp.PartitionedNamespace.open(str(uri)).count_rows()
    assert 0 < partial < table.num_rows

    rerun = _run(tree, uri, kill=False)
    assert rerun.returncode == 0, rerun.stderr
    rows, skipped, commits = map(int, rerun.stdout.split())
    assert rows == table.num_rows - partial
    assert skipped > 0
    assert commits > 0
    same_rows(lp.PartitionedNamespace.open(str(uri)).to_table(), table)

    again = _run(tree, uri, kill=False)  # a third run finds every unit done
    assert again.stdout.split() == ["0", "10", "0"]
    same_rows(lp.PartitionedNamespace.open(str(uri)).to_table(), table)


def test_a_source_changed_since_the_interrupted_import_is_refused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    table = pa.table({"id": pa.array(range(30), pa.int64()), "k": [f"k{i % 3}" for i in range(30)]})
    ds.write_dataset(table, tree, format="parquet", partitioning=["k"], partitioning_flavor="hive")
    uri = tmp_path / "ns"
    lp.import_(str(tree), str(uri), commit_rows=1)
    extra = pa.table({"id": pa.array([99], pa.int64())})
    (tree / "k=a0").mkdir()  # sorts before k=k0: every unit moves one place down
    import pyarrow.parquet as pq

    pq.write_table(extra, tree / "k=a0" / "part-0.parquet")
    with pytest.raises(lp.errors.InvalidInputError, match="the source changed since"):
        lp.import_(str(tree), str(uri))
    same_rows(lp.PartitionedNamespace.open(str(uri)).to_table(), table)
