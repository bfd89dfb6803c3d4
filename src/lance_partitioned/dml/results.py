"""What a change of the rows did: the result objects of write, delete, update, merge."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DeleteResult", "MergeResult", "UpdateResult", "WriteResult"]


@dataclass(frozen=True)
class WriteResult:
    """What :meth:`PartitionedNamespace.write` did.

    Attributes
    ----------
    version : int
        The ``__manifest`` version that made the write visible.
    rows_written : int
        Rows committed.
    partitions_created : int
        Leaf tables that did not exist before.
    partitions_touched : int
        Leaf tables written (created ones included).
    partitions_removed : int
        Leaf tables dropped from the manifest by ``mode="overwrite"``.
    attempts : int
        Manifest commit attempts (more than 1 when concurrent writers conflicted).
    seconds : float
        Wall time of the whole write.
    """

    version: int
    rows_written: int
    partitions_created: int
    partitions_touched: int
    partitions_removed: int
    attempts: int
    seconds: float


@dataclass(frozen=True)
class DeleteResult:
    """What :meth:`PartitionedNamespace.delete` did.

    Attributes
    ----------
    version : int
        The ``__manifest`` version that made the delete visible (the version read when
        nothing matched).
    rows_deleted : int
        Rows removed.
    leaves_dropped : int
        Leaves whose every row matched, removed from the ``__manifest`` without being read.
    leaves_rewritten : int
        Leaves that got a Lance delete (deletion files) of some of their rows.
    attempts : int
        ``__manifest`` commit attempts.
    seconds : float
        Wall time.
    """

    version: int
    rows_deleted: int
    leaves_dropped: int
    leaves_rewritten: int
    attempts: int
    seconds: float


@dataclass(frozen=True)
class UpdateResult:
    """What :meth:`PartitionedNamespace.update` did.

    Attributes
    ----------
    version : int
        The ``__manifest`` version that made the update visible.
    rows_updated : int
        Rows matched and rewritten with their new values.
    rows_moved : int
        Of those, rows whose new values put them in another leaf.
    leaves_read : int
        Leaves whose matching rows were read.
    attempts : int
        ``__manifest`` commit attempts.
    seconds : float
        Wall time.
    """

    version: int
    rows_updated: int
    rows_moved: int
    leaves_read: int
    attempts: int
    seconds: float


@dataclass(frozen=True)
class MergeResult:
    """What :meth:`MergeBuilder.execute` did.

    Attributes
    ----------
    version : int
        The ``__manifest`` version that made the merge visible.
    rows_updated : int
        Target rows replaced by their matching source row.
    rows_inserted : int
        Source rows without a match, inserted.
    rows_deleted : int
        Target rows deleted: matched by a source row (``when_matched_delete``) or without
        a match in the source (``when_not_matched_by_source_delete``).
    leaves_read : int
        Target leaves searched for matches.
    attempts : int
        ``__manifest`` commit attempts.
    seconds : float
        Wall time.
    """

    version: int
    rows_updated: int
    rows_inserted: int
    rows_deleted: int
    leaves_read: int
    attempts: int
    seconds: float
