"""The plan as columns (:mod:`lance_partitioned.scan.tasks`): ``plan_scan`` returns a
:class:`ScanTasks` that behaves as the list of tasks did, whose tasks agree with the
``__manifest`` rows they come from, over two partition spec versions."""

from __future__ import annotations

import datetime as dt
import os
import pickle

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned.expressions import AlwaysFalse, AlwaysTrue
from lance_partitioned.manifest import LeafStats
from lance_partitioned.pruning import residual
from lance_partitioned.pruning.fieldnames import field_terms, substitute
from lance_partitioned.scan import ScanTask, ScanTasks, bound_filter
from lance_partitioned.scan import tasks as plan_tasks
from lance_partitioned.spec.dialects import identity_columns

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("event_date", pa.date32()),
        pa.field("country", pa.string()),
        pa.field("amount", pa.float64()),
    ]
)
COUNTRIES = ["US", "FR", "DE", None]
FILTERS = [
    None,
    "amount > 4",
    "id_bucket = 1 AND amount < 3",
    "event_date_year = 2025 OR country = 'DE'",
    "country = 'FR'",
    "country IN ('FR', 'US') AND id < 30",
    "id >= 12",
    "event_date >= DATE '2025-01-03' AND amount > 4",
    "country IS NULL OR id = 7",
    "country = 'XX'",
    "false",
]
ON_COLUMNS = [f for f in FILTERS if f is None or ("_bucket" not in f and "_year" not in f)]


