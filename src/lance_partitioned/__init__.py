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

from lance_partitioned import errors
from lance_partitioned.registration import register
from lance_partitioned.runtime import configure_lance

if TYPE_CHECKING:
    from lance_partitioned.adapter import PartitionedLanceNamespace
    from lance_partitioned.dml import DeleteResult, MergeBuilder, MergeResult, UpdateResult
    from lance_partitioned.dml.results import WriteResult
    from lance_partitioned.entry import write
    from lance_partitioned.errors import PartitionCountWarning
    from lance_partitioned.history import Tags
    from lance_partitioned.history.restore import RestoreResult
    from lance_partitioned.ingest import WriteOptions, WriteProgress
    from lance_partitioned.interop import export, import_
    from lance_partitioned.maintenance.cleanup import CleanupProgress, CleanupResult
    from lance_partitioned.maintenance.optimize import OptimizeProgress, OptimizeResult
    from lance_partitioned.manifest.versions import Tag
    from lance_partitioned.namespace import PartitionedNamespace
    from lance_partitioned.scan import ScanTask
    from lance_partitioned.search import (
        IndexBuildProgress,
        IndexBuildResult,
        IndexStats,
        LeafIndexStats,
    )
    from lance_partitioned.sizes import UnreadableLeafWarning
    from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
    from lance_partitioned.spec.schema import NamespaceSchema
    from lance_partitioned.spec.shorthand import AmbiguousPartitionWarning

__all__ = [
    "AmbiguousPartitionWarning",
    "CleanupProgress",
    "CleanupResult",
    "DeleteResult",
    "IndexBuildProgress",
    "IndexBuildResult",
    "IndexStats",
    "LeafIndexStats",
    "MergeBuilder",
    "MergeResult",
    "NamespaceSchema",
    "OptimizeProgress",
    "OptimizeResult",
    "PartitionCountWarning",
    "PartitionField",
    "PartitionSpec",
    "PartitionedLanceNamespace",
    "PartitionedNamespace",
    "RestoreResult",
    "ScanTask",
    "Tag",
    "Tags",
    "UnreadableLeafWarning",
    "UpdateResult",
    "WriteOptions",
    "WriteProgress",
    "WriteResult",
    "__version__",
    "errors",
    "export",
    "import_",
    "write",
]
__version__ = "0.1.0"

_LAZY = {
    "AmbiguousPartitionWarning": "lance_partitioned.spec.shorthand",
    "UnreadableLeafWarning": "lance_partitioned.sizes",
    "PartitionedNamespace": "lance_partitioned.namespace",
    "PartitionedLanceNamespace": "lance_partitioned.adapter",
    "WriteResult": "lance_partitioned.dml.results",
    "WriteOptions": "lance_partitioned.ingest",
    "WriteProgress": "lance_partitioned.ingest",
    "PartitionField": "lance_partitioned.spec.partitioning",
    "PartitionSpec": "lance_partitioned.spec.partitioning",
    "NamespaceSchema": "lance_partitioned.spec.schema",
    # what the methods of PartitionedNamespace return
    "DeleteResult": "lance_partitioned.dml",
    "UpdateResult": "lance_partitioned.dml",
    "MergeBuilder": "lance_partitioned.dml",
    "MergeResult": "lance_partitioned.dml",
    "OptimizeResult": "lance_partitioned.maintenance.optimize",
    "OptimizeProgress": "lance_partitioned.maintenance.optimize",
    "CleanupResult": "lance_partitioned.maintenance.cleanup",
    "CleanupProgress": "lance_partitioned.maintenance.cleanup",
    "ScanTask": "lance_partitioned.scan",
    "Tags": "lance_partitioned.history",
    "Tag": "lance_partitioned.manifest.versions",
    "PartitionCountWarning": "lance_partitioned.errors",
    "RestoreResult": "lance_partitioned.history.restore",
    "write": "lance_partitioned.entry",
    "import_": "lance_partitioned.interop",
    "export": "lance_partitioned.interop",
    # search and indexes
    "IndexBuildResult": "lance_partitioned.search",
    "IndexBuildProgress": "lance_partitioned.search",
    "IndexStats": "lance_partitioned.search",
    "LeafIndexStats": "lance_partitioned.search",
}

configure_lance()  # before any module of ours imports Lance

# lance_namespace.connect("partitioned", {"root": uri}) returns the LanceNamespace adapter:
# registered now if lance_namespace is imported, else when it is (it is slow to import).
register()


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lance_partitioned' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
