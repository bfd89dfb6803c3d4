"""Spark SQL types and the namespace's Arrow types, checked up front.

Writes: :func:`arrow_schema_for` turns a DataFrame schema into the Arrow schema a new
namespace is created with, and raises :class:`~lance_partitioned.errors.UnknownTypeError`
naming the column for a type with no lossless Arrow form, when the job is planned (before
any task runs). Reads: :func:`spark_schema_for` turns the namespace read schema into the
Spark schema of the DataFrame, and :func:`to_spark_batch` converts each batch read from a
leaf into the exact Arrow layout PySpark expects.

==============================  ======================================  ======================
Spark                           Arrow (namespace)                       read back as
==============================  ======================================  ======================
boolean, tinyint ... bigint     bool, int8 ... int64                    the same
float, double                   float32, float64                        the same
decimal(p, s)                   decimal128(p, s)                        the same
string (UTF8_BINARY)            utf8                                    the same
binary                          binary                                  the same
date                            date32                                  the same
timestamp                       timestamp(us, "UTC")                    timestamp
timestamp_ntz                   timestamp(us)                           timestamp_ntz
time(p)                         time64(ns)                              time(6)
interval day to second          duration(us)                            interval day to second
array<T>, map<K, V>, struct     list<element: T>, map<K, V>, struct     the same
==============================  ======================================  ======================

Year-month and calendar intervals, variant, geometry, geography, user-defined types and
strings with a collation other than ``UTF8_BINARY`` are refused. Namespaces written by
other clients may hold more Arrow types; they read as the closest Spark type: unsigned
integers widen (``uint64`` as ``decimal(20, 0)``), ``float16`` as ``float``, ``date64`` as
``date``, large and fixed-size variants as their plain form, and timestamps, times and
durations in other units as Spark's microseconds (nanoseconds are truncated).

>>> from pyspark.sql.types import StructType, StructField, LongType, TimestampType
>>> spark = StructType([StructField("id", LongType(), False), StructField("ts", TimestampType())])
>>> arrow_schema_for(spark)
id: int64 not null
ts: timestamp[us, tz=UTC]
>>> spark_schema_for(arrow_schema_for(spark)).simpleString()
'struct<id:bigint,ts:timestamp>'
"""

from __future__ import annotations

from typing import cast

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    CharType,
    DataType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    TimeType,
    VarcharType,
)

from lance_partitioned import errors

__all__ = [
    "arrow_schema_for",
    "arrow_type_for",
    "spark_arrow_schema",
    "spark_schema_for",
    "spark_type_for",
    "to_spark_batch",
]

#: PySpark builds the Arrow schema it expects from a Python data source with this time zone.
_SPARK_READ_TZ = "UTC"
_MAX_DECIMAL_PRECISION = 38
_ATOMIC: tuple[tuple[type[DataType], pa.DataType], ...] = (
    (BooleanType, pa.bool_()),
    (ByteType, pa.int8()),
    (ShortType, pa.int16()),
    (IntegerType, pa.int32()),
    (LongType, pa.int64()),
    (FloatType, pa.float32()),
    (DoubleType, pa.float64()),
    (BinaryType, pa.binary()),
    (DateType, pa.date32()),
    (TimestampType, pa.timestamp("us", tz="UTC")),
    (TimestampNTZType, pa.timestamp("us")),
    (TimeType, pa.time64("ns")),
    (NullType, pa.null()),
)


def _unsupported(path: str, dtype: object, hint: str) -> errors.UnknownTypeError:
    return errors.UnknownTypeError(
        f"column {path!r} has Spark type {dtype} which lance_partitioned cannot store without "
        f"loss: {hint}"
    )


def arrow_type_for(dtype: DataType, path: str) -> pa.DataType:
    """The namespace Arrow type of a Spark type (``path`` names the column in errors).

    >>> from pyspark.sql.types import ArrayType, DecimalType, YearMonthIntervalType
    >>> arrow_type_for(ArrayType(DecimalType(10, 2)), "prices")
    ListType(list<element: decimal128(10, 2)>)
    >>> arrow_type_for(YearMonthIntervalType(), "age")
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.UnknownTypeError: column 'age' has Spark type ...
    """
    for spark_type, arrow_type in _ATOMIC:
        if isinstance(dtype, spark_type):
            return arrow_type
    if isinstance(dtype, (CharType, VarcharType)):
        return pa.string()
    if isinstance(dtype, StringType):
        collation = getattr(dtype, "collation", "UTF8_BINARY")
        if collation.upper() != "UTF8_BINARY":
            raise _unsupported(path, dtype, f"cast it to a UTF8_BINARY string (not {collation})")
        return pa.string()
    if isinstance(dtype, DecimalType):
        return pa.decimal128(dtype.precision, dtype.scale)
    if isinstance(dtype, DayTimeIntervalType):
        return pa.duration("us")
    if isinstance(dtype, ArrayType):
        element = arrow_type_for(dtype.elementType, f"{path}.element")
        return pa.list_(pa.field("element", element, nullable=dtype.containsNull))
    if isinstance(dtype, MapType):
        key = arrow_type_for(dtype.keyType, f"{path}.key")
        value = arrow_type_for(dtype.valueType, f"{path}.value")
        return pa.map_(
            pa.field("key", key, nullable=False),
            pa.field("value", value, nullable=dtype.valueContainsNull),
        )
    if isinstance(dtype, StructType):
        return pa.struct([_arrow_field(f, f"{path}.{f.name}") for f in dtype.fields])
    raise _unsupported(
        path,
        dtype,
        "convert it first (intervals to a duration or a number, variants with "
        "to_json, user-defined types to their SQL type)",
    )


