"""The streaming sink's exactly-once contract when the query's processes are killed.

Real processes (:mod:`._stream_job`): a streaming query writes one Parquet file per
micro-batch into a namespace and, at a deterministic point of one batch, SIGKILLs its JVM
and its Python driver; the next run restarts from the checkpoint. Killed mid-batch (rows
staged, nothing committed) or after the sink's commit and before the checkpoint records
the batch, the restarted query writes every id exactly once. What the killed run staged is
deleted by the replayed batch's commit, and a ``cleanup`` finds it too (when no run of the
batch follows, or the killed executor had not written its journal yet). The two kill points
are two tests, each with its own directories, so that pytest-xdist runs their JVMs side by side.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lance_partitioned as lp
from tests.spark.test_writer import ids

JOB = Path(__file__).with_name("_stream_job.py")
ROWS = 100  # per micro-batch


def _add(source: Path, part: int) -> None:
    """One Parquet file (one micro-batch) of ids ``100 * part ..``, newer than the others."""
    directory = source / f"part={part}"
    directory.mkdir(parents=True)
    first = ROWS * part
    table = pa.table(
        {
            "id": pa.array(range(first, first + ROWS), pa.int64()),
            "country": pa.array([("US", "FR", "DE")[i % 3] for i in range(ROWS)]),
        }
    )
    path = directory / "data.parquet"
    pq.write_table(table, path)
    os.utime(path, (1_700_000_000 + part, 1_700_000_000 + part))  # the order Spark reads them


def _run(tmp_path: Path, *kill: str) -> int:
    src = str(Path(lp.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
    }
    args = [str(tmp_path / "in"), str(tmp_path / "checkpoint"), str(tmp_path / "ns"), *kill]
    done = subprocess.run(
        [sys.executable, str(JOB), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    if done.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(done.stderr[-4000:])
    return done.returncode


def _committed(tmp_path: Path) -> list[int]:
    """The micro-batches the checkpoint records as committed."""
    commits = tmp_path / "checkpoint" / "commits"
    return sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit())


def _unread(root: Path, *, latest: bool = False) -> list[str]:
    """The data files (relative to ``root``) of the leaf directories that no version of
    their leaf reads (``latest``: that its latest version does not read)."""
    unread = []
    for leaf in sorted(p.parent for p in root.glob("*/data")):
        if leaf.name == "__manifest":
            continue
        dataset = lance.dataset(str(leaf))
        versions = [dataset.version] if latest else [v["version"] for v in dataset.versions()]
        read = {
            data_file.path
            for version in versions
            for fragment in dataset.checkout_version(version).get_fragments()
            for data_file in fragment.metadata.files
        }
        unread += [
            f"{leaf.name}/data/{p.name}" for p in (leaf / "data").iterdir() if p.name not in read
        ]
    return sorted(unread)


def _journaled(root: Path) -> list[str]:
    """The data files the Spark staging journals under ``root`` list."""
    listed = []
    for journal in (root / "_spark_staging").glob("*/*.json"):
        staged = json.loads(journal.read_text(encoding="utf-8"))["staged"]
        listed += [
            f"{location}/data/{name}" for location, names in staged.items() for name in names
        ]
    return sorted(listed)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)  # two runs of a subprocess with its own JVM
def test_killed_while_staged_restarts_from_its_checkpoint_exactly_once(tmp_path: Path) -> None:
    for part in range(3):
        _add(tmp_path / "in", part)
    # killed while batch 1 is staged: batch 0 is committed, batch 1 is not
    assert _run(tmp_path, "staged", "1") == -signal.SIGKILL
    ns = lp.PartitionedNamespace.open(str(tmp_path / "ns"))
    assert ids(ns) == list(range(100))
    assert _committed(tmp_path) == [0]
    # the killed attempt staged batch 1 (one task: a file in each of the three leaves) and
    # journaled it; no version reads those files
    killed = _unread(tmp_path / "ns")
    assert len(killed) == 3
    assert _journaled(tmp_path / "ns") == killed
    # were the query never restarted, a cleanup would remove them (and the journal), as it
    # does when the executor is killed before its journal is written
    copy = tmp_path / "killed"
    shutil.copytree(tmp_path / "ns", copy)
    cleaned = lp.PartitionedNamespace.open(str(copy)).cleanup(dt.timedelta(0))
    assert cleaned.staged_files.files == len(killed) + 1  # and the journal
    assert _unread(copy, latest=True) == []
    assert not (copy / "_spark_staging").exists()
    assert ids(lp.PartitionedNamespace.open(str(copy))) == list(range(100))

    assert _run(tmp_path) == 0  # restart: batch 1 again, then batch 2
    assert ids(ns) == list(range(300))
    assert _committed(tmp_path) == [0, 1, 2]
    # the replayed batch 1 ran as task 0, attempt 0 again: its commit found the killed run's
    # journal (its own has another name) and deleted what it lists
    assert _unread(tmp_path / "ns") == []
    assert _journaled(tmp_path / "ns") == []
    cleaned = ns.cleanup(dt.timedelta(0))
    assert cleaned.staged_files.files == 0  # nothing left for the cleanup to find
    assert _unread(tmp_path / "ns", latest=True) == []
    assert not (tmp_path / "ns" / "_spark_staging").exists()
    assert ids(ns) == list(range(300))


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)  # two runs of a subprocess with its own JVM
def test_killed_after_the_sink_commit_restarts_from_its_checkpoint_exactly_once(
    tmp_path: Path,
) -> None:
    # batches 0-2 run and are recorded in the checkpoint, then the run is killed after the
    # sink committed batch 3 and before the checkpoint recorded it (the same state as a
    # restart that commits 0-2 and is killed in batch 3: one JVM start fewer)
    for part in range(5):
        _add(tmp_path / "in", part)
    assert _run(tmp_path, "committed", "3") == -signal.SIGKILL
    ns = lp.PartitionedNamespace.open(str(tmp_path / "ns"))
    assert ids(ns) == list(range(400))
    assert _committed(tmp_path) == [0, 1, 2]
    version = ns.refresh().version
    assert _run(tmp_path) == 0  # restart: batch 3 replayed (and skipped), then batch 4
    assert ids(ns) == list(range(500))  # each id once: nothing lost, nothing duplicated
    assert _committed(tmp_path) == [0, 1, 2, 3, 4]
    assert ns.refresh().version == version + 1  # only batch 4 committed
    assert _unread(tmp_path / "ns") == []  # the replay deleted what it staged
    assert _journaled(tmp_path / "ns") == []
