"""Spark types to namespace Arrow types and back, and a round trip of every type through Spark."""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CalendarIntervalType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    VariantType,
)

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.spark.types import (
    arrow_schema_for,
    arrow_type_for,
    spark_arrow_schema,
    spark_schema_for,
    spark_type_for,
    to_spark_batch,
)
from tests.spark.helpers import assert_same_rows

EVERY_TYPE = StructType(
    [
        StructField("id", LongType(), False),
        StructField("flag", BooleanType()),
        StructField("tiny", ByteType()),
        StructField("small", ShortType()),
        StructField("int", IntegerType()),
        StructField("real", FloatType()),
        StructField("double", DoubleType()),
        StructField("price", DecimalType(38, 10)),
        StructField("name", StringType()),
        StructField("blob", BinaryType()),
        StructField("day", DateType()),
        StructField("ts", TimestampType()),
        StructField("ts_ntz", TimestampNTZType()),
        StructField("span", DayTimeIntervalType()),
        StructField("tags", ArrayType(StringType())),
        StructField("matrix", ArrayType(ArrayType(IntegerType(), False))),
        StructField("attrs", MapType(StringType(), DoubleType())),
        StructField(
            "point",
            StructType(
                [
                    StructField("x", DoubleType()),
                    StructField("labels", MapType(IntegerType(), ArrayType(DateType()))),
                ]
            ),
        ),
    ]
)

ROWS = [
    (
        1,
        True,
        -128,
        32767,
        -(2**31),
        1.5,
        -2.25e300,
        decimal.Decimal("1234567890123456789012345678.0123456789"),
        "héllo",
        b"\x00\xff",
        dt.date(1, 1, 1),
        dt.datetime(2025, 3, 30, 1, 30, 0, 123456),
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
        dt.timedelta(days=-3, microseconds=7),
        ["a", None, ""],
        [[1, 2], []],
        {"k": 1.0, "inf": float("-inf")},
        (0.5, {1: [dt.date(2025, 1, 1), None]}),
    ),
    (2, *[None] * (len(EVERY_TYPE.fields) - 1)),
]


def test_every_storable_type_maps_without_loss() -> None:
    arrow = arrow_schema_for(EVERY_TYPE)
    assert arrow.field("ts").type == pa.timestamp("us", tz="UTC")
    assert arrow.field("ts_ntz").type == pa.timestamp("us")
    assert arrow.field("price").type == pa.decimal128(38, 10)
    assert arrow.field("id").nullable is False
    back = spark_schema_for(arrow)
    assert back.simpleString() == EVERY_TYPE.simpleString()


@pytest.mark.parametrize("dtype", [CalendarIntervalType(), VariantType(), StringType("UNICODE_CI")])
def test_unstorable_types_name_the_column(dtype: object) -> None:
    schema = StructType([StructField("nested", StructType([StructField("bad", dtype)]))])
    with pytest.raises(errors.UnknownTypeError, match=r"'nested\.bad'"):
        arrow_schema_for(schema)


def test_duplicate_columns_are_refused() -> None:
    schema = StructType([StructField("a", LongType()), StructField("a", StringType())])
    with pytest.raises(errors.SchemaMismatchError, match="'a' appears twice"):
        arrow_schema_for(schema)


def test_other_clients_types_read_as_the_closest_spark_type() -> None:
    cases = {
        pa.uint8(): "smallint",
        pa.uint32(): "bigint",
        pa.uint64(): "decimal(20,0)",
        pa.float16(): "float",
        pa.large_string(): "string",
        pa.binary(16): "binary",
        pa.date64(): "date",
        pa.timestamp("ns", tz="Europe/Paris"): "timestamp",
        pa.list_(pa.int8(), 3): "array<tinyint>",
        pa.decimal256(38, 2): "decimal(38,2)",
    }
    for arrow_type, spark in cases.items():
        assert spark_type_for(arrow_type, "c").simpleString() == spark
    with pytest.raises(errors.UnknownTypeError, match="'wide'"):
        spark_type_for(pa.decimal256(50, 2), "wide")


