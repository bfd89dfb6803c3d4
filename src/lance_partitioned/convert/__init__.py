"""Converting a namespace between the two dialects of its partition specs (issue 28).

:meth:`PartitionedNamespace.convert <lance_partitioned.PartitionedNamespace.convert>` runs
:func:`~lance_partitioned.convert.conversion.convert`. The package holds the three parts of a
conversion:

- :mod:`~lance_partitioned.convert.conversion`: :func:`convert` and :class:`ConvertResult`,
  the commits of a conversion, step by step;
- :mod:`~lance_partitioned.convert.marker`: the marker of a conversion under way in the
  ``__manifest`` table metadata, and how every writer honours it (the commit protocol of
  :mod:`lance_partitioned.transaction` imports it, so it imports no more than the spec);
- :mod:`~lance_partitioned.convert.rebucket`: the plan of the commit that re-buckets the
  leaves of a ``bucket`` field (xxhash64 in spec 000, murmur3 in the published dialect).

``convert`` and ``ConvertResult`` are loaded lazily: importing the package (which the commit
protocol does, for the marker) imports none of its modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lance_partitioned.convert.conversion import ConvertResult, convert

__all__ = ["ConvertResult", "convert"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'lance_partitioned.convert' has no attribute {name!r}")
    return getattr(importlib.import_module("lance_partitioned.convert.conversion"), name)
