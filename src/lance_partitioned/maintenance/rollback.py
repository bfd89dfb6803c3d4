"""Rolling a leaf back over versions that no ``__manifest`` version names (an interrupted write).

A write commits each leaf first, then the one ``__manifest`` version that names the new leaf
versions (:mod:`lance_partitioned.transaction`). A writer stopped between the two (killed,
crashed, or failing on an exception) leaves leaf versions above the ``read_version`` of the
latest ``__manifest`` version that no ``__manifest`` version names: *unpublished* versions,
invisible to readers (they open a leaf at its ``read_version``). A commit made to the leaf
outside the namespace (pylance's ``write_dataset`` on the leaf directory) looks the same: our
leaf commits record nothing that tells them apart (no Lance transaction properties; the same
``Append``, ``Delete``, ``Update``, ``Overwrite`` and ``Restore`` operations). The next write
to such a leaf restores it to its ``read_version`` (a Lance ``Restore``) before it commits;
:func:`roll_back` does the same for ``verify --repair`` and ``cleanup``, so that the leaf's
latest version has its ``read_version``'s content again and a cleanup can remove the
unpublished versions.

Why a rollback is safe while writers run:

- A Lance ``Restore`` adds a version with the content of an older one and deletes nothing:
  every ``__manifest`` version still reads what it read, and so does a ``__manifest``
  version published after the rollback.
- A writer caught between its leaf commits and its ``__manifest`` commit is not harmed: the
  leaf version it committed still exists, so the ``__manifest`` version it publishes (now,
  or on a retry that reuses that leaf commit) reads its data. The leaf's latest version is
  then the rollback's, above the new ``read_version``; the next write to the leaf restores it
  to that ``read_version``, as for any orphan (``commit_leaf`` restores a leaf whose latest
  version is not the one the ``__manifest`` names), and so does a later rollback.
- Lance does not check a ``Restore`` against concurrent commits, so :func:`roll_back` first
  checks that the leaf is still at the version it was found at; a leaf commit landing in the
  instant between is put under the rollback, and its writer is in the case above.
- Only removing a version could lose a writer's data, and only ``cleanup`` removes: it rolls a
  leaf back only when all its unpublished versions are older than its cutoff (a writer that
  committed them has been stopped for longer than the retention, which ``cleanup`` already
  assumes of every writer), and re-reads the latest ``__manifest`` version after a rollback
  so that a version published meanwhile stays.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from lance import LanceDataset, LanceOperation
from lance.commit import CommitConflictError

from lance_partitioned import errors
from lance_partitioned.maintenance.versions import utc
from lance_partitioned.manifest import TABLE, Manifest, open_leaf
from lance_partitioned.runtime.leaf_cache import exclusive
from lance_partitioned.transaction.leaves import restore_leaf

__all__ = ["Unpublished", "find_unpublished", "naming_versions", "roll_back"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Unpublished:
    """A leaf whose latest version is above its ``read_version`` with other content.

    Attributes
    ----------
    object_id : str
        The leaf's object id.
    uri : str
        The leaf table.
    read_version : int
        Its ``read_version`` in the latest ``__manifest`` version read.
    latest : int
        Its latest Lance version.
    newest : datetime
        When the newest of the versions above ``read_version`` was committed (UTC).
    """

    object_id: str
    uri: str
    read_version: int
    latest: int
    newest: dt.datetime

    @property
    def versions(self) -> range:
        """The leaf versions above ``read_version`` (some may have been removed).

        >>> now = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
        >>> list(Unpublished("v1$a$dataset", "/ns/0_v1$a$dataset", 3, 5, now).versions)
        [4, 5]
        """
        return range(self.read_version + 1, self.latest + 1)

    def describe(self) -> str:
        """``leaf version 4`` or ``leaf versions 4 to 6``.

        >>> now = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
        >>> Unpublished("v1$a$dataset", "/x", 3, 6, now).describe()
        'leaf versions 4 to 6'
        """
        first, last = self.versions[0], self.versions[-1]
        return f"leaf version {last}" if first == last else f"leaf versions {first} to {last}"


def _restored_to(dataset: LanceDataset, version: int) -> bool:
    """Whether the latest version of ``dataset`` is a Lance ``Restore`` of ``version``: it
    then has that version's content (a rollback, or a writer stopped after its restore)."""
    try:
        # exclusive: pylance holds the object while it reads, and it may be the leaf cache's
        transaction = exclusive(dataset).read_transaction(dataset.version)
    except (OSError, ValueError):
        return False
    operation = getattr(transaction, "operation", None)
    return isinstance(operation, LanceOperation.Restore) and operation.version == version


