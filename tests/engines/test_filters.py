"""The filter translations against the engines' own evaluation, on an in-memory table: an exact
translation keeps the rows the engine keeps, an inexact one at least those (it prunes only)."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_partitioned.engines.arrow_filter import decode, translate_arrow
from lance_partitioned.engines.nodes import Opaque, Translation
from lance_partitioned.engines.polars_filter import translate_polars
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
NULL_BOOL = pc.scalar(pa.scalar(None, pa.bool_()))


def _check(engine_rows: list[int], translation: Translation) -> None:
    ours = filter_arrow(_numbered(), translation.predicate).column("__row").to_pylist()
    assert set(engine_rows) <= set(ours), translation
    if translation.exact:
        assert sorted(engine_rows) == sorted(ours), translation


def _numbered() -> pa.Table:
    return TABLE.append_column("__row", pa.array(range(TABLE.num_rows)))


ARROW = [
    pc.field("s") == "US",
    pc.field("id") >= 2,
    pc.scalar(3) > pc.field("id"),
    (pc.field("s") == "US") | pc.field("id").is_null(),
    pc.field("s").isin(["US", "FR"]),
    pc.field("s").isin(["US", None]),
    pc.is_in(pc.field("s"), pa.array(["US", None]), skip_nulls=True),
    pc.field("id").isin([1, 2]),
    pc.if_else(pc.field("s").is_valid(), pc.field("s").isin(["US", "UK"]), NULL_BOOL),
    pc.field("s").is_valid(),
    pc.starts_with(pc.field("s"), "US"),
    pc.field("ts") >= pc.scalar(dt.datetime(2025, 1, 2, tzinfo=UTC)),
    pc.field("ts") < pc.scalar(dt.datetime(2025, 1, 3)).cast(pa.timestamp("us", "UTC")),
    pc.field("d") == pc.scalar(dt.date(2025, 1, 3)),
    pc.field("x") > 0.5,
    pc.field("x") == 0.0,
    pc.field("b"),
    pc.field("id") == pc.scalar(pa.scalar(None, pa.int64())),
    pc.Expression._call("and", [pc.field("id") > 1, pc.field("s") == "US"]),  # not Kleene
    pc.Expression._call("or", [pc.field("id") > 1, pc.field("s") == "US"]),
    pc.utf8_length(pc.field("s")) == 2,
    pc.field("s").isin(["US"]) & (pc.utf8_length(pc.field("s")) == 2),
]


@pytest.mark.parametrize("expression", ARROW, ids=str)
@pytest.mark.parametrize("negate", [False, True])
def test_arrow_translation_matches_pyarrow(expression: pc.Expression, negate: bool) -> None:
    if negate:
        expression = ~expression
    engine = _numbered().filter(expression).column("__row").to_pylist()
    _check(engine, translate_arrow(expression, TABLE.schema))


def test_duckdb_forms_are_exact() -> None:
    exact = [ARROW[i] for i in (0, 1, 2, 3, 4, 8, 9, 11, 12, 13)]
    for expression in exact:
        assert translate_arrow(expression, TABLE.schema).exact, expression
        assert translate_arrow(~expression, TABLE.schema).exact, expression


def test_undecodable_expressions_are_opaque() -> None:
    assert decode(pc.field(0) == 1) == Opaque(None)  # a field by position cannot serialize
    nested = translate_arrow(pc.field("n", "m") == 1, TABLE.schema)
    assert (nested.exact, nested.columns) == (False, frozenset({"n"}))


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
    frame = pl.from_arrow(_numbered())
    assert isinstance(frame, pl.DataFrame)
    engine = frame.filter(expression)["__row"].to_list()
    _check(engine, translate_polars(expression, TABLE.schema))


def test_polars_common_forms_are_exact() -> None:
    for expression in [*POLARS[:10], POLARS[11], POLARS[12]]:
        assert translate_polars(expression, TABLE.schema).exact, expression
        assert translate_polars(~expression, TABLE.schema).exact, expression
