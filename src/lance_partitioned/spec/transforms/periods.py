"""Period transforms: whole years, months or hours since 1970-01-01T00:00, as Iceberg counts them.

``years(ts)``, ``months(ts)`` and ``hours(ts)`` number the periods of the wall clock (a zoned
column's in its zone, as the date parts): ``months`` of 2025-03-04 is
``(2025 - 1970) * 12 + 3 - 1 = 662``, of 1969-12-31 is ``-1``. One field makes monthly (hourly)
partitions, and since the number grows with time, ranges prune through it alone. ``days`` is
:class:`~lance_partitioned.spec.transforms.Date` (the calendar date itself).

The expressions are built from the date parts DataFusion computes (``date_part``, and the
calendar date ``CAST(col AS DATE)``), so any spec-000 client evaluates them as we do:

==============  =======================================================================
class           expression
==============  =======================================================================
``Years()``     ``date_part('year', col) - 1970``
``Months()``    ``(date_part('year', col) - 1970) * 12 + date_part('month', col) - 1``
``Hours()``     ``CAST(CAST(col AS DATE) AS BIGINT) * 24 + date_part('hour', col)``
==============  =======================================================================

>>> import datetime, pyarrow as pa
>>> ts = pa.array([datetime.datetime(2025, 3, 4, 5, 6), datetime.datetime(1969, 12, 31, 23)])
>>> Months().apply(ts).to_pylist(), Years().apply(ts).to_pylist(), Hours().apply(ts).to_pylist()
([662, -1], [55, -1], [483629, -1])
"""

from __future__ import annotations

import abc
import datetime
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned.expressions.ranges import Interval, Preimage
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.spec.calendar import CALENDAR, is_zoned, naive_range, wall_clock
from lance_partitioned.spec.evaluate import evaluate
from lance_partitioned.spec.fastpath import MAX_TABLE, SAFE_DAYS, Instants, local_time
from lance_partitioned.spec.transforms.base import Transform
from lance_partitioned.spec.transforms.temporal import _near_int64_bounds

__all__ = ["Hours", "Months", "Years"]

_EPOCH = datetime.date(1970, 1, 1)


