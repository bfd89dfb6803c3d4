"""Hostile column names, column types, write inputs and evolutions: each a typed error with the
namespace unchanged, or the data read back exactly. See :mod:`tests.reliability.hostile`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.spec.metadata import LANCE_RESERVED_COLUMNS
from tests.reliability.hostile import (
    BASE,
    UTC,
    base_rows,
    expect_same_as_oracle,
    expect_typed,
    make_base_ns,
    norm,
    plain_table,
    raw_state,
    rows,
)


@pytest.fixture
def base_ns(tmp_path: Path) -> lp.PartitionedNamespace:
    """A namespace partitioned by ``k`` with four rows in three partitions."""
    return make_base_ns(tmp_path)


# ---------------------------------------------------------------- 3. column names
# A name is refused with a typed error at create, or it works: written, read whole, used as
# a partition column and in a filter (quoted as SQL quotes identifiers).
# Issue 15 item 9: a name with '.' (Lance reads it as a path into a struct) or a backtick (its
# quoting character) is refused with SchemaError at create, add_columns and rename_column.


def _name(
    label: str,
    name: str,
    partitioned: bool,
    outcome: Any = None,
    marks: Any = (),
    refused: bool = False,
) -> Any:
    return pytest.param(name, partitioned, outcome, refused, id=label, marks=marks)


NAME_CASES: list[Any] = [
    _name("dot-data", "dot.ted", False, refused=True),
    _name("dot-partition", "dot.ted", True, refused=True),
    _name("backtick-data", "we`ird", False, refused=True),
    _name("double-quote", 'quo"te', True),
    _name("single-quote", "it's", True),
    _name("space", "with space", True),
    _name("reserved-select", "select", True),
    _name("reserved-order", "order", True),
    _name("reserved-null", "null", True),
    _name("base-object-id", "object_id", True, errors.PartitionSpecError),
    _name("base-read-version", "read_version", True, errors.PartitionSpecError),
    _name("base-location", "location", True, errors.PartitionSpecError),
    _name("base-metadata-data", "metadata", False),
    _name("unicode", "ünïcödé", True),
    _name("cjk", "列", True),
    _name("emoji", "🙂", True),
    _name("dollar", "a$b", True),
    _name("slash", "a/b", True),
    _name("upper-case", "Country", True),
    _name("long-300", "c" * 300, True),
    # Lance's reserved columns: refused with SchemaError (create used to accept '_rowid',
    # then the first write raised OSError 'The column _rowid is a reserved name' from Lance)
    _name("lance-rowid", "_rowid", False, refused=True),
    _name("lance-rowaddr", "_rowaddr", True, refused=True),
    _name("lance-rowoffset", "_rowoffset", False, refused=True),
    _name("lance-row-created", "_row_created_at_version", False, refused=True),
    _name("lance-row-updated", "_row_last_updated_at_version", False, refused=True),
    _name("search-distance", "_distance", True),  # Lance stores these
    _name("search-score", "_score", False),
    _name("rowid-upper-case", "_ROWID", False),
    _name("dash", "a-b", True),
    _name("leading-digit", "1col", True),
]


@pytest.mark.parametrize(("name", "partitioned", "outcome", "refused"), NAME_CASES)
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
def test_hostile_column_name(
    tmp_path: Path,
    name: str,
    partitioned: bool,
    outcome: type[errors.LancePartitionedError] | None,
    refused: bool,
) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field(name, pa.string())])
    quoted = '"' + name.replace('"', '""') + '"'
    root = tmp_path / "ns"
    partition_by = quoted if partitioned else "bucket(2, id)"
    if refused:
        _expect_name_refused(tmp_path, name, schema, partition_by)
        return
    if outcome is not None:
        with pytest.raises(outcome):
            lp.PartitionedNamespace.create(str(root), schema=schema, partition_by=partition_by)
        assert not (root / "__manifest").exists()
        # the same column under another partition field name works
        partition_by = f"{quoted} AS p"
    data = pa.table({"id": [1, 2, 3], name: ["a", "b", None]}, schema=schema)
    ns = lp.PartitionedNamespace.create(str(root), schema=schema, partition_by=partition_by)
    ns.write(data)
    oracle = plain_table(tmp_path, data)
    reopened = lp.PartitionedNamespace.open(ns.uri)
    assert rows(reopened.to_table()) == rows(data)
    lance_quoted = "`" + name.replace("`", "``") + "`"  # Lance's dialect quotes with backticks
    for condition in ("= 'b'", "IS NULL"):
        expect_same_as_oracle(
            reopened,
            oracle,
            f"{quoted} {condition}",
            oracle_filter=f"{lance_quoted} {condition}",
        )


@pytest.mark.parametrize(
    "name",
    [
        *sorted(LANCE_RESERVED_COLUMNS),
        "_row_id",
        "_row_addr",
        "_distance",
        "_score",
        "_version",
        "_fragid",
        "_ROWID",
    ],
)
def test_reserved_names_are_those_the_installed_lance_refuses(tmp_path: Path, name: str) -> None:
    data = pa.table({"a": [1], name: [2]})
    if name in LANCE_RESERVED_COLUMNS:
        with pytest.raises(OSError, match="reserved name"):
            lance.write_dataset(data, str(tmp_path / "t"))
    else:
        lance.write_dataset(data, str(tmp_path / "t"))
        assert lance.dataset(str(tmp_path / "t")).to_table().equals(data)


def _expect_name_refused(tmp_path: Path, name: str, schema: pa.Schema, partition_by: str) -> None:
    """``name`` is refused with SchemaError naming it at create, add_columns and rename_column,
    with nothing written or changed."""
    root = tmp_path / "ns"
    with pytest.raises(errors.SchemaError, match=re.escape(name)):
        lp.PartitionedNamespace.create(str(root), schema=schema, partition_by=partition_by)
    assert not (root / "__manifest").exists()
    ns = make_base_ns(tmp_path)
    for change in (
        lambda: ns.add_columns([pa.field(name, pa.string())]),
        lambda: ns.rename_column("k", name),
    ):
        error = expect_typed(Path(ns.uri), errors.SchemaError, change)
        assert name in str(error)


# ---------------------------------------------------------------- 4. types
# Each column type round-trips exactly, as a data column (partitioned by bucket(2, id)) and,
# where marked, as an identity partition column; or create refuses it with a typed error.
def _type(
    label: str,
    dtype: pa.DataType,
    values: list[Any],
    partitioned: bool = False,
    refused: type[errors.LancePartitionedError] | None = None,
) -> Any:
    return pytest.param(dtype, values, partitioned, refused, id=label)


TYPE_CASES: list[Any] = [
    _type("struct", pa.struct([("a", pa.int32()), ("b", pa.string())]), [{"a": 1, "b": "x"}]),
    _type("list-of-struct", pa.list_(pa.struct([("a", pa.int64())])), [[{"a": 1}, {"a": None}]]),
    _type("nested-list", pa.list_(pa.list_(pa.int16())), [[[1, 2], [], None]]),
    _type("large-list", pa.large_list(pa.float32()), [[1.5, None]]),
    _type("fixed-size-list", pa.list_(pa.float32(), 2), [[1.0, 2.0]]),
    _type("map", pa.map_(pa.string(), pa.int64()), [[("a", 1)]]),
    _type(
        "dictionary",
        pa.dictionary(pa.int32(), pa.string()),
        ["x"],
        refused=errors.UnknownTypeError,
    ),
    _type("decimal128-38", pa.decimal128(38, 38), [decimal.Decimal("0." + "9" * 38)], True),
    _type("decimal256", pa.decimal256(76, 10), [decimal.Decimal("1" * 60 + ".5")]),
    _type("large-string", pa.large_string(), ["y" * 1000], True),
    _type("large-binary", pa.large_binary(), [b"\x00\xff" * 10]),
    _type("binary-partition", pa.binary(), [b"\x00/$.."], True),
    _type("fixed-size-binary", pa.binary(4), [b"\x00\x01\x02\x03"], True),
    _type("float16", pa.float16(), [1.5]),
    _type("time64", pa.time64("us"), [dt.time(23, 59, 59, 999999)]),
    _type("duration", pa.duration("s"), [dt.timedelta(days=-1)]),
    _type("timestamp-ns", pa.timestamp("ns"), [dt.datetime(2262, 4, 11)], True),
    _type(
        "timestamp-zoned", pa.timestamp("ms", "Asia/Kolkata"), [dt.datetime(1, 1, 1, tzinfo=UTC)]
    ),
    _type("uint8-partition", pa.uint8(), [255], True),
    _type("null-type", pa.null(), [None]),
]


@pytest.mark.parametrize(("dtype", "values", "partitioned", "refused"), TYPE_CASES)
def test_hostile_type(
    tmp_path: Path,
    dtype: pa.DataType,
    values: list[Any],
    partitioned: bool,
    refused: type[errors.LancePartitionedError] | None,
) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("c", dtype)])
    root = tmp_path / "ns"
    partition_by = "c" if partitioned else "bucket(2, id)"
    if refused is not None:
        with pytest.raises(refused, match="'c'"):
            lp.PartitionedNamespace.create(str(root), schema=schema, partition_by=partition_by)
        assert not (root / "__manifest").exists()
        return
    ns = lp.PartitionedNamespace.create(str(root), schema=schema, partition_by=partition_by)
    data = pa.table(
        {"id": list(range(len(values) + 1)), "c": pa.array([*values, None], dtype)}, schema=schema
    )
    ns.write(data)
    back = lp.PartitionedNamespace.open(ns.uri).to_table()
    assert back.schema.field("c").type == dtype
    assert rows(back) == rows(data)


# ---------------------------------------------------------------- 5. write inputs
def _batch(**columns: Any) -> pa.Table:
    return pa.table(columns)


def _two_schemas() -> Any:
    yield pa.record_batch({"id": pa.array([10], pa.int64()), "k": ["a"]})
    yield pa.record_batch({"id": pa.array([11], pa.int64()), "n": pa.array([1], pa.int32())})


def _ts(unit: str, tz: str | None) -> pa.Array:
    return pa.array([dt.datetime(2025, 1, 1, tzinfo=UTC)], pa.timestamp("us", "UTC")).cast(
        pa.timestamp(unit, tz)
    )


BAD_WRITES: list[Any] = [
    pytest.param(
        lambda: _batch(id=pa.array([9], pa.int64()), nope=[1]),
        "append",
        errors.SchemaMismatchError,
        id="extra-column",
    ),
    pytest.param(
        lambda: _batch(k=["a"]), "append", errors.SchemaMismatchError, id="missing-non-null"
    ),
    pytest.param(
        lambda: _batch(id=pa.array([None, 9], pa.int64()), k=["a", "a"]),
        "append",
        errors.SchemaMismatchError,
        id="null-in-non-null",
    ),
    pytest.param(
        lambda: _batch(id=pa.array([9], pa.int64()), n=["abc"]),
        "append",
        errors.CastError,
        id="string-into-int32",
    ),
    pytest.param(
        lambda: _batch(id=pa.array([9], pa.int64()), n=pa.array([2**40], pa.int64())),
        "append",
        errors.CastError,
        id="int64-overflows-int32",
    ),
    pytest.param(
        lambda: _batch(id=pa.array([9], pa.int64()), n=[1.5]),
        "append",
        errors.CastError,
        id="lossy-float-into-int32",
    ),
    pytest.param(
        lambda: _batch(id=pa.array([9], pa.int64()), n=[{"a": 1}]),
        "append",
        errors.CastError,
        id="struct-into-int32",
    ),
    pytest.param(
        lambda: _batch(id=pa.array([9], pa.int64()), ts=pa.array([2**62], pa.timestamp("s"))),
        "append",
        errors.CastError,
        id="timestamp-overflows-us",
    ),
    pytest.param(
        _two_schemas,
        "append",
        errors.SchemaMismatchError,
        id="batches-with-two-schemas",
    ),
    pytest.param(lambda: None, "append", errors.InvalidInputError, id="data-none"),
    pytest.param(lambda: "id,k\n1,a", "append", errors.InvalidInputError, id="data-csv-string"),
    pytest.param(lambda: {"id": [1]}, "append", errors.InvalidInputError, id="data-dict"),
    pytest.param(list, "append", errors.InvalidInputError, id="data-empty-iterable"),
    pytest.param(lambda: [1, 2], "append", errors.InvalidInputError, id="data-list-of-ints"),
    pytest.param(
        lambda: base_rows([9], ["a"]), "upsert", errors.InvalidInputError, id="unknown-mode"
    ),
    pytest.param(
        lambda: pa.Table.from_arrays(
            [pa.array([9], pa.int64()), pa.array([9], pa.int64())], names=["id", "id"]
        ),
        "append",
        errors.SchemaMismatchError,
        id="duplicate-column-names",
    ),
]


@pytest.mark.parametrize(("data", "mode", "error"), BAD_WRITES)
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
def test_hostile_write_is_a_typed_error(
    base_ns: lp.PartitionedNamespace,
    data: Callable[[], Any],
    mode: Any,
    error: type[errors.LancePartitionedError],
) -> None:
    expect_typed(Path(base_ns.uri), error, lambda: base_ns.write(data(), mode=mode))
    assert rows(base_ns.to_table()) == rows(base_rows([1, 2, 3, 4], ["a", "b", None, "a"]))


GOOD_WRITES: list[Any] = [
    pytest.param(
        lambda: _batch(id=pa.array([9], pa.int64()), k=pa.array(["a"]).dictionary_encode()),
        id="dictionary-encoded-key",
    ),
    pytest.param(
        lambda: _batch(id=pa.array([9], pa.int64()), k=pa.array(["z"], pa.large_string())),
        id="large-string-key",
    ),
    pytest.param(
        lambda: _batch(id=pa.array([9], pa.int32()), n=pa.array([7], pa.int8())), id="narrower-ints"
    ),
    pytest.param(
        lambda: _batch(ts=_ts("ns", "Asia/Tokyo"), k=["b"], id=pa.array([9], pa.int64())),
        id="reordered-columns-other-zone-and-unit",
    ),
    pytest.param(lambda: base_rows([], []), id="zero-rows"),
    pytest.param(
        lambda: [base_rows([9], ["a"]).to_batches()[0], base_rows([10], ["q"]).to_batches()[0]],
        id="iterable-of-batches",
    ),
]


@pytest.mark.parametrize("data", GOOD_WRITES)
def test_unusual_but_valid_write_reads_back_exactly(
    base_ns: lp.PartitionedNamespace, data: Callable[[], Any]
) -> None:
    written = data()
    before = base_ns.to_table()
    base_ns.write(written)
    incoming = pa.concat_tables(
        t if isinstance(t, pa.Table) else pa.Table.from_batches([t])
        for t in (written if isinstance(written, list) else [written])
    )
    # the oracle: the rows, conformed by hand to the namespace schema
    expected = [
        {**dict.fromkeys(BASE.names), **row}
        for row in incoming.select([n for n in BASE.names if n in incoming.column_names])
        .cast(pa.schema([BASE.field(n) for n in BASE.names if n in incoming.column_names]))
        .to_pylist()
    ]
    after = lp.PartitionedNamespace.open(base_ns.uri).to_table()
    assert rows(after) == sorted(norm([*before.to_pylist(), *expected]), key=lambda row: row["id"])


def test_a_failing_input_stream_publishes_nothing(base_ns: lp.PartitionedNamespace) -> None:
    """The caller's own exception passes through; no row of the stream is visible."""

    class SourceBroke(RuntimeError):
        pass

    def stream() -> Any:
        yield base_rows([20, 21], ["a", "new"]).to_batches()[0]
        raise SourceBroke("the upstream source failed")

    before = raw_state(Path(base_ns.uri))
    with pytest.raises(SourceBroke):
        base_ns.write(pa.RecordBatchReader.from_batches(BASE, stream()))
    assert raw_state(Path(base_ns.uri)) == before