def find_unpublished(
    object_id: str,
    uri: str,
    dataset: LanceDataset,
    read_version: int,
    times: Mapping[int, dt.datetime] | None = None,
) -> Unpublished | None:
    """The versions of the leaf ``dataset`` (opened at its latest version) above
    ``read_version``, when its latest version does not have ``read_version``'s content.

    ``times`` maps the leaf's versions to their commit times (read from ``dataset`` when
    None). Whether a ``__manifest`` version names them is for the caller to check.
    """
    latest = int(dataset.version)
    if latest <= read_version or _restored_to(dataset, read_version):
        return None
    if times is None:
        times = {
            int(v["version"]): utc(v["timestamp"])
            for v in dataset.versions()
            if isinstance(v["timestamp"], dt.datetime)
        }
    above = [moment for version, moment in times.items() if version > read_version]
    if not above:  # no time recorded: take them to be new (a cleanup then leaves them)
        above = [dt.datetime.now(dt.timezone.utc)]
    return Unpublished(object_id, uri, read_version, latest, max(above))


def naming_versions(
    manifest: Manifest, uris: Collection[str], skip: int | None = None
) -> dict[str, dict[int, list[int]]]:
    """For each leaf in ``uris``: each of its versions that a ``__manifest`` version names
    as ``read_version``, with the ``__manifest`` versions naming it (all but ``skip``).

    Reads two columns of every ``__manifest`` version that exists; a version removed
    meanwhile (by a cleanup) is skipped.
    """
    options = manifest.storage_options or None
    wanted = set(uris)
    try:
        dataset = open_leaf(
            manifest.uri, storage_options=options, action="list the __manifest versions"
        )
        versions = sorted(int(v["version"]) for v in dataset.versions())
    except (OSError, ValueError, errors.TableNotFoundError) as exc:
        typed = errors.storage_error(exc, manifest.root, "list the __manifest versions")
        raise typed or errors.StorageError(
            f"cannot list the __manifest versions at {manifest.root!r}: {exc}"
        ) from exc
    out: dict[str, dict[int, list[int]]] = {}
    for version in versions:
        if version == skip:
            continue
        try:
            at = dataset.checkout_version(version)
            if not {"object_type", "location", "read_version"} <= set(at.schema.names):
                continue
            rows = at.to_table(
                columns=["location", "read_version"], filter=f"object_type = '{TABLE}'"
            )
        except (OSError, ValueError) as exc:
            if "not found" in str(exc).lower():
                continue
            typed = errors.storage_error(exc, manifest.root, "read the __manifest")
            raise typed or errors.StorageError(
                f"cannot read __manifest version {version} at {manifest.root!r}: {exc}"
            ) from exc
        locations = rows.column("location").to_pylist()
        reads = rows.column("read_version").to_pylist()
        for location, read in zip(locations, reads, strict=True):
            if not location or read is None:
                continue
            uri = manifest.table_uri(location)
            if uri in wanted:
                out.setdefault(uri, {}).setdefault(int(read), []).append(version)
    return out


def roll_back(found: Unpublished, storage_options: Mapping[str, str] | None = None) -> bool:
    """Restore the leaf to ``found.read_version`` with a Lance ``Restore``, as the next write
    to it would. Returns False, committing nothing, when the leaf is no longer at
    ``found.latest`` (a writer is at work on it; it restores the leaf itself if it needs to).

    Safe while writers run (see the module docstring): it adds a version, removes none.

    Raises
    ------
    StorageError
        The storage refused to read or commit.
    """
    options = dict(storage_options) if storage_options else None
    try:
        latest = open_leaf(found.uri, storage_options=options, action="roll a leaf back")
        if int(latest.version) != found.latest:
            return False
        restore_leaf(found.uri, found.read_version, latest=found.latest, options=options)
    except CommitConflictError:
        return False
    except (OSError, ValueError, errors.TableNotFoundError) as exc:
        typed = errors.storage_error(exc, found.uri, "roll a leaf back")
        raise typed or errors.StorageError(
            f"cannot roll the leaf table at {found.uri!r} back to version "
            f"{found.read_version}: {exc}"
        ) from exc
    log.info(
        "rolled leaf %s back from version %d to %d (%s named by no __manifest version)",
        found.uri,
        found.latest,
        found.read_version,
        found.describe(),
    )
    return True
