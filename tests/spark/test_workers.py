"""Freezing the heap of PySpark's reused Python workers (:mod:`lance_partitioned.spark.workers`)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest
from pyspark.sql import SparkSession

from lance_partitioned.spark.workers import freeze_worker_heap, in_pyspark_worker

pytestmark = pytest.mark.spark

_PROBE = """
import gc, json
import lance_partitioned.spark.reader  # the imports a planning call or a task makes
from lance_partitioned.spark.workers import freeze_worker_heap
tracked = len(gc.get_objects())
frozen = freeze_worker_heap()
print(json.dumps([frozen, tracked, gc.get_freeze_count(), len(gc.get_objects())]))
"""


def _probe(env: dict[str, str]) -> list[int]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_a_spark_worker_is_recognised(spark: SparkSession) -> None:
    seen = spark.sparkContext.parallelize(range(2), 2).map(lambda _: in_pyspark_worker())
    assert seen.collect() == [True, True]


def test_the_driver_keeps_its_collector() -> None:
    assert not in_pyspark_worker()
    before = gc.get_freeze_count()
    assert freeze_worker_heap() is False
    assert gc.get_freeze_count() == before


def test_in_a_worker_every_live_object_leaves_the_collected_generations() -> None:
    env = {k: v for k, v in os.environ.items() if k != "SPARK_PYTHON_RUNTIME"}
    frozen, tracked, freeze_count, left = _probe({**env, "SPARK_PYTHON_RUNTIME": "PYTHON_WORKER"})
    assert frozen
    assert tracked > 50_000  # lance, pyarrow and pydantic: what made gc.collect() slow
    assert freeze_count >= tracked
    assert left < 1_000  # what gc.collect() still walks
    frozen, _, freeze_count, left = _probe(env)
    assert not frozen
    assert freeze_count == 0
    assert left > 50_000
