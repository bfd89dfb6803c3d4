"""Writes into a partitioned namespace: modes, schema rules, NULL and hostile values, inputs."""

from __future__ import annotations

import datetime as dt
import os
import re
import threading
import time
from typing import Any

import duckdb
import lance
import pandas as pd
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned import ingest as write_module
from lance_partitioned.ingest import WriteOptions
from lance_partitioned.ingest import stager as stager_module
from tests.integration.helpers import read_leaves, sorted_rows

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("event_date", pa.date32()),
        pa.field("country", pa.string()),
        pa.field("amount", pa.float64()),
    ]
)


def events(ids: range, countries: list[str | None] | None = None) -> pa.Table:
    countries = countries or ["US", "FR", "DE"]
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "event_date": pa.array(
                [dt.date(2024, 12, 30) + dt.timedelta(days=i % 5) for i in ids], pa.date32()
            ),
            "country": [countries[i % len(countries)] for i in ids],
            "amount": [i * 1.5 for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture
def ns(tmp_path: os.PathLike[str]) -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(
        str(tmp_path), schema=SCHEMA, partition_by="year(event_date) AS event_year, country"
    )


def test_append_writes_every_row_once(ns: lp.PartitionedNamespace) -> None:
    data = events(range(100))
    result = ns.write(data)
    assert result.rows_written == 100
    # years 2024/2025 x 3 countries
    assert result.partitions_created == 6
    assert result.partitions_touched == 6
    assert sorted_rows(read_leaves(ns)) == sorted_rows(data.cast(ns.schema))
    second = ns.write(events(range(100, 150)))
    assert second.partitions_created == 0
    assert second.version > result.version
    assert read_leaves(ns).num_rows == 150


def test_appendix_c_rows_for_a_two_level_spec(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(range(1), ["US"]).replace_schema_metadata())
    rows = lance.dataset(f"{ns.uri}/__manifest").to_table().sort_by("object_id").to_pylist()
    by_depth = {row["object_id"].count("$"): row for row in rows}
    assert [r["object_id"].count("$") for r in rows] == [0, 1, 2, 3]
    v1, year_ns, country_ns, leaf = (by_depth[i] for i in range(4))
    assert v1["object_id"] == "v1"
    assert (v1["object_type"], v1["event_year"], v1["country"]) == ("namespace", None, None)
    assert (year_ns["object_type"], year_ns["event_year"], year_ns["country"]) == (
        "namespace",
        2024,
        None,
    )
    assert (country_ns["event_year"], country_ns["country"]) == (2024, "US")
    assert leaf["object_type"] == "table"
    assert (leaf["event_year"], leaf["country"]) == (2024, "US")
    assert leaf["object_id"] == country_ns["object_id"] + "$dataset"
    assert re.fullmatch(r"v1\$[0-9a-z]{16}\$[0-9a-z]{16}\$dataset", leaf["object_id"])
    assert re.fullmatch(r"[0-9a-f]{8}_" + re.escape(leaf["object_id"]), leaf["location"])
    assert leaf["read_version"] >= 1
    assert os.path.isdir(os.path.join(ns.uri, leaf["location"]))


def test_partition_names_are_derived_so_two_namespaces_agree(tmp_path: os.PathLike[str]) -> None:
    ids = []
    for sub in ("a", "b"):
        other = lp.PartitionedNamespace.create(
            os.path.join(tmp_path, sub), schema=SCHEMA, partition_by="country"
        )
        other.write(events(range(10)))
        ids.append(sorted(other.partitions().column("object_id").to_pylist()))
    assert ids[0] == ids[1]


def test_overwrite_partitions_replaces_only_partitions_in_the_data(
    ns: lp.PartitionedNamespace,
) -> None:
    ns.write(events(range(30)))
    before = {r["object_id"]: r["read_version"] for r in ns.partitions().to_pylist()}
    replacement = events(range(1000, 1004), ["US"]).filter(
        pa.compute.equal(pa.compute.year(events(range(1000, 1004), ["US"])["event_date"]), 2025)
    )
    result = ns.write(replacement, mode="overwrite_partitions")
    assert result.partitions_touched == 1
    data = read_leaves(ns)
    us_2025 = [r for r in data.to_pylist() if r["country"] == "US" and r["event_date"].year == 2025]
    assert sorted(r["id"] for r in us_2025) == sorted(replacement["id"].to_pylist())
    others = [
        r for r in data.to_pylist() if not (r["country"] == "US" and r["event_date"].year == 2025)
    ]
    original = [
        r
        for r in events(range(30)).to_pylist()
        if not (r["country"] == "US" and r["event_date"].year == 2025)
    ]
    assert sorted(r["id"] for r in others) == sorted(r["id"] for r in original)
    after = {r["object_id"]: r["read_version"] for r in ns.partitions().to_pylist()}
    changed = [oid for oid in after if after[oid] != before.get(oid)]
    assert len(changed) == 1


def test_overwrite_replaces_the_whole_namespace(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(range(30)))
    old_version = ns.version
    result = ns.write(events(range(500, 503), ["FR"]), mode="overwrite")
    assert result.partitions_removed > 0
    assert sorted(read_leaves(ns)["id"].to_pylist()) == [500, 501, 502]
    assert set(ns.partitions().column("country").to_pylist()) == {"FR"}
    # the old manifest version still reads the old data (time travel)
    old = lp.PartitionedNamespace.open(ns.uri, version=old_version)
    assert read_leaves(old).num_rows == 30


def test_overwrite_then_recreate_a_removed_partition(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(range(10), ["US"]))
    ns.write(events(range(10, 12), ["FR"]), mode="overwrite")
    ns.write(events(range(20, 22), ["US"]))
    data = read_leaves(ns)
    assert sorted(data["id"].to_pylist()) == [10, 11, 20, 21]


def test_unknown_mode_is_rejected(ns: lp.PartitionedNamespace) -> None:
    with pytest.raises(errors.InvalidInputError, match="'upsert'"):
        ns.write(events(range(3)), mode="upsert")  # type: ignore[arg-type]


# ---------------------------------------------------------------- schema rules
def test_missing_nullable_column_is_written_as_null(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(range(4)).drop_columns(["amount"]))
    assert read_leaves(ns)["amount"].null_count == 4


def test_missing_non_nullable_column_is_an_error(ns: lp.PartitionedNamespace) -> None:
    version = ns.version
    with pytest.raises(errors.SchemaMismatchError, match=r"'id'.*not nullable"):
        ns.write(events(range(4)).drop_columns(["id"]))
    assert ns.refresh().version == version


def test_extra_column_is_an_error_naming_it(ns: lp.PartitionedNamespace) -> None:
    data = events(range(4)).append_column("surprise", pa.array([1, 2, 3, 4]))
    with pytest.raises(errors.SchemaMismatchError, match="'surprise'"):
        ns.write(data)
    assert ns.partitions().num_rows == 0


def test_other_types_are_cast_when_lossless(ns: lp.PartitionedNamespace) -> None:
    data = events(range(4))
    data = data.set_column(0, "id", data["id"].cast(pa.int32()))
    data = data.set_column(3, "amount", data["amount"].cast(pa.float32()))
    ns.write(data)
    out = read_leaves(ns)
    assert out.schema.field("id").type == pa.int64()
    assert sorted(out["id"].to_pylist()) == [0, 1, 2, 3]


def test_lossy_cast_is_an_error(tmp_path: os.PathLike[str]) -> None:
    schema = pa.schema([("k", pa.string()), ("small", pa.int8())])
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=schema, partition_by="k")
    with pytest.raises(errors.CastError, match="'small'"):
        ns.write(pa.table({"k": ["a"], "small": pa.array([1000], pa.int64())}))
    with pytest.raises(errors.CastError, match="'small'"):
        ns.write(pa.table({"k": ["a"], "small": [1.5]}))
    assert ns.partitions().num_rows == 0


