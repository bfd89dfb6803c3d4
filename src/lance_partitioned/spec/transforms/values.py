"""The value transforms of Appendix D (identity, bucket, truncate) and the opaque transform
for any other expression."""

from __future__ import annotations

import decimal
from typing import Any, cast

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned.errors import PartitionSpecError, TransformError
from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.ranges import (
    Interval,
    Preimage,
    truncate_range,
)
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.expressions.visitor import PredicateVisitor, visit
from lance_partitioned.spec.evaluate import evaluate
from lance_partitioned.spec.fastpath import (
    is_ascii as _is_ascii,
)
from lance_partitioned.spec.fastpath import (
    is_string,
    truncate_number,
)
from lance_partitioned.spec.hashing import bucket_array, bucket_scalar, can_hash
from lance_partitioned.spec.transforms.base import (
    _MAX_PARAMETER,
    Transform,
    is_null_test,
    members,
)


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
        return visit(leaf, _Renamed(name))

    def project_range(
        self, name: str, interval: Interval, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        return t.AlwaysTrue()  # each comparison already projects exactly

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        return Preimage(null=True) if value is None else Preimage(null=False, exact=value)


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
        types = pa.types
        return bool(
            types.is_integer(source) or types.is_decimal128(source) or types.is_decimal256(source)
        )

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
        return visit(leaf, _LeftOf(self, name, source, result))

    def project_range(
        self, name: str, interval: Interval, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        if not self.string:
            return super().project_range(name, interval, source, result)
        # ``left(x, W)`` is monotonic; a strict bound shorter than W stays strict.
        width = self.width
        low, high = interval.low, interval.high
        if low is not None and low == high and interval.low_inclusive and interval.high_inclusive:
            return t.EqualTo(name, low[:width])
        parts: list[Predicate] = []
        if low is not None:
            strict = not interval.low_inclusive and len(low) < width
            parts.append(
                t.GreaterThan(name, low) if strict else t.GreaterThanOrEqual(name, low[:width])
            )
        if high is not None:
            strict = not interval.high_inclusive and len(high) <= width
            parts.append(
                t.LessThan(name, high) if strict else t.LessThanOrEqual(name, high[:width])
            )
        return t.and_(*parts)

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
        if is_null_test(leaf):
            return t.IsNull(name)
        values = members(leaf)
        if values is None:
            return t.AlwaysTrue()
        images = self.images(values, source, result)
        if images is None:
            return t.AlwaysTrue()
        kept = tuple(i for i in images if i is not None)
        return t.or_(t.In(name, kept), t.IsNull(name) if None in images else t.AlwaysFalse())

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        return Preimage() if value is None else Preimage(image=True)


class _Renamed(PredicateVisitor[Predicate | None]):
    """The same test on column ``name`` (None for a leaf that is not a value test)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def visit_leaf(self, p: Predicate) -> Predicate | None:
        return None

    def visit_not_null(self, p: t.NotNull) -> Predicate | None:
        return t.NotNull(self.name)

    def visit_comparison(self, p: t.Comparison) -> Predicate | None:
        return type(p)(self.name, p.value)

    def visit_set(self, p: t.SetPredicate) -> Predicate | None:
        return type(p)(self.name, p.values)

    def visit_prefix(self, p: t.StartsWith | t.NotStartsWith) -> Predicate | None:
        return type(p)(self.name, p.prefix)


class _LeftOf(PredicateVisitor[Predicate | None]):
    """A string leaf projected on ``left(x, width)`` (None: only IS NOT NULL); IN through
    the images of its literals."""

    def __init__(
        self, truncate: Truncate, name: str, source: pa.DataType, result: pa.DataType
    ) -> None:
        self.truncate = truncate
        self.width = truncate.width
        self.name = name
        self.source = source
        self.result = result

    def visit_leaf(self, p: Predicate) -> Predicate | None:
        return self.truncate._by_value(self.name, p, self.source, self.result, equal=False)

    def visit_starts_with(self, p: t.StartsWith) -> Predicate | None:
        if len(p.prefix) >= self.width:
            return t.EqualTo(self.name, p.prefix[: self.width])
        return t.StartsWith(self.name, p.prefix)

    def visit_not_starts_with(self, p: t.NotStartsWith) -> Predicate | None:
        if len(p.prefix) <= self.width:  # left(x, W) starts with p iff x does
            return t.NotStartsWith(self.name, p.prefix)
        return None

    # A partition value shorter than W is the whole source value.
    def visit_not_equal_to(self, p: t.NotEqualTo) -> Predicate | None:
        return t.NotEqualTo(self.name, p.value) if len(p.value) < self.width else None

    def visit_not_in(self, p: t.NotIn) -> Predicate | None:
        short = tuple(v for v in p.values if len(v) < self.width)
        return t.NotIn(self.name, short) if short else None


# ---------------------------------------------------------------------------------- parsing
