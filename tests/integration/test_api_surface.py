"""The public surface of :class:`PartitionedNamespace`: our API, not LanceNamespace's."""

from __future__ import annotations

import pydoc
from pathlib import Path

import lance_namespace as ln
import pandas as pd
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.spec.partitioning import PartitionField

# every operation of the LanceNamespace ABC (list_namespaces, create_table, ...)
LANCE_OPERATIONS = {n for n in dir(ln.LanceNamespace) if not n.startswith("_")}


def test_partitioned_namespace_has_none_of_the_lance_namespace_operations() -> None:
    public = {n for n in dir(lp.PartitionedNamespace) if not n.startswith("_")}
    assert len(LANCE_OPERATIONS) > 40
    assert public & LANCE_OPERATIONS == set()
    assert not issubclass(lp.PartitionedNamespace, ln.LanceNamespace)


def test_help_is_short() -> None:
    text = pydoc.render_doc(lp.PartitionedNamespace, renderer=pydoc.plaintext)
    assert "Not supported" not in text
    # 862 lines (37795 characters) when it inherited LanceNamespace, 165 without
    assert len(text.splitlines()) < 400


def test_day_alone_warns_on_create_and_on_evolution(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us"))])
    with pytest.warns(lp.AmbiguousPartitionWarning, match=r"'ts_day'.*date\(ts\)") as caught:
        ns = lp.PartitionedNamespace.create(
            str(tmp_path / "a"), schema=schema, partition_by="day(ts)"
        )
    assert caught[0].filename == __file__
    # bound fields warn too
    day = PartitionField(2, "d", 1, "date_part('day', col)", pa.int32())
    with pytest.warns(lp.AmbiguousPartitionWarning, match="'d'"):
        lp.PartitionedNamespace.create(str(tmp_path / "b"), schema=schema, partition_by=[day])
    month = PartitionField(3, "m", 1, "date_part('month', col)", pa.int32())
    with pytest.warns(lp.AmbiguousPartitionWarning, match="'m'"):
        ns.update_partition_spec([month])
    with pytest.warns(lp.AmbiguousPartitionWarning, match="'ts_month'"):
        ns.update_partition_spec("month(ts), id")
    ns.update_partition_spec("year(ts), month(ts), day(ts)")  # no warning (filterwarnings=error)
    ns.update_partition_spec("date(ts)")
    assert [f.name for f in ns.current_spec.fields] == ["ts_date"]


def test_to_pandas_filters_selects_and_limits(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("k", pa.utf8())])
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=schema, partition_by="k")
    ns.write(pa.table({"id": list(range(10)), "k": ["a", "b"] * 5}, schema=schema))
    frame = ns.to_pandas("k = 'a' AND id > 2", columns=["id"])
    assert list(frame.columns) == ["id"]
    assert sorted(frame["id"].tolist()) == [4, 6, 8]
    assert len(ns.to_pandas(limit=3)) == 3
    assert list(ns.to_pandas().columns) == ["id", "k"]
    wide = ns.to_pandas(columns=["k"], types_mapper={pa.utf8(): pd.StringDtype()}.get)
    assert str(wide["k"].dtype) == "string"