def test_nullability_is_checked_on_values(ns: lp.PartitionedNamespace) -> None:
    data = events(range(3))
    nullable_ids = pa.table(
        {**{n: data[n] for n in data.column_names}, "id": pa.array([1, 2, 3], pa.int64())}
    )
    assert nullable_ids.schema.field("id").nullable
    ns.write(nullable_ids)  # declared nullable, no NULLs: accepted
    with_null = nullable_ids.set_column(0, "id", pa.array([1, None, 3], pa.int64()))
    with pytest.raises(errors.SchemaMismatchError, match=r"'id'.*1 NULL"):
        ns.write(with_null)


# ---------------------------------------------------------------- values
def test_null_partition_values_are_a_real_partition(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(range(6), ["US", None]))
    parts = ns.partitions()
    assert None in parts.column("country").to_pylist()
    null_leaf = next(r for r in parts.to_pylist() if r["country"] is None)
    described = ns.as_lance_namespace().describe_table(
        lp_request(null_leaf["object_id"])  # type: ignore[arg-type]
    )
    assert "partition.country" not in (described.properties or {})
    assert "partition.event_year" in (described.properties or {})
    rows = read_leaves(ns).to_pylist()
    assert sum(1 for r in rows if r["country"] is None) == 3


def lp_request(object_id: str) -> object:
    import lance_namespace as ln

    return ln.DescribeTableRequest(id=object_id.split("$"))


