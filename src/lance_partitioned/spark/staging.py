"""What a Spark write job staged, recorded so that the driver can remove what it does not use.

Spark hands the driver's ``commit``/``abort`` the message of one successful attempt per task
only: a task attempt that staged its rows and then failed (its JVM side failed after the
Python worker returned, or the executor lost it), and the losing attempt of a retried or
speculative task, staged files no message names. So every attempt records the files it
staged in a small JSON journal, ``<root>/_spark_staging/<job id>/<task>-<attempt>-<token>.json``
(the token is random: two runs of one task attempt never share a journal), before it
returns, and names that journal in its message. The commit deletes the files of every
journal no message names, the abort those of every journal, then both delete the job's
journals. A file is never deleted while a leaf version committed since the job started
references it.

Spark does not wait for the Python side of a failed or cancelled attempt: it may finish
staging after the driver cleaned up. So the driver first writes a ``DONE`` marker in the
job's directory, then reads the journals; an attempt writes its journal, then looks for the
marker, and when it is there deletes its own files and journal. Either the driver reads the
journal or the attempt sees the marker (both may: deleting twice is harmless). The marker
(a few bytes per finished job) stays.

A streaming sink's micro-batches (one job each) are named by query and batch id, so a batch
that a restarted query runs again (its first run killed, or aborted) shares the directory
of its earlier runs, and they skip the marker, which would make the new run's attempts
delete what they stage. The new run's attempts write journals of their own (the token), so
the earlier runs' journals are still there when the new run commits or aborts: it deletes
what they list, keeping every file that any version of its leaf references (an earlier run
killed after its ``__manifest`` commit, before it deleted its journals, committed them, at
any time before). The directory is removed with its journals.

What an executor killed while staging leaves before its journal is written stays invisible
in the leaf's ``data/`` directory, unreferenced by any version: for a cleanup that removes
unreferenced files, as :func:`lance_partitioned.maintenance.cleanup.cleanup` does.

>>> journal_name(3, 1, "9f2c")
'3-1-9f2c.json'
>>> parse_journal_name("_spark_staging/job/3-1-9f2c.json")
(3, 1)
>>> parse_journal_name("_spark_staging/job/3-1.json")  # the name before tokens
(3, 1)
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, cast

import lance
import lance.file

from lance_partitioned import errors
from lance_partitioned.manifest import Manifest, local_path, open_leaf

__all__ = [
    "STAGING_DIR",
    "StagingJournal",
    "data_files",
    "delete_unreferenced",
    "journal_name",
    "parse_journal_name",
]

log = logging.getLogger(__name__)

#: The directory, under the namespace root, of the journals of running Spark write jobs.
STAGING_DIR = "_spark_staging"
_DONE = "DONE"


def journal_name(partition_id: int, attempt: int, token: str) -> str:
    """The journal file name of one run of a task attempt."""
    return f"{partition_id}-{attempt}-{token}.json"


def parse_journal_name(path: str) -> tuple[int, int] | None:
    """(task, attempt) of a journal path, or None for another file."""
    name = path.rsplit("/", 1)[-1]
    if not name.endswith(".json"):
        return None
    task, attempt, *_token = name[: -len(".json")].split("-", 2)
    try:
        return int(task), int(attempt)
    except ValueError:
        return None


def data_files(fragments: Iterable[Any]) -> set[str]:
    """The data file names (relative to the leaf's ``data/``) of Lance fragment metadata."""
    return {data_file.path for fragment in fragments for data_file in fragment.files}


class StagingJournal:
    """The journals of one job: what each task attempt staged, per leaf location."""

    def __init__(self, manifest: Manifest, job_id: str) -> None:
        self.manifest = manifest
        self.directory = f"{STAGING_DIR}/{job_id}"
        self._session = lance.file.LanceFileSession(
            manifest.root, storage_options=manifest.storage_options or None
        )

    def record(self, partition_id: int, attempt: int, staged: Mapping[str, list[str]]) -> str:
        """Write the journal of one attempt (leaf location -> data file names); returns its
        file name, new for every call."""
        name = journal_name(partition_id, attempt, uuid.uuid4().hex[:12])
        handle, local = tempfile.mkstemp(suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump({"staged": dict(staged)}, out)
            self._session.upload_file(local, f"{self.directory}/{name}")
        finally:
            os.unlink(local)
        return name

    def paths(self) -> list[str]:
        """The journal paths of the job (relative to the root)."""
        try:
            found = self._session.list(self.directory)
        except (OSError, ValueError):
            return []
        return sorted(p for p in found if parse_journal_name(p) is not None)

    def finish(self) -> None:
        """Mark the job finished (committed or aborted), before reading its journals."""
        handle, local = tempfile.mkstemp()
        os.close(handle)
        try:
            self._session.upload_file(local, f"{self.directory}/{_DONE}")
        finally:
            os.unlink(local)

    def done(self) -> bool:
        """Whether the driver has finished the job (an attempt's files are then unused)."""
        try:
            return bool(self._session.contains(f"{self.directory}/{_DONE}"))
        except (OSError, ValueError):
            return False

    def read(self, path: str) -> dict[str, list[str]]:
        """One journal: leaf location -> data file names ({} when unreadable)."""
        handle, local = tempfile.mkstemp(suffix=".json")
        os.close(handle)
        try:
            self._session.download_file(path, local)
            with open(local, encoding="utf-8") as source:
                staged = json.load(source).get("staged", {})
        except (OSError, ValueError, AttributeError) as exc:
            log.warning("cannot read the staging journal %s: %s", path, exc)
            return {}
        finally:
            os.unlink(local)
        return {str(k): [str(n) for n in v] for k, v in staged.items()}

    def clear(self, paths: Iterable[str]) -> None:
        """Delete the given journals."""
        for path in paths:
            try:
                self._session.delete_file(path)
            except (OSError, ValueError) as exc:
                log.warning("could not delete the staging journal %s: %s", path, exc)

    def remove_directory(self) -> None:
        """Remove the job's emptied directory (object stores have none to remove)."""
        root = local_path(self.manifest.root)
        if root is None:
            return
        with contextlib.suppress(OSError):  # not empty, or already gone
            os.rmdir(f"{root}/{self.directory}")


def _referenced_since(uri: str, options: dict[str, str], since: datetime.datetime) -> set[str]:
    """Data files referenced by any version of the leaf committed after ``since``."""
    try:
        dataset = open_leaf(uri, storage_options=options, action="list the versions of a leaf")
    except (errors.TableNotFoundError, errors.StorageError):
        # no dataset: nothing references anything; a leaf with versions it cannot open (an
        # I/O error, a torn manifest) may reference any file: the caller keeps them
        versions = lance.file.LanceFileSession(uri, storage_options=options or None)
        if versions.list("_versions"):
            raise
        return set()
    referenced: set[str] = set()
    for version in dataset.versions():
        committed = cast(datetime.datetime, version["timestamp"])
        if committed >= since:
            at = dataset.checkout_version(int(version["version"]))
            referenced |= data_files(f.metadata for f in at.get_fragments())
    return referenced


def delete_unreferenced(
    manifest: Manifest, location: str, names: Iterable[str], since: datetime.datetime
) -> int:
    """Delete staged data files of a leaf that no leaf version since ``since`` references.

    Returns how many were deleted; when the leaf's versions cannot be read, none are.
    """
    uri = manifest.table_uri(location)
    try:
        unreferenced = set(names) - _referenced_since(uri, manifest.storage_options, since)
    except Exception as exc:  # cannot tell: keep the files (invisible either way)
        log.warning("not deleting staged files of %s: %s", uri, exc)
        return 0
    # Lance's own object store, with the namespace's storage options (endpoint, credentials)
    store = lance.file.LanceFileSession(
        f"{uri}/data", storage_options=manifest.storage_options or None
    )
    deleted = 0
    for name in sorted(unreferenced):
        try:
            store.delete_file(name)
            deleted += 1
        except (OSError, ValueError, RuntimeError) as exc:
            log.warning("could not delete staged file %s/data/%s: %s", uri, name, exc)
    return deleted
