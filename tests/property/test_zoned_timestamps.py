"""Property: date parts of zoned timestamps are DataFusion's, and pruning on them is exact.

Issue 15 item 6: a zoned column's date parts are of its wall clock (DataFusion's reading), around
DST transitions (missing and repeated local hours, Lord Howe's half hour) too. For every
transform the fast path equals DataFusion (``apply_reference``) and ``apply_literal``; a pruned
read of a namespace partitioned by hour/day/month/year of a zoned column equals a full read
filtered by the predicate (real Lance namespaces, DuckDB oracle).
"""

from __future__ import annotations

import datetime as dt
import tempfile
import warnings
from collections.abc import Iterator

import datafusion
import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp
from lance_partitioned.spec.transforms import (
    Bucket,
    Date,
    Day,
    Hour,
    Hours,
    Identity,
    Month,
    Months,
    Transform,
    Year,
    Years,
)
from tests.property.strategies import (
    FAST_PROFILE,
    OPS,
    assert_pruned_read_exact,
    boolean_combinations,
    examples,
    oracle_ids,
)

UTC = dt.timezone.utc
ZONES = [
    "America/New_York",
    "Europe/London",
    "Asia/Kolkata",
    "Australia/Lord_Howe",
    "+05:30",
    "-09:45",
]
# DST transitions (UTC) of the zones above, and instants past pyarrow's zone files (2037).
ANCHORS = [
    dt.datetime(2025, 3, 9, 7, tzinfo=UTC),  # New York: 02:00 EST -> 03:00 EDT
    dt.datetime(2025, 11, 2, 6, tzinfo=UTC),  # New York: 02:00 EDT -> 01:00 EST
    dt.datetime(2025, 3, 30, 1, tzinfo=UTC),  # London
    dt.datetime(2025, 10, 26, 1, tzinfo=UTC),
    dt.datetime(2025, 4, 5, 15, tzinfo=UTC),  # Lord Howe: 02:00 -> 01:30
    dt.datetime(2025, 10, 4, 15, 30, tzinfo=UTC),  # Lord Howe: 02:00 -> 02:30
    dt.datetime(1942, 9, 1, tzinfo=UTC),  # Kolkata's war time
    dt.datetime(2024, 12, 31, 23, tzinfo=UTC),  # new year east and west of UTC
    dt.datetime(2075, 3, 10, 7, tzinfo=UTC),  # DST rules past 2037 (DataFusion's until 2100)
    dt.datetime(2120, 7, 1, tzinfo=UTC),
    dt.datetime(1883, 11, 18, 17, tzinfo=UTC),  # local mean time
]
TRANSFORMS: list[Transform] = [Year(), Month(), Day(), Hour(), Date(), Identity(), Bucket(7)]
TRANSFORMS += [Years(), Months(), Hours()]
PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}


def datafusion_alone(expression: str, column: pa.Array | pa.ChunkedArray) -> list[object]:
    """``expression`` evaluated by DataFusion on the zoned column as any client binds it."""
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(1))
    batch = pa.RecordBatch.from_arrays(
        [pa.concat_arrays(column.chunks) if isinstance(column, pa.ChunkedArray) else column],
        names=["col"],
    )
    ctx.register_record_batches("t", [[batch]])
    result = ctx.sql(f"SELECT CAST({expression} AS INT) AS v FROM t").to_arrow_table()
    return result.column("v").to_pylist()


@st.composite
def zoned_columns(draw: st.DrawFn) -> pa.Array:
    tz = draw(st.sampled_from(ZONES))
    unit = draw(st.sampled_from(["s", "ms", "us", "ns"]))
    per = PER_SECOND[unit]
    near = st.builds(
        lambda a, s, f: int(a.timestamp()) * per + s * per + f % per,
        st.sampled_from(ANCHORS),
        st.integers(-36 * 3600, 36 * 3600),
        st.integers(0, per - 1),
    )
    bound = (2**63 - 1) if unit == "ns" else 253_402_300_000 * per  # years 1 to 9999
    low = -(2**63) if unit == "ns" else -62_135_596_800 * per + 86_400 * per
    anywhere = st.integers(low, bound)
    values = draw(st.lists(st.one_of(near, near, anywhere, st.none()), min_size=1, max_size=40))
    return pa.array(values, pa.timestamp(unit, tz=tz))


