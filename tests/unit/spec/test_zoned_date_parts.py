"""Date parts of zoned timestamps are DataFusion's: taken in the column's zone (issue 15 item 6)."""

from __future__ import annotations

import datetime

import datafusion
import numpy as np
import pyarrow as pa
import pytest

from lance_partitioned.spec.transforms import Day, Hour, Month, Transform, Year

UTC = datetime.timezone.utc
PARTS: list[tuple[str, Transform]] = [
    ("year", Year()),
    ("month", Month()),
    ("day", Day()),
    ("hour", Hour()),
]
INSTANTS = [
    datetime.datetime(2025, 1, 1, 23, 30, tzinfo=UTC),  # 18:30 in New York, next day in Tokyo
    datetime.datetime(2025, 12, 31, 23, 30, tzinfo=UTC),  # next year east of UTC
    datetime.datetime(2025, 3, 9, 6, 59, 59, tzinfo=UTC),  # New York: before the missing hour
    datetime.datetime(2025, 3, 9, 7, 0, tzinfo=UTC),  # New York: 03:00 EDT
    datetime.datetime(2025, 11, 2, 5, 30, tzinfo=UTC),  # New York: 01:30 EDT
    datetime.datetime(2025, 11, 2, 6, 30, tzinfo=UTC),  # New York: 01:30 EST (repeated hour)
    datetime.datetime(2025, 4, 6, 14, 45, tzinfo=UTC),  # Lord Howe: the half-hour fall back
    datetime.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC),
    datetime.datetime(1800, 6, 1, 4, 0, tzinfo=UTC),  # local mean time
    datetime.datetime(2090, 7, 1, 12, 0, tzinfo=UTC),  # past 2037: DataFusion's rules
]
ZONES = [
    "America/New_York",
    "Europe/London",
    "Asia/Kolkata",
    "Australia/Lord_Howe",
    "Asia/Tokyo",
    "+05:30",
    "-03:45",
    "UTC",
]


def datafusion_parts(values: pa.Array) -> dict[str, list[int | None]]:
    """date_part of every part, evaluated by DataFusion alone on the zoned column."""
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(1))
    ctx.register_record_batches("t", [[pa.RecordBatch.from_arrays([values], names=["col"])]])
    select = ", ".join(f"CAST(date_part('{p}', col) AS INT) AS {p}" for p, _ in PARTS)
    return ctx.sql(f"SELECT {select} FROM t").to_pydict()  # type: ignore[no-any-return]


# every zone x unit against DataFusion
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize("tz", ZONES)
def test_date_parts_of_zoned_timestamps_are_datafusions(tz: str, unit: str) -> None:
    values = pa.array([*INSTANTS, None], pa.timestamp(unit, tz=tz))
    expected = datafusion_parts(values)
    for part, transform in PARTS:
        assert transform.apply(values).to_pylist() == expected[part], (part, tz, unit)
        assert transform.apply_reference(values).to_pylist() == expected[part], (part, tz, unit)
        source = values.type
        literals = [transform.apply_literal(v, source, pa.int32()) for v in INSTANTS]
        assert literals == expected[part][:-1], (part, tz, unit)


def test_hour_in_new_york_is_local() -> None:
    values = pa.array(
        [datetime.datetime(2025, 1, 1, 23, 30, tzinfo=UTC)],
        pa.timestamp("us", tz="America/New_York"),
    )
    assert Hour().apply(values).to_pylist() == [18]
    assert Day().apply(values).to_pylist() == [1]


@pytest.mark.parametrize(
    "tz", ["America/New_York", "Australia/Lord_Howe", "Europe/London", "America/St_Johns"]
)
def test_many_rows_across_transitions(tz: str) -> None:
    # The per-hour offset table, with the hours that hold a transition, and NULLs; from a slice.
    rng = np.random.default_rng(5)
    start = int(datetime.datetime(2024, 1, 1, tzinfo=UTC).timestamp())
    seconds = rng.integers(start, start + 3 * 365 * 86_400, 200_000)
    seconds[::7] = rng.integers(0, 3600, len(seconds[::7])) + int(
        datetime.datetime(2025, 4, 5, 15, tzinfo=UTC).timestamp()
    )
    # St John's moves its clocks at 05:30Z: an hour with two offsets
    seconds[::11] = rng.integers(0, 3600, len(seconds[::11])) + int(
        datetime.datetime(2025, 3, 9, 5, tzinfo=UTC).timestamp()
    )
    values = pa.array(
        seconds * 1_000_000, pa.timestamp("us", tz=tz), mask=rng.random(200_000) < 0.1
    )
    values = values.slice(3)
    expected = datafusion_parts(values)
    for part, transform in PARTS:
        assert transform.apply(values).to_pylist() == expected[part], (part, tz)
