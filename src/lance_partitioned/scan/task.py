"""The scan task: one leaf table to read, at one version, with the residual filter.

A :class:`ScanTask` is what :func:`lance_partitioned.scan.plan_scan` yields and what the
readers of :mod:`lance_partitioned.scan.read` execute; opening it maps a missing leaf to a
typed error (an outdated reader after a cleanup, or a damaged namespace).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import lance

from lance_partitioned import errors
from lance_partitioned.expressions import Predicate
from lance_partitioned.manifest import Manifest, open_leaf
from lance_partitioned.manifest.versions import list_versions
from lance_partitioned.runtime.leaf_cache import cached_leaf
from lance_partitioned.runtime.sessions import leaf_session

__all__ = ["ScanTask", "missing_leaf_message", "partition_values"]


@dataclass(frozen=True)
class ScanTask:
    """One leaf table to read, at one version, with what still filters inside it.

    Picklable, so Spark ships it to executors.

    Attributes
    ----------
    object_id : str
        The leaf's ``__manifest`` object id.
    uri : str
        Absolute URI of the leaf Lance table.
    read_version : int or None
        The leaf version to read (None: latest, for a row without ``read_version``).
    spec_version : int
        The partition spec version the leaf belongs to.
    partition_values : tuple of (name, value)
        The leaf's partition values, in spec order.
    residual : Predicate
        The part of the filter partition values do not decide (AlwaysTrue: nothing).
    row_count : int or None
        Rows in the leaf at ``read_version`` when the ``__manifest`` records it.
    fragment_ids : tuple of int or None
        Read only these fragments (None: every fragment).
    storage_options : tuple of (key, value)
        Storage options for opening the leaf.
    manifest_root : str or None
        The root of the namespace whose ``__manifest`` lists the leaf (None: unknown).
    manifest_version : int or None
        The ``__manifest`` version that pins :attr:`read_version` (None: unknown): when the
        leaf cannot be opened, whether a cleanup removed that version tells an outdated
        reader from a damaged namespace.
    """

    object_id: str
    uri: str
    read_version: int | None
    spec_version: int
    partition_values: tuple[tuple[str, Any], ...]
    residual: Predicate
    row_count: int | None = None
    fragment_ids: tuple[int, ...] | None = None
    storage_options: tuple[tuple[str, str], ...] = ()
    manifest_root: str | None = None
    manifest_version: int | None = None
    filled: tuple[tuple[str, Any], ...] = ()
    """``(column, value)``: a leaf lacking the column reads it as the partition value."""
    read_branch: str | None = None
    """The branch of the leaf to read :attr:`read_version` of (None: main)."""
    read_tag: str | None = None
    """The tag of the leaf to read (None: none; set, it wins over :attr:`read_version`)."""

    def open(self) -> lance.LanceDataset:
        """The leaf as a Lance dataset at :attr:`read_version`.

        Raises
        ------
        TableVersionNotFoundError
            The leaf, or its version, is not there because a cleanup removed the
            ``__manifest`` version that pins it (:attr:`manifest_version`): the reader is
            outdated, the namespace is fine.
        CorruptNamespaceError
            The leaf table, or its pinned version, is not there while the ``__manifest``
            version that pins it is (naming both): the namespace is damaged.
        """
        try:
            if self.read_version is None or self.read_tag or self.read_branch:
                return self._open()
            # a fixed version: the dataset opened before (its index metadata loaded)
            return cached_leaf(self.uri, self.read_version, self.storage_options, self._open)
        except errors.TableNotFoundError as exc:
            gone = self.removed_by_cleanup()
            if gone is not None:
                raise gone from exc
            raise errors.CorruptNamespaceError(
                missing_leaf_message(
                    self.object_id, self.uri, self.read_version, exc.__cause__ or exc
                )
            ) from exc

    def _open(self) -> lance.LanceDataset:
        return open_leaf(
            self.uri,
            self.read_version,
            dict(self.storage_options),
            session=self._session(),
            action="read",
            branch=self.read_branch,
            tag=self.read_tag,
        )

    def _session(self) -> lance.Session | None:  # type: ignore[name-defined]
        """The namespace's shared leaf session (:mod:`lance_partitioned.runtime.sessions`) for a
        fixed version; None (a fresh one) for the latest, which Lance looks up each time."""
        if self.read_version is None or self.read_tag is not None:
            return None  # a tag may move, like a latest version
        root = self.manifest_root or self.uri.rstrip("/").rsplit("/", 1)[0]
        return leaf_session(root, dict(self.storage_options))

    def removed_by_cleanup(self) -> errors.TableVersionNotFoundError | None:
        """The error to raise when the leaf cannot be opened because a cleanup removed the
        ``__manifest`` version that pins it; None when that version is still there (then the
        leaf is missing behind the ``__manifest``'s back: damage) or unknown.

        A cleanup removes expired ``__manifest`` versions before the leaf versions and leaf
        directories only they need, so a leaf that a kept version lists is always readable.
        """
        if self.manifest_root is None or self.manifest_version is None:
            return None
        manifest = Manifest(self.manifest_root, dict(self.storage_options))
        try:
            kept = [info.version for info in list_versions(manifest, properties=False)]
        except (errors.LancePartitionedError, OSError, ValueError):
            return None  # cannot tell: report what is certain, the leaf cannot be opened
        version = self.manifest_version
        if not kept or version in kept or version > max(kept):
            return None
        leaf = "" if self.read_version is None else f"version {self.read_version} of "
        return errors.TableVersionNotFoundError(
            f"this reader reads __manifest version {version} of {self.manifest_root!r}, which "
            f"a cleanup removed, with the {leaf}leaf table {self.object_id!r} ({self.uri!r}) "
            "that only such old versions needed. The namespace is not damaged (the "
            f"__manifest versions kept are {_ranges(kept)}): call refresh() on the namespace, "
            "or open it again at a version still kept, and read again (a pyarrow dataset or "
            "a Polars scan reads the version its namespace had when it was made: make it "
            "again after the refresh)"
        )


def _ranges(versions: Sequence[int]) -> str:
    """Sorted version numbers as ranges.

    >>> _ranges([1, 2, 3, 5, 7, 8])
    '1-3, 5, 7-8'
    """
    out: list[str] = []
    start = previous = versions[0]
    for version in [*versions[1:], None]:
        if version is not None and version == previous + 1:
            previous = version
            continue
        out.append(str(start) if start == previous else f"{start}-{previous}")
        if version is not None:
            start = previous = version
    return ", ".join(out)


def missing_leaf_message(object_id: str, uri: str, version: int | None, exc: BaseException) -> str:
    """What to say when the leaf table of ``object_id`` cannot be opened at ``version``."""
    what = "its latest version" if version is None else f"its pinned version {version}"
    return (
        f"leaf table {object_id!r} of the __manifest cannot be opened at {uri!r} ({what}): "
        f"{exc}. The namespace is damaged: restore the leaf directory, or remove the "
        "partition with a write in mode 'overwrite'"
    )


def partition_values(task: ScanTask) -> Mapping[str, Any]:
    """The task's partition values as a dict."""
    return dict(task.partition_values)
