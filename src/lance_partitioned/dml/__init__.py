"""Row-level changes: delete, update, merge and replace-where, atomic across partitions.

Each operation plans, per leaf, what its predicate means there (the residual of
:func:`lance_partitioned.scan.plan_scan`): a leaf the predicate cannot match is untouched, a
leaf whose partition values decide that every row matches is dropped (delete) or rewritten
whole, and any other leaf gets Lance's row-level change with the residual pushed down. Rows
whose new values belong to another partition move: deleted in the old leaf, staged into the
new one. Everything becomes visible in one ``__manifest`` commit through
:func:`lance_partitioned.transaction.commit_changes`.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("country", pa.string())]),
...     partition_by="country")
>>> _ = ns.write(pa.table({"id": [1, 2, 3, 4], "country": ["US", "FR", "US", "DE"]}))
>>> result = ns.delete("country = 'US' OR id = 4")
>>> result.rows_deleted, result.leaves_dropped, result.leaves_rewritten
(3, 1, 1)
>>> ns.to_table().column("id").to_pylist()
[2]
"""

from __future__ import annotations

from lance_partitioned.dml.delete import delete
from lance_partitioned.dml.merge import MergeBuilder
from lance_partitioned.dml.replace import commit_staged, require_matching
from lance_partitioned.dml.results import DeleteResult, MergeResult, UpdateResult
from lance_partitioned.dml.update import assignments, update

__all__ = [
    "DeleteResult",
    "MergeBuilder",
    "MergeResult",
    "UpdateResult",
    "assignments",
    "commit_staged",
    "delete",
    "require_matching",
    "update",
]
