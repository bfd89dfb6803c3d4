"""The ``__manifest``'s history as Lance keeps it: its versions (commit time and transaction
properties) and its tags (Lance refs under ``__manifest/_refs/tags/``).

A tag names a ``__manifest`` version; other clients ignore tags, and Lance's own cleanup keeps
every tagged version. Tag names are stricter than Lance's refs: ASCII letters, digits, ``.``,
``-`` and ``_`` (Lance accepts other letters but then cannot list its tags), at most 128
characters, not only digits (``"3"`` would read as version 3).

>>> check_tag_name("release-2025.01")
'release-2025.01'
>>> check_tag_name("42")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lance_partitioned.errors.InvalidInputError: tag name '42' is only digits, which reads as ...
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from lance_partitioned import errors
from lance_partitioned.manifest.layout import local_path

if TYPE_CHECKING:
    from lance import LanceDataset

    from lance_partitioned.manifest.table import Manifest

__all__ = [
    "MAX_TAG_LENGTH",
    "Tag",
    "VersionInfo",
    "check_tag_name",
    "create_tag",
    "delete_tag",
    "list_tags",
    "list_versions",
    "tag_version",
    "version_properties",
]

MAX_TAG_LENGTH = 128
_TAG = re.compile(r"[A-Za-z0-9_-](?:[A-Za-z0-9._-]*[A-Za-z0-9_-])?")
_T = TypeVar("_T")


@dataclass(frozen=True)
class VersionInfo:
    """One ``__manifest`` version: its number, commit time (UTC) and the transaction
    properties of the commit that made it (empty when it has none)."""

    version: int
    timestamp: dt.datetime | None
    properties: dict[str, str]


@dataclass(frozen=True)
class Tag:
    """A tag of the ``__manifest``: its name, the version it names, when it was created."""

    name: str
    version: int
    created_at: dt.datetime | None


def _utc(stamp: object) -> dt.datetime | None:
    """A Lance timestamp as an aware UTC datetime. pylance gives version times as naive
    *local* times (``datetime.fromtimestamp``) and tag times as aware UTC ones."""
    if not isinstance(stamp, dt.datetime):
        return None
    return stamp.astimezone(dt.timezone.utc)


def list_versions(
    manifest: Manifest, *, properties: bool = True, threads: int = 8
) -> list[VersionInfo]:
    """Every version Lance still has of the ``__manifest``, oldest first, with its commit
    time and (unless ``properties=False``: empty) transaction properties. Reads each
    version's manifest and transaction file, never its rows. On an object store the
    transaction files are read by ``threads`` threads, each with its own dataset object
    (pylance's ``read_transaction`` is not re-entrant); on a local disk one thread reads them
    all (about 0.1 ms each)."""
    ds = manifest._open()
    listed = sorted(ds.versions(), key=lambda v: int(v["version"]))
    numbers = [int(v["version"]) for v in listed]
    workers = 1 if local_path(manifest.root) is not None else max(1, min(threads, len(numbers)))
    if not properties:
        found: list[dict[str, str]] = [{} for _ in numbers]
    elif workers == 1:
        found = _properties(ds, numbers)
    else:
        chunks = [numbers[i::workers] for i in range(workers)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(lambda chunk: _properties(manifest._open(), chunk), chunks))
        by_number = {
            number: props
            for chunk, part in zip(chunks, parts, strict=True)
            for number, props in zip(chunk, part, strict=True)
        }
        found = [by_number[number] for number in numbers]
    return [
        VersionInfo(number, _utc(info.get("timestamp")), props)
        for number, info, props in zip(numbers, listed, found, strict=True)
    ]


def version_properties(manifest: Manifest, numbers: list[int]) -> list[dict[str, str]]:
    """The transaction properties of each ``__manifest`` version in ``numbers`` (empty: none
    recorded, or a version Lance no longer has), without listing the others."""
    return _properties(manifest._open(), numbers) if numbers else []


def _properties(ds: LanceDataset, numbers: list[int]) -> list[dict[str, str]]:
    """The transaction properties of each version in ``numbers`` (empty: none recorded, or
    no readable transaction file)."""
    out = []
    for number in numbers:
        try:
            transaction = ds.read_transaction(number)
        except (OSError, ValueError):
            transaction = None
        found = None if transaction is None else transaction.transaction_properties
        out.append(dict(found or {}))
    return out


def check_tag_name(name: object) -> str:
    """``name`` if it is a valid tag name, else :class:`~lance_partitioned.errors.
    InvalidInputError` saying why."""
    if not isinstance(name, str):
        raise errors.InvalidInputError(f"a tag name must be a string, not {name!r}")
    why = None
    if not name:
        why = "is empty"
    elif len(name) > MAX_TAG_LENGTH:
        why = f"is longer than {MAX_TAG_LENGTH} characters"
    elif _TAG.fullmatch(name) is None:
        why = (
            "must use only ASCII letters, digits, '.', '-' and '_', and neither start nor end "
            "with '.'"
        )
    elif ".." in name:
        why = "cannot hold '..'"
    elif name.endswith(".lock"):
        why = "cannot end with '.lock'"
    elif name.isdigit():
        why = f"is only digits, which reads as a version number: add a letter (e.g. 'v{name}')"
    if why is not None:
        raise errors.InvalidInputError(f"tag name {name!r} {why}")
    return name


def _tags_call(
    manifest: Manifest,
    action: Callable[[LanceDataset], _T],
    name: str | None,
    version: int | None = None,
) -> _T:
    """Run a Lance tag call on the latest ``__manifest``, its errors typed (``name`` and
    ``version``: the tag and the version the call is about, for the messages)."""
    ds = manifest._open()
    try:
        return action(ds)
    except (OSError, ValueError) as exc:
        text = str(exc)
        lowered = text.lower()
        if "already exists" in lowered:
            raise errors.TagAlreadyExistsError(
                f"tag {name!r} already exists on the namespace at {manifest.root!r}: delete it "
                "first or choose another name"
            ) from exc
        if "ref not found" in lowered:
            raise errors.TagNotFoundError(
                f"{name!r} is not a tag of the namespace at {manifest.root!r}"
            ) from exc
        if "version not found" in lowered:
            raise errors.TableVersionNotFoundError(
                f"__manifest version {version} does not exist at {manifest.root!r}: it cannot "
                f"be tagged {name!r}"
            ) from exc
        typed = errors.storage_error(exc, manifest.uri, "change the tags")
        if typed is not None:
            raise typed from exc
        raise errors.CorruptNamespaceError(
            f"the tags of the __manifest at {manifest.root!r} cannot be read or changed: {text}"
        ) from exc


def list_tags(manifest: Manifest) -> dict[str, Tag]:
    """Every tag of the ``__manifest``, by name."""
    found = _tags_call(manifest, lambda ds: ds.tags.list(), None)
    return {
        name: Tag(name, int(info["version"]), _utc(info.get("created_at")))
        for name, info in sorted(found.items())
    }


def tag_version(manifest: Manifest, name: str) -> int:
    """The version a tag names; :class:`~lance_partitioned.errors.TagNotFoundError` if none."""
    return int(_tags_call(manifest, lambda ds: ds.tags.get_version(name), name))


def create_tag(manifest: Manifest, name: str, version: int) -> Tag:
    """Create tag ``name`` for ``__manifest`` version ``version``."""
    check_tag_name(name)
    _tags_call(manifest, lambda ds: ds.tags.create(name, version), name, version)
    made = list_tags(manifest).get(name)
    return made if made is not None else Tag(name, version, None)


def delete_tag(manifest: Manifest, name: str) -> None:
    """Delete tag ``name``; :class:`~lance_partitioned.errors.TagNotFoundError` if none."""
    _tags_call(manifest, lambda ds: ds.tags.delete(name), name)