def events(ids: range) -> pa.Table:
    start = dt.date(2024, 12, 30)
    return pa.table(
        {
            "id": list(ids),
            "event_date": [start + dt.timedelta(days=i % 9) for i in ids],
            "country": [COUNTRIES[i % 4] for i in ids],
            "amount": [float(i % 7) for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="module")
def ns(tmp_path_factory: pytest.TempPathFactory) -> lp.PartitionedNamespace:
    """Leaves of two spec versions, written in three commits (the ``__manifest`` rows are
    not in object-id order, and in several chunks)."""
    root: os.PathLike[str] = tmp_path_factory.mktemp("scan_tasks")
    ns = lp.PartitionedNamespace.create(
        str(root), schema=SCHEMA, partition_by="country, bucket(3, id)"
    )
    ns.write(events(range(20)))
    ns.write(events(range(20, 30)))
    ns.update_partition_spec("year(event_date), country")
    ns.write(events(range(30, 45)))
    return lp.PartitionedNamespace.open(ns.uri)


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 2 tasks, built 3 at a time by an iteration, so that indexing, slices and
    iterations cross block and spec boundaries."""
    monkeypatch.setattr(plan_tasks, "BLOCK", 2)
    monkeypatch.setattr(plan_tasks, "AHEAD", 3)


@pytest.mark.parametrize("condition", FILTERS)
def test_the_plan_behaves_as_the_list_of_its_tasks(
    ns: lp.PartitionedNamespace, condition: str | None
) -> None:
    tasks = ns.plan_scan(condition)
    assert isinstance(tasks, ScanTasks)
    listed = list(tasks)
    n = len(listed)
    assert len(tasks) == n
    assert bool(tasks) == bool(listed)
    assert all(isinstance(task, ScanTask) for task in listed)
    assert tasks == listed
    assert listed == tasks
    assert tasks != [*listed, "x"]
    assert tasks != tuple(listed) or not listed  # a list is not equal to a tuple
    assert [tasks[i] for i in range(-n, n)] == listed + listed
    assert tasks[0] is tasks[0] if n else True  # built once, kept
    for index in (n, -n - 1):
        with pytest.raises(IndexError):
            tasks[index]
    with pytest.raises(TypeError):
        tasks["0"]  # type: ignore[call-overload]
    cuts = [
        slice(None),
        slice(1, None),
        slice(0, 3),
        slice(2, -1),
        slice(3, 1),
        slice(None, None, 2),
    ]
    cuts += [slice(None, None, -1), slice(-3, None), slice(1, 100)]
    for cut in cuts:
        assert tasks[cut] == listed[cut], cut
        assert list(tasks[cut]) == listed[cut], cut
    assert tasks[1:][1:] == listed[2:]
    assert list(reversed(tasks)) == listed[::-1]
    assert pickle.loads(pickle.dumps(tasks)) == listed
    assert tasks.object_ids().to_pylist() == [task.object_id for task in listed]
    assert repr(tasks) == repr(listed)
    assert (tasks[0] in tasks) if n else True
    assert ns.plan_scan(condition) == tasks  # two plans of the same snapshot
    touched = ns.plan_scan(condition)
    assert [touched[i] for i in range(n // 2, n, 3)] == listed[n // 2 :: 3]
    assert list(touched) == listed  # an iteration builds around the blocks built


@pytest.mark.parametrize("condition", FILTERS)
def test_each_task_is_its_manifest_row(ns: lp.PartitionedNamespace, condition: str | None) -> None:
    """Every field of a task is what the ``__manifest`` row of its leaf says, read row by row
    (the plan reads them as columns); spec by spec, in object-id order."""
    snapshot = ns.snapshot
    specs = {spec.version: spec for spec in snapshot.metadata.specs}
    tasks = list(ns.plan_scan(condition))
    order = [(task.spec_version, task.object_id) for task in tasks]
    assert order == sorted(order)
    for task in tasks:
        row = snapshot.row(task.object_id)
        assert row is not None
        assert row["object_type"] == "table"
        spec = specs[task.spec_version]
        assert task.object_id.startswith(f"v{spec.version}$")
        values = tuple((f.name, row[f.name]) for f in spec.fields)
        assert task.partition_values == values
        assert task.uri == f"{ns.uri.rstrip('/')}/{row['location']}"
        assert task.read_version == row["read_version"]
        assert task.row_count == LeafStats.num_rows_at(row["metadata"], row["read_version"])
        assert task.row_count is not None
        assert task.filled == tuple(
            (column, values[i][1])
            for i, column in identity_columns(spec, snapshot.metadata.schema)
            if values[i][1] is not None
        )
        assert (task.read_branch, task.read_tag, task.fragment_ids) == (None, None, None)
        assert (task.manifest_root, task.manifest_version) == (ns.uri.rstrip("/"), ns.version)
        if condition is None:
            assert task.residual == AlwaysTrue()
    if condition is None:
        leaves = pc.equal(snapshot.rows.column("object_type"), "table")
        assert len(tasks) == pc.sum(leaves).as_py() > 10


@pytest.mark.parametrize("condition", FILTERS)
def test_each_residual_is_that_of_its_own_partition_values(
    ns: lp.PartitionedNamespace, condition: str | None
) -> None:
    """The plan computes a residual once per group of leaves alike for the filter: each is
    the one of the leaf's own values, and a leaf is dropped exactly when that one is false."""
    metadata = ns.snapshot.metadata
    fields = field_terms(metadata.specs, metadata.schema)
    predicate = bound_filter(condition, metadata.schema.read_schema(), fields)
    specs = {spec.version: spec for spec in metadata.specs}
    kept = {task.object_id: task.residual for task in ns.plan_scan(condition)}
    for task in ns.plan_scan():
        spec = specs[task.spec_version]
        bound = dict(task.partition_values)
        own = residual(substitute(predicate, spec, fields, bound), spec, metadata.schema, bound)
        assert kept.get(task.object_id, AlwaysFalse()) == own, task.object_id


@pytest.mark.parametrize("condition", ON_COLUMNS)  # duckdb knows no partition field names
def test_a_pruned_read_is_the_filtered_full_read(
    ns: lp.PartitionedNamespace, condition: str | None
) -> None:
    everything = ns.to_table()  # noqa: F841  (read by duckdb by name)
    where = "" if condition is None else f"WHERE {condition}"
    expected = duckdb.sql(f"SELECT id FROM everything {where}").to_arrow_table()
    assert sorted(ns.to_table(condition).column("id").to_pylist()) == sorted(
        expected.column("id").to_pylist()
    )
    assert ns.count_rows(condition) == expected.num_rows


def test_an_empty_plan() -> None:
    tasks = ScanTasks()
    assert len(tasks) == 0
    assert not tasks
    assert tasks == []
    assert list(tasks) == []
    assert tasks.object_ids().to_pylist() == []
    assert repr(tasks) == "[]"
    with pytest.raises(IndexError):
        tasks[0]
