"""Build predicates in Python: ``col("x") == 5``, ``col("s").startswith("ab")``.

>>> import datetime
>>> (col("country") == "US") & (col("d") >= datetime.date(2025, 1, 1))
And(left=EqualTo(term='country', value='US'),
    right=GreaterThanOrEqual(term='d', value=datetime.date(2025, 1, 1)))
>>> ~col("x").isin([1, 2]) | col("x").is_null()
Or(left=Not(child=In(term='x', values=(1, 2))), right=IsNull(term='x'))
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lance_partitioned.errors import InvalidInputError
from lance_partitioned.expressions import tree as t
from lance_partitioned.expressions.tree import Predicate

__all__ = ["Column", "col"]


class Column:
    """A column reference whose operators build predicate nodes.

    ``==`` and ``!=`` build predicates too, so a Column is not hashable. Comparing with
    None is refused: use :meth:`is_null`.

    Examples
    --------
    >>> col("x") < 5
    LessThan(term='x', value=5)
    >>> col("x") == None
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.InvalidInputError: column 'x': comparing with None is never true; ...
    """

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise InvalidInputError(f"a column name must be a non-empty string, got {name!r}")
        self.name = name

    def __repr__(self) -> str:
        return f"col({self.name!r})"

    def _value(self, value: Any) -> Any:
        if value is None:
            raise InvalidInputError(
                f"column {self.name!r}: comparing with None is never true; use is_null()"
            )
        if isinstance(value, Column):
            raise InvalidInputError(
                f"column {self.name!r}: comparing two columns is not supported in a predicate "
                "tree; write it in a SQL filter"
            )
        return value

    def __eq__(self, value: Any) -> Predicate:  # type: ignore[override]
        return t.EqualTo(self.name, self._value(value))

    def __ne__(self, value: Any) -> Predicate:  # type: ignore[override]
        return t.NotEqualTo(self.name, self._value(value))

    def __lt__(self, value: Any) -> Predicate:
        return t.LessThan(self.name, self._value(value))

    def __le__(self, value: Any) -> Predicate:
        return t.LessThanOrEqual(self.name, self._value(value))

    def __gt__(self, value: Any) -> Predicate:
        return t.GreaterThan(self.name, self._value(value))

    def __ge__(self, value: Any) -> Predicate:
        return t.GreaterThanOrEqual(self.name, self._value(value))

    def isin(self, values: Iterable[Any]) -> Predicate:
        """``x IN (values)``.

        >>> col("x").isin(range(3))
        In(term='x', values=(0, 1, 2))
        """
        return t.In(self.name, tuple(self._value(v) for v in values))

    def notin(self, values: Iterable[Any]) -> Predicate:
        """``x NOT IN (values)``.

        >>> col("x").notin([1])
        NotIn(term='x', values=(1,))
        """
        return t.NotIn(self.name, tuple(self._value(v) for v in values))

    def is_null(self) -> Predicate:
        """``x IS NULL``.

        >>> col("x").is_null()
        IsNull(term='x')
        """
        return t.IsNull(self.name)

    def is_not_null(self) -> Predicate:
        """``x IS NOT NULL``.

        >>> col("x").is_not_null()
        NotNull(term='x')
        """
        return t.NotNull(self.name)

    def startswith(self, prefix: str) -> Predicate:
        """``x LIKE 'prefix%'``.

        >>> col("s").startswith("ab")
        StartsWith(term='s', prefix='ab')
        """
        return t.StartsWith(self.name, self._value(prefix))

    def not_startswith(self, prefix: str) -> Predicate:
        """``x NOT LIKE 'prefix%'``.

        >>> col("s").not_startswith("ab")
        NotStartsWith(term='s', prefix='ab')
        """
        return t.NotStartsWith(self.name, self._value(prefix))


def col(name: str) -> Column:
    """A column of the predicate being built.

    >>> col("x") >= 1
    GreaterThanOrEqual(term='x', value=1)
    """
    return Column(name)
