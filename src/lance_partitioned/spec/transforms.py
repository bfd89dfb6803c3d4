"""Partition transforms: the Appendix D expressions of spec 000 as classes.

A transform carries the whole meaning of a partition expression (PyIceberg's model): how it
computes partition values (:meth:`Transform.apply`, a vectorised fast path, and
:meth:`Transform.apply_reference`, DataFusion, which it must agree with), its
:meth:`~Transform.result_type`, the sources it accepts (:meth:`~Transform.can_apply`), whether
it :attr:`~Transform.preserves_order`, and what pruning needs: the image of one literal
(:meth:`~Transform.apply_literal`), the inclusive projection of a predicate leaf
(:meth:`~Transform.project`: ``=``, ``IN``, ``LIKE 'p%'``, ``IS NULL``, …) and of a range of
source values (:meth:`~Transform.project_range`), and what one partition value proves about
the rows of its partition (:meth:`~Transform.preimage`, from which the residual follows).
Transforms whose values together order their source lexicographically (year, month, day, hour)
declare it (:attr:`~Transform.joint`), so ranges project through them jointly.
:mod:`lance_partitioned.expressions` walks predicates and asks the transform; it never asks
which transform it has.

============================  ============================  ============  ====================
class                         expression                    result type   sources
============================  ============================  ============  ====================
``Identity()``                ``col``                       the source's  any
``Year()``                    ``date_part('year', col)``    int32         date32/64, timestamp
``Month()``                   ``date_part('month', col)``   int32 (1-12)  date32/64, timestamp
``Day()``                     ``date_part('day', col)``     int32 (1-31)  date32/64, timestamp
``Hour()``                    ``date_part('hour', col)``    int32 (0-23)  timestamp
``Bucket(N)``                 ``abs(hash(col)) % N``        int64         all hash() encodes
``Truncate(W)``               ``col - (col % W)``           the source's  integer, decimal128/256
``Truncate(W, string=True)``  ``left(col, W)``              utf8          utf8, large, view
============================  ============================  ============  ====================

What each projects (every transform maps NULL to NULL, so ``x IS NULL`` projects to
``part IS NULL``; any other test implies ``part IS NOT NULL`` except through an opaque
expression, which may map a value to NULL):

==============  ==============================================================================
transform       projects
==============  ==============================================================================
identity        everything: the same test on the partition column
year            ``=``, IN, ranges (``ts < X`` → ``year <= year(X - 1 unit)``)
month/day/hour  ``=``, IN; a bounded range → the set of values it covers when smaller than the
                domain; with year (and month, day) of the same source: ranges jointly, as
                an interval of (year, month, day, hour) in lexicographic order
bucket          ``=`` and IN, by hashing the literals
truncate        strings: ``=``, IN, ranges, ``LIKE 'p%'`` (``len(p) >= W``: ``= p[:W]``,
                shorter: ``LIKE 'p%'`` on the partition); numbers: ``=``, IN, ranges
opaque          ``=`` and IN, evaluating the expression on the literal with DataFusion
==============  ==============================================================================

Date parts of a zoned timestamp are computed on its wall clock in the column's zone, as
DataFusion computes them (``date_part('hour', col)`` of 23:30Z is 18 in ``America/New_York``);
ranges of a zone with DST rules project through bounds widened by a day (the wall clock is not
monotonic across a fall back).
``Truncate`` follows the expression's SQL semantics: ``%`` is the truncated remainder, so
negative values truncate toward zero (``-3 - (-3 % 10) = 0``). ``left`` counts characters
(code points), and always returns utf8.

:func:`parse_transform` is the one place that chooses a class for an expression; a transform
defined elsewhere joins it with :func:`register_transform`.

>>> import pyarrow as pa
>>> t = parse_transform("abs(hash(col)) % 16")
>>> t, t.expression
(Bucket(16), 'abs(hash(col)) % 16')
>>> t.apply(pa.array([1, None])).to_pylist()
[11, None]
"""

from __future__ import annotations