HOSTILE = ["a$b/c=d", "..", "/", "", "x" * 10_000, "line\nbreak", "🦆 emoji", "%2F", "../../etc"]


def test_hostile_string_values_land_in_their_partition(tmp_path: os.PathLike[str]) -> None:
    root = os.path.join(tmp_path, "root")
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    ns = lp.PartitionedNamespace.create(root, schema=schema, partition_by="s")
    ns.write(pa.table({"id": list(range(len(HOSTILE))), "s": HOSTILE}))
    parts = ns.partitions()
    assert sorted(parts.column("s").to_pylist()) == sorted(HOSTILE)
    for row in read_leaves(ns).to_pylist():
        assert HOSTILE[row["id"]] == row["s"]
    # one directory per leaf, all of them directly under the root
    entries = sorted(os.listdir(tmp_path))
    assert entries == ["root"]
    for location in parts.column("location").to_pylist():
        assert "/" not in location
        real = os.path.realpath(os.path.join(root, location))
        assert os.path.dirname(real) == os.path.realpath(root)


# ---------------------------------------------------------------- inputs
def test_streaming_reader_with_small_buffers(ns: lp.PartitionedNamespace) -> None:
    batches = [events(range(i * 50, (i + 1) * 50)).to_batches()[0] for i in range(20)]
    reader = pa.RecordBatchReader.from_batches(SCHEMA, iter(batches))
    seen = []
    options = WriteOptions(chunk_bytes=4 << 10, flush_bytes=2 << 10, max_buffer_bytes=8 << 10)
    result = ns.write(reader, options=options, progress=seen.append)
    assert result.rows_written == 1000
    assert len(seen) > 1
    assert seen[-1].rows == 1000
    assert sorted(read_leaves(ns)["id"].to_pylist()) == list(range(1000))
    fragments = sum(
        len(lance.dataset(f"{ns.uri}/{loc}").get_fragments())
        for loc in ns.partitions().column("location").to_pylist()
    )
    assert fragments > ns.partitions().num_rows  # buffers were flushed more than once


@pytest.mark.parametrize("kind", ["batch", "batches", "pandas", "duckdb", "c_stream"])
def test_anything_that_speaks_arrow(ns: lp.PartitionedNamespace, kind: str) -> None:
    table = events(range(12))
    data: object
    if kind == "batch":
        data = table.to_batches()[0]
    elif kind == "batches":
        data = table.to_batches(max_chunksize=5)
    elif kind == "pandas":
        data = table.to_pandas()
        assert isinstance(data, pd.DataFrame)
    elif kind == "duckdb":
        source = table  # noqa: F841 (read by DuckDB's replacement scan)
        data = duckdb.sql("SELECT * FROM source")
    else:
        reader = table.to_reader()

        class Stream:
            def __arrow_c_stream__(self, requested_schema: object = None) -> object:
                return reader.__arrow_c_stream__(requested_schema)

        data = Stream()
    ns.write(data)
    assert sorted(read_leaves(ns)["id"].to_pylist()) == list(range(12))


def test_unsupported_input_is_a_typed_error(ns: lp.PartitionedNamespace) -> None:
    with pytest.raises(errors.InvalidInputError, match="int"):
        ns.write(42)


