"""The Structured Streaming sink: one exactly-once commit per micro-batch."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from tests.spark.test_writer import events, ids, journals


def _run(spark: SparkSession, source: Path, checkpoint: Path, uri: str) -> None:
    query = (
        spark.readStream.schema(events(spark, 0, 1).schema)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source / "part=*"))
        .writeStream.format("lance_partitioned")
        .option("checkpointLocation", str(checkpoint))
        .option("partition_by", "country")
        .trigger(availableNow=True)
        .start(uri)
    )
    query.awaitTermination()


@pytest.mark.spark
def test_a_replayed_micro_batch_is_written_once(spark: SparkSession, tmp_path: Path) -> None:
    """Spark replays a micro-batch whose sink commit happened but whose checkpoint commit
    did not (a crash between the two): removing the checkpoint's commit record of the last
    batch makes the restarted query run it again, and the sink recognises it."""
    source, checkpoint, uri = tmp_path / "in", tmp_path / "checkpoint", str(tmp_path / "ns")

    def add(part: int) -> None:
        events(spark, 100 * part, 100 * part + 100, partitions=1).write.parquet(
            str(source / f"part={part}")
        )

    for part in range(3):
        add(part)
    _run(spark, source, checkpoint, uri)
    ns = lp.PartitionedNamespace.open(uri)
    assert ids(ns) == list(range(300))
    version = ns.version
    last = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    assert last == 2
    # crashed after our commit: the batch's commit record (and its checksum) is missing
    (checkpoint / "commits" / str(last)).unlink()
    (checkpoint / "commits" / f".{last}.crc").unlink(missing_ok=True)
    _run(spark, source, checkpoint, uri)  # replays batch 2
    assert (checkpoint / "commits" / str(last)).exists()
    assert ns.refresh().version == version  # the replay committed nothing
    assert ids(ns) == list(range(300))
    add(3)
    _run(spark, source, checkpoint, uri)
    assert ids(ns) == list(range(400))
    assert journals(tmp_path / "ns") == []
    assert list((tmp_path / "ns" / "_spark_staging").iterdir()) == []
