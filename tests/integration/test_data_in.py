"""Data in: pandas indexes, what ``create`` and ``write`` accept, the one-call
``lance_partitioned.write``, ``schema_mode="merge"`` and the partition count warning."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.string())])


def _ns(tmp_path: Path) -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=SCHEMA, partition_by="country"
    )


def _rows(ns: lp.PartitionedNamespace) -> list[dict[str, object]]:
    return sorted(ns.to_table().to_pylist(), key=lambda r: (r["id"], str(r)))


def test_a_filtered_pandas_frame_is_written_without_its_index(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    frame = pd.DataFrame({"id": [1, 2, 3, 4], "country": ["US", "FR", "US", "DE"]})
    filtered = frame[frame.id.isin([1, 3, 4])]  # index [0, 2, 3]: __index_level_0__
    assert "__index_level_0__" in pa.Table.from_pandas(filtered).column_names

    assert ns.write(filtered).rows_written == 3
    assert ns.write(pa.Table.from_pandas(filtered)).rows_written == 3
    assert ns.schema.names == ["id", "country"]
    assert [r["id"] for r in _rows(ns)] == [1, 1, 3, 3, 4, 4]


def test_a_pandas_index_named_like_a_column_is_that_column(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    frame = pd.DataFrame({"id": [1, 2], "country": ["US", "FR"]}).set_index("country")
    ns.write(frame)
    assert _rows(ns) == [{"id": 1, "country": "US"}, {"id": 2, "country": "FR"}]


@pytest.mark.parametrize(
    "given",
    [
        pd.DataFrame({"id": [1], "country": ["US"]}),
        pl.DataFrame({"id": [1], "country": ["US"]}),
        pl.LazyFrame({"id": [1], "country": ["US"]}),
        pl.Schema({"id": pl.Int64, "country": pl.String}),
        SCHEMA,
    ],
    ids=["pandas", "polars", "lazyframe", "polars-schema", "pyarrow"],
)
def test_create_takes_the_schema_of_dataframes(tmp_path: Path, given: object) -> None:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=given, partition_by="country")
    assert [(f.name, f.type) for f in ns.schema] == [("id", pa.int64()), ("country", pa.string())]


@pytest.mark.parametrize("given", [{"id": "int64"}, "id int64", None, [("id", pa.int64())]])
def test_create_with_something_else_is_a_type_error_naming_what_is_accepted(
    tmp_path: Path, given: object
) -> None:
    with pytest.raises(TypeError, match="pandas DataFrame, a Polars DataFrame") as caught:
        lp.PartitionedNamespace.create(str(tmp_path), schema=given, partition_by="")
    assert isinstance(caught.value, errors.SchemaInputTypeError)
    assert isinstance(caught.value, errors.InvalidInputError)


def test_a_polars_lazyframe_is_written(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    lazy = pl.LazyFrame({"id": range(50), "country": ["US", "FR"] * 25}).filter(
        pl.col("id") % 2 == 0
    )
    ns.write(lazy)
    assert ns.count_rows() == 25
    assert ns.count_rows("country = 'US'") == 25


class _CStream:
    """An object that only speaks the Arrow C stream interface (as DuckDB, nanoarrow)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self.table.__arrow_c_stream__(requested_schema)


def test_any_arrow_c_stream_object_is_written(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.write(_CStream(pa.table({"id": [7], "country": ["FR"]})))
    assert _rows(ns) == [{"id": 7, "country": "FR"}]


# ------------------------------------------------------------------ one call


def test_write_creates_the_namespace_then_appends(tmp_path: Path) -> None:
    uri = str(tmp_path / "new")
    frame = pd.DataFrame({"id": [1, 2, 3], "country": ["US", "FR", "US"]})
    first = lp.write(uri, frame[frame.id != 2], partition_by="country")
    assert (first.rows_written, first.partitions_created) == (2, 1)
    lp.write(uri, pl.DataFrame({"id": [4], "country": ["DE"]}), mode="append")
    ns = lp.PartitionedNamespace.open(uri)
    assert [(f.name, f.type) for f in ns.schema] == [("id", pa.int64()), ("country", pa.string())]
    assert [f.name for f in ns.current_spec.fields] == ["country"]
    assert ns.count_rows() == 3
    lp.write(uri, pa.table({"id": [9], "country": ["US"]}), mode="overwrite")
    assert ns.refresh().count_rows() == 1
    assert "write" in lp.__all__


def test_write_without_partition_by_to_a_new_uri_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidInputError, match="needs partition_by"):
        lp.write(str(tmp_path / "none"), pa.table({"id": [1]}))
    assert not (tmp_path / "none").exists()


