"""The date-part transforms of Appendix D (year, month, day and hour), computed on the wall
clock of the source (in its zone) and ordered jointly, and the calendar date of a timestamp."""

from __future__ import annotations

import datetime
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from lance_partitioned.expressions.ranges import (
    Interval,
    Preimage,
)
from lance_partitioned.expressions.tree import (
    In,
    NotNull,
    Predicate,
)
from lance_partitioned.spec.calendar import (
    CALENDAR,
    cyclic_values,
    is_zoned,
    naive_range,
    wall_clock,
)
from lance_partitioned.spec.evaluate import evaluate
from lance_partitioned.spec.fastpath import (
    MAX_TABLE as _MAX_TABLE,
)
from lance_partitioned.spec.fastpath import (
    SAFE_DAYS,
    Instants,
    local_time,
)
from lance_partitioned.spec.transforms.base import (
    _INT64_MAX,
    _INT64_MIN,
    Transform,
)


class _DatePart(Transform):
    """``date_part('<part>', col)`` on the wall clock (a zoned column's in its zone), as int32.

    The fast path covers days within ``SAFE_DAYS`` of the epoch (about years -25000 to 29000),
    where pyarrow's calendar arithmetic is exact; a column reaching beyond goes to DataFusion,
    which answers NULL past its own range (chrono's years -262143 to 262142). So a NULL date
    part proves nothing about its rows.
    """

    _part: ClassVar[str]
    _rank: ClassVar[int]
    _dates: ClassVar[bool] = True
    _per_day: ClassVar[int] = 1  # table entries per day

    @property
    def expression(self) -> str:
        return f"date_part('{self._part}', col)"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return pa.int32()

    def can_apply(self, source: pa.DataType) -> bool:
        t = pa.types
        return bool(t.is_timestamp(source) or (self._dates and t.is_date(source)))

    def _kernel(self, values: pa.Array) -> pa.Array:
        return getattr(pc, self._part)(values)

    def _table(self, instants: Instants) -> tuple[int, NDArray[np.int32]] | None:
        """The part for each day the column spans (first day, values), or None if too many."""
        low, high = instants.span(instants.per_day)
        if high - low >= _MAX_TABLE:
            return None
        days = pa.array(np.arange(low, high + 1, dtype=np.int32), pa.date32())
        return low, self._kernel(days).to_numpy().astype(np.int32)

    def _apply(self, values: pa.Array) -> pa.Array:
        if values.null_count == len(values):
            return pa.nulls(len(values), pa.int32())
        instants = Instants(values)
        low, high = instants.span(instants.per_day)
        zoned = pa.types.is_timestamp(values.type) and values.type.tz is not None
        if low < -SAFE_DAYS or high > SAFE_DAYS or (zoned and _near_int64_bounds(instants)):
            return evaluate(self.expression, values)
        if zoned:
            # the wall clock, as DataFusion reads a zoned column (a day off at most: still safe)
            values = local_time(values)
            instants = Instants(values)
        table = self._table(instants)
        if table is None:
            return self._kernel(values)
        return instants.lookup(instants.per_day // self._per_day, *table)

    def _literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        return CALENDAR.key(wall_clock(value, source), self._rank + 1)[-1]

    def _project_leaf(
        self, name: str, leaf: Predicate, source: pa.DataType, result: pa.DataType
    ) -> Predicate | None:
        return self._by_value(name, leaf, source, result, equal=False)  # ``=`` is a range

    def project_range(
        self, name: str, interval: Interval, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        interval, source = naive_range(interval, source)  # a zoned column: its wall clocks
        if self.preserves_order:
            return super().project_range(name, interval, source, result)
        values = cyclic_values(self._part, interval)  # month-of-year etc.: the values covered
        return NotNull(name) if values is None else In(name, values)


def _near_int64_bounds(instants: Instants) -> bool:
    """Whether a wall clock (a day off at most) may not fit the column's int64 storage."""
    return (
        instants.min < _INT64_MIN + instants.per_day or instants.max > _INT64_MAX - instants.per_day
    )


class Year(_DatePart):
    """``date_part('year', col)``: the year of a date or timestamp (its zone's), as int32.

    >>> import datetime, pyarrow as pa
    >>> Year().apply(pa.array([datetime.date(2025, 12, 10), None])).to_pylist()
    [2025, None]
    """

    _part = "year"
    _rank = 0
    preserves_order = True
    joint = (CALENDAR, 0)


class Month(_DatePart):
    """``date_part('month', col)``: the month (1-12) of a date or timestamp, as int32.

    >>> import datetime, pyarrow as pa
    >>> Month().apply(pa.array([datetime.date(2025, 12, 10)])).to_pylist()
    [12]
    """

    _part = "month"
    _rank = 1
    joint = (CALENDAR, 1)


class Day(_DatePart):
    """``date_part('day', col)``: the day of the month of a date or timestamp, as int32.

    >>> import datetime, pyarrow as pa
    >>> Day().apply(pa.array([datetime.date(2025, 12, 10)])).to_pylist()
    [10]
    """

    _part = "day"
    _rank = 2
    joint = (CALENDAR, 2)


class Hour(_DatePart):
    """``date_part('hour', col)``: the hour (0-23) of a timestamp in its zone, as int32.

    Dates have no hour: ``Hour().can_apply(pa.date32())`` is False. 23:30Z is 08:30 in Tokyo:

    >>> import datetime, pyarrow as pa
    >>> ts = pa.array([datetime.datetime(2025, 1, 1, 23, 30)], pa.timestamp("us", tz="Asia/Tokyo"))
    >>> Hour().apply(ts).to_pylist()
    [8]
    >>> Hour().can_apply(pa.date32())
    False
    """

    _part = "hour"
    _rank = 3
    _dates = False
    _per_day = 24
    joint = (CALENDAR, 3)

    def _table(self, instants: Instants) -> tuple[int, NDArray[np.int32]] | None:
        low, high = instants.span(instants.per_day // 24)
        if high - low >= _MAX_TABLE:
            return None
        return low, (np.arange(low, high + 1, dtype=np.int64) % 24).astype(np.int32)


class Date(Transform):
    """``CAST(col AS DATE)``: the calendar day of a timestamp (its zone's), as date32.

    Daily partitions in one field: unlike ``day`` (the day of the month, 1-31) the value is
    the whole date, so it orders its source by itself and ranges prune through it alone
    (``ts >= '2024-03-01'`` keeps the days from 2024-03-01). A zoned timestamp's day is the
    one of its wall clock in its zone, as DataFusion casts it (and as the date parts are
    taken). Not an Appendix D form: other spec-000 clients evaluate the SQL with DataFusion.

    >>> import datetime, pyarrow as pa
    >>> utc = datetime.timezone.utc
    >>> ts = pa.array([datetime.datetime(2025, 1, 1, 23, 30, tzinfo=utc), None],
    ...               pa.timestamp("us", tz="Asia/Tokyo"))
    >>> Date().apply(ts).to_pylist()
    [datetime.date(2025, 1, 2), None]
    >>> Date().result_type(ts.type), Date().preserves_order
    (DataType(date32[day]), True)
    """

    preserves_order = True

    @property
    def expression(self) -> str:
        return "CAST(col AS DATE)"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return pa.date32()

    def can_apply(self, source: pa.DataType) -> bool:
        return bool(pa.types.is_timestamp(source) or pa.types.is_date(source))

    def _apply(self, values: pa.Array) -> pa.Array:
        if pa.types.is_date32(values.type):
            return values
        if values.null_count == len(values):
            return pa.nulls(len(values), pa.date32())
        if pa.types.is_date64(values.type):
            return evaluate(self.expression, values)  # Arrow's cast truncates: rare, exact
        instants = Instants(values)
        low, high = instants.span(instants.per_day)
        zoned = is_zoned(values.type)
        if low < -SAFE_DAYS or high > SAFE_DAYS or (zoned and _near_int64_bounds(instants)):
            return evaluate(self.expression, values)  # DataFusion's range (and its errors)
        if zoned:
            values = local_time(values)
        raw = values.view(pa.int64())
        data = np.frombuffer(raw.buffers()[1], np.int64)[raw.offset : raw.offset + len(raw)]
        days = np.floor_divide(data, instants.per_day).astype(np.int32)
        nulls = values.null_count
        validity = pc.is_valid(values).buffers()[1] if nulls else None
        return pa.Array.from_buffers(
            pa.date32(), len(values), [validity, pa.py_buffer(days)], nulls
        )

    def _literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        moment = wall_clock(value, source)
        return moment.date() if isinstance(moment, datetime.datetime) else moment

    def project_range(
        self, name: str, interval: Interval, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        interval, source = naive_range(interval, source)  # a zoned column: its wall clocks
        return super().project_range(name, interval, source, result)

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        if value is None:
            return Preimage(null=True)  # the cast maps only NULL to NULL (or fails)
        cell = CALENDAR.cell((value.year, value.month, value.day), source)
        return Preimage(null=False, interval=cell)
