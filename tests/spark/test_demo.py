"""README command 1: the demo pipeline, on a small row count (CI runs it too)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from lance_partitioned.examples import demo
from lance_partitioned.spark import FILTER_PUSHDOWN_CONF


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_demo_runs_end_to_end(
    spark: SparkSession, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        assert demo.main(["--rows", "20000", "--out", str(tmp_path)]) == 0
    finally:
        spark.conf.set(FILTER_PUSHDOWN_CONF, "false")
    out = capsys.readouterr().out
    ns = lp.PartitionedNamespace.open(str(tmp_path / "events"))
    assert ns.count_rows() == 20000 + 5000 + 5000
    total = len(ns.partitions())
    scanned = [int(n) for n in re.findall(rf"scanned +(\d+) of {total} leaves", out)]
    assert len(scanned) == len(demo.QUERIES)
    assert scanned[0] < total
    assert scanned[-1] == total
    assert "[6/6] summary" in out
    assert "done in" in out


def test_demo_explains_a_missing_java(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert demo.main(["--rows", "10", "--out", str(tmp_path)]) == 2
    assert "Java 17" in capsys.readouterr().err
