"""Scan planning and reads: spec 000's partition pruning workflow.

1. Parse the filter (SQL through DataFusion's parser, or a tree from
   :mod:`lance_partitioned.expressions`), push NOT down and bind it to the read schema.
2. For each partition spec version, project the predicate onto that spec's partition columns
   (inclusive projection: no leaf holding a matching row is ever dropped) and evaluate the
   projection on that version's leaf rows of the one ``__manifest`` snapshot read.
3. For each surviving leaf, simplify the predicate against the leaf's partition values: what
   remains (the *residual*) is pushed into the leaf's Lance scanner; a leaf whose residual is
   false is skipped.
4. Read each leaf at its ``read_version`` (NULL: latest), matching leaf columns to namespace
   fields by field id, on a bounded thread pool.

Steps 1-3 (task building) are :mod:`~lance_partitioned.scan.plan`, step 4 (reading) is
:mod:`~lance_partitioned.scan.read`, the residual filters both use are
:mod:`~lance_partitioned.scan.filters`, the task itself is
:mod:`~lance_partitioned.scan.task` and the plan's sequence of tasks, built from the
``__manifest`` columns when asked for, is :mod:`~lance_partitioned.scan.tasks`;
:mod:`~lance_partitioned.scan.plans` keeps the plans of SQL filters per snapshot. This package
exports their public names.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("country", pa.string())]),
...     partition_by="country")
>>> _ = ns.write(pa.table({"id": [1, 2, 3], "country": ["US", "FR", "US"]}))
>>> [task.partition_values for task in ns.plan_scan("country = 'FR'")]
[(('country', 'FR'),)]
>>> ns.to_table("id > 1", columns=["id"]).column("id").to_pylist()
[2, 3]
>>> ns.count_rows("country = 'US'")
2
"""

from __future__ import annotations

from lance_partitioned.scan.filters import (
    leaf_filter,
    post_filter,
    pushdown_filter,
    residual_fields,
    sql_filter,
)
from lance_partitioned.scan.plan import (
    Filter,
    bound_filter,
    filter_partitions,
    manifest_filter,
    output_columns,
    output_fields,
    plan_scan,
)
from lance_partitioned.scan.plans import planned
from lance_partitioned.scan.read import count_rows, count_task, read_task, to_batches, to_table
from lance_partitioned.scan.task import ScanTask, missing_leaf_message, partition_values
from lance_partitioned.scan.tasks import ScanTasks

__all__ = [
    "Filter",
    "ScanTask",
    "ScanTasks",
    "bound_filter",
    "count_rows",
    "count_task",
    "filter_partitions",
    "leaf_filter",
    "manifest_filter",
    "missing_leaf_message",
    "output_columns",
    "output_fields",
    "partition_values",
    "plan_scan",
    "planned",
    "post_filter",
    "pushdown_filter",
    "read_task",
    "residual_fields",
    "sql_filter",
    "to_batches",
    "to_table",
]
