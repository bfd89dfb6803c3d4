"""A small real namespace of two partition spec versions, shared by the engine tests."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import lance_partitioned as lp

COUNTRIES = ("US", "FR", "DE", None)
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("ts", pa.timestamp("us", "UTC")),
        ("country", pa.string()),
        ("amount", pa.float64()),
        ("note", pa.string()),
    ]
)


def make_rows(start: int, count: int) -> pa.Table:
    """Rows ``start .. start+count-1``: three years, four countries (one NULL), some NULL
    amounts."""
    ids = list(range(start, start + count))
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    return pa.table(
        {
            "id": ids,
            "ts": [base + dt.timedelta(days=(i * 37) % 1000, hours=i % 24) for i in ids],
            "country": [COUNTRIES[i % 4] for i in ids],
            "amount": [None if i % 7 == 0 else (i % 50) * 1.5 for i in ids],
            "note": [f"note {i % 5}" if i % 3 else None for i in ids],
        },
        schema=SCHEMA,
    )


@pytest.fixture(scope="package")
def events(tmp_path_factory: pytest.TempPathFactory) -> lp.PartitionedNamespace:
    """150 rows under ``year(ts), country`` then 50 under ``month(ts), country``."""
    root = tmp_path_factory.mktemp("engines") / "events"
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="year(ts), country")
    ns.write(make_rows(0, 150))
    with pytest.warns(lp.AmbiguousPartitionWarning):  # month alone, on purpose
        ns.update_partition_spec("month(ts), country")
    ns.write(make_rows(150, 50))
    return ns
