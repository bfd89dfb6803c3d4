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
:mod:`lance_partitioned.pruning` walks predicates and asks the transform; it never asks
which transform it has.

============================  ============================  ============  ====================
class                         expression                    result type   sources
============================  ============================  ============  ====================
``Identity()``                ``col``                       the source's  any
``Year()``                    ``date_part('year', col)``    int32         date32/64, timestamp
``Month()``                   ``date_part('month', col)``   int32 (1-12)  date32/64, timestamp
``Day()``                     ``date_part('day', col)``     int32 (1-31)  date32/64, timestamp
``Hour()``                    ``date_part('hour', col)``    int32 (0-23)  timestamp
``Date()``                    ``CAST(col AS DATE)``         date32        date32/64, timestamp
``Years()``                   ``date_part('year', col)``    int32         date32/64, timestamp
                              ``- 1970``
``Months()``                  ``(date_part('year', col)``   int32         date32/64, timestamp
                              ``- 1970) * 12 +``
                              ``date_part('month', col)``
                              ``- 1``
``Hours()``                   ``CAST(CAST(col AS DATE)``    int32         timestamp
                              ``AS BIGINT) * 24 +``
                              ``date_part('hour', col)``
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
year, date      ``=``, IN, ranges (``ts < X`` → ``year <= year(X - 1 unit)``)
years, months,  the same: periods since 1970 (Iceberg's ``years``, ``months``, ``hours``) grow
hours           with time
month/day/hour  ``=``, IN; a bounded range → the set of values it covers when smaller than the
                domain; with year (and month, day) of the same source: ranges jointly, as
                an interval of (year, month, day, hour) in lexicographic order
bucket          ``=`` and IN, by hashing the literals
truncate        strings: ``=``, IN, ranges, ``LIKE 'p%'`` (``len(p) >= W``: ``= p[:W]``,
                shorter: ``LIKE 'p%'`` on the partition); numbers: ``=``, IN, ranges
opaque          ``=`` and IN, evaluating the expression on the literal with DataFusion
==============  ==============================================================================

``month`` is the month of the year and ``day`` the day of the month, as Appendix D defines
them: ``day`` alone puts the 10th of every month in one partition. For daily partitions use
``Date()`` (the calendar day), or ``year``, ``month`` and ``day`` together; for monthly or
hourly ones ``Months()`` or ``Hours()`` (one field, numbered from 1970-01-01T00:00).

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

from lance_partitioned.spec.transforms.base import Lexicographic, Transform
from lance_partitioned.spec.transforms.periods import Hours, Months, Years
from lance_partitioned.spec.transforms.registry import (
    parse_transform,
    register_transform,
    unregister_transform,
)
from lance_partitioned.spec.transforms.temporal import Date, Day, Hour, Month, Year
from lance_partitioned.spec.transforms.values import Bucket, Identity, Opaque, Truncate

__all__ = [
    "Bucket",
    "Date",
    "Day",
    "Hour",
    "Hours",
    "Identity",
    "Lexicographic",
    "Month",
    "Months",
    "Opaque",
    "Transform",
    "Truncate",
    "Year",
    "Years",
    "parse_transform",
    "register_transform",
    "unregister_transform",
]
