"""Shared parts of the hostile-input tests (``test_hostile_*.py``): each case ends in a typed
error with the namespace unchanged, or in the correct data.

"Typed" means an error of our hierarchy (:class:`~lance_partitioned.errors.LancePartitionedError`)
of the class named by the case. "Unchanged" compares the namespace read straight through
pylance before and after: the latest ``__manifest`` version, its rows and table metadata, and
every leaf's rows at its ``read_version``. "Correct data" compares with an oracle: the same
rows in one plain Lance table, read with the same filter (Lance evaluates filters with
DataFusion, the language spec 000 defines expressions in), or the rows written, in Python.

Cases that hit a bug listed in issues 15/16 are ``xfail(strict=True)`` with the exception seen
today, so they fail loudly once the fix lands and the marker must go.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance import LanceDataset

import lance_partitioned as lp
from lance_partitioned import errors

UTC = dt.timezone.utc
I64_MIN, I64_MAX, U64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


# ---------------------------------------------------------------------------------- helpers
def norm(value: Any) -> Any:
    """Values made comparable: floats by repr (NaN equals NaN, -0.0 differs from 0.0)."""
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [norm(v) for v in value]
    return value


def rows(table: pa.Table, by: str = "id") -> list[Any]:
    return norm(table.sort_by(by).to_pylist()) if table.num_rows else []


def raw_state(root: Path) -> tuple[Any, ...]:
    """The namespace as pylance sees it, without our code: latest ``__manifest`` version, its
    rows, its table metadata and every leaf's rows at its ``read_version`` (or the error)."""
    manifest = lance.dataset(str(root / "__manifest"))
    table = manifest.to_table()
    leaves = []
    for row in table.sort_by("object_id").to_pylist():
        if row["object_type"] != "table":
            continue
        try:
            leaf = lance.dataset(str(root / row["location"]), version=row["read_version"])
            leaves.append((row["object_id"], norm(leaf.to_table().to_pylist())))
        except (OSError, ValueError) as exc:
            leaves.append((row["object_id"], type(exc).__name__))
    return (
        manifest.version,
        norm(table.sort_by("object_id").to_pylist()),
        dict(manifest.metadata),
        leaves,
    )


def expect_typed(
    root: Path, error: type[errors.LancePartitionedError], call: Callable[[], Any]
) -> errors.LancePartitionedError:
    """``call`` raises ``error`` (of our hierarchy, with a message) and changes nothing."""
    assert issubclass(error, errors.LancePartitionedError)
    before = raw_state(root)
    with pytest.raises(error) as info:
        call()
    assert str(info.value).strip(), "a typed error must say what is wrong"
    assert raw_state(root) == before, "a failed call changed the namespace"
    return info.value


def plain_table(tmp_path: Path, data: pa.Table) -> LanceDataset:
    """The oracle: the same rows in one unpartitioned Lance table."""
    return lance.write_dataset(data, str(tmp_path / "oracle.lance"))


def expect_same_as_oracle(
    ns: lp.PartitionedNamespace,
    oracle: LanceDataset,
    filter: str | None = None,
    *,
    oracle_filter: str | None = None,
) -> None:
    expected = oracle.to_table(filter=oracle_filter or filter)
    before = raw_state(Path(ns.uri))
    actual = ns.to_table(filter)
    assert rows(actual) == rows(expected.select(actual.column_names)), filter
    assert ns.count_rows(filter) == expected.num_rows, filter
    assert raw_state(Path(ns.uri)) == before


def xfail(reason: str, raises: type[BaseException]) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, raises=raises, reason=reason)


def sql_literal(value: Any, dtype: pa.DataType, *, exact: bool = False) -> str:
    """``value`` as a SQL literal of ``dtype``; ``exact``: int64's minimum in the form Lance
    parses exactly (the plain literal is read as a float)."""
    if exact and value == I64_MIN and isinstance(value, int):
        return "(-9223372036854775807 - 1)"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f"CAST('{value}' AS DOUBLE)"
        return repr(value)
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, decimal.Decimal):
        return f"CAST('{value}' AS DECIMAL({dtype.precision}, {dtype.scale}))"
    return str(value)


TS = pa.timestamp("us", "UTC")


# ---------------------------------------------------------------- a small namespace
BASE = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("k", pa.string()),
        ("n", pa.int32()),
        ("ts", TS),
    ]
)


def base_rows(ids: list[int], keys: list[str | None]) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "k": keys,
            "n": list(range(len(ids))),
            "ts": [dt.datetime(2025, 1, 1, tzinfo=UTC)] * len(ids),
        },
        schema=BASE,
    )


def make_base_ns(tmp_path: Path) -> lp.PartitionedNamespace:
    """A namespace partitioned by ``k`` with four rows in three partitions."""
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=BASE, partition_by="k")
    ns.write(base_rows([1, 2, 3, 4], ["a", "b", None, "a"]))
    return ns