def _arrow_field(field: StructField, path: str) -> pa.Field:
    return pa.field(field.name, arrow_type_for(field.dataType, path), nullable=field.nullable)


def arrow_schema_for(schema: StructType) -> pa.Schema:
    """The Arrow schema that a namespace created from a DataFrame of ``schema`` gets.

    Raises :class:`~lance_partitioned.errors.UnknownTypeError` naming the first column whose
    type cannot be stored, and :class:`~lance_partitioned.errors.SchemaMismatchError` for two
    columns with the same name.
    """
    names = [f.name for f in schema.fields]
    for name in names:
        if names.count(name) > 1:
            raise errors.SchemaMismatchError(f"column {name!r} appears twice in the DataFrame")
    return pa.schema([_arrow_field(f, f.name) for f in schema.fields])


def spark_type_for(dtype: pa.DataType, path: str) -> DataType:
    """The Spark type a namespace column of Arrow type ``dtype`` is read as (all nullable).

    >>> spark_type_for(pa.uint64(), "n")
    DecimalType(20,0)
    >>> spark_type_for(pa.map_(pa.string(), pa.list_(pa.int8())), "m").simpleString()
    'map<string,array<tinyint>>'
    """
    t = pa.types
    simple: tuple[tuple[bool, DataType], ...] = (
        (t.is_boolean(dtype), BooleanType()),
        (t.is_int8(dtype), ByteType()),
        (t.is_int16(dtype) or t.is_uint8(dtype), ShortType()),
        (t.is_int32(dtype) or t.is_uint16(dtype), IntegerType()),
        (t.is_int64(dtype) or t.is_uint32(dtype), LongType()),
        (t.is_uint64(dtype), DecimalType(20, 0)),
        (t.is_float16(dtype) or t.is_float32(dtype), FloatType()),
        (t.is_float64(dtype), DoubleType()),
        (t.is_string(dtype) or t.is_large_string(dtype), StringType()),
        (
            t.is_binary(dtype) or t.is_large_binary(dtype) or t.is_fixed_size_binary(dtype),
            BinaryType(),
        ),
        (t.is_date(dtype), DateType()),
        (t.is_time(dtype), TimeType()),
        (t.is_duration(dtype), DayTimeIntervalType()),
        (t.is_null(dtype), NullType()),
    )
    for matches, spark_type in simple:
        if matches:
            return spark_type
    if t.is_timestamp(dtype):
        return TimestampType() if dtype.tz else TimestampNTZType()
    if t.is_decimal(dtype):
        if dtype.precision > _MAX_DECIMAL_PRECISION:
            raise errors.UnknownTypeError(
                f"column {path!r} has type {dtype}: Spark decimals hold at most 38 digits"
            )
        return DecimalType(dtype.precision, dtype.scale)
    if t.is_list(dtype) or t.is_large_list(dtype) or t.is_fixed_size_list(dtype):
        return ArrayType(spark_type_for(dtype.value_type, f"{path}.element"), True)
    if t.is_map(dtype):
        key = spark_type_for(dtype.key_type, f"{path}.key")
        return MapType(key, spark_type_for(dtype.item_type, f"{path}.value"), True)
    if t.is_struct(dtype):
        return StructType(
            [
                StructField(child.name, spark_type_for(child.type, f"{path}.{child.name}"), True)
                for child in dtype
            ]
        )
    raise errors.UnknownTypeError(f"column {path!r} has type {dtype}, which Spark cannot read")


def spark_schema_for(schema: pa.Schema) -> StructType:
    """The Spark schema of a read: every column, nested ones included, nullable.

    Like Spark's own file sources, a read marks everything nullable: a leaf written before a
    column was added reads it as NULL whatever the namespace schema says.
    """
    return StructType([StructField(f.name, spark_type_for(f.type, f.name), True) for f in schema])


def spark_arrow_schema(schema: StructType) -> pa.Schema:
    """The exact Arrow schema PySpark requires of the batches a reader yields for ``schema``.

    >>> from pyspark.sql.types import StructType, StructField, TimestampType
    >>> spark_arrow_schema(StructType([StructField("ts", TimestampType())]))
    ts: timestamp[us, tz=UTC]
    """
    return cast(pa.Schema, to_arrow_schema(schema, timezone=_SPARK_READ_TZ))


def _has_sub_micro_units(dtype: pa.DataType) -> bool:
    if pa.types.is_timestamp(dtype) or pa.types.is_duration(dtype):
        return bool(dtype.unit == "ns")
    if pa.types.is_struct(dtype):
        return any(_has_sub_micro_units(child.type) for child in dtype)
    if pa.types.is_map(dtype):
        return _has_sub_micro_units(dtype.key_type) or _has_sub_micro_units(dtype.item_type)
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return _has_sub_micro_units(dtype.value_type)
    if pa.types.is_fixed_size_list(dtype):
        return _has_sub_micro_units(dtype.value_type)
    return False


def to_spark_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` (namespace types) converted to ``schema`` (:func:`spark_arrow_schema`).

    Every conversion is exact except nanosecond timestamps and durations, which Spark holds
    in microseconds: those are truncated.

    >>> batch = pa.record_batch({"n": pa.array([1, None], pa.uint32())})
    >>> to_spark_batch(batch, pa.schema([("n", pa.int64())])).column(0).type
    DataType(int64)
    """
    arrays = []
    for field in schema:
        column = batch.column(field.name)
        if column.type != field.type:
            try:
                column = pc.cast(column, field.type, safe=not _has_sub_micro_units(column.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise errors.CastError(
                    f"column {field.name!r}: cannot read {column.type} as Spark's {field.type} "
                    f"({exc})"
                ) from exc
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
