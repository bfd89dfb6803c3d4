"""``engines.polars_filter``: Polars predicates translated, checked against Polars' own
evaluation, negations included."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from lance_partitioned.engines.polars_filter import translate_polars
from tests.engines.helpers import TABLE, UTC, check, numbered

POLARS = [
    pl.col("s") == "US",
    pl.col("id") >= 2,
    pl.col("id").is_in([1, 2]),
    pl.col("s").is_in(["US", None], nulls_equal=True),
    pl.col("s").is_in(["US", None]),
    pl.col("id").is_between(2, 5, closed="left"),
    pl.col("s").is_null() | (pl.col("id") < 3),
    pl.col("s").str.starts_with("US"),
    pl.col("ts") >= dt.datetime(2025, 1, 2, tzinfo=UTC),
    pl.col("d") == dt.date(2025, 1, 3),
    pl.col("x") > 0.5,
    pl.col("b"),
    pl.col("id") > pl.lit("2").cast(pl.Int64),
    pl.col("s").str.len_chars() == 2,
    (pl.col("s") == "US") & (pl.col("id") % 2 == 1),
]


@pytest.mark.parametrize("expression", POLARS, ids=str)
@pytest.mark.parametrize("negate", [False, True])
def test_polars_translation_matches_polars(expression: pl.Expr, negate: bool) -> None:
    if negate:
        expression = ~expression
    frame = pl.from_arrow(numbered())
    assert isinstance(frame, pl.DataFrame)
    engine = frame.filter(expression)["__row"].to_list()
    check(engine, translate_polars(expression, TABLE.schema))


def test_polars_common_forms_are_exact() -> None:
    for expression in [*POLARS[:10], POLARS[11], POLARS[12]]:
        assert translate_polars(expression, TABLE.schema).exact, expression
        assert translate_polars(~expression, TABLE.schema).exact, expression
