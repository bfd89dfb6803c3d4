"""Reads: pruning on the __manifest, residual filters, projection, limits, streaming, isolation."""

from __future__ import annotations

import datetime as dt
import os
import threading
import warnings

import duckdb
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.expressions import AlwaysTrue, EqualTo, In
from lance_partitioned.scan import ScanTask

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", "UTC")),
        pa.field("event_date", pa.date32()),
        pa.field("country", pa.string()),
        pa.field("user_id", pa.int64()),
        pa.field("amount", pa.float64()),
    ]
)
COUNTRIES = ["US", "FR", "DE", None]


def events(ids: range) -> pa.Table:
    start = dt.datetime(2024, 12, 28, tzinfo=dt.timezone.utc)
    stamps = [start + dt.timedelta(hours=7 * i) for i in ids]
    return pa.table(
        {
            "id": list(ids),
            "ts": stamps,
            "event_date": [s.date() for s in stamps],
            "country": [COUNTRIES[i % len(COUNTRIES)] for i in ids],
            "user_id": [i % 37 for i in ids],
            "amount": [None if i % 11 == 0 else i * 0.5 for i in ids],
        },
        schema=SCHEMA,
    )


DATA = events(range(400))


def oracle(condition: str, columns: str = "*") -> pa.Table:
    """The same SQL filter run by DuckDB over the source data."""
    data = DATA  # noqa: F841  (read by DuckDB through the replacement scan)
    return duckdb.sql(f"SELECT {columns} FROM data WHERE {condition}").arrow().read_all()


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


@pytest.fixture(
    scope="module",  # built once per spec: the tests that take it only read
    params=[
        "country",
        "year(ts), country",
        "event_date",
        "month(ts) AS m, bucket(4, user_id)",
        "truncate(100, id), day(ts)",
    ],
)
def ns(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> lp.PartitionedNamespace:
    with warnings.catch_warnings():  # month or day alone: what these specs test
        warnings.simplefilter("ignore", lp.AmbiguousPartitionWarning)
        created = lp.PartitionedNamespace.create(
            str(tmp_path_factory.mktemp("scan")), schema=SCHEMA, partition_by=request.param
        )
    created.write(DATA.slice(0, 250))
    created.write(DATA.slice(250))
    return created


FILTERS = [
    "country = 'FR'",
    "country IS NULL",
    "country IS NOT NULL AND id < 50",
    "country IN ('US', 'DE') AND amount > 100",
    "NOT (country = 'US')",
    "ts >= TIMESTAMP '2025-01-15 00:00:00+00:00' AND ts < TIMESTAMP '2025-02-01 00:00:00+00:00'",
    "event_date = DATE '2025-01-05'",
    "event_date BETWEEN DATE '2025-01-01' AND DATE '2025-01-03'",
    "user_id = 5 OR user_id = 7",
    "id >= 100 AND id < 200",
    "amount IS NULL",
    "country LIKE 'U%'",
    "id % 7 = 3",
    "id < 0",
]


# 5 specs x 14 filters against the DuckDB oracle
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("condition", FILTERS)
def test_filtered_read_equals_the_oracle(ns: lp.PartitionedNamespace, condition: str) -> None:
    got = ns.to_table(condition)
    assert ids(got) == ids(oracle(condition))
    assert got.schema == ns.schema


# 5 specs x 14 filters against the DuckDB oracle
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("condition", FILTERS)
def test_count_rows_equals_the_oracle(ns: lp.PartitionedNamespace, condition: str) -> None:
    assert ns.count_rows(condition) == oracle(condition).num_rows


def test_pruning_scans_only_matching_leaves(tmp_path: os.PathLike[str]) -> None:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path), schema=SCHEMA, partition_by="year(ts), country"
    )
    ns.write(DATA)
    everything = ns.plan_scan()
    assert len(everything) == len(ns.partitions())  # 2 years x 4 countries (NULL included)
    fr_2025 = ns.plan_scan("country = 'FR' AND ts >= TIMESTAMP '2025-03-01 00:00:00+00:00'")
    assert [dict(t.partition_values) for t in fr_2025] == [{"ts_year": 2025, "country": "FR"}]
    # the partition decides country, not the ts bound: that stays as the residual
    assert not isinstance(fr_2025[0].residual, AlwaysTrue)
    nulls = ns.plan_scan("country IS NULL")
    assert {dict(t.partition_values)["country"] for t in nulls} == {None}
    assert all(isinstance(t.residual, AlwaysTrue) for t in nulls)
    assert ns.plan_scan("country = 'XX'") == []
    # NOT country = 'US' keeps neither the US leaves nor the NULL leaves (three-valued logic)
    assert {dict(t.partition_values)["country"] for t in ns.plan_scan("NOT country = 'US'")} == {
        "FR",
        "DE",
    }


def test_predicates_built_in_python(tmp_path: os.PathLike[str]) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    ns.write(DATA)
    predicate = EqualTo("country", "DE") & In("user_id", (1, 2, 3))
    assert ids(ns.to_table(predicate)) == ids(oracle("country = 'DE' AND user_id IN (1, 2, 3)"))


def test_columns_and_limit(ns: lp.PartitionedNamespace) -> None:
    got = ns.to_table("amount > 10", columns=["amount", "id"])
    assert got.column_names == ["amount", "id"]
    assert ids(got) == ids(oracle("amount > 10"))
    limited = ns.to_table("country = 'US'", limit=7)
    assert limited.num_rows == 7
    assert set(limited.column("country").to_pylist()) == {"US"}
    assert ns.to_table(limit=0).num_rows == 0
    with pytest.raises(errors.InvalidInputError, match="nope"):
        ns.to_table(columns=["id", "nope"])
    with pytest.raises(errors.InvalidInputError, match="nope"):
        ns.to_table("nope = 1")


