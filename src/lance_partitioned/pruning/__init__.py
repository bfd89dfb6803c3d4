"""Pruning: what the partition values of a leaf say about a filter (PyIceberg's
``inclusive_projection`` and residual evaluator).

This layer sits above :mod:`lance_partitioned.spec` (it asks the partition transforms) and
:mod:`lance_partitioned.expressions` (the predicate tree, which imports neither):

- :mod:`~lance_partitioned.pruning.projection`: :func:`project`, a bound predicate on
  source columns → a predicate on the ``__manifest`` partition columns of one spec version;
- :mod:`~lance_partitioned.pruning.residuals`: :func:`residual`, what is still to filter
  inside one partition given its values;
- :mod:`~lance_partitioned.pruning.joint`: ranges projected through the fields that order a
  source together (year, month, day, hour);
- :mod:`~lance_partitioned.pruning.fieldnames`: filters that name a partition field
  (spec 000, Appendix C).
"""

from __future__ import annotations

from lance_partitioned.pruning.projection import project
from lance_partitioned.pruning.residuals import residual

__all__ = ["project", "residual"]
