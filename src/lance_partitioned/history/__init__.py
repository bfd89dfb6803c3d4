"""History, time travel and tags of a partitioned namespace.

Every commit of lance-partitioned records what it did on the ``__manifest`` version it
creates (:mod:`lance_partitioned.manifest.operations`); :func:`versions` lists every version
with it, from the Lance manifests and transaction files only (no row is read: about 0.1 s
for 300 versions on a local disk). A version is named by its number, by a tag, or by a time
(:func:`resolve_version`); tags are Lance tags on the ``__manifest``
(:mod:`lance_partitioned.manifest.versions`).

The package also holds what is built on the versions:
:mod:`~lance_partitioned.history.restore` (make an earlier version's rows the current ones,
in a new commit) and :mod:`~lance_partitioned.history.changes` (what each version changed,
fragment by fragment: the incremental reads of the Spark streaming source).

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("k", pa.string())]),
...     partition_by="k")
>>> result = ns.write(pa.table({"id": [1, 2], "k": ["a", "b"]}))
>>> last = ns.versions().to_pylist()[-1]
>>> last["operation"], last["mode"], last["rows_added"], last["partitions_touched"]
('write', 'append', 2, 2)
>>> ns.tags.create("first-load").version == ns.version
True
>>> lp.PartitionedNamespace.open(ns.uri, version="first-load").count_rows()
2
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.manifest.operations import Operation
from lance_partitioned.manifest.versions import (
    Tag,
    check_tag_name,
    create_tag,
    delete_tag,
    list_tags,
    list_versions,
    tag_version,
)

if TYPE_CHECKING:
    from lance_partitioned.manifest import Manifest

__all__ = [
    "VERSIONS_SCHEMA",
    "Tag",
    "Tags",
    "VersionLike",
    "resolve_version",
    "version_at",
    "versions",
]

VersionLike = int | str | dt.datetime
"""A ``__manifest`` version: its number, a tag name, or a time (naive times are UTC)."""

VERSIONS_SCHEMA = pa.schema(
    [
        pa.field("version", pa.int64(), nullable=False),
        pa.field("timestamp", pa.timestamp("us", "UTC")),
        pa.field("operation", pa.string()),
        pa.field("mode", pa.string()),
        pa.field("rows_added", pa.int64()),
        pa.field("rows_removed", pa.int64()),
        pa.field("rows_updated", pa.int64()),
        pa.field("partitions_touched", pa.int64()),
        pa.field("tags", pa.list_(pa.string()), nullable=False),
        pa.field("properties", pa.map_(pa.string(), pa.string()), nullable=False),
    ]
)


def versions(manifest: Manifest) -> pa.Table:
    """One row per ``__manifest`` version, oldest first (:data:`VERSIONS_SCHEMA`).

    ``timestamp`` is the commit time (UTC); ``operation``, ``mode``, ``rows_added``,
    ``rows_removed``, ``rows_updated`` and ``partitions_touched`` are what the commit recorded
    (NULL when it did not say: a version another client committed, or one committed before
    the count was recorded). The row counts are disjoint (an updated row is neither added
    nor removed), so each version holds the rows of the previous one plus ``rows_added``
    minus ``rows_removed``; ``partitions_touched`` counts the leaves written, changed or
    dropped. ``tags`` are the tags naming the version; ``properties`` every transaction
    property of the commit, other clients' keys included.
    """
    listed = list_versions(manifest)
    tagged: dict[int, list[str]] = {}
    for tag in list_tags(manifest).values():
        tagged.setdefault(tag.version, []).append(tag.name)
    rows = []
    for info in listed:
        operation = Operation.from_properties(info.properties)
        rows.append(
            {
                "version": info.version,
                "timestamp": info.timestamp,
                "operation": None if operation is None else operation.name,
                "mode": None if operation is None else operation.mode,
                "rows_added": None if operation is None else operation.rows_added,
                "rows_removed": None if operation is None else operation.rows_removed,
                "rows_updated": None if operation is None else operation.rows_updated,
                "partitions_touched": None if operation is None else operation.partitions_touched,
                "tags": tagged.get(info.version, []),
                "properties": sorted(info.properties.items()),
            }
        )
    return pa.Table.from_pylist(rows, schema=VERSIONS_SCHEMA)


def _as_utc(when: dt.datetime) -> dt.datetime:
    """``when`` as an aware UTC datetime; a naive one is taken to be in UTC."""
    if when.tzinfo is None or when.utcoffset() is None:
        return when.replace(tzinfo=dt.timezone.utc)
    return when.astimezone(dt.timezone.utc)


def version_at(manifest: Manifest, when: dt.datetime) -> int:
    """The latest ``__manifest`` version committed at or before ``when`` (a naive datetime
    is taken to be in UTC).

    Raises
    ------
    TableVersionNotFoundError
        ``when`` is before the oldest version kept; the message gives that version's time.
    """
    moment = _as_utc(when)
    stamped = [
        (info.version, info.timestamp)
        for info in list_versions(manifest, properties=False)
        if info.timestamp is not None
    ]
    found = [number for number, stamp in stamped if stamp <= moment]
    if found:
        return max(found)
    if not stamped:
        raise errors.TableVersionNotFoundError(
            f"the __manifest at {manifest.root!r} records no commit time: open it by version "
            "number or tag"
        )
    oldest, stamp = min(stamped)
    raise errors.TableVersionNotFoundError(
        f"no __manifest version of {manifest.root!r} was committed at or before "
        f"{moment.isoformat()}: the oldest one kept, version {oldest}, was committed at "
        f"{stamp.isoformat()}"
    )


def resolve_version(manifest: Manifest, version: VersionLike | None) -> int | None:
    """The ``__manifest`` version number that ``version`` names: a number as it is (None:
    the latest), a string as a tag name, a datetime as the latest version committed at or
    before it (:func:`version_at`).

    Raises
    ------
    TagNotFoundError
        A string that is not a tag (a string of digits is not version number either: the
        message says to pass an int).
    TableVersionNotFoundError
        A number that cannot be a version (below 1, 2**64 or more), a time before the first
        version.
    InvalidInputError
        Anything else (a float, a bool, a date without a time).
    """
    if version is None:
        return None
    if isinstance(version, bool) or not isinstance(version, (int, str, dt.datetime)):
        raise errors.InvalidInputError(
            f"version must be a __manifest version number (int), a tag name (str) or a "
            f"datetime, not {version!r}"
        )
    if isinstance(version, int):
        if not 1 <= version < 2**64:
            raise errors.TableVersionNotFoundError(
                f"__manifest version {version} does not exist at {manifest.root!r}: versions "
                "are numbered from 1"
            )
        return version
    if isinstance(version, dt.datetime):
        return version_at(manifest, version)
    try:
        return tag_version(manifest, version)
    except errors.TagNotFoundError as exc:
        raise errors.TagNotFoundError(_not_a_tag(manifest, version)) from exc


def _not_a_tag(manifest: Manifest, name: str) -> str:
    text = f"{name!r} is not a tag of the namespace at {manifest.root!r}"
    stripped = name.strip()
    if stripped.isascii() and stripped.isdigit():
        return f"{text}; pass version={int(stripped)} (an int) for __manifest version {stripped}"
    names = sorted(list_tags(manifest))
    return f"{text}; its tags are {names}" if names else f"{text}; it has no tags"


class Tags:
    """The tags of a namespace (``ns.tags``): names for ``__manifest`` versions.

    A tag keeps naming its version whatever is written later, and Lance's cleanup keeps
    every tagged version. Parameters: the ``__manifest`` and the version that
    :meth:`create` tags by default (the version the namespace object reads).
    """

    def __init__(self, manifest: Manifest, default: int) -> None:
        self._manifest = manifest
        self._default = default

    def create(self, name: str, version: VersionLike | None = None) -> Tag:
        """Tag ``version`` (a number, another tag, a time; None: the version the namespace
        object reads) as ``name``.

        Raises
        ------
        InvalidInputError
            A bad name (see :func:`~lance_partitioned.manifest.versions.check_tag_name`).
        TagAlreadyExistsError
            A tag of that name exists.
        TableVersionNotFoundError
            No such version.
        """
        check_tag_name(name)
        resolved = resolve_version(self._manifest, version)
        return create_tag(self._manifest, name, self._default if resolved is None else resolved)

    def delete(self, name: str) -> None:
        """Delete tag ``name`` (the version it named stays, until a cleanup removes it).

        Raises :class:`~lance_partitioned.errors.TagNotFoundError` if there is none."""
        delete_tag(self._manifest, name)

    def list(self) -> dict[str, Tag]:
        """Every tag, by name (sorted): its version and creation time (UTC)."""
        return list_tags(self._manifest)

    def __repr__(self) -> str:
        return f"Tags({self._manifest.root!r})"
