"""Lazy, pruned scans of a namespace from other engines: DuckDB (through a
``pyarrow.dataset.Dataset``) and Polars (through an IO plugin).

Both receive the engine's projection and filter, translate the filter into our predicate tree
(:mod:`.arrow_filter`, :mod:`.polars_filter`), prune leaves on the ``__manifest`` and read only
the leaves and columns left; a part of the filter that cannot be translated runs in the
engine on the batches read, so nothing is dropped.

The engines themselves are optional: DuckDB and Polars are imported only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lance_partitioned.engines.source import EngineScan, OnScan, Source

if TYPE_CHECKING:
    import polars as pl

    from lance_partitioned.engines.dataset import PartitionedDataset
    from lance_partitioned.expressions import Predicate
    from lance_partitioned.manifest import Manifest, ManifestSnapshot

__all__ = ["EngineScan", "OnScan", "Source", "scan_polars", "to_pyarrow_dataset"]


def to_pyarrow_dataset(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    filter: str | Predicate | None = None,
    *,
    on_scan: OnScan | None = None,
) -> PartitionedDataset:
    """The namespace of ``manifest``, at ``snapshot``, as a lazy pyarrow dataset
    (see :mod:`lance_partitioned.engines.dataset`)."""
    from lance_partitioned.engines.dataset import PartitionedDataset

    return PartitionedDataset(Source(manifest, snapshot, filter, on_scan=on_scan))


def scan_polars(
    manifest: Manifest,
    snapshot: ManifestSnapshot,
    filter: str | Predicate | None = None,
    *,
    on_scan: OnScan | None = None,
) -> pl.LazyFrame:
    """The namespace of ``manifest``, at ``snapshot``, as a Polars ``LazyFrame``
    (see :mod:`lance_partitioned.engines.polars_scan`)."""
    from lance_partitioned.engines.polars_scan import scan

    return scan(Source(manifest, snapshot, filter, on_scan=on_scan))
