"""The table the filter translations are checked on, and the check itself: an exact
translation keeps the rows the engine keeps, an inexact one at least those (it prunes only)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from lance_partitioned.engines.nodes import Translation
from lance_partitioned.expressions import filter_arrow

UTC = dt.timezone.utc
TABLE = pa.table(
    {
        "id": pa.array([1, 2, 3, None, 5], pa.int64()),
        "s": pa.array(["US", "FR", None, "UK", "USA"]),
        "x": pa.array([1.0, -0.0, None, 2.5, 0.0]),
        "ts": pa.array(
            [dt.datetime(2025, 1, d, tzinfo=UTC) for d in (1, 2, 3, 4)] + [None],
            pa.timestamp("us", "UTC"),
        ),
        "d": pa.array([dt.date(2025, 1, d) for d in (1, 2, 3, 4, 5)]),
        "b": pa.array([True, False, None, True, False]),
    }
)


def numbered() -> pa.Table:
    """``TABLE`` with a ``__row`` column: the row numbers."""
    return TABLE.append_column("__row", pa.array(range(TABLE.num_rows)))


def check(engine_rows: list[int], translation: Translation) -> None:
    """The rows our predicate keeps include ``engine_rows``, and equal them when exact."""
    ours = filter_arrow(numbered(), translation.predicate).column("__row").to_pylist()
    assert set(engine_rows) <= set(ours), translation
    if translation.exact:
        assert sorted(engine_rows) == sorted(ours), translation