import abc
import decimal
import functools
import re
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from lance_partitioned.errors import LancePartitionedError, PartitionSpecError, TransformError
from lance_partitioned.expressions.ranges import (
    FAILED,
    Interval,
    Preimage,
    truncate_range,
)
from lance_partitioned.expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    Comparison,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    LessThanOrEqual,
    NotEqualTo,
    NotIn,
    NotNull,
    NotStartsWith,
    Predicate,
    StartsWith,
    and_,
    or_,
)
from lance_partitioned.spec.calendar import CALENDAR, cyclic_values, wall_clock, wall_clock_bounds
from lance_partitioned.spec.evaluate import cast_result, evaluate
from lance_partitioned.spec.fastpath import (
    MAX_TABLE as _MAX_TABLE,
)
from lance_partitioned.spec.fastpath import (
    SAFE_DAYS,
    Instants,
    is_string,
    local_time,
    truncate_number,
)
from lance_partitioned.spec.fastpath import (
    is_ascii as _is_ascii,
)
from lance_partitioned.spec.hashing import bucket_array, bucket_scalar, can_hash

__all__ = [
    "Bucket",
    "Day",
    "Hour",
    "Identity",
    "Lexicographic",
    "Month",
    "Opaque",
    "Transform",
    "Truncate",
    "Year",
    "parse_transform",
    "register_transform",
    "unregister_transform",
]

_MAX_PARAMETER = (1 << 63) - 1
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class Lexicographic(Protocol):
    """A family of transforms whose values, taken by rank, order their source lexicographically.

    A transform declares ``joint = (family, rank)``; the fields of one source with ranks
    0, 1, … project ranges jointly (``ts`` in June 2025 is ``year = 2025 AND month = 6``).
    :data:`lance_partitioned.spec.calendar.CALENDAR` is the family of year, month, day, hour.
    """

    def key(self, value: Any, count: int) -> tuple[Any, ...]:
        """The values of the first ``count`` ranks for one bound source literal."""

    def is_first(self, parts: tuple[Any, ...], index: int) -> bool:
        """Whether ``parts[index:]`` are the least values within the prefix ``parts[:index]``."""

    def is_last(self, parts: tuple[Any, ...], index: int) -> bool:
        """Whether ``parts[index:]`` are the greatest values within ``parts[:index]``."""

    def cell(self, parts: tuple[Any, ...], source: pa.DataType) -> Interval | None:
        """The source values whose leading ranks are ``parts`` (None: not representable)."""