def test_a_time_travel_view_refuses_writes_and_evolution(base_ns: lp.PartitionedNamespace) -> None:
    old = lp.PartitionedNamespace.open(base_ns.uri, version=base_ns.version)
    root = Path(base_ns.uri)
    expect_typed(root, errors.UnsupportedOperationError, lambda: old.write(base_rows([9], ["a"])))
    expect_typed(
        root, errors.UnsupportedOperationError, lambda: old.add_columns([pa.field("x", pa.int8())])
    )


# ---------------------------------------------------------------- 6. evolution
BAD_EVOLUTIONS: list[Any] = [
    pytest.param(
        lambda ns: ns.add_columns([pa.field("k", pa.int8())]),
        errors.SchemaError,
        id="add-existing-name",
    ),
    pytest.param(
        lambda ns: ns.add_columns([pa.field("x", pa.int8(), nullable=False)]),
        errors.SchemaError,
        id="add-non-nullable",
    ),
    pytest.param(
        lambda ns: ns.add_columns([pa.field("x", pa.int8(), metadata={"lance:field_id": "0"})]),
        errors.SchemaError,
        id="add-with-a-taken-field-id",
    ),
    pytest.param(
        lambda ns: ns.add_columns([pa.field("x", pa.dictionary(pa.int8(), pa.string()))]),
        errors.UnknownTypeError,
        id="add-dictionary-type",
    ),
    pytest.param(lambda ns: ns.rename_column("nope", "x"), errors.SchemaError, id="rename-unknown"),
    pytest.param(
        lambda ns: ns.rename_column("k", "id"), errors.SchemaError, id="rename-onto-existing"
    ),
    pytest.param(lambda ns: ns.drop_columns(["nope"]), errors.SchemaError, id="drop-unknown"),
    pytest.param(
        lambda ns: ns.alter_column_type("n", pa.int16()), errors.SchemaError, id="narrow-int32"
    ),
    pytest.param(
        lambda ns: ns.alter_column_type("k", pa.int64()),
        errors.SchemaError,
        id="string-to-int64",
    ),
    pytest.param(
        lambda ns: ns.alter_column_type("nope", pa.int64()),
        errors.SchemaError,
        id="alter-unknown",
    ),
    pytest.param(
        lambda ns: ns.update_partition_spec("year("),
        errors.PartitionByParseError,
        id="spec-unbalanced",
    ),
    pytest.param(
        lambda ns: ns.update_partition_spec("nope"),
        errors.PartitionByParseError,
        id="spec-unknown-column",
    ),
    pytest.param(
        lambda ns: ns.update_partition_spec("year(k)"),
        errors.PartitionByParseError,
        id="spec-year-of-string",
    ),
    pytest.param(
        lambda ns: ns.update_partition_spec("bucket(0, id)"),
        errors.PartitionSpecError,
        id="spec-bucket-zero",
    ),
    pytest.param(
        lambda ns: ns.update_partition_spec("bucket(-3, id)"),
        errors.PartitionSpecError,
        id="spec-bucket-negative",
    ),
    pytest.param(
        lambda ns: ns.update_partition_spec("truncate(0, k)"),
        errors.PartitionSpecError,
        id="spec-truncate-zero",
    ),
    pytest.param(
        lambda ns: ns.update_partition_spec("id AS object_id"),
        errors.PartitionSpecError,
        id="spec-reserved-field-name",
    ),
    pytest.param(
        lambda ns: ns.update_partition_spec("id AS p, k AS p"),
        errors.PartitionSpecError,
        id="spec-duplicate-field-name",
    ),
    pytest.param(
        lambda ns: ns.update_partition_spec("frobnicate(k)"),
        errors.PartitionByParseError,
        id="spec-unknown-transform",
    ),
    pytest.param(
        lambda ns: ns.update_partition_spec("expr('coalesce(col, 0)', n, 'int64')"),
        errors.PartitionSpecError,
        id="spec-null-to-value",
    ),
    pytest.param(
        lambda ns: ns.update_partition_spec("expr('CAST(random() * 4 AS BIGINT)', n, 'int64')"),
        errors.PartitionSpecError,
        id="spec-volatile",
    ),
]


