"""The :class:`Transform` base class: what every partition transform answers (see
:mod:`lance_partitioned.spec.transforms`)."""

from __future__ import annotations

import abc
import datetime
import functools
from typing import Any, ClassVar, Protocol

import pyarrow as pa

from lance_partitioned.errors import LancePartitionedError, TransformError
from lance_partitioned.expressions.ranges import (
    FAILED,
    Interval,
    Preimage,
)
from lance_partitioned.expressions.tree import (
    AlwaysTrue,
    EqualTo,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThanOrEqual,
    NotNull,
    Predicate,
    and_,
)
from lance_partitioned.expressions.visitor import PredicateVisitor, visit
from lance_partitioned.spec.evaluate import cast_result, evaluate

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
    >>> from lance_partitioned.spec.transforms import Bucket, Month
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

    def to_human_string(self, value: Any) -> str:
        """A partition value as people read it (PyIceberg's ``to_human_string``): NULL, dates
        and times in ISO 8601, bytes in hex, anything else as text. Transforms whose values are
        counts of periods show the period (``months``: ``2025-08``, not ``667``).

        >>> import datetime
        >>> from lance_partitioned.spec.transforms import Date, Identity
        >>> Identity().to_human_string("US"), Identity().to_human_string(None)
        ('US', 'NULL')
        >>> Date().to_human_string(datetime.date(2025, 8, 1))
        '2025-08-01'
        """
        if value is None:
            return "NULL"
        if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
            return value.isoformat()
        if isinstance(value, float):
            return repr(value)
        if isinstance(value, (bytes, bytearray)):
            return "0x" + bytes(value).hex()
        return str(value)

    def apply(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """Compute the partition value of every row (vectorised), NULL for NULL.

        Raises
        ------
        TransformError
            If the transform cannot apply to the column's type, or a value cannot be
            represented in :meth:`result_type`.

        Examples
        --------
        >>> from lance_partitioned.spec.transforms import Truncate
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
        >>> from lance_partitioned.spec.transforms import Truncate
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

        >>> from lance_partitioned.spec.transforms import Year

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

        >>> from lance_partitioned.spec.transforms import Bucket, Truncate

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

        >>> from lance_partitioned.spec.transforms import Bucket, Year

        >>> import pyarrow as pa
        >>> from lance_partitioned.expressions.tree import EqualTo, In, IsNull
        >>> Bucket(16).project("b", EqualTo("x", 1), pa.int64(), pa.int64())
        In(term='b', values=(11,))
        >>> Year().project("y", IsNull("x"), pa.date32(), pa.int32())
        IsNull(term='y')
        """
        if is_null_test(leaf):
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
        values = members(leaf, equal)
        if values is None:
            return None
        images = self.images(values, source, result)
        return None if images is None else In(name, tuple(images))

    def project_range(
        self, name: str, interval: Interval, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        """The inclusive projection of ``source`` values in a (closed) ``interval``.

        By default the images of the bounds when the transform :attr:`preserves_order`,
        else nothing (AlwaysTrue).

        >>> from lance_partitioned.spec.transforms import Year

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

        >>> from lance_partitioned.spec.transforms import Bucket, Truncate

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


class _IsNullTest(PredicateVisitor[bool]):
    def visit_leaf(self, p: Predicate) -> bool:
        return False

    def visit_is_null(self, p: IsNull) -> bool:
        return True


_IS_NULL = _IsNullTest()


def is_null_test(leaf: Predicate) -> bool:
    """Whether ``leaf`` is ``IS NULL`` (which every transform projects as itself)."""
    return visit(leaf, _IS_NULL)


class _Members(PredicateVisitor[tuple[Any, ...] | None]):
    def __init__(self, equal: bool) -> None:
        self.equal = equal

    def visit_leaf(self, p: Predicate) -> tuple[Any, ...] | None:
        return None

    def visit_equal_to(self, p: EqualTo) -> tuple[Any, ...] | None:
        return (p.value,) if self.equal else None

    def visit_in(self, p: In) -> tuple[Any, ...] | None:
        return p.values


def members(leaf: Predicate, equal: bool = True) -> tuple[Any, ...] | None:
    """The literals ``leaf`` requires the value to be one of: IN, and ``=`` when ``equal``
    (None for the other leaves).

    >>> from lance_partitioned.expressions.tree import EqualTo, In
    >>> members(EqualTo("x", 1)), members(EqualTo("x", 1), equal=False), members(In("x", (2,)))
    ((1,), None, (2,))
    """
    return visit(leaf, _Members(equal))