class Transform(abc.ABC):
    """A partition expression: how a source column maps to a partition value, and back.

    Subclasses define :attr:`expression`, :meth:`result_type`, :meth:`can_apply` and the fast
    path ``_apply``; the pruning methods have conservative defaults (``=`` and IN by the image
    of each literal, ranges only when :attr:`preserves_order`) that a subclass refines.
    Equality and hashing are by class and ``_parameters()``.

    >>> import pyarrow as pa
    >>> t: Transform = Month()
    >>> t.can_apply(pa.date32()), t.result_type(pa.date32())
    (True, DataType(int32))
    >>> Month() == Month(), Bucket(4) == Bucket(8)
    (True, False)
    """

    preserves_order: ClassVar[bool] = False
    """Whether ``a <= b`` implies ``t(a) <= t(b)`` (NULL aside): ranges project as ranges."""

    joint: ClassVar[tuple[Lexicographic, int] | None] = None
    """``(family, rank)`` if the transform's values order its source jointly with others."""

    @property
    @abc.abstractmethod
    def expression(self) -> str:
        """The DataFusion SQL expression over ``col``, as Appendix D writes it."""

    @abc.abstractmethod
    def result_type(self, source: pa.DataType) -> pa.DataType:
        """The type of the partition value for a source column of type ``source``."""

    @abc.abstractmethod
    def can_apply(self, source: pa.DataType) -> bool:
        """Whether the transform accepts a source column of type ``source``."""

    @abc.abstractmethod
    def _apply(self, values: pa.Array) -> pa.Array:
        """The fast path on an array whose type passed :meth:`can_apply` (any result type)."""

    def _parameters(self) -> tuple[Any, ...]:
        return ()

    def apply(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Compute the partition value of every row (vectorised), NULL for NULL.

        Raises
        ------
        TransformError
            If the transform cannot apply to the column's type, or a value cannot be
            represented in :meth:`result_type`.

        Examples
        --------
        >>> import pyarrow as pa
        >>> Truncate(10).apply(pa.chunked_array([[15, None], [-15]])).to_pylist()
        [10, None, -10]
        """
        self._check(values.type)
        column = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
        return cast_result(self._apply(column), self.result_type(column.type), self.expression)

    def apply_reference(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Compute the partition values with DataFusion (the reference for :meth:`apply`).

        Raises
        ------
        TransformError
            As :meth:`apply`, or if DataFusion fails on the expression.

        Examples
        --------
        >>> import pyarrow as pa
        >>> Truncate(10).apply_reference(pa.array([15, None, -15])).to_pylist()
        [10, None, -10]
        """
        self._check(values.type)
        return evaluate(self.expression, values, self.result_type(values.type))

    def _check(self, source: pa.DataType) -> None:
        if not self.can_apply(source):
            raise TransformError(
                f"partition expression {self.expression!r} ({self!r}) cannot apply to a "
                f"column of type {source}"
            )

    # ------------------------------------------------------------------ pruning

    def projects_on(self, source: pa.DataType) -> bool:
        """Whether predicates on a source of this type project through the transform.

        >>> import pyarrow as pa
        >>> Year().projects_on(pa.date32()), Year().projects_on(pa.utf8())
        (True, False)
        """
        try:
            return self.can_apply(source)
        except Exception:  # a transform that cannot even say: prune nothing with it
            return False

    def apply_literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        """The partition value of one bound literal (None for NULL), or ``FAILED``.

        Results are cached: residuals ask for the same literals once per partition.

        >>> import pyarrow as pa
        >>> Bucket(16).apply_literal(1, pa.int64(), pa.int64())
        11
        >>> Truncate(10).apply_literal(-13, pa.int64(), pa.int64())
        -10
        """
        try:
            return _cached_literal(self, type(value).__qualname__, value, source, result)
        except TypeError:  # an unhashable literal
            return self._safe_literal(value, source, result)

    def _safe_literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        try:
            return self._literal(value, source, result)
        except (LancePartitionedError, pa.ArrowException, TypeError, ValueError, OverflowError):
            return FAILED

    def _literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        """The image of one literal; by default the fast path on a one-value column."""
        column = self.apply(pa.array([value], source))
        return cast_result(column, result, self.expression)[0].as_py()

    def images(
        self, values: tuple[Any, ...], source: pa.DataType, result: pa.DataType
    ) -> list[Any] | None:
        """The distinct images of ``values`` in order, None if the transform fails on one."""
        images = [self.apply_literal(v, source, result) for v in values]
        return None if any(i is FAILED for i in images) else list(dict.fromkeys(images))

    def project(
        self, name: str, leaf: Predicate, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        """The inclusive projection of one bound leaf onto the partition column ``name``.

        Every row that satisfies ``leaf`` has a partition value that satisfies the result.
        Ranges are projected jointly per conjunction by :meth:`project_range`; here a range
        leaf only says that the value is not NULL.

        >>> import pyarrow as pa
        >>> from lance_partitioned.expressions.tree import EqualTo, In, IsNull
        >>> Bucket(16).project("b", EqualTo("x", 1), pa.int64(), pa.int64())
        In(term='b', values=(11,))
        >>> Year().project("y", IsNull("x"), pa.date32(), pa.int32())
        IsNull(term='y')
        """
        if isinstance(leaf, IsNull):
            return IsNull(name)  # every transform maps NULL to NULL
        projected = self._project_leaf(name, leaf, source, result)
        return NotNull(name) if projected is None else projected

    def _project_leaf(
        self, name: str, leaf: Predicate, source: pa.DataType, result: pa.DataType
    ) -> Predicate | None:
        """``=`` and IN through the image of each literal (None: only IS NOT NULL)."""
        return self._by_value(name, leaf, source, result, equal=True)

    def _by_value(
        self, name: str, leaf: Predicate, source: pa.DataType, result: pa.DataType, equal: bool
    ) -> Predicate | None:
        values: tuple[Any, ...]
        if equal and isinstance(leaf, EqualTo):
            values = (leaf.value,)
        elif isinstance(leaf, In):
            values = leaf.values
        else:
            return None
        images = self.images(values, source, result)
        return None if images is None else In(name, tuple(images))

    def project_range(
        self, name: str, interval: Interval, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        """The inclusive projection of ``source`` values in a (closed) ``interval``.

        By default the images of the bounds when the transform :attr:`preserves_order`,
        else nothing (AlwaysTrue).

        >>> import datetime, pyarrow as pa
        >>> june = Interval(datetime.date(2025, 6, 1), True, datetime.date(2026, 6, 30), True)
        >>> print(Year().project_range("y", june, pa.date32(), pa.int32()))
        And(left=GreaterThanOrEqual(term='y', value=2025), right=LessThanOrEqual(term='y', ...))
        """
        if not self.preserves_order:
            return AlwaysTrue()
        low = None if interval.low is None else self.apply_literal(interval.low, source, result)
        if interval.low is not None and interval.low == interval.high:
            return AlwaysTrue() if low is FAILED else EqualTo(name, low)
        high = None if interval.high is None else self.apply_literal(interval.high, source, result)
        if low is FAILED or high is FAILED:
            return AlwaysTrue()
        parts: list[Predicate] = []
        if low is not None:
            parts.append(GreaterThanOrEqual(name, low))
        if high is not None:
            parts.append(LessThanOrEqual(name, high))
        return and_(*parts)

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        """What the partition value ``value`` (None for NULL) proves about the source values.

        By default: nothing from NULL; from any other value, that the source is not NULL
        (NULL maps to NULL) and that literals mapping elsewhere match no row.

        >>> import pyarrow as pa
        >>> Truncate(10).preimage(20, pa.int64(), pa.int64()).interval
        Interval(low=20, low_inclusive=True, high=29, high_inclusive=True)
        >>> Bucket(4).preimage(None, pa.int64(), pa.int64()).null
        True
        """
        if value is None:
            return Preimage()
        return Preimage(null=False, image=True)

    # ------------------------------------------------------------------ identity

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Transform) or type(other) is not type(self):
            return NotImplemented
        return self._parameters() == other._parameters()

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._parameters()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(p) for p in self._parameters())})"