def test_batches_are_converted_to_sparks_layout() -> None:
    schema = pa.schema(
        [
            ("n", pa.uint64()),
            ("ts", pa.timestamp("ns", tz="Europe/Paris")),
            ("l", pa.large_list(pa.field("item", pa.float16()))),
        ]
    )
    batch = pa.record_batch(
        [
            pa.array([2**64 - 1, None], pa.uint64()),
            pa.array([1_000_000_001_999, None], pa.timestamp("ns", tz="Europe/Paris")),
            pa.array([[1.5], None], pa.large_list(pa.float16())),
        ],
        schema=schema,
    )
    target = spark_arrow_schema(spark_schema_for(schema))
    out = to_spark_batch(batch, target)
    assert out.schema.equals(target)
    assert out.column("n")[0].as_py() == decimal.Decimal(2**64 - 1)
    assert out.column("ts")[0].value == 1_000_000_001  # nanoseconds truncated to micros
    assert out.column("l").to_pylist() == [[1.5], None]


def test_arrow_type_for_a_nested_type() -> None:
    dtype = arrow_type_for(MapType(StringType(), ArrayType(LongType(), False)), "m")
    assert dtype == pa.map_(pa.string(), pa.list_(pa.field("element", pa.int64(), False)))


@pytest.mark.spark
def test_every_type_round_trips_through_spark(spark: SparkSession, tmp_path: Path) -> None:
    source = spark.createDataFrame(ROWS, EVERY_TYPE)
    uri = str(tmp_path / "ns")
    source.write.format("lance_partitioned").mode("append").option(
        "partition_by", "day, bucket(4, name)"
    ).save(uri)
    back = spark.read.format("lance_partitioned").load(uri)
    assert back.schema.simpleString() == EVERY_TYPE.simpleString()
    assert_same_rows(back, source)
    # and the Python API reads the same values
    table = lp.PartitionedNamespace.open(uri).to_table().sort_by("id")
    assert table.column("price")[0].as_py() == ROWS[0][7]
    assert table.column("span")[0].as_py() == ROWS[0][13]
    assert table.column("ts")[0].as_py() == ROWS[0][11].replace(tzinfo=dt.timezone.utc)


ALIGNMENT_SCHEMA = StructType(
    [
        *EVERY_TYPE.fields,
        StructField("small_price", DecimalType(9, 2)),
        StructField("amounts", ArrayType(DecimalType(12, 2))),
        StructField("priced", StructType([StructField("p", DecimalType(20, 4))])),
        StructField("by_name", MapType(StringType(), DecimalType(10, 1))),
    ]
)
BATCH_SIZES = [*range(1, 21), 1001]


def _row(i: int) -> tuple[object, ...]:
    base = ROWS[0] if i % 3 else ROWS[1]
    price = decimal.Decimal(i).scaleb(-2)
    extra = (price, [price, None], (price,), {"k": price}) if i % 3 else (None,) * 4
    return (i, *base[1:], *extra)


@pytest.mark.spark
def test_every_type_at_every_batch_size(spark: SparkSession, tmp_path: Path) -> None:
    """One task per batch size: Spark hands each task its rows as one Arrow batch read from a
    stream, where a decimal buffer's alignment depends on the sizes of the columns before it
    (Lance panicked on 2, 4, 8 and 1001 rows). Unpartitioned, so the rows reach Lance as
    Spark sent them (tests/integration/test_alignment.py writes partitioned ones too)."""
    keyed = []
    start = 0
    for task, size in enumerate(BATCH_SIZES):
        keyed += [(task, _row(i)) for i in range(start, start + size)]
        start += size
    rdd = (
        spark.sparkContext.parallelize(keyed, len(BATCH_SIZES))
        .partitionBy(len(BATCH_SIZES), lambda task: task)
        .values()
    )
    source = spark.createDataFrame(rdd, ALIGNMENT_SCHEMA)
    assert source.rdd.glom().map(len).collect() == BATCH_SIZES
    uri = str(tmp_path / "ns")
    source.write.format("lance_partitioned").mode("append").option("partition_by", "").save(uri)
    assert_same_rows(spark.read.format("lance_partitioned").load(uri), source)
