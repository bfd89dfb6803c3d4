"""Synthetic ``events`` data shared by the benchmarks.

Every value is a pure function of ``(id, seed)`` (a splitmix64 hash of the row id), so a
table is the same whether it is built at once with :func:`make_events` or streamed in batches
of any size with :func:`stream_events`, and building it is a handful of vectorized numpy
operations per column (10M rows in about a second).

Columns:

========== ======= ====================================================================
id         int64   ``0 .. rows-1``
event_date date32  uniform over the 731 days from 2024-01-01 (all of 2024 and 2025)
country    utf8    10 country codes
user_id    int64   100,000 distinct users
amount     float64 uniform in [0, 1000), in cents
note       utf8    ~10-20 characters from a vocabulary of 32 phrases
========== ======= ====================================================================

>>> table = make_events(1000, seed=1)
>>> table.num_rows, table.column_names
(1000, ['id', 'event_date', 'country', 'user_id', 'amount', 'note'])
>>> stream_events(1000, 300, seed=1).read_all().equals(table)
True
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator

import numpy as np
import pyarrow as pa

__all__ = ["COUNTRIES", "DAYS", "NOTES", "SCHEMA", "USERS", "make_events", "stream_events"]

START = datetime.date(2024, 1, 1)
DAYS = 731
USERS = 100_000
COUNTRIES = ("US", "FR", "DE", "GB", "JP", "CN", "IN", "BR", "CA", "AU")
NOTES = tuple(
    f"{adjective} {noun}"
    for adjective in ("quick", "late", "repeat", "manual")
    for noun in (
        "checkout",
        "refund",
        "signup",
        "renewal",
        "page view",
        "cart update",
        "login",
        "payment",
    )
)
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("event_date", pa.date32()),
        ("country", pa.string()),
        ("user_id", pa.int64()),
        ("amount", pa.float64()),
        ("note", pa.string()),
    ]
)

_BLOCK_ROWS = 1 << 20
_EPOCH_DAY = (START - datetime.date(1970, 1, 1)).days
_COUNTRY_ARRAY = pa.array(COUNTRIES, pa.string())
_NOTE_ARRAY = pa.array(NOTES, pa.string())


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer over a uint64 array (wrapping arithmetic)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _events(start: int, rows: int, seed: int) -> pa.RecordBatch:
    """Rows ``start .. start+rows-1`` of the table for ``seed``."""
    ids = np.arange(start, start + rows, dtype=np.int64)
    base = (ids.astype(np.uint64) << np.uint64(3)) + np.uint64(seed * 0x632BE59BD9B4E019 % 2**64)

    def draw(column: int) -> np.ndarray:
        return _mix(base + np.uint64(column))

    days = (draw(0) % np.uint64(DAYS)).astype(np.int32) + np.int32(_EPOCH_DAY)
    country = (draw(1) % np.uint64(len(COUNTRIES))).astype(np.int32)
    user = (draw(2) % np.uint64(USERS)).astype(np.int64)
    cents = (draw(3) % np.uint64(100_000)).astype(np.float64) / 100.0
    note = (draw(4) % np.uint64(len(NOTES))).astype(np.int32)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(ids),
            pa.array(days, pa.int32()).view(pa.date32()),
            _COUNTRY_ARRAY.take(pa.array(country)),
            pa.array(user),
            pa.array(cents),
            _NOTE_ARRAY.take(pa.array(note)),
        ],
        schema=SCHEMA,
    )


def make_events(rows: int, seed: int = 0) -> pa.Table:
    """The ``events`` table with ``rows`` rows (in record batches of 2^20 rows).

    >>> t = make_events(5)
    >>> t.column("id").to_pylist()
    [0, 1, 2, 3, 4]
    >>> t.schema.field("event_date").type
    DataType(date32[day])
    """
    batches = [
        _events(start, min(_BLOCK_ROWS, rows - start), seed)
        for start in range(0, rows, _BLOCK_ROWS)
    ]
    return pa.Table.from_batches(batches, schema=SCHEMA)


def stream_events(rows: int, batch_rows: int = 100_000, seed: int = 0) -> pa.RecordBatchReader:
    """The same rows as ``make_events(rows, seed)``, generated lazily in batches.

    Only one batch of ``batch_rows`` rows exists at a time on the generator's side.

    >>> reader = stream_events(250, 100)
    >>> [batch.num_rows for batch in reader]
    [100, 100, 50]
    """
    if batch_rows <= 0:
        raise ValueError(f"batch_rows must be positive, got {batch_rows}")

    def batches() -> Iterator[pa.RecordBatch]:
        for start in range(0, rows, batch_rows):
            yield _events(start, min(batch_rows, rows - start), seed)

    return pa.RecordBatchReader.from_batches(SCHEMA, batches())
