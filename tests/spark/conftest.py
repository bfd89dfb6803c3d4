"""One local SparkSession for every Spark test (a JVM start costs ~15 s on 2 cores).

The master is ``local[2, 2]``: two task threads, and a failed task is retried once, so the
tests can check that retried attempts never duplicate rows. Under pytest-xdist each worker
process starts its own session: its warehouse and scratch (``spark.local.dir``) directories
are its own temporary directories, the UI is off and the driver's ports are picked by the OS.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
os.environ.setdefault("LANCE_LOG", "error")  # no "creating dataset" warning per new leaf

with warnings.catch_warnings():
    # pyspark.testing warns once, at import, that pandas >= 3 is not fully supported
    warnings.simplefilter("ignore", FutureWarning)
    import pyspark.testing  # noqa: F401

from pyspark.sql import SparkSession  # noqa: E402

from ._conf import conf_set  # noqa: E402


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    import lance_partitioned.spark

    with warnings.catch_warnings():
        # py4j starts the JVM with a preexec_fn, which runs lance's at-fork warning hook
        warnings.filterwarnings("ignore", message="lance is not fork-safe")
        session = _start(tmp_path_factory.mktemp("spark"))
    session.sparkContext.setLogLevel("ERROR")
    lance_partitioned.spark.register(session)
    yield session
    session.stop()


@pytest.fixture
def joined(spark: SparkSession) -> Iterator[SparkSession]:
    """The session with a Spark merge's join route taken (not matched in the source's tasks,
    lance_partitioned.spark.merge_local): for the tests of the join's plan."""
    yield from conf_set(spark, "spark.lance_partitioned.merge.localMatch", "false")


def _start(scratch: Path) -> SparkSession:
    builder = SparkSession.builder
    # LP_TEST_MERGE_LOCAL_MATCH=true runs every Spark merge with its join route matched in
    # the source's tasks (lance_partitioned.spark.merge_local)
    if os.environ.get("LP_TEST_MERGE_LOCAL_MATCH"):
        local = os.environ["LP_TEST_MERGE_LOCAL_MATCH"]
        builder = builder.config("spark.lance_partitioned.merge.localMatch", local)
    return (
        builder.master("local[2, 2]")
        .appName("lance-partitioned-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        # catalog-table tests must not leave a spark-warehouse directory in the checkout
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        # shuffle and block-manager files of this session only (one per xdist worker)
        .config("spark.local.dir", str(scratch / "local"))
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
