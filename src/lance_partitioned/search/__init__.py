"""Indexes on the leaves of a namespace and one pruned search across them.

- :mod:`.definitions`: the index definitions kept in the ``__manifest`` metadata;
- :mod:`.build`: builds (and drops) published in one ``__manifest`` commit;
- :mod:`.stats`: what each leaf holds;
- :mod:`.query`: the search, pruned with the scan planner and merged exactly.
"""

from lance_partitioned.search.build import (
    IndexBuildProgress,
    IndexBuildResult,
    create_index,
    drop_index,
    optimize_indices,
)
from lance_partitioned.search.definitions import INDEX_TYPES, IVF_MIN_ROWS, IndexDefinition
from lance_partitioned.search.query import RRF_K, search
from lance_partitioned.search.stats import IndexStats, LeafIndexStats, index_stats, list_indices

__all__ = [
    "INDEX_TYPES",
    "IVF_MIN_ROWS",
    "RRF_K",
    "IndexBuildProgress",
    "IndexBuildResult",
    "IndexDefinition",
    "IndexStats",
    "LeafIndexStats",
    "create_index",
    "drop_index",
    "index_stats",
    "list_indices",
    "optimize_indices",
    "search",
]
