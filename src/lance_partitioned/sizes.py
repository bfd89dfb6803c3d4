"""Sizes of leaf tables: rows, bytes and fragments of each leaf at its ``read_version``.

The ``__manifest`` records which version of each leaf a reader sees; this module opens each
leaf at that version (through the :class:`~lance_partitioned.scan.ScanTask` that
:meth:`~lance_partitioned.PartitionedNamespace.plan_scan` returns) and reads its Lance
manifest only: no data file is read. Bytes are the sizes of the data files the version
references (deletion files and indices excluded), as Lance records them.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("country", pa.string())]),
...     partition_by="country")
>>> _ = ns.write(pa.table({"id": [1, 2, 3], "country": ["US", "FR", "US"]}))
>>> sizes = partition_sizes(ns)
>>> sizes.select(["country", "rows", "fragments"]).to_pylist()
[{'country': 'FR', 'rows': 1, 'fragments': 1}, {'country': 'US', 'rows': 2, 'fragments': 1}]
>>> sizes.column("bytes")[0].as_py() > 0
True
>>> ns.partitions("country = 'US'", sizes=True).column("rows").to_pylist()  # the same
[2]
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.runtime import DEFAULT_THREADS
from lance_partitioned.scan import ScanTask

if TYPE_CHECKING:
    from lance_partitioned.namespace import PartitionedNamespace

__all__ = ["SMALL_FRAGMENT_ROWS", "LeafSize", "leaf_size", "leaf_sizes", "partition_sizes"]

#: A fragment with fewer rows than this is *small*: Lance's compaction rewrites fragments
#: into ones of this many rows (its default ``target_rows_per_fragment``).
SMALL_FRAGMENT_ROWS = 1 << 20


@dataclass(frozen=True)
class LeafSize:
    """The size of one leaf table at its ``read_version``.

    Attributes
    ----------
    object_id : str
        The leaf's ``__manifest`` object id.
    version : int
        The leaf version measured (its ``read_version``, or the latest when that is NULL).
    rows : int
        Live rows (deleted rows excluded).
    bytes : int
        Bytes of the data files of that version.
    fragments : int
        Fragments of that version.
    small_fragments : int
        Fragments with fewer than :data:`SMALL_FRAGMENT_ROWS` rows.
    """

    object_id: str
    version: int
    rows: int
    bytes: int
    fragments: int
    small_fragments: int


def leaf_size(task: ScanTask, small_rows: int = SMALL_FRAGMENT_ROWS) -> LeafSize:
    """Measure one leaf from its Lance manifest (no data file is read).

    Raises
    ------
    TableNotFoundError
        The leaf cannot be opened at its ``read_version`` (run ``verify`` on the namespace).
    """
    try:
        dataset = task.open()
    except (OSError, ValueError) as exc:
        version = "latest" if task.read_version is None else task.read_version
        raise errors.TableNotFoundError(
            f"cannot open leaf {task.object_id!r} at version {version} ({task.uri}): {exc}"
        ) from exc
    rows = total_bytes = small = 0
    fragments = dataset.get_fragments()
    for fragment in fragments:
        metadata = fragment.metadata
        deleted = metadata.deletion_file.num_deleted_rows if metadata.deletion_file else 0
        live = int(metadata.physical_rows or 0) - int(deleted or 0)
        rows += live
        small += live < small_rows
        total_bytes += sum(int(f.file_size_bytes or 0) for f in metadata.files)
    return LeafSize(task.object_id, int(dataset.version), rows, total_bytes, len(fragments), small)


def leaf_sizes(
    tasks: Sequence[ScanTask], *, threads: int | None = None, small_rows: int = SMALL_FRAGMENT_ROWS
) -> list[LeafSize]:
    """Measure every leaf, in the order of ``tasks``, on a small thread pool."""
    if not tasks:
        return []
    width = max(1, min(threads or DEFAULT_THREADS, len(tasks)))
    with ThreadPoolExecutor(max_workers=width) as pool:
        return list(pool.map(lambda task: leaf_size(task, small_rows), tasks))


def partition_sizes(
    ns: PartitionedNamespace,
    filter: str | None = None,
    *,
    threads: int | None = None,
    small_rows: int = SMALL_FRAGMENT_ROWS,
) -> pa.Table:
    """:meth:`~lance_partitioned.PartitionedNamespace.partitions` with four more columns:
    ``rows``, ``bytes``, ``fragments`` and ``small_fragments`` of each leaf at its
    ``read_version``.

    Parameters
    ----------
    ns : PartitionedNamespace
        The namespace, read at its current ``__manifest`` version.
    filter : str, optional
        SQL over the partition columns, as for ``partitions()``.
    threads : int, optional
        Leaves opened in parallel.
    small_rows : int
        Fragments with fewer rows count as small.
    """
    parts = ns.partitions(filter)
    tasks = {task.object_id: task for task in ns.plan_scan()}
    wanted = [tasks[object_id] for object_id in parts.column("object_id").to_pylist()]
    sizes = leaf_sizes(wanted, threads=threads, small_rows=small_rows)
    columns = {
        "rows": pa.array([s.rows for s in sizes], pa.int64()),
        "bytes": pa.array([s.bytes for s in sizes], pa.int64()),
        "fragments": pa.array([s.fragments for s in sizes], pa.int64()),
        "small_fragments": pa.array([s.small_fragments for s in sizes], pa.int64()),
    }
    for name, values in columns.items():
        parts = parts.append_column(name, values)
    return parts
