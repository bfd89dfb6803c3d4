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
import os
from typing import TYPE_CHECKING, Any

import lance_namespace

from lance_partitioned import errors

if TYPE_CHECKING:
    from lance_partitioned.namespace import PartitionedNamespace, WriteResult
    from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
    from lance_partitioned.spec.schema import NamespaceSchema
    from lance_partitioned.write import WriteOptions, WriteProgress

__all__ = [
    "NamespaceSchema",
    "PartitionField",
    "PartitionSpec",
    "PartitionedNamespace",
    "WriteOptions",
    "WriteProgress",
    "WriteResult",
    "__version__",
    "errors",
]
__version__ = "0.1.0"

_LAZY = {
    "PartitionedNamespace": "lance_partitioned.namespace",
    "WriteResult": "lance_partitioned.namespace",
    "WriteOptions": "lance_partitioned.write",
    "WriteProgress": "lance_partitioned.write",
    "PartitionField": "lance_partitioned.spec.partitioning",
    "PartitionSpec": "lance_partitioned.spec.partitioning",
    "NamespaceSchema": "lance_partitioned.spec.schema",
}

# Staging a new partition's first fragments makes Lance log "No existing dataset ... it will be
# created" once per leaf (hundreds of lines per write). Unless the user configured Lance logging,
# keep Lance's warnings but silence that one (Lance reads LANCE_LOG when it is first imported).
os.environ.setdefault("LANCE_LOG", "warn,lance::dataset::write::insert=error")

# Lance encodes on a pool of (CPUs - LANCE_IO_CORE_RESERVATION) threads, reservation 2, at least
# one: on a machine with 2 or 3 CPUs every write is encoded on a single thread, however many
# partitions are staged in parallel. Unless the user sized the pool, use every CPU there
# (measured on 2 CPUs: a 16-partition write of 10M rows 1.9 s -> 1.4 s). It takes effect when
# Lance starts its pool, at its first CPU task in the process.
if "LANCE_CPU_THREADS" not in os.environ and "LANCE_IO_CORE_RESERVATION" not in os.environ:
    _cpus = os.cpu_count() or 1
    if _cpus <= 3:
        os.environ["LANCE_CPU_THREADS"] = str(_cpus)

# lance_namespace.connect("partitioned", {"root": uri}) returns a PartitionedNamespace.
lance_namespace.register_namespace_impl(
    "partitioned", "lance_partitioned.namespace.PartitionedNamespace"
)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'lance_partitioned' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