class _Period(Transform):
    """Whole periods since 1970-01-01T00:00 of the wall clock, as int32 (monotonic).

    A subclass gives the expression, the ordinal of a naive wall-clock moment
    (:meth:`_ordinal`), the leading calendar parts of a period (:meth:`_parts`) and the
    vectorised ordinals of a naive column (:meth:`_ordinals`). The fast path covers days
    within ``SAFE_DAYS`` of the epoch; beyond, DataFusion answers (NULL past its calendar for
    the ``date_part`` forms, an error for ``hours``).
    """

    preserves_order = True
    _dates: ClassVar[bool] = True

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return pa.int32()

    def can_apply(self, source: pa.DataType) -> bool:
        t = pa.types
        return bool(t.is_timestamp(source) or (self._dates and t.is_date(source)))

    @abc.abstractmethod
    def _ordinal(self, moment: datetime.date) -> int:
        """The period of a naive wall-clock moment (a date is its midnight)."""

    @abc.abstractmethod
    def _parts(self, value: int) -> tuple[int, ...] | None:
        """The (year, month, day, hour) prefix that starts period ``value`` (None: past dates)."""

    def to_human_string(self, value: Any) -> str:
        """The period a value numbers: ``2025`` (years), ``2025-08`` (months),
        ``2025-08-01T13`` (hours); a value past the calendar as the number.

        >>> Months().to_human_string(667), Years().to_human_string(55)
        ('2025-08', '2025')
        >>> Hours().to_human_string(483629), Months().to_human_string(None)
        ('2025-03-04T05', 'NULL')
        """
        if not isinstance(value, int) or isinstance(value, bool):
            return super().to_human_string(value)
        parts = self._parts(value)
        if parts is None:
            return str(value)
        text = "-".join(f"{part:02d}" for part in parts[:3])
        return text if len(parts) < 4 else f"{text}T{parts[3]:02d}"

    @abc.abstractmethod
    def _ordinals(self, values: pa.Array, instants: Instants) -> pa.Array:
        """The periods of a date or tz-naive timestamp column (any integer type)."""

    def _apply(self, values: pa.Array) -> pa.Array:
        if values.null_count == len(values):
            return pa.nulls(len(values), pa.int32())
        instants = Instants(values)
        low, high = instants.span(instants.per_day)
        zoned = is_zoned(values.type)
        if low < -SAFE_DAYS or high > SAFE_DAYS or (zoned and _near_int64_bounds(instants)):
            return evaluate(self.expression, values)  # DataFusion's range (and its errors)
        if zoned:
            values = local_time(values)  # the wall clock, as DataFusion reads a zoned column
            instants = Instants(values)
        return self._ordinals(values, instants)

    def _literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        return self._ordinal(wall_clock(value, source))

    def project_range(
        self, name: str, interval: Interval, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        interval, source = naive_range(interval, source)  # a zoned column: its wall clocks
        return super().project_range(name, interval, source, result)

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        if value is None:
            return Preimage()  # NULL in, NULL out, but DataFusion's date_part is NULL past 262143
        parts = self._parts(value)
        cell = None if parts is None else CALENDAR.cell(parts, source)
        return Preimage(null=False, interval=cell)


class _DayTable(_Period):
    """Years and months: the value of each day the column spans, gathered per row."""

    @abc.abstractmethod
    def _of_dates(self, days: pa.Array) -> pa.Array:
        """The periods of a date32 (or any temporal) array, with pyarrow's kernels."""

    def _ordinals(self, values: pa.Array, instants: Instants) -> pa.Array:
        low, high = instants.span(instants.per_day)
        if high - low >= MAX_TABLE:
            return self._of_dates(values)
        days = pa.array(np.arange(low, high + 1, dtype=np.int32), pa.date32())
        table = self._of_dates(days).to_numpy().astype(np.int32)
        return instants.lookup(instants.per_day, low, table)


class Years(_DayTable):
    """``date_part('year', col) - 1970``: whole years since 1970 (Iceberg's ``years``), int32.

    >>> import datetime, pyarrow as pa
    >>> dates = pa.array([datetime.date(2025, 12, 31), datetime.date(1969, 1, 1)])
    >>> Years().apply(dates).to_pylist()
    [55, -1]
    >>> Years().preimage(55, pa.date32(), pa.int32()).interval
    Interval(low=datetime.date(2025, 1, 1), low_inclusive=True, high=datetime.date(2026, 1, 1), ...)
    """

    @property
    def expression(self) -> str:
        return "date_part('year', col) - 1970"

    def _ordinal(self, moment: datetime.date) -> int:
        return moment.year - 1970

    def _parts(self, value: int) -> tuple[int, ...] | None:
        return (1970 + value,)

    def _of_dates(self, days: pa.Array) -> pa.Array:
        return pc.subtract(pc.year(days), 1970)


class Months(_DayTable):
    """``(date_part('year', col) - 1970) * 12 + date_part('month', col) - 1``: whole months since
    1970-01 (Iceberg's ``months``), int32. One field gives one partition per calendar month.

    >>> import datetime, pyarrow as pa
    >>> utc = datetime.timezone.utc
    >>> ts = pa.array([datetime.datetime(2025, 3, 31, 23, 30, tzinfo=utc), None],
    ...               pa.timestamp("us", tz="Asia/Tokyo"))
    >>> Months().apply(ts).to_pylist()  # April 1st in Tokyo
    [663, None]
    >>> Months().preimage(663, pa.timestamp("us"), pa.int32()).interval.low
    datetime.datetime(2025, 4, 1, 0, 0)
    """

    @property
    def expression(self) -> str:
        return "(date_part('year', col) - 1970) * 12 + date_part('month', col) - 1"

    def _ordinal(self, moment: datetime.date) -> int:
        return (moment.year - 1970) * 12 + moment.month - 1

    def _parts(self, value: int) -> tuple[int, ...] | None:
        return (1970 + value // 12, value % 12 + 1)

    def _of_dates(self, days: pa.Array) -> pa.Array:
        years = pc.multiply(pc.subtract(pc.year(days), 1970), 12)
        return pc.add(years, pc.subtract(pc.month(days), 1))


class Hours(_Period):
    """``CAST(CAST(col AS DATE) AS BIGINT) * 24 + date_part('hour', col)``: whole hours since
    1970-01-01T00:00 of the wall clock (Iceberg's ``hours``), int32; timestamps only.

    A zoned column's hours are of its wall clock: the hour repeated when the clocks go back
    is one partition, the hour skipped when they go forward is none.

    >>> import datetime, pyarrow as pa
    >>> ts = pa.array([datetime.datetime(1970, 1, 2, 1, 59), datetime.datetime(1969, 12, 31, 23)])
    >>> Hours().apply(ts).to_pylist()
    [25, -1]
    >>> Hours().can_apply(pa.date32())
    False
    """

    _dates = False

    @property
    def expression(self) -> str:
        return "CAST(CAST(col AS DATE) AS BIGINT) * 24 + date_part('hour', col)"

    def _ordinal(self, moment: datetime.date) -> int:
        hour = moment.hour if isinstance(moment, datetime.datetime) else 0
        day = moment.date() if isinstance(moment, datetime.datetime) else moment
        return (day - _EPOCH).days * 24 + hour

    def _parts(self, value: int) -> tuple[int, ...] | None:
        try:
            day = _EPOCH + datetime.timedelta(days=value // 24)
        except OverflowError:
            return None
        return (day.year, day.month, day.day, value % 24)

    def _ordinals(self, values: pa.Array, instants: Instants) -> pa.Array:
        raw = instants.raw
        data = np.frombuffer(raw.buffers()[1], np.int64)[raw.offset : raw.offset + len(raw)]
        hours = np.floor_divide(data, instants.per_day // 24)  # within SAFE_DAYS: fits int32
        nulls = values.null_count
        validity = pc.is_valid(values).buffers()[1] if nulls else None
        out = hours.astype(np.int32)
        return pa.Array.from_buffers(pa.int32(), len(values), [validity, pa.py_buffer(out)], nulls)

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        if value is None:
            return Preimage(null=True)  # the cast maps only NULL to NULL (or fails)
        return super().preimage(value, source, result)
