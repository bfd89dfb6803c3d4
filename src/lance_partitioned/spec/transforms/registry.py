"""Choosing a transform class for an expression: the built-in forms and the registered ones."""

from __future__ import annotations

import re
from collections.abc import Callable

import pyarrow as pa

from lance_partitioned.errors import PartitionSpecError
from lance_partitioned.spec.transforms.base import (
    Transform,
)
from lance_partitioned.spec.transforms.periods import Hours, Months, Years
from lance_partitioned.spec.transforms.temporal import (
    Date,
    Day,
    Hour,
    Month,
    Year,
    _DatePart,
)
from lance_partitioned.spec.transforms.values import (
    Bucket,
    Identity,
    Opaque,
    Truncate,
)

Builder = Callable[[re.Match[str]], Transform]
"""Builds a transform from the match of its form (see :func:`register_transform`)."""

_PARTS: dict[str, type[_DatePart]] = {"year": Year, "month": Month, "day": Day, "hour": Hour}
# Each form without whitespace, in lower case, and how to build its transform.
_BUILT_IN: tuple[tuple[str, Builder], ...] = (
    (r"col", lambda _: Identity()),
    (r"date_part\('(year|month|day|hour)',col\)", lambda m: _PARTS[m.group(1)]()),
    (r"cast\(colasdate\)", lambda _: Date()),
    (r"date_part\('year',col\)-1970", lambda _: Years()),
    (r"\(date_part\('year',col\)-1970\)\*12\+date_part\('month',col\)-1", lambda _: Months()),
    (r"cast\(cast\(colasdate\)asbigint\)\*24\+date_part\('hour',col\)", lambda _: Hours()),
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
    >>> parse_transform("CAST(col AS DATE)")
    Date()
    >>> parse_transform("(date_part('year', col) - 1970) * 12 + date_part('month', col) - 1")
    Months()
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