def test_write_with_another_partition_by_than_the_namespace_is_refused(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    with pytest.raises(errors.PartitionSpecError, match="differs from the current"):
        lp.write(ns.uri, pa.table({"id": [1], "country": ["US"]}), partition_by="id")
    lp.write(ns.uri, pa.table({"id": [1], "country": ["US"]}), partition_by="country")
    assert ns.refresh().count_rows() == 1


# ------------------------------------------------------------------ schema_mode


def test_schema_mode_merge_adds_the_new_columns_then_writes(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.write(pa.table({"id": [1], "country": ["US"]}))
    before = ns.version
    wider = pd.DataFrame({"id": [2], "country": ["FR"], "amount": [1.5], "note": ["x"]})
    ns.write(wider, schema_mode="merge")
    assert ns.schema.names == ["id", "country", "amount", "note"]
    assert [(f.name, f.type) for f in ns.schema][2:] == [
        ("amount", pa.float64()),
        ("note", pa.string()),
    ]
    assert ns.version == before + 2  # the evolution, then the write
    assert ns.versions().column("operation").to_pylist()[-2:] == ["evolve", "write"]
    assert _rows(ns) == [
        {"id": 1, "country": "US", "amount": None, "note": None},
        {"id": 2, "country": "FR", "amount": 1.5, "note": "x"},
    ]


def test_without_schema_mode_an_extra_column_stays_an_error(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    extra = pa.table({"id": [2], "country": ["FR"], "amount": [1.5]})
    with pytest.raises(errors.SchemaMismatchError, match="'amount' is not in the namespace"):
        ns.write(extra)
    with pytest.raises(errors.InvalidInputError, match="schema_mode 'overwrite'"):
        ns.write(extra, schema_mode="overwrite")  # type: ignore[arg-type]
    assert ns.schema.names == ["id", "country"]


def test_one_call_write_merges_the_schema(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    lp.write(ns.uri, pl.DataFrame({"id": [1], "country": ["US"], "s": ["a"]}), schema_mode="merge")
    assert [(f.name, f.type) for f in ns.refresh().schema][2:] == [("s", pa.string())]


# ------------------------------------------------------------------ partition count


def test_many_small_new_partitions_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lance_partitioned import writing

    monkeypatch.setattr(writing, "MAX_NEW_PARTITIONS", 3)  # (1,000 in earnest: too slow here)
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="id")
    ns.write(pa.table({"id": [1, 2, 3], "country": ["US"] * 3}))  # 3 new: no warning
    with pytest.warns(lp.PartitionCountWarning, match=r"created 4 new partitions averaging 1\.0 "):
        ns.write(pa.table({"id": [4, 5, 6, 7], "country": ["US"] * 4}))
    with pytest.warns(lp.PartitionCountWarning, match=r"bucket\(N, col\)"):
        lp.write(ns.uri, pa.table({"id": [10, 11, 12, 13], "country": ["US"] * 4}))
    ns.refresh().write(pa.table({"id": [4, 5, 6, 7, 10], "country": ["US"] * 5}))  # none new


def test_big_new_partitions_do_not_warn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lance_partitioned import writing

    monkeypatch.setattr(writing, "MAX_NEW_PARTITIONS", 1)
    monkeypatch.setattr(writing, "MIN_AVERAGE_ROWS", 2)
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    ns.write(pa.table({"id": [1, 2, 3, 4], "country": ["US", "US", "FR", "FR"]}))
    assert ns.count_rows() == 4