@settings(max_examples=examples(300), deadline=None)
@given(column=zoned_columns(), transform=st.sampled_from(TRANSFORMS))
def test_fast_path_and_literals_equal_datafusion(column: pa.Array, transform: Transform) -> None:
    expected = transform.apply_reference(column)
    assert transform.apply(column).equals(expected), (column.type, transform)
    long = pa.concat_arrays([column] * (64 // len(column) + 1))  # past the per-row path
    assert transform.apply(long).equals(transform.apply_reference(long)), (column.type, transform)
    if isinstance(transform, (Year, Month, Day, Hour, Years, Months, Hours)):  # not evaluate()
        assert expected.to_pylist() == datafusion_alone(transform.expression, column)
    result = transform.result_type(column.type)
    if isinstance(transform, Identity):
        return  # the literal is its own image
    utc = column.cast(pa.timestamp(column.type.unit, "UTC"))  # literals are aware UTC datetimes
    for value, image in zip(utc, expected, strict=True):
        # a Python datetime whose wall clock fits the column's unit (ns: years 1677 to 2262)
        if value.is_valid and (1700 if column.type.unit == "ns" else 1) < value.as_py().year < (
            2261 if column.type.unit == "ns" else 9999
        ):
            literal = transform.apply_literal(value.as_py(), column.type, result)
            assert literal == image.as_py(), (value, column.type, transform)


# -------------------------------------------------------------- pruning on a zoned column

PRUNING_ZONES = ["America/New_York", "Australia/Lord_Howe", "+05:30"]
SPECS = [
    "year(ts), month(ts), day(ts), hour(ts)",
    "hour(ts)",
    "day(ts)",
    "month(ts), day(ts)",
    "year(ts), month(ts)",
    "date(ts)",
]
START = dt.datetime(2025, 10, 1, tzinfo=UTC)  # across the October/November transitions


# rows per namespace: an hourly spec makes a leaf of about every row; the inner loop
# (hypothesis profile "fast") builds a third of them
ROWS = 150 if settings.get_current_profile_name() == FAST_PROFILE else 500


def make_data(tz: str, rows: int = ROWS, seed: int = 3) -> pa.Table:
    rng = np.random.default_rng(seed)
    minutes = rng.integers(-600, 60 * 24 * 45, rows)
    stamps = [START + dt.timedelta(minutes=int(m)) for m in minutes]
    null = rng.random(rows) < 0.05
    return pa.table(
        {
            "id": np.arange(rows, dtype=np.int64),
            "ts": pa.array(
                [None if n else s for s, n in zip(stamps, null, strict=True)],
                pa.timestamp("us", tz),
            ),
        }
    )


@pytest.fixture(scope="module")
def namespaces() -> Iterator[dict[tuple[str, str], tuple[lp.PartitionedNamespace, pa.Table]]]:
    """A namespace per zone of ``PRUNING_ZONES`` and spec of ``SPECS``, each built the first
    time a test asks for it (the inner loop's few examples need only some of them)."""
    Made = tuple[lp.PartitionedNamespace, pa.Table]

    class Built(dict[tuple[str, str], Made]):
        def __missing__(self, key: tuple[str, str]) -> Made:
            tz, spec = key
            data = make_data(tz)
            uri = f"{root}/ns{PRUNING_ZONES.index(tz)}_{SPECS.index(spec)}"
            with warnings.catch_warnings():  # day or month alone: what some specs test
                warnings.simplefilter("ignore", lp.AmbiguousPartitionWarning)
                ns = lp.PartitionedNamespace.create(uri, schema=data.schema, partition_by=spec)
            ns.write(data)
            self[key] = (ns, data)
            return ns, data

    with tempfile.TemporaryDirectory() as root:
        yield Built()


def _ts(minutes: int) -> str:
    """An instant, as DataFusion and DuckDB both read it (a naive literal against a zoned
    column is a wall clock in its zone for DataFusion; ``+00:00`` is dropped)."""
    stamp = START + dt.timedelta(minutes=minutes)
    return f"(TIMESTAMP '{stamp:%Y-%m-%d %H:%M:%S}' AT TIME ZONE 'UTC')"


MINUTES = st.integers(-700, 60 * 24 * 46)
ATOMS = st.one_of(
    st.builds(lambda op, m: f"ts {op} {_ts(m)}", OPS, MINUTES),
    st.builds(lambda a, b: f"ts BETWEEN {_ts(min(a, b))} AND {_ts(max(a, b))}", MINUTES, MINUTES),
    st.builds(
        lambda ms: f"ts IN ({', '.join(_ts(m) for m in ms)})",
        st.lists(MINUTES, min_size=1, max_size=3),
    ),
    st.sampled_from(["ts IS NULL", "ts IS NOT NULL"]),
)
PREDICATES = boolean_combinations(ATOMS, max_leaves=3)


@settings(
    max_examples=examples(80),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(tz=st.sampled_from(PRUNING_ZONES), spec=st.sampled_from(SPECS), condition=PREDICATES)
def test_pruned_read_on_a_zoned_column_equals_filtered_full_read(
    namespaces: dict[tuple[str, str], tuple[lp.PartitionedNamespace, pa.Table]],
    tz: str,
    spec: str,
    condition: str,
) -> None:
    ns, data = namespaces[(tz, spec)]
    expected = oracle_ids(data, condition, utc=["ts"])
    assert_pruned_read_exact(
        ns, condition, expected, lambda rows: oracle_ids(rows, condition, utc=["ts"]), (tz, spec)
    )


def test_partition_values_are_datafusions(
    namespaces: dict[tuple[str, str], tuple[lp.PartitionedNamespace, pa.Table]],
) -> None:
    # Every row sits in the partition that DataFusion's date_part gives it, in the zone: the
    # repeated 01:00-02:00 of 2025-11-02 in New York is one hour-of-day partition (1).
    parts = [("year", Year()), ("month", Month()), ("day", Day()), ("hour", Hour())]
    for tz in PRUNING_ZONES:
        ns, _ = namespaces[(tz, "year(ts), month(ts), day(ts), hour(ts)")]
        leaves = ns.partitions().to_pylist()
        columns = [
            lance.dataset(f"{ns.uri}/{leaf['location']}", version=leaf["read_version"])
            .to_table(columns=["ts"])
            .column("ts")
            for leaf in leaves
        ]
        # one DataFusion evaluation of the rows of every leaf, cut back into the leaves
        every = pa.chunked_array([c for column in columns for c in column.chunks], columns[0].type)
        for name, t in parts:
            values = datafusion_alone(t.expression, every)
            start = 0
            for leaf, column in zip(leaves, columns, strict=True):
                got = set(values[start : start + len(column)])
                start += len(column)
                assert got == {leaf[f"ts_{name}"]}, (tz, leaf)
    ns, data = namespaces[("America/New_York", "hour(ts)")]
    repeated = pa.array(
        [dt.datetime(2025, 11, 2, 5, 30, tzinfo=UTC), dt.datetime(2025, 11, 2, 6, 30, tzinfo=UTC)],
        data.schema.field("ts").type,
    )
    assert Hour().apply(repeated).to_pylist() == [1, 1]