@functools.lru_cache(maxsize=4096)
def _cached_literal(
    transform: Transform, kind: str, value: Any, source: pa.DataType, result: pa.DataType
) -> Any:
    # ``kind`` keeps 1, 1.0 and True apart (they hash alike)
    return transform._safe_literal(value, source, result)


class Identity(Transform):
    """``col``: the source value itself.

    >>> import pyarrow as pa
    >>> Identity().apply(pa.array(["a", None])).to_pylist()
    ['a', None]
    >>> Identity().result_type(pa.date32())
    DataType(date32[day])
    """

    preserves_order = True

    @property
    def expression(self) -> str:
        return "col"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return source

    def can_apply(self, source: pa.DataType) -> bool:
        return True

    def _apply(self, values: pa.Array) -> pa.Array:
        return values

    def apply_literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        return value

    def _project_leaf(
        self, name: str, leaf: Predicate, source: pa.DataType, result: pa.DataType
    ) -> Predicate | None:
        """The same test on the partition column."""
        if isinstance(leaf, NotNull):
            return NotNull(name)
        if isinstance(leaf, Comparison):
            return type(leaf)(name, leaf.value)
        if isinstance(leaf, (In, NotIn)):
            return type(leaf)(name, leaf.values)
        if isinstance(leaf, (StartsWith, NotStartsWith)):
            return type(leaf)(name, leaf.prefix)
        return None

    def project_range(
        self, name: str, interval: Interval, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        return AlwaysTrue()  # each comparison already projects exactly

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        return Preimage(null=True) if value is None else Preimage(null=False, exact=value)


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
        if pa.types.is_timestamp(source) and source.tz is not None:
            # the wall clocks of the range's instants, projected as a naive column's range
            interval = wall_clock_bounds(interval, source)
            source = pa.timestamp(source.unit)
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


class Bucket(Transform):
    """``abs(hash(col)) % N``: the bucket in ``[0, N)`` of the value's ``hash()``, as int64.

    See :mod:`lance_partitioned.spec.hashing` for the bytes hashed per type.

    Parameters
    ----------
    num_buckets : int
        ``N``, at least 1.

    Raises
    ------
    PartitionSpecError
        If ``num_buckets`` is not an int in ``[1, 2^63 - 1]``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> Bucket(16).apply(pa.array([1, 1, None], pa.int32())).to_pylist()
    [11, 11, None]
    >>> Bucket(0)
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.PartitionSpecError: bucket: number of buckets must be ...
    """

    def __init__(self, num_buckets: int) -> None:
        self.num_buckets = _positive("bucket", "number of buckets", num_buckets)

    @property
    def expression(self) -> str:
        return f"abs(hash(col)) % {self.num_buckets}"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return pa.int64()

    def can_apply(self, source: pa.DataType) -> bool:
        return can_hash(source)

    def _apply(self, values: pa.Array) -> pa.Array:
        return bucket_array(values, self.num_buckets)

    def _parameters(self) -> tuple[Any, ...]:
        return (self.num_buckets,)

    def _literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        return bucket_scalar(value, source, self.num_buckets)

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        if value is None:
            return Preimage(null=True)  # only NULL hashes to NULL
        return Preimage(null=False, image=True)


class Truncate(Transform):
    """``col - (col % W)`` for numbers, ``left(col, W)`` for strings.

    Numbers keep their type and truncate toward zero, as SQL's truncated ``%`` does
    (``-3 - (-3 % 10) = 0``; ``-13`` gives ``-10``). Strings keep their first ``W`` characters
    and the result is utf8 whatever the string type of the source.

    Parameters
    ----------
    width : int
        ``W``, at least 1.
    string : bool
        True for the string form ``left(col, W)``.

    Raises
    ------
    PartitionSpecError
        If ``width`` is not an int in ``[1, 2^63 - 1]``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> Truncate(10).apply(pa.array([-13, -3, 3, 27, None])).to_pylist()
    [-10, 0, 0, 20, None]
    >>> Truncate(2, string=True).apply(pa.array(["héllo", "a", None])).to_pylist()
    ['hé', 'a', None]
    """

    preserves_order = True

    def __init__(self, width: int, *, string: bool = False) -> None:
        self.width = _positive("truncate", "width", width)
        self.string = bool(string)

    @classmethod
    def for_type(cls, width: int, source_type: pa.DataType) -> Truncate:
        """The truncation of ``width`` that fits a column of ``source_type``.

        >>> Truncate.for_type(4, pa.utf8()), Truncate.for_type(4, pa.int64())
        (Truncate(4, string=True), Truncate(4))
        """
        return cls(width, string=is_string(source_type))

    @property
    def expression(self) -> str:
        if self.string:
            return f"left(col, {self.width})"
        return f"col - (col % {self.width})"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return pa.utf8() if self.string else source

    def can_apply(self, source: pa.DataType) -> bool:
        if self.string:
            return is_string(source)
        t = pa.types
        return bool(t.is_integer(source) or t.is_decimal128(source) or t.is_decimal256(source))

    def _apply(self, values: pa.Array) -> pa.Array:
        if not self.string:
            return truncate_number(values, self.width)
        if pa.types.is_string_view(values.type):
            values = values.cast(pa.utf8())
        if _is_ascii(values):  # characters are bytes: a byte slice is several times faster
            binary = pa.large_binary() if pa.types.is_large_string(values.type) else pa.binary()
            return pc.binary_slice(values.view(binary), 0, self.width).view(values.type)
        return pc.utf8_slice_codeunits(values, 0, self.width)

    def _parameters(self) -> tuple[Any, ...]:
        return (self.width, self.string)

    def __repr__(self) -> str:
        return f"Truncate({self.width}, string=True)" if self.string else f"Truncate({self.width})"

    def _literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        width = self.width
        if isinstance(value, str):
            return value[:width]
        if isinstance(value, decimal.Decimal):
            with decimal.localcontext() as ctx:
                ctx.prec = 200
                return (value - value % width).quantize(value)  # % keeps the dividend's sign
        magnitude = abs(value) // width * width
        return magnitude if value >= 0 else -magnitude

    def _project_leaf(
        self, name: str, leaf: Predicate, source: pa.DataType, result: pa.DataType
    ) -> Predicate | None:
        if not self.string:
            return self._by_value(name, leaf, source, result, equal=False)  # ``=`` is a range
        width = self.width
        if isinstance(leaf, StartsWith):
            if len(leaf.prefix) >= width:
                return EqualTo(name, leaf.prefix[:width])
            return StartsWith(name, leaf.prefix)
        if isinstance(leaf, NotStartsWith) and len(leaf.prefix) <= width:
            return NotStartsWith(name, leaf.prefix)  # left(x, W) starts with p iff x does
        # A partition value shorter than W is the whole source value.
        if isinstance(leaf, NotEqualTo) and len(leaf.value) < width:
            return NotEqualTo(name, leaf.value)
        if isinstance(leaf, NotIn):
            short = tuple(v for v in leaf.values if len(v) < width)
            return NotIn(name, short) if short else None
        return self._by_value(name, leaf, source, result, equal=False)

    def project_range(
        self, name: str, interval: Interval, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        if not self.string:
            return super().project_range(name, interval, source, result)
        # ``left(x, W)`` is monotonic; a strict bound shorter than W stays strict.
        width = self.width
        low, high = interval.low, interval.high
        if low is not None and low == high and interval.low_inclusive and interval.high_inclusive:
            return EqualTo(name, low[:width])
        parts: list[Predicate] = []
        if low is not None:
            strict = not interval.low_inclusive and len(low) < width
            parts.append(
                GreaterThan(name, low) if strict else GreaterThanOrEqual(name, low[:width])
            )
        if high is not None:
            strict = not interval.high_inclusive and len(high) <= width
            parts.append(LessThan(name, high) if strict else LessThanOrEqual(name, high[:width]))
        return and_(*parts)

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        if value is None:
            return Preimage(null=True)
        if not self.string:
            return Preimage(null=False, interval=truncate_range(value, self.width, source))
        if len(value) < self.width:
            return Preimage(null=False, exact=value)  # a short value is the whole source value
        return Preimage(null=False, prefix=value)


def _positive(transform: str, what: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PartitionSpecError(f"{transform}: {what} must be an int, got {value!r}")
    if not 1 <= value <= _MAX_PARAMETER:
        raise PartitionSpecError(f"{transform}: {what} must be in [1, 2^63 - 1], got {value}")
    return value


class Opaque(Transform):
    """Any other DataFusion expression over ``col``, evaluated by DataFusion only.

    It projects ``=`` and IN only, evaluating itself on the literals, and may map a value to
    NULL: a NULL partition value proves nothing, nor does a non-NULL one about NULLs.

    Parameters
    ----------
    expression : str
        The expression, kept as written.
    result_type : pyarrow.DataType, optional
        The declared result type. Without it, the type DataFusion infers for the source type
        (evaluating the expression on an empty column).

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = Opaque("upper(col)")
    >>> t.apply(pa.array(["us", None])).to_pylist()
    ['US', None]
    >>> t.result_type(pa.utf8()), t.can_apply(pa.int64())
    (DataType(string), False)
    """

    def __init__(self, expression: str, result_type: pa.DataType | None = None) -> None:
        self._expression = expression
        self.declared_type = result_type
        self._inferred: dict[pa.DataType, pa.DataType | None] = {}

    @property
    def expression(self) -> str:
        return self._expression

    def _infer(self, source: pa.DataType) -> pa.DataType | None:
        if source not in self._inferred:
            try:
                empty = evaluate(self._expression, pa.array([], source), self.declared_type)
            except TransformError:
                self._inferred[source] = None
            else:
                self._inferred[source] = empty.type
        return self._inferred[source]

    def result_type(self, source: pa.DataType) -> pa.DataType:
        inferred = self._infer(source)
        if inferred is None:
            self._check(source)  # raises, naming the expression and the type
        return cast(pa.DataType, inferred)

    def can_apply(self, source: pa.DataType) -> bool:
        return self._infer(source) is not None

    def _apply(self, values: pa.Array) -> pa.Array:
        return evaluate(self._expression, values, self.result_type(values.type))

    def _parameters(self) -> tuple[Any, ...]:
        return (self._expression, self.declared_type)

    def __repr__(self) -> str:
        if self.declared_type is None:
            return f"Opaque({self._expression!r})"
        return f"Opaque({self._expression!r}, {self.declared_type})"

    def projects_on(self, source: pa.DataType) -> bool:
        return True  # evaluated on demand; a failure projects to AlwaysTrue

    def _literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        return evaluate(self._expression, pa.array([value], source), result)[0].as_py()

    def project(
        self, name: str, leaf: Predicate, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        if isinstance(leaf, IsNull):
            return IsNull(name)
        if isinstance(leaf, EqualTo):
            values: tuple[Any, ...] = (leaf.value,)
        elif isinstance(leaf, In):
            values = leaf.values
        else:
            return AlwaysTrue()
        images = self.images(values, source, result)
        if images is None:
            return AlwaysTrue()
        kept = tuple(i for i in images if i is not None)
        return or_(In(name, kept), IsNull(name) if None in images else AlwaysFalse())

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        return Preimage() if value is None else Preimage(image=True)


# ---------------------------------------------------------------------------------- parsing

Builder = Callable[[re.Match[str]], Transform]
"""Builds a transform from the match of its form (see :func:`register_transform`)."""

_PARTS: dict[str, type[_DatePart]] = {"year": Year, "month": Month, "day": Day, "hour": Hour}
# Each form without whitespace, in lower case, and how to build its transform.
_BUILT_IN: tuple[tuple[str, Builder], ...] = (
    (r"col", lambda _: Identity()),
    (r"date_part\('(year|month|day|hour)',col\)", lambda m: _PARTS[m.group(1)]()),
    (r"abs\(hash\(col\)\)%([0-9]+)", lambda m: Bucket(int(m.group(1)))),
    (r"left\(col,([0-9]+)\)", lambda m: Truncate(int(m.group(1)), string=True)),
    (r"col-\(col%([0-9]+)\)", lambda m: Truncate(int(m.group(1)))),
)
_FORMS: dict[str, tuple[re.Pattern[str], Builder]] = {
    pattern: (re.compile(pattern), build) for pattern, build in _BUILT_IN
}


def register_transform(pattern: str, build: Builder) -> None:
    """Make :func:`parse_transform` recognise a form as a transform class of your own.

    Parameters
    ----------
    pattern : str
        A regular expression that the *whole* expression must match once whitespace is
        removed and letters are lower-cased (``date_trunc\\('week',col\\)``). Forms are tried
        in registration order, the built-in ones first; registering a pattern again replaces
        its builder.
    build : callable
        Called with the ``re.Match``; returns the :class:`Transform`.

    Raises
    ------
    PartitionSpecError
        If ``pattern`` is not a valid regular expression or one of the built-in forms.

    Examples
    --------
    >>> class Sign(Identity):  # a toy: a transform is one class
    ...     @property
    ...     def expression(self) -> str:
    ...         return "signum(col)"
    >>> register_transform(r"signum\\(col\\)", lambda m: Sign())
    >>> parse_transform("SIGNUM( col )")
    Sign()
    >>> unregister_transform(r"signum\\(col\\)")
    >>> parse_transform("signum(col)")
    Opaque('signum(col)')
    """
    if pattern in dict(_BUILT_IN):
        raise PartitionSpecError(f"{pattern!r} is a built-in partition expression form")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise PartitionSpecError(f"not a regular expression: {pattern!r}: {exc}") from exc
    _FORMS[pattern] = (compiled, build)


def unregister_transform(pattern: str) -> None:
    """Forget a form registered with :func:`register_transform` (nothing if unknown).

    Raises
    ------
    PartitionSpecError
        If ``pattern`` is one of the built-in forms.
    """
    if pattern in dict(_BUILT_IN):
        raise PartitionSpecError(f"{pattern!r} is a built-in partition expression form")
    _FORMS.pop(pattern, None)


def parse_transform(expression: str, result_type: pa.DataType | None = None) -> Transform:
    """The transform of a partition expression: a known form, or :class:`Opaque`.

    Forms (Appendix D's, then registered ones) are recognised ignoring whitespace and case.
    ``result_type`` is only used for :class:`Opaque`; for a recognised form the caller
    compares the declared type with :meth:`Transform.result_type`.

    Raises
    ------
    PartitionSpecError
        If a recognised form has a parameter out of range (``abs(hash(col)) % 0``).

    Examples
    --------
    >>> parse_transform("DATE_PART( 'Year' ,col )")
    Year()
    >>> parse_transform("abs(hash(col))%16"), parse_transform("left(col,3)")
    (Bucket(16), Truncate(3, string=True))
    >>> parse_transform("col - (col % 10)")
    Truncate(10)
    >>> parse_transform("date_trunc('day', col)")
    Opaque("date_trunc('day', col)")
    """
    text = re.sub(r"\s+", "", expression).lower()
    for pattern, build in list(_FORMS.values()):
        match = pattern.fullmatch(text)
        if match:
            return build(match)
    return Opaque(expression, result_type)
