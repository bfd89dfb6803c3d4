"""What a commit that lost its ``__manifest`` compare-and-swap can keep (WriteSerializable).

Every ``__manifest`` commit rewrites the spec version rows, so any two commits conflict (see
:mod:`lance_partitioned.transaction`). Most of those conflicts are with commits that touched
other leaves, or that only appended to a leaf this commit changes; redoing the leaf work for
them (re-reading rows, re-staging, re-committing every leaf) makes a long operation lose every
compare-and-swap to a writer that commits more often than it takes, and grows its leaves by a
restore and a commit per attempt. :func:`rebase` decides, from the snapshot the attempt was
planned on and the new one, what the next attempt needs:

- the namespace metadata (schema, partition specs) changed, a leaf this commit drops, creates,
  overwrites or reads for an overwrite moved, or a leaf it changes moved by anything but
  appended fragments: ``None``, plan again (spec and schema changes still conflict with
  writes);
- otherwise the same plan: leaves that did not move keep their leaf commits (only the
  ``__manifest`` rows are committed again, on the new snapshot), and a leaf that only received
  appended fragments gets the same prepared Lance operation (a ``Delete``, ``Update`` or
  ``Rewrite`` names the fragments it changes, which an append leaves as they were) and the same
  staged fragments, committed on the new ``read_version``.

That is Delta Lake's WriteSerializable isolation: a concurrent blind append never conflicts
with a delete, update, merge or compaction; the rows it appended are not changed by them (an
update does not update them, a merge does not match them).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lance import LanceOperation

from lance_partitioned import errors
from lance_partitioned.manifest import Manifest, ManifestSnapshot, open_leaf
from lance_partitioned.transaction.leafplan import leaf_fingerprint
from lance_partitioned.transaction.leaves import _ABSENT, _NULL

__all__ = ["REBASABLE", "Prepared", "appended_only", "moved_leaves", "same_objects"]

log = logging.getLogger(__name__)

REBASABLE: tuple[type, ...] = (
    LanceOperation.Delete,
    LanceOperation.Update,
    LanceOperation.Rewrite,
    LanceOperation.Append,
)
"""Lance operations that name the fragments they change, and so mean the same on a leaf
version that only has more fragments."""


@dataclass(frozen=True)
class Prepared:
    """The Lance operation a :class:`~lance_partitioned.transaction.LeafChange` prepared on
    one leaf version (``None``: nothing to change there), kept to commit it again on a later
    version that only appended fragments."""

    version: int
    operation: Any

    def rebasable(self) -> bool:
        """Whether the operation keeps its meaning over appended fragments."""
        return self.operation is None or isinstance(self.operation, REBASABLE)


def appended_only(manifest: Manifest, location: str, old: int, new: int) -> bool:
    """Whether leaf version ``new`` is leaf version ``old`` with fragments appended: the same
    schema (Lance field ids included) and every fragment of ``old`` unchanged in ``new`` (same
    data files, same deletion file).

    >>> import tempfile, lance, pyarrow as pa
    >>> root = tempfile.mkdtemp()
    >>> m = Manifest(root)
    >>> ds = lance.write_dataset(pa.table({"a": [1, 2]}), m.table_uri("t"))
    >>> _ = lance.write_dataset(pa.table({"a": [3]}), m.table_uri("t"), mode="append")
    >>> appended_only(m, "t", 1, 2)
    True
    >>> _ = lance.dataset(m.table_uri("t")).delete("a = 1")
    >>> appended_only(m, "t", 2, 3)
    False
    """
    options = manifest.storage_options or None
    try:
        before = open_leaf(manifest.table_uri(location), old, options)
        after = before.checkout_version(new)
        if leaf_fingerprint(before) != leaf_fingerprint(after):
            return False
        now = {fragment.fragment_id: fragment.metadata for fragment in after.get_fragments()}
        return all(now.get(f.fragment_id) == f.metadata for f in before.get_fragments())
    except (OSError, ValueError, errors.LancePartitionedError) as exc:  # a version removed
        # meanwhile (or the storage failed to read it): plan again
        log.info("cannot compare leaf %s versions %d and %d: %s", location, old, new, exc)
        return False


def moved_leaves(
    old: ManifestSnapshot, new: ManifestSnapshot, expected: Mapping[str, int]
) -> dict[str, int] | None:
    """Of the leaves in ``expected`` (object id -> its state in ``old``: a ``read_version``,
    or ``_ABSENT`` for no row, ``_NULL`` for a NULL ``read_version``), those whose state
    differs in ``new``, with their new ``read_version``; ``None`` when ``new`` differs from
    ``old`` in its metadata, or when one of them was created, removed, relocated or lost its
    ``read_version`` (only a leaf that moved from one version to another can be rebased)."""
    if new.metadata != old.metadata:
        return None
    moved: dict[str, int] = {}
    for object_id, state in expected.items():
        if not new.has(object_id):
            if state != _ABSENT:
                return None
            continue
        now = new.read_version(object_id)
        if state == _ABSENT or (state == _NULL) != (now is None):
            return None
        if new.location(object_id) != old.location(object_id):
            return None
        if now is not None and now != state:
            moved[object_id] = now
    return moved


def same_objects(old: ManifestSnapshot, new: ManifestSnapshot) -> bool:
    """Whether ``new`` has exactly the rows (object ids) of ``old``: no partition created or
    removed between them."""
    ids = old.rows.column("object_id")
    return ids.length() == new.rows.num_rows and set(ids.to_pylist()) == set(
        new.rows.column("object_id").to_pylist()
    )