def test_to_batches_streams_with_a_batch_size(ns: lp.PartitionedNamespace) -> None:
    reader = ns.to_batches("id >= 10", columns=["id", "country"], batch_size=16)
    assert isinstance(reader, pa.RecordBatchReader)
    sizes = []
    seen: list[int] = []
    for batch in reader:
        sizes.append(batch.num_rows)
        seen.extend(batch.column("id").to_pylist())
    assert sorted(seen) == list(range(10, 400))
    assert max(sizes) <= 16


def test_to_batches_can_be_abandoned(ns: lp.PartitionedNamespace) -> None:
    before = threading.active_count()
    reader = ns.to_batches(batch_size=8)
    first = reader.read_next_batch()
    assert first.num_rows > 0
    reader.close()
    del reader
    assert threading.active_count() <= before + 1


def test_query_engines_read_the_stream(tmp_path: os.PathLike[str]) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    ns.write(DATA)
    reader = ns.to_batches("country = 'FR'", columns=["id", "amount"])  # noqa: F841
    (total,) = duckdb.sql("SELECT count(*) AS n, sum(id) AS s FROM reader").fetchall()
    expected = oracle("country = 'FR'", "count(*) AS n, sum(id) AS s").to_pylist()[0]
    assert total == (expected["n"], expected["s"])


def test_a_reader_keeps_its_snapshot_while_writers_commit(tmp_path: os.PathLike[str]) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    ns.write(DATA.slice(0, 100))
    reader = lp.PartitionedNamespace.open(str(tmp_path))
    tasks = reader.plan_scan("country = 'US'")
    writer = lp.PartitionedNamespace.open(str(tmp_path))
    writer.write(DATA.slice(100, 100))
    writer.write(DATA.slice(200, 100), mode="overwrite_partitions")
    assert ids(reader.to_table()) == list(range(100))
    assert reader.count_rows() == 100
    # planned tasks read their leaf at its read_version, not at the latest
    from lance_partitioned import scan

    planned = scan.to_table(tasks, reader.namespace_schema)
    assert ids(planned) == ids(oracle("country = 'US' AND id < 100"))
    # every country occurs in rows 200..299, so the dynamic overwrite replaced every partition
    assert ids(writer.to_table()) == list(range(200, 300))
    assert ids(reader.refresh().to_table()) == ids(writer.to_table())


def test_time_travel_reads_an_old_manifest_version(tmp_path: os.PathLike[str]) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    first = ns.write(DATA.slice(0, 100)).version
    ns.write(DATA.slice(100, 100))
    ns.write(DATA.slice(0, 10), mode="overwrite")
    old = lp.PartitionedNamespace.open(str(tmp_path), version=first)
    assert ids(old.to_table()) == list(range(100))
    assert old.count_rows("country = 'FR'") == oracle("country = 'FR' AND id < 100").num_rows
    assert ids(ns.to_table()) == list(range(10))


def test_tasks_pickle_and_read_by_fragment(tmp_path: os.PathLike[str]) -> None:
    import dataclasses
    import pickle

    from lance_partitioned import scan

    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    for start in range(0, 400, 100):
        ns.write(DATA.slice(start, 100))
    (task,) = ns.plan_scan("country = 'DE' AND id >= 150")
    task = pickle.loads(pickle.dumps(task))
    assert isinstance(task, ScanTask)
    assert task.row_count == oracle("country = 'DE'").num_rows
    fragments = [f.fragment_id for f in task.open().get_fragments()]
    assert len(fragments) == 4
    parts = [dataclasses.replace(task, fragment_ids=(f,)) for f in fragments]
    got = pa.concat_tables(scan.to_table([p], ns.namespace_schema) for p in parts)
    assert ids(got) == ids(oracle("country = 'DE' AND id >= 150"))
    assert scan.count_rows(parts, ns.namespace_schema) == got.num_rows


def test_read_side_schema_rules(tmp_path: os.PathLike[str]) -> None:
    """A leaf lacking a column reads NULL; a narrower leaf type is cast; extra leaf columns are
    ignored. Leaves are rewritten behind the namespace's back (as another client would)."""
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    ns.write(DATA)
    (row,) = ns.partitions("country = 'FR'").to_pylist()
    uri = f"{ns.uri}/{row['location']}"
    leaf = lance.dataset(uri, version=row["read_version"]).to_table()
    foreign = pa.table(
        {
            "id": leaf.column("id"),
            "country": leaf.column("country"),
            "user_id": pc.cast(leaf.column("user_id"), pa.int32()),
            "extra": pa.array(["x"] * leaf.num_rows),
        }
    )
    written = lance.write_dataset(foreign, uri, mode="overwrite")
    from lance_partitioned.manifest import Manifest

    manifest = Manifest(ns.uri)
    snapshot = manifest.snapshot()
    updated = {**snapshot.row(row["object_id"]), "read_version": written.version}
    from lance_partitioned.manifest import rows_table

    manifest.commit_rows(snapshot, rows_table(snapshot.rows.schema, [updated]))
    got = ns.refresh().to_table("country = 'FR' AND user_id < 10")
    assert got.schema == ns.schema
    assert ids(got) == ids(oracle("country = 'FR' AND user_id < 10"))
    assert set(got.column("amount").to_pylist()) == {None}
    assert got.column("user_id").type == pa.int64()
    # a residual the tree cannot express (Unknown) over a cast column runs in DataFusion
    mixed = ns.to_table("country = 'FR' AND user_id % 3 = 1")
    assert ids(mixed) == ids(oracle("country = 'FR' AND user_id % 3 = 1"))