@pytest.mark.parametrize(("change", "error"), BAD_EVOLUTIONS)
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
def test_hostile_evolution_is_a_typed_error(
    base_ns: lp.PartitionedNamespace,
    change: Callable[[lp.PartitionedNamespace], Any],
    error: type[errors.LancePartitionedError],
) -> None:
    expect_typed(Path(base_ns.uri), error, lambda: change(base_ns))


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param("append", id="append"),
        pytest.param("overwrite", id="overwrite"),
        pytest.param("overwrite_partitions", id="overwrite-partitions"),
    ],
)
def test_a_write_after_dropping_a_column_keeps_the_later_columns(tmp_path: Path, mode: Any) -> None:
    """Found by the state machine's long profile: the leaf of partition ``a`` exists with
    column ``x`` when ``x`` is dropped; a row written into it must keep its ``y``."""
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("k", pa.string()),
            ("x", pa.int32()),
            ("y", pa.int32()),
        ]
    )
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=schema, partition_by="k")
    ns.write(pa.table({"id": pa.array([1], pa.int64()), "k": ["a"]}))
    ns.drop_columns(["x"])
    ns.write(
        pa.table({"id": pa.array([2], pa.int64()), "k": ["a"], "y": pa.array([5], pa.int32())}),
        mode=mode,
    )
    back = lp.PartitionedNamespace.open(ns.uri).to_table()
    assert {row["id"]: row["y"] for row in back.to_pylist()}[2] == 5
