"""``PartitionedTable`` in ``local-cluster[2,1,1024]`` mode: a merge, then an update that moves
rows between partitions, a row-level delete and an optimize; the per-leaf work runs in two
executor JVMs (pickled jobs and staged results cross process boundaries), the driver commits
once per operation, and after each step the rows equal the Python API's on a copy of the
namespace. The job runs in a subprocess (:mod:`._cluster_merge_job`): this process's JVM runs
the ``local[2]`` session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp

JOB = Path(__file__).with_name("_cluster_merge_job.py")
sys.path.insert(0, str(JOB.parent))
from _cluster_merge_job import DELETE_WHERE, UPDATE_SET, UPDATE_WHERE  # noqa: E402

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.string()), ("amount", pa.int64())])


def _rows(root: Path, version: int | None = None) -> list[tuple[Any, ...]]:
    ns = lp.PartitionedNamespace.open(str(root), version=version)
    table = ns.to_table(columns=["id", "country", "amount"])
    return sorted(tuple(r.values()) for r in table.to_pylist())


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)  # the subprocess starts its own JVMs: minutes on a loaded machine
def test_merge_update_delete_optimize_on_two_executor_jvms_equal_python(tmp_path: Path) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "spark"), schema=SCHEMA, partition_by="country"
    )
    ns.write(
        pa.table(
            {
                "id": list(range(200)),
                "country": [("FR", "US", None)[i % 3] for i in range(200)],
                "amount": list(range(200)),
            },
            schema=SCHEMA,
        )
    )
    shutil.copytree(tmp_path / "spark", tmp_path / "python")
    before = ns.version
    src = str(Path(lp.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        # executors import this checkout's package (the venv's editable install may be another)
        "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
    }
    done = subprocess.run(
        [sys.executable, str(JOB), str(tmp_path / "spark")],
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(result["executors"]) == 2  # two executor JVMs
    source = pa.table(
        {
            "id": list(range(400)),
            "country": [("DE", "FR")[i % 2] for i in range(400)],
            "amount": [-i for i in range(400)],
        },
        schema=SCHEMA,
    )
    python = lp.PartitionedNamespace.open(str(tmp_path / "python"))
    expected = (
        python.merge(source, on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    assert result["version"] == before + 1  # one commit
    assert (result["updated"], result["inserted"]) == (
        expected.rows_updated,
        expected.rows_inserted,
    )
    assert (result["updated"], result["inserted"]) == (200, 200)
    merged = _rows(tmp_path / "python")
    assert _rows(tmp_path / "spark", result["version"]) == merged

    updated = python.update(UPDATE_WHERE, set=UPDATE_SET)
    assert result["update"] == [result["version"] + 1, updated.rows_updated]
    assert updated.rows_updated == sum(1 for row in merged if row[0] % 5 == 0) > 0
    assert _rows(tmp_path / "spark", result["update"][0]) == _rows(tmp_path / "python")

    deleted = python.delete(DELETE_WHERE)
    assert result["delete"] == [result["update"][0] + 1, deleted.rows_deleted]
    assert deleted.rows_deleted > 0
    assert _rows(tmp_path / "spark", result["delete"][0]) == _rows(tmp_path / "python")

    python.optimize()
    assert result["optimize"][0] > result["delete"][0]
    assert _rows(tmp_path / "spark") == _rows(tmp_path / "python")
    leaves = {
        side: lp.PartitionedNamespace.open(str(tmp_path / side))
        .partitions()
        .select(["country", "rows", "fragments"])
        .sort_by("country")
        .to_pylist()
        for side in ("spark", "python")
    }
    assert leaves["spark"] == leaves["python"]
    assert all(leaf["fragments"] == 1 for leaf in leaves["spark"] if leaf["rows"])  # compacted
    assert not list((tmp_path / "spark" / "_spark_staging").glob("*/*.json"))
