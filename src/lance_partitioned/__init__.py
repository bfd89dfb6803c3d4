"""lance-partitioned: the Lance Partitioned Namespace format (spec 000).

A partitioned namespace is a directory namespace whose ``__manifest`` Lance table carries
partition specs and a shared schema; its leaf tables are plain Lance datasets that are
queried together as one dataset.

>>> import lance_partitioned as lp
>>> lp.PartitionedNamespace.__name__
'PartitionedNamespace'

Public names are loaded lazily, so ``import lance_partitioned.spec`` (the pure core) never
imports lance or pyspark.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import lance_namespace

from lance_partitioned import errors
from lance_partitioned.runtime import configure_lance

if TYPE_CHECKING:
    from lance_partitioned.adapter import PartitionedLanceNamespace
    from lance_partitioned.errors import PartitionCountWarning
    from lance_partitioned.ingest import WriteOptions, WriteProgress
    from lance_partitioned.namespace import PartitionedNamespace, WriteResult
    from lance_partitioned.restore import RestoreResult
    from lance_partitioned.sizes import UnreadableLeafWarning
    from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
    from lance_partitioned.spec.schema import NamespaceSchema
    from lance_partitioned.spec.shorthand import AmbiguousPartitionWarning
    from lance_partitioned.writing import write

__all__ = [
    "AmbiguousPartitionWarning",
    "NamespaceSchema",
    "PartitionCountWarning",
    "PartitionField",
    "PartitionSpec",
    "PartitionedLanceNamespace",
    "PartitionedNamespace",
    "RestoreResult",
    "UnreadableLeafWarning",
    "WriteOptions",
    "WriteProgress",
    "WriteResult",
    "__version__",
    "errors",
    "write",
]
__version__ = "0.1.0"

_LAZY = {
    "AmbiguousPartitionWarning": "lance_partitioned.spec.shorthand",
    "UnreadableLeafWarning": "lance_partitioned.sizes",
    "PartitionedNamespace": "lance_partitioned.namespace",
    "PartitionedLanceNamespace": "lance_partitioned.adapter",
    "WriteResult": "lance_partitioned.namespace",
    "WriteOptions": "lance_partitioned.ingest",
    "WriteProgress": "lance_partitioned.ingest",
    "PartitionField": "lance_partitioned.spec.partitioning",
    "PartitionSpec": "lance_partitioned.spec.partitioning",
    "NamespaceSchema": "lance_partitioned.spec.schema",
    "PartitionCountWarning": "lance_partitioned.errors",
    "RestoreResult": "lance_partitioned.restore",
    "write": "lance_partitioned.writing",
}

configure_lance()  # before any module of ours imports Lance

# lance_namespace.connect("partitioned", {"root": uri}) returns the LanceNamespace adapter.
lance_namespace.register_namespace_impl(
    "partitioned", "lance_partitioned.adapter.PartitionedLanceNamespace"
)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lance_partitioned' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