# ---------------------------------------------------------------- lifecycle
def test_create_refuses_an_existing_namespace(ns: lp.PartitionedNamespace) -> None:
    with pytest.raises(errors.NamespaceAlreadyExistsError):
        lp.PartitionedNamespace.create(ns.uri, schema=SCHEMA, partition_by="country")
    same = lp.PartitionedNamespace.create(
        ns.uri, schema=SCHEMA, partition_by="year(event_date) AS event_year, country", exist_ok=True
    )
    assert same.version == ns.version
    with pytest.raises(errors.NamespaceAlreadyExistsError, match="another"):
        lp.PartitionedNamespace.create(ns.uri, schema=SCHEMA, partition_by="country", exist_ok=True)


def test_open_missing_and_not_partitioned(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(errors.NamespaceNotFoundError):
        lp.PartitionedNamespace.open(os.path.join(tmp_path, "nothing"))
    plain = os.path.join(tmp_path, "plain")
    lance.write_dataset(pa.table({"object_id": ["t"]}), os.path.join(plain, "__manifest"))
    with pytest.raises(errors.NotAPartitionedNamespaceError, match="partition_spec_v"):
        lp.PartitionedNamespace.open(plain)


def test_schema_and_specs_are_exposed(ns: lp.PartitionedNamespace) -> None:
    assert ns.schema.names == ["id", "event_date", "country", "amount"]
    assert ns.schema.field("country").metadata[b"lance:field_id"] == b"2"
    assert [f.name for f in ns.current_spec.fields] == ["event_year", "country"]
    assert len(ns.partition_specs) == 1
    reopened = lp.PartitionedNamespace.open(ns.uri)
    assert reopened.version == ns.version
    assert "event_year" in repr(reopened)


def test_time_travel_is_read_only(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(range(3)))
    old = lp.PartitionedNamespace.open(ns.uri, version=ns.version)
    with pytest.raises(errors.UnsupportedOperationError, match="read-only"):
        old.write(events(range(3)))
    with pytest.raises(errors.TableVersionNotFoundError):
        lp.PartitionedNamespace.open(ns.uri, version=10_000)


def test_partitions_filter(ns: lp.PartitionedNamespace) -> None:
    ns.write(events(range(30)))
    us = ns.partitions("country = 'US'")
    assert set(us.column("country").to_pylist()) == {"US"}
    assert us.num_rows == 2
    assert ns.partitions("event_year = 2025 AND country IN ('FR', 'DE')").num_rows == 2
    with pytest.raises(errors.InvalidInputError, match="nope"):
        ns.partitions("nope = 1")


def test_leaf_rows_record_their_row_counts(ns: lp.PartitionedNamespace) -> None:
    from lance_partitioned.manifest import LeafStats

    ns.write(events(range(60)))
    ns.write(events(range(60, 75), ["US"]))
    ns.write(events(range(75, 80), ["FR"]), mode="overwrite_partitions")
    leaves = ns.snapshot.tables.to_pylist()
    assert len(leaves) == 6
    for row in leaves:
        recorded = LeafStats.num_rows_at(row["metadata"], row["read_version"])
        actual = lance.dataset(f"{ns.uri}/{row['location']}", version=row["read_version"])
        assert recorded == actual.count_rows()
    # a read_version moved by a client that does not keep the stats disables them
    row = leaves[0]
    assert LeafStats.num_rows_at(row["metadata"], row["read_version"] + 1) is None


def test_one_big_batch_is_cut_into_chunks(ns: lp.PartitionedNamespace) -> None:
    table = events(range(2000))
    batch = table.combine_chunks().to_batches()[0]
    seen: list[lp.WriteProgress] = []
    result = ns.write(batch, options=WriteOptions(chunk_bytes=8 << 10), progress=seen.append)
    assert len(seen) >= 3  # one report per chunk: the 52 KB batch was cut
    rows = [p.rows for p in seen]  # the last report (every partition staged) repeats 2000
    assert rows == sorted(rows)
    assert rows[:-1] == sorted(set(rows))
    assert result.rows_written == 2000
    assert sorted(read_leaves(ns)["id"].to_pylist()) == list(range(2000))


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_chunks_grouped_in_parallel_keep_input_order(
    ns: lp.PartitionedNamespace, threads: int
) -> None:
    """Chunks are grouped on the pool, several at once, but staged in input order: every leaf
    holds its rows in the order they came."""
    batches = [events(range(i * 40, (i + 1) * 40)).to_batches()[0] for i in range(50)]
    reader = pa.RecordBatchReader.from_batches(SCHEMA, iter(batches))
    options = WriteOptions(chunk_bytes=1 << 10, threads=threads)
    assert ns.write(reader, options=options).rows_written == 2000
    parts = ns.partitions()
    assert parts.num_rows == 6
    for location in parts.column("location").to_pylist():
        ids = lance.dataset(f"{ns.uri}/{location}").to_table().column("id").to_pylist()
        assert ids == sorted(ids)
    assert sorted(read_leaves(ns)["id"].to_pylist()) == list(range(2000))


@pytest.mark.parametrize("batch_rows", [5, 50, 1 << 16])
def test_partition_of_many_slices_staged_in_order(
    ns: lp.PartitionedNamespace, monkeypatch: pytest.MonkeyPatch, batch_rows: int
) -> None:
    """A partition buffered as many slices reaches Lance as merged batches (or the slices
    themselves, when big enough), in input order, as one fragment per leaf."""
    monkeypatch.setattr(stager_module, "_BATCH_ROWS", batch_rows)
    batches = [events(range(i * 40, (i + 1) * 40)).to_batches()[0] for i in range(50)]
    reader = pa.RecordBatchReader.from_batches(SCHEMA, iter(batches))
    assert ns.write(reader, options=WriteOptions(chunk_bytes=1 << 10)).rows_written == 2000
    for location in ns.partitions().column("location").to_pylist():
        leaf = lance.dataset(f"{ns.uri}/{location}")
        assert len(leaf.get_fragments()) == 1
        ids = leaf.to_table().column("id").to_pylist()
        assert ids == sorted(ids)
    assert sorted(read_leaves(ns)["id"].to_pylist()) == list(range(2000))


def test_slow_staging_holds_reading_back(
    ns: lp.PartitionedNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When staging is slower than reading (slow storage), reading waits: the bytes handed to
    staging and not yet written stay within ``max_buffer_bytes`` plus one chunk (the chunk
    that took the buffers over it)."""
    original = write_module._Stager._write
    original_flush = write_module._Stager.flush
    lock = threading.Lock()
    written = [0]
    handed = [0]

    def counted_flush(self: Any, part: Any) -> None:
        nbytes = part.buffered
        original_flush(self, part)
        with lock:
            handed[0] += nbytes

    def slow_write(
        self: Any, buffer: list[pa.Table], uri: str, mode: str, nbytes: int
    ) -> list[Any]:
        time.sleep(0.02)
        fragments = original(self, buffer, uri, mode, nbytes)
        with lock:
            written[0] += nbytes
        return fragments

    monkeypatch.setattr(write_module._Stager, "_write", slow_write)
    monkeypatch.setattr(write_module._Stager, "flush", counted_flush)
    lag = []

    def progress(report: lp.WriteProgress) -> None:
        with lock:
            lag.append(handed[0] - written[0])

    batches = [events(range(i * 40, (i + 1) * 40)).to_batches()[0] for i in range(100)]
    options = WriteOptions(chunk_bytes=1 << 10, flush_bytes=2 << 10, max_buffer_bytes=8 << 10)
    reader = pa.RecordBatchReader.from_batches(SCHEMA, iter(batches))
    assert ns.write(reader, options=options, progress=progress).rows_written == 4000
    assert max(lag) > 0
    assert max(lag) <= options.max_buffer_bytes + options.chunk_bytes
    assert sorted(read_leaves(ns)["id"].to_pylist()) == list(range(4000))


def test_error_in_a_later_chunk_leaves_nothing_visible(ns: lp.PartitionedNamespace) -> None:
    """A schema error found while a chunk is grouped on the pool reaches the caller as the
    typed error, and the write stays invisible."""
    ns.write(events(range(10)))
    before = (ns.version, sorted_rows(read_leaves(ns)))
    loose = SCHEMA.set(0, SCHEMA.field("id").with_nullable(True))
    good = [events(range(i * 40, (i + 1) * 40)).cast(loose) for i in range(10)]
    bad = events(range(400, 440)).cast(loose).set_column(0, "id", pa.nulls(40, pa.int64()))
    batches = [b for t in [*good, bad, *good] for b in t.to_batches()]
    reader = pa.RecordBatchReader.from_batches(loose, iter(batches))
    with pytest.raises(errors.SchemaMismatchError, match="'id' is not nullable"):
        ns.write(reader, options=WriteOptions(chunk_bytes=1 << 10, threads=2))
    reopened = lp.PartitionedNamespace.open(ns.uri)
    assert (reopened.version, sorted_rows(read_leaves(reopened))) == before


@pytest.mark.parametrize(
    ("dtype", "values"),
    [
        (pa.float64(), [0.0, -0.0, float("nan"), None, 1.5]),
        (pa.timestamp("us", "UTC"), [0, 1, None, 86_400_000_000, -1]),
        (pa.timestamp("ns"), [0, 1, None, 1_000, -1]),
        (pa.date32(), [0, 1, None, -1, 20_000]),
        (pa.string(), ["a", "", None, "a$b/c=d", "ä"]),
    ],
)
def test_partitions_found_again_in_later_chunks(
    tmp_path: os.PathLike[str], dtype: pa.DataType, values: list[object]
) -> None:
    """Chunks after the first find their partitions by value: the same partitions, with the
    same rows, as a write in one chunk (floats by bits: -0.0 is not 0.0; every NaN is one)."""
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("key", dtype)])
    n = 600
    keys = values * (n // len(values))
    if pa.types.is_temporal(dtype):  # built from their integer representation
        width = pa.int32() if dtype.bit_width == 32 else pa.int64()
        column = pa.array(keys, width).view(dtype)
    else:
        column = pa.array(keys, dtype)
    table = pa.table({"id": pa.array(range(n), pa.int64()), "key": column}, schema=schema)

    def layout(root: str, options: WriteOptions) -> dict[str, list[int]]:
        ns = lp.PartitionedNamespace.create(root, schema=schema, partition_by="key")
        ns.write(table, options=options)
        parts = ns.partitions()
        return {
            oid: sorted(lance.dataset(f"{root}/{loc}", version=v).to_table()["id"].to_pylist())
            for oid, loc, v in zip(
                parts["object_id"].to_pylist(),
                parts["location"].to_pylist(),
                parts["read_version"].to_pylist(),
                strict=True,
            )
        }

    whole = layout(os.path.join(tmp_path, "whole"), WriteOptions())
    chunked = layout(os.path.join(tmp_path, "chunked"), WriteOptions(chunk_bytes=1 << 10))
    assert len(whole) == len(values)
    assert chunked == whole


@pytest.mark.slow  # a child interpreter imports Lance, then the library, and writes
def test_importing_lance_first_logs_no_warning_per_new_partition(tmp_path: Any) -> None:
    """isort puts ``import lance`` first: Lance then reads ``LANCE_LOG`` before we set it, so
    staging a new partition must not log "No existing dataset ... it will be created"."""
    import subprocess
    import sys

    code = (
        "import lance\n"
        "import pyarrow as pa\n"
        "import lance_partitioned as lp\n"
        "ns = lp.PartitionedNamespace.create(\n"
        f"    {str(tmp_path / 'ns')!r},\n"
        "    schema=pa.schema([('id', pa.int64()), ('k', pa.string())]), partition_by='k')\n"
        "ns.write(pa.table({'id': [1, 2, 3], 'k': ['a', 'b', 'c']}))\n"
        "ns.write(pa.table({'id': [4, 5], 'k': ['a', 'd']}))\n"
        "print(ns.count_rows(), len(ns.partitions(sizes=False)))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("LANCE_")}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["5", "4"]
    assert "No existing dataset" not in out.stderr, out.stderr


def test_a_new_partition_is_staged_over_an_orphan_table(tmp_path: os.PathLike[str]) -> None:
    """A new partition whose (derived) leaf directory already holds a Lance table, left by a
    writer that died before its ``__manifest`` commit: staging in mode "create" is refused
    there, and the write stages in mode "overwrite" instead; the orphan's rows stay unseen."""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    other = lp.PartitionedNamespace.create(
        str(tmp_path / "other"), schema=SCHEMA, partition_by="country"
    )
    other.write(events(range(3), ["FR"]))  # the same derived leaf name in both namespaces
    (location,) = other.partitions(sizes=False).column("location").to_pylist()
    orphan = events(range(999, 1000), ["FR"]).cast(ns.schema)
    lance.write_dataset(orphan, ns._manifest.table_uri(location), mode="create")
    result = ns.write(events(range(5), ["FR"]))
    assert result.partitions_created == 1
    assert sorted(read_leaves(ns)["id"].to_pylist()) == [0, 1, 2, 3, 4]
