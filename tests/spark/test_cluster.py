"""The data source in ``local-cluster[2,1,1024]`` mode: separate executor JVMs, each with its
own Python workers, write and read one namespace (pickled writers, readers and splits cross
process boundaries; the driver commits). The job runs in a subprocess (:mod:`._cluster_job`)
because this process's JVM already runs the ``local[2]`` test session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lance_partitioned as lp

JOB = Path(__file__).with_name("_cluster_job.py")


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)  # the subprocess starts its own JVMs: minutes on a loaded machine
def test_write_and_pruned_read_on_two_executor_jvms(tmp_path: Path) -> None:
    uri = str(tmp_path / "ns")
    src = str(Path(lp.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        # executors import this checkout's package (the venv's editable install may be another)
        "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
    }
    done = subprocess.run(
        [sys.executable, str(JOB), uri],
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(result["executors"]) == 2  # two executor JVMs
    assert os.getpid() not in result["task_pids"]
    assert result["rows"] == result["distinct_ids"] == 3000
    assert result["pruned_rows"] == 1000
    assert result["pruned_dates"] == ["2025-01-02"]
    assert result["pruned_us"] == 500
    assert 1 <= result["pruned_partitions"] <= 2  # splits of that day's two leaves
    ns = lp.PartitionedNamespace.open(uri)
    assert ns.count_rows() == 3000
    assert len(ns.plan_scan("event_date = DATE '2025-01-02'")) == 2
    assert not list((tmp_path / "ns" / "_spark_staging").glob("*/*.json"))
