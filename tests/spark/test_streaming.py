"""The Structured Streaming sink: one exactly-once commit per micro-batch."""

from __future__ import annotations

import pickle
import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import lance_partitioned as lp
from lance_partitioned.spark.source import LancePartitionedDataSource
from lance_partitioned.spark.writer import LancePartitionedStreamWriter
from tests.spark.test_writer import SPARK_SCHEMA, batch, data_files, events, ids, journals

QUERY = "6f1d0c8e-0000-4000-8000-000000000001"


def sink(uri: str, *, later: float = 0.0) -> LancePartitionedStreamWriter:
    """The sink of a micro-batch as Spark plans it (``later``: seconds after now)."""
    source = LancePartitionedDataSource({"path": uri, "partition_by": "country"})
    writer = pickle.loads(pickle.dumps(source.streamWriter(SPARK_SCHEMA, False)))
    assert isinstance(writer, LancePartitionedStreamWriter)
    writer.writer.job = replace(writer.writer.job, planned_at=time.time() + later)
    return writer


def test_a_replayed_micro_batch_deletes_what_its_killed_run_staged(tmp_path: Path) -> None:
    """A query killed while batch 1 was staged is restarted: the batch runs again, with the
    same query id, batch id, task and attempt numbers. Its commit deletes what the killed
    run staged (its journal is still there), not only what its own unused attempts did."""
    uri = str(tmp_path)
    first = sink(uri)
    first.commit([first.writer.stage_task(iter([batch(range(4))]), 0, 0, (QUERY, 0))], 0)
    kept = data_files(uri)
    sink(uri).writer.stage_task(iter([batch(range(4, 8))]), 0, 0, (QUERY, 1))  # then killed
    assert len(data_files(uri)) == len(kept) + 2
    assert len(journals(tmp_path)) == 1
    replay = sink(uri)
    replay.commit([replay.writer.stage_task(iter([batch(range(4, 8))]), 0, 0, (QUERY, 1))], 1)
    ns = lp.PartitionedNamespace.open(uri)
    assert ids(ns) == list(range(8))
    assert len(data_files(uri)) == len(kept) + 2  # the killed run's two files are gone
    assert journals(tmp_path) == []


def test_a_replayed_micro_batch_keeps_what_an_earlier_run_committed(tmp_path: Path) -> None:
    """A run killed after its __manifest commit, before it deleted its journals (task 1's
    attempt 0 failed after staging, attempt 1 was used); the query restarts an hour later,
    replays the batch and finds it committed. It deletes what the journals list but no leaf
    version reads, never the files the earlier run committed."""
    uri = str(tmp_path)
    run = sink(uri)
    used = [
        run.writer.stage_task(iter([batch(range(4))]), 0, 0, (QUERY, 0)),
        run.writer.stage_task(iter([batch(range(4, 8))]), 1, 1, (QUERY, 0)),
    ]
    run.writer.stage_task(iter([batch(range(4, 8))]), 1, 0, (QUERY, 0))  # failed
    staging = tmp_path / "_spark_staging"
    shutil.copytree(staging, tmp_path.parent / "journals")
    run.commit(used, 0)
    committed = data_files(uri)
    assert len(committed) == 4
    shutil.rmtree(staging)
    shutil.copytree(tmp_path.parent / "journals", staging)  # as the kill left them
    replay = sink(uri, later=3600)
    replayed = [
        replay.writer.stage_task(iter([batch(range(4))]), 0, 0, (QUERY, 0)),
        replay.writer.stage_task(iter([batch(range(4, 8))]), 1, 0, (QUERY, 0)),
    ]
    replay.commit(replayed, 0)
    assert data_files(uri) == committed
    assert ids(lp.PartitionedNamespace.open(uri)) == list(range(8))
    assert journals(tmp_path) == []


def test_a_replay_keeps_the_committed_files_of_a_leaf_it_cannot_read(tmp_path: Path) -> None:
    """As above, but the replay's commit cannot open the leaf (an I/O error reading its
    newest manifest, as a flaky object store gives): it cannot tell which files a version
    references, so it keeps them all rather than delete what the earlier run committed."""
    uri = str(tmp_path)
    run = sink(uri)
    used = [run.writer.stage_task(iter([batch(range(4), ("US",))]), 0, 0, (QUERY, 0))]
    staging, saved = tmp_path / "_spark_staging", tmp_path.parent / f"{tmp_path.name}-journals"
    shutil.copytree(staging, saved)
    run.commit(used, 0)
    committed = data_files(uri)
    shutil.rmtree(staging)
    shutil.copytree(saved, staging)  # as the kill left them
    (leaf,) = {p.parent.parent for p in committed}
    replay = sink(uri, later=3600)
    replayed = [replay.writer.stage_task(iter([batch(range(4), ("US",))]), 0, 0, (QUERY, 0))]
    newest = min((leaf / "_versions").glob("*.manifest"))  # V2 names: the smallest is newest
    content = newest.read_bytes()
    newest.write_bytes(b"torn")
    replay.commit(replayed, 0)
    newest.write_bytes(content)  # the store answers again
    assert set(committed) <= set(data_files(uri))
    assert ids(lp.PartitionedNamespace.open(uri)) == list(range(4))


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
