"""``engines.arrow_filter``: pyarrow expressions (DuckDB's among them) translated, checked
against pyarrow's own evaluation, negations included."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_partitioned.engines.arrow_filter import decode, translate_arrow
from lance_partitioned.engines.nodes import Opaque
from tests.engines.helpers import TABLE, UTC, check, numbered

NULL_BOOL = pc.scalar(pa.scalar(None, pa.bool_()))

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
    engine = numbered().filter(expression).column("__row").to_pylist()
    check(engine, translate_arrow(expression, TABLE.schema))


def test_duckdb_forms_are_exact() -> None:
    exact = [ARROW[i] for i in (0, 1, 2, 3, 4, 8, 9, 11, 12, 13)]
    for expression in exact:
        assert translate_arrow(expression, TABLE.schema).exact, expression
        assert translate_arrow(~expression, TABLE.schema).exact, expression


def test_undecodable_expressions_are_opaque() -> None:
    assert decode(pc.field(0) == 1) == Opaque(None)  # a field by position cannot serialize
    nested = translate_arrow(pc.field("n", "m") == 1, TABLE.schema)
    assert (nested.exact, nested.columns) == (False, frozenset({"n"}))
