"""A streaming query into the ``lance_partitioned`` sink that can kill itself at one point.

Run by ``tests/spark/test_streaming_kill.py`` in a subprocess::

    python _stream_job.py SOURCE CHECKPOINT URI [staged|committed BATCH]

reads the Parquet files ``SOURCE/part=*`` one per micro-batch (``availableNow``) and writes
them with the sink. With a kill point, the process kills its JVM and then itself (SIGKILL,
nothing runs after) when micro-batch ``BATCH`` reaches it: ``staged`` in the task, once its
rows are staged (journal written, nothing committed); ``committed`` in the driver's commit,
once the ``__manifest`` commit is done and before Spark records the batch in the
checkpoint. The sink is the real one: a subclass only adds the kill point, shipped to the
Python workers with the class (cloudpickle pickles ``__main__`` classes by value).
"""

from __future__ import annotations

import os
import signal
import sys
import warnings
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceStreamArrowWriter,
    DataSourceStreamWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from lance_partitioned.spark.source import LancePartitionedDataSource


def _kill(pids: Sequence[int]) -> None:
    for pid in pids:  # the JVM first: it must not record anything after this point
        os.kill(pid, signal.SIGKILL)


class KillingWriter(DataSourceStreamArrowWriter):
    """The sink's writer, killing the query's processes at one point of one micro-batch."""

    point: str = ""
    batch: int = -1
    pids: tuple[int, ...] = ()

    def __init__(self, inner: DataSourceStreamWriter) -> None:
        self.inner = inner

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        message = self.inner.write(iterator)
        context = TaskContext.get()
        batch = None if context is None else context.getLocalProperty("streaming.sql.batchId")
        if self.point == "staged" and batch is not None and int(batch) == self.batch:
            _kill(self.pids)
        return message

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self.inner.commit(messages, batchId)
        if self.point == "committed" and batchId == self.batch:
            _kill(self.pids)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self.inner.abort(messages, batchId)


class KillingSource(LancePartitionedDataSource):
    """``lance_partitioned`` with a kill point in its streaming sink."""

    @classmethod
    def name(cls) -> str:
        return "lance_partitioned_killing"

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return KillingWriter(super().streamWriter(schema, overwrite))


def main(source: str, checkpoint: str, uri: str, point: str = "", batch: str = "-1") -> None:
    """Run the query until every file is written (or the kill point is reached)."""
    os.environ.setdefault("LANCE_LOG", "error")
    warnings.filterwarnings("ignore")
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("lance-partitioned-stream-kill")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        # a short job on 2 shared cores: the C1 compiler only (no C2 compiling hot code the
        # job does not run long enough to profit from) and the serial collector (no GC
        # threads): 29-37 s a run instead of 38-45 s, measured in pairs
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    jvm = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]
    KillingWriter.point, KillingWriter.batch = point, int(batch)
    KillingWriter.pids = (jvm, os.getpid())
    spark.dataSource.register(KillingSource)
    query = (
        spark.readStream.schema("id long, country string")
        .option("maxFilesPerTrigger", 1)
        .parquet(f"{source}/part=*")
        .writeStream.format(KillingSource.name())
        .option("checkpointLocation", checkpoint)
        .option("partition_by", "country")
        .trigger(availableNow=True)
        .start(uri)
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
