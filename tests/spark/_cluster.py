"""The SparkSession of the ``local-cluster[2,1,1024]`` jobs (two executor JVMs), shared by
``_cluster_job.py`` and ``_cluster_merge_job.py``: both run as scripts in a subprocess, so
this module is imported from their folder."""

from __future__ import annotations

import sys
from typing import Any

_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def cluster_session(app_name: str, **conf: str) -> Any:
    """A ``local-cluster[2,1,1024]`` session on 127.0.0.1 with the UI off, executors of 512m
    running this interpreter, and ``conf`` on top; its log level set to ERROR."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.executor.memory", "512m")
        .config("spark.pyspark.python", sys.executable)
        .config("spark.pyspark.driver.python", sys.executable)
        # short jobs on 2 shared cores: the C1 compiler only and the serial collector, in
        # the driver and the executor JVMs (as tests/spark/_stream_job.py)
        .config("spark.driver.extraJavaOptions", _JVM_OPTIONS)
        .config("spark.executor.extraJavaOptions", _JVM_OPTIONS)
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
