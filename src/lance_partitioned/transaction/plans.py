"""What one operation commits (:class:`ChangePlan`, :class:`PendingWrite`), what a commit
did (:class:`CommitResult`), and what one attempt of the commit protocol does to each leaf
(``_Attempt``, planned and checked against a ``__manifest`` snapshot by ``_plan_steps``).
The protocol itself is :func:`lance_partitioned.transaction.commit_changes`.

>>> ChangePlan().is_empty(), WRITE_MODES
(True, ('append', 'overwrite', 'overwrite_partitions'))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.manifest import ManifestSnapshot
from lance_partitioned.transaction.leaves import _ABSENT, _NULL, LeafChange, LeafWrite

__all__ = ["WRITE_MODES", "ChangePlan", "CommitResult", "PendingWrite", "WriteMode"]

WriteMode = Literal["append", "overwrite", "overwrite_partitions"]
"""How a write meets the data there: the one definition of the write modes."""
#: The write modes, in order (the values of :data:`WriteMode`).
WRITE_MODES: tuple[WriteMode, ...] = get_args(WriteMode)


@dataclass
class PendingWrite:
    """Everything one write adds: leaves, their ancestor namespaces and the mode.

    ``namespaces`` maps each ancestor partition namespace object id to its inherited values.
    """

    spec_version: int
    leaf_schema: pa.Schema
    leaves: list[LeafWrite]
    namespaces: dict[str, dict[str, Any]]
    mode: WriteMode = "append"


@dataclass
class CommitResult:
    """What a commit did.

    Attributes
    ----------
    version : int
        The new ``__manifest`` version.
    leaf_versions : dict[str, int]
        The committed ``read_version`` of each touched leaf.
    created : list[str]
        Object ids of leaf tables that did not exist before.
    attempts : int
        Manifest commit attempts (1 when there was no conflict).
    """

    version: int
    leaf_versions: dict[str, int]
    created: list[str]
    attempts: int
    rows: int = 0
    deleted_leaves: int = 0
    skipped: bool = False  # nothing to commit, or an idempotent write already committed
    changed: dict[str, int] = field(default_factory=dict)  # leaf -> read_version of a change
    dropped: list[str] = field(default_factory=list)  # leaves whose rows were removed


def _expected(snapshot: ManifestSnapshot, object_id: str) -> int:
    if not snapshot.has(object_id):
        return _ABSENT
    read_version = snapshot.read_version(object_id)
    return _NULL if read_version is None else read_version


def _check_location(snapshot: ManifestSnapshot, leaf: LeafWrite) -> None:
    location = snapshot.location(leaf.object_id)
    if location is not None and location != leaf.location:
        raise errors.ConcurrentModificationError(
            f"leaf {leaf.object_id!r} was created at {location!r} by another client while "
            f"this write staged its data at {leaf.location!r}; retry the write"
        )


@dataclass
class ChangePlan:
    """Everything one operation changes, planned on one ``__manifest`` snapshot.

    Attributes
    ----------
    changes : list of LeafChange
        Changes to existing leaves (row-level deletes, updates, compactions).
    drops : list of str
        Leaf object ids whose rows leave the ``__manifest`` (metadata only: older versions
        still read the data; cleanup removes it).
    writes : PendingWrite, optional
        New staged data, mode ``append`` or ``overwrite_partitions`` (each written leaf
        replaced) or ``overwrite`` (the whole namespace). A leaf with both a change and an
        append gets the change first, then the staged fragments on top, in one leaf commit
        chain. A leaf write without fragments updates a leaf of the snapshot committed on
        (its schema) and never creates one: for a leaf that snapshot does not list, it is
        left out.
    reads : dict of str to int
        Leaf object id to the ``read_version`` whose content the plan depends on (rows that
        an update moves, merge matches); checked against the snapshot the plan was made on.
    properties : dict of str to str, or a callable returning one
        Recorded as the Lance transaction properties of the ``__manifest`` commit. A
        callable (no argument) is called after the attempt's leaf commits, right before its
        ``__manifest`` commit (:func:`_properties`): for what only the leaf commits know
        (rows a ``LeafChange.prepare`` deleted).
    serializable : bool
        The plan depends on every leaf of the snapshot, not only on those it touches (it
        replaces what a set of partitions holds): after a lost compare-and-swap it is planned
        again whenever a leaf was created or removed, or a leaf it touches moved. Otherwise
        (and for writes in mode ``append``) it is WriteSerializable: appends to its leaves
        and commits to other leaves are rebased over (:mod:`.rebase`).
    """

    changes: list[LeafChange] = field(default_factory=list)
    drops: list[str] = field(default_factory=list)
    writes: PendingWrite | None = None
    reads: dict[str, int] = field(default_factory=dict)
    properties: dict[str, str] | Callable[[], dict[str, str]] = field(default_factory=dict)
    serializable: bool = False

    def is_empty(self) -> bool:
        """Whether the plan changes nothing."""
        return not (self.changes or self.drops or (self.writes and self.writes.leaves)) and (
            self.writes is None or self.writes.mode != "overwrite"
        )


def _properties(plan: ChangePlan) -> dict[str, str]:
    """The plan's properties, a callable one called now (after the attempt's leaf commits)."""
    found = plan.properties
    return found() if callable(found) else found


@dataclass
class _Attempt:
    """What one commit attempt does to one leaf, and what it reuses from the previous one:
    ``operation``, a 1-tuple, is the change's operation prepared by an earlier attempt on a
    version that ``expected`` only appended to (committed again instead of preparing)."""

    expected: int
    change: LeafChange | None
    write: LeafWrite | None
    operation: tuple[Any] | None = None


def _same(a: _Attempt, b: _Attempt) -> bool:
    return a.expected == b.expected and a.change is b.change and a.write is b.write


def _plan_steps(
    snapshot: ManifestSnapshot, plan: ChangePlan, pending: PendingWrite | None
) -> dict[str, _Attempt]:
    """Per touched leaf, what this attempt does to it; checks the plan against ``snapshot``."""
    steps: dict[str, _Attempt] = {}
    for object_id, version in plan.reads.items():
        if _expected(snapshot, object_id) != version:
            raise errors.InternalError(
                f"the plan read leaf {object_id!r} at version {version}, but the __manifest at "
                f"{snapshot.version} says {snapshot.read_version(object_id)}"
            )
    for change in plan.changes:
        expected = _expected(snapshot, change.object_id)
        if expected == _ABSENT or change.object_id in steps:
            raise errors.InternalError(
                f"a change of leaf {change.object_id!r}, which is not in the __manifest at "
                f"{snapshot.version} or is changed twice by one plan"
            )
        steps[change.object_id] = _Attempt(expected, change, None)
    if pending is not None:
        for leaf in pending.leaves:
            _check_location(snapshot, leaf)
            seen = steps.get(leaf.object_id)
            if seen is not None and (pending.mode != "append" or seen.write is not None):
                raise errors.InternalError(
                    f"leaf {leaf.object_id!r} is both changed and overwritten by one plan"
                )
            if seen is not None:
                seen.write = leaf
            else:
                steps[leaf.object_id] = _Attempt(_expected(snapshot, leaf.object_id), None, leaf)
    for object_id in plan.drops:
        if object_id in steps or not snapshot.has(object_id):
            raise errors.InternalError(
                f"leaf {object_id!r} is dropped by a plan that also changes it, or is not in "
                f"the __manifest at {snapshot.version}"
            )
    return steps
