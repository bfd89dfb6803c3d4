"""The commit protocol: staged leaf data becomes visible in one ``__manifest`` commit.

This is the only module that commits data. The Python API, the Spark driver and the CLI all
hand it a :class:`PendingWrite` (fragments already staged, invisible) and it:

1. reads the latest ``__manifest`` snapshot;
2. commits each touched leaf: a leaf whose row is absent gets an ``Overwrite`` (creating the
   dataset, or replacing an orphan left by a crashed writer); a leaf whose latest version is
   not the manifest's ``read_version`` is first restored to it (the difference is an orphan or
   an in-flight writer that will retry), then gets an ``Append`` or an ``Overwrite``. The first
   attempt does not open the leaf to check: it commits on the manifest's view, and Lance's
   rebase, conflict or "not found" is what sends the next attempt to look;
3. upserts every touched row (new ``read_version``s, new namespace and table rows) in one
   ``merge_insert`` committed as a compare-and-swap on the version read in step 1.

Every manifest commit also rewrites its spec version row (``v<N>``): pylance rebases
concurrent plain inserts, which would duplicate a partition created by two writers at once;
rewriting a shared row turns that into a conflict. On a conflict the protocol re-reads, keeps
the leaf commits whose expected ``read_version`` still holds, redoes the others on the new base
(staged fragments are reusable), and retries with exponential backoff and jitter. A leaf
commit that conflicts after the manifest has moved on does the same rather than retry on its
outdated expectation (two writers restoring a leaf to different versions would keep undoing
each other). Until step 3 succeeds nothing is visible: readers open leaves at the
``read_version`` of the manifest version they read.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import lance
import lance.fragment
import pyarrow as pa
from lance import LanceDataset, LanceOperation
from lance.commit import CommitConflictError

from lance_partitioned import errors
from lance_partitioned.consistency import conform_batch, leaf_field
from lance_partitioned.manifest import (
    DELIMITER,
    NAMESPACE,
    TABLE,
    CommitConflict,
    LeafStats,
    Manifest,
    ManifestSnapshot,
    WriterTransactions,
    rows_table,
    schema_fingerprint,
    spec_namespace_id,
)

__all__ = [
    "Backoff",
    "CommitResult",
    "LeafCommit",
    "LeafWrite",
    "PendingWrite",
    "commit_write",
    "merge_pending",
]

log = logging.getLogger(__name__)

WriteMode = Literal["append", "overwrite", "overwrite_partitions"]
_ABSENT = -1  # expected state of a leaf whose manifest row does not exist
_NULL = -2  # expected state of a leaf whose manifest row has a NULL read_version
_LEAF_ATTEMPTS = 8


@dataclass
class LeafWrite:
    """Staged, uncommitted data for one leaf table.

    Attributes
    ----------
    object_id : str
        The leaf's object id (``v1$<name>…$dataset``).
    location : str
        Where the fragments were staged, relative to the root.
    fragments : list
        ``lance.fragment.FragmentMetadata`` of the staged files.
    rows : int
        Rows in the staged fragments.
    values : dict
        Partition column name to Python value, for this leaf (inherited by its row).
    replace : bool
        The existing leaf has another schema (the namespace schema evolved since it was
        written): the commit rewrites its rows in the new schema and replaces it.
    """

    object_id: str
    location: str
    fragments: list[Any]
    rows: int
    values: dict[str, Any]
    replace: bool = False


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
    skipped: bool = False  # an idempotent write whose transaction was already committed


@dataclass
class _LeafState:
    expected: int  # read_version seen in the manifest (or _ABSENT, _NULL)
    commit: LeafCommit  # what was committed for that expectation


@dataclass(frozen=True)
class LeafCommit:
    """A committed leaf: its new Lance version and its row count at that version."""

    version: int
    num_rows: int


@dataclass
class Backoff:
    """Retry policy of every ``__manifest`` compare-and-swap: ``attempts`` tries, sleeping an
    exponential delay (``base`` doubling up to ``cap`` seconds) with jitter between them.

    The default waits at most about 21 s in all: four writers appending to the same partitions
    of a namespace on S3 at once used up to 8 attempts (``tests/objectstore``).
    """

    attempts: int = 16
    base: float = 0.05
    cap: float = 2.0
    _rng: random.Random = field(default_factory=random.Random)

    def sleep(self, attempt: int) -> None:
        delay = min(self.cap, self.base * 2**attempt)
        time.sleep(delay / 2 + self._rng.uniform(0, delay / 2))


class _StaleSnapshot(Exception):
    """A leaf commit conflicted and the ``__manifest`` moved on since it was read: the leaf's
    expected ``read_version`` may be out of date, so re-read before trying again (two writers
    restoring a leaf to different expected versions would otherwise keep undoing each other)."""


def _expected(snapshot: ManifestSnapshot, object_id: str) -> int:
    if not snapshot.has(object_id):
        return _ABSENT
    read_version = snapshot.read_version(object_id)
    return _NULL if read_version is None else read_version


def _latest_version(uri: str, options: dict[str, str] | None) -> int | None:
    try:
        return int(lance.dataset(uri, storage_options=options).latest_version)
    except ValueError:
        return None


def commit_leaf(
    manifest: Manifest,
    leaf: LeafWrite,
    expected: int,
    *,
    overwrite: bool,
    schema: pa.Schema,
    stale: Callable[[], bool] | None = None,
) -> LeafCommit:
    """Commit one leaf's staged fragments on top of the manifest's view of it.

    Returns the new leaf version and its row count. Retries Lance-level conflicts with other
    leaf writers; after a conflict, raises :class:`_StaleSnapshot` instead when ``stale()``
    says the manifest that ``expected`` was read from is no longer the latest.
    """
    uri = manifest.table_uri(leaf.location)
    options = manifest.storage_options or None
    # The first attempt takes the leaf to be as the manifest says (absent, or at `expected`)
    # without opening it: that is the common case, and opening costs as much as a quarter of
    # a small leaf's commit. Lance reports any difference (a rebase, a conflict, an existing
    # or a missing dataset), and every later attempt reads the leaf's latest version first.
    for attempt in range(_LEAF_ATTEMPTS):
        looked = attempt > 0 or expected == _NULL
        if looked:
            latest = _latest_version(uri, options)
        else:
            latest = None if expected == _ABSENT else expected
        try:
            if expected == _ABSENT:
                # a new leaf, or an orphan directory (crashed writer, or a partition removed by
                # a whole-namespace overwrite): replace whatever is there
                op: Any = LanceOperation.Overwrite(schema, leaf.fragments)
                ds = LanceDataset.commit(
                    uri, op, read_version=latest, storage_options=options, max_retries=0
                )
                return LeafCommit(int(ds.version), int(ds.count_rows()))
            if latest is None:
                raise errors.InternalError(
                    f"leaf table {leaf.object_id!r} is in the __manifest but {uri!r} holds no "
                    "Lance dataset"
                )
            if expected >= 0 and latest != expected:
                log.info("restoring leaf %s from version %d to %d", uri, latest, expected)
                restored = LanceDataset.commit(
                    uri,
                    LanceOperation.Restore(expected),
                    read_version=latest,
                    storage_options=options,
                    max_retries=0,
                )
                latest = restored.version
            if overwrite:
                op = LanceOperation.Overwrite(schema, leaf.fragments)
            elif leaf.replace:
                kept = _upgrade_leaf(uri, latest, schema, options)
                op = LanceOperation.Overwrite(schema, kept + leaf.fragments)
            else:
                op = LanceOperation.Append(leaf.fragments)
            ds = LanceDataset.commit(
                uri, op, read_version=latest, storage_options=options, max_retries=0
            )
            if overwrite or leaf.replace or ds.version == latest + 1:
                return LeafCommit(int(ds.version), int(ds.count_rows()))
            # Lance rebased our Append over a concurrent commit, so this version also holds
            # another writer's rows that its own retry may append again: do not use it. The
            # next attempt restores the leaf to `expected` and appends on top of that.
            log.info("append to %s was rebased to version %d: redoing it", uri, ds.version)
            if stale is not None and stale():
                raise _StaleSnapshot(leaf.object_id)
            if looked:  # else an orphan may be all there is: look before waiting
                Backoff().sleep(attempt)
        except CommitConflictError:
            if stale is not None and stale():
                raise _StaleSnapshot(leaf.object_id) from None
            Backoff().sleep(attempt)
        except OSError:
            # Lance reports a plain "not found" for a version it assumed: a leaf taken to be
            # absent exists (an orphan directory, or another writer created it meanwhile), or
            # one taken to exist does not; look, and retry on top of what is there
            if not looked:
                continue
            if latest is not None or _latest_version(uri, options) is None:
                raise
            Backoff().sleep(attempt)
    raise errors.ConcurrentModificationError(
        f"leaf table {leaf.object_id!r} kept conflicting with concurrent writers "
        f"after {_LEAF_ATTEMPTS} attempts"
    )


def _upgrade_leaf(
    uri: str, version: int, schema: pa.Schema, options: dict[str, str] | None
) -> list[Any]:
    """Rewrite a leaf's rows at ``version`` in the evolved leaf ``schema`` (columns matched by
    field id: renamed ones keep their data, added ones are NULL, promoted ones are cast) as
    uncommitted fragments."""
    dataset = lance.dataset(uri, version=version, storage_options=options)
    sources = [leaf_field(dataset.schema, target) for target in schema]
    reader = pa.RecordBatchReader.from_batches(
        schema, (conform_batch(batch, sources, schema) for batch in dataset.to_batches())
    )
    fragments = lance.fragment.write_fragments(
        reader, uri, schema=schema, mode="overwrite", storage_options=options
    )
    return list(fragments)


def _namespace_row(
    snapshot: ManifestSnapshot, object_id: str, values: Mapping[str, Any]
) -> dict[str, Any]:
    existing = snapshot.row(object_id)
    if existing is not None:
        return existing
    return {"object_id": object_id, "object_type": NAMESPACE, **values}


def _leaf_row(
    snapshot: ManifestSnapshot, leaf: LeafWrite, commit: LeafCommit, fingerprint: str
) -> dict[str, Any]:
    row = snapshot.row(leaf.object_id) or {
        "object_id": leaf.object_id,
        "object_type": TABLE,
        "location": leaf.location,
        **leaf.values,
    }
    stats = LeafStats(commit.version, commit.num_rows, fingerprint)
    return {
        **row,
        "read_version": commit.version,
        "metadata": stats.merge_into(row.get("metadata")),
    }


def _check_location(snapshot: ManifestSnapshot, leaf: LeafWrite) -> None:
    location = snapshot.location(leaf.object_id)
    if location is not None and location != leaf.location:
        raise errors.ConcurrentModificationError(
            f"leaf {leaf.object_id!r} was created at {location!r} by another client while "
            f"this write staged its data at {leaf.location!r}; retry the write"
        )


def commit_write(
    manifest: Manifest,
    pending: PendingWrite,
    *,
    backoff: Backoff | None = None,
    leaf_threads: int = 8,
    on_leaves_committed: Callable[[dict[str, int]], None] | None = None,
    txn: tuple[str, int] | None = None,
) -> CommitResult:
    """Make a pending write visible atomically (see the module docstring).

    ``txn`` = (application id, version) makes the write idempotent: the commit records it,
    and a write whose application id already committed that version (or a later one) does
    nothing (``skipped``). It is checked on every attempt, so a retry after a conflict
    checks the new base.

    Raises :class:`~lance_partitioned.errors.ConcurrentModificationError` when the manifest
    commit keeps losing to concurrent writers after every retry.
    """
    backoff = backoff or Backoff()
    states: dict[str, _LeafState] = {}
    overwrite = pending.mode != "append"
    fingerprint = schema_fingerprint(pending.leaf_schema)
    sentinel = spec_namespace_id(pending.spec_version)
    with ThreadPoolExecutor(max_workers=max(1, leaf_threads)) as pool:
        for attempt in range(backoff.attempts):
            snapshot = manifest.snapshot()
            if not snapshot.has(sentinel):
                raise errors.InternalError(
                    f"spec version namespace {sentinel!r} has no row in the __manifest"
                )
            if txn is not None:
                done = WriterTransactions.version_of(snapshot, txn[0])
                if done is not None and done >= txn[1]:
                    log.info("transaction %s/%d is already committed: skipped", *txn)
                    return CommitResult(snapshot.version, {}, [], attempt + 1, skipped=True)
            todo: list[tuple[LeafWrite, int]] = []
            for leaf in pending.leaves:
                _check_location(snapshot, leaf)
                expected = _expected(snapshot, leaf.object_id)
                state = states.get(leaf.object_id)
                if state is None or state.expected != expected:
                    todo.append((leaf, expected))

            def moved(read: int = snapshot.version) -> bool:
                return manifest.latest_version() != read

            futures = [
                (
                    leaf,
                    expected,
                    pool.submit(
                        commit_leaf,
                        manifest,
                        leaf,
                        expected,
                        overwrite=overwrite,
                        schema=pending.leaf_schema,
                        stale=moved,
                    ),
                )
                for leaf, expected in todo
            ]
            outdated = []
            for leaf, expected, future in futures:
                try:
                    states[leaf.object_id] = _LeafState(expected, future.result())
                except _StaleSnapshot:
                    outdated.append(leaf.object_id)
            if outdated:
                log.info("leaf commit conflicts on attempt %d: re-reading", attempt + 1)
                backoff.sleep(attempt)
                continue
            versions = {oid: state.commit.version for oid, state in states.items()}
            if on_leaves_committed is not None:
                on_leaves_committed(versions)
            rows = [_namespace_row(snapshot, sentinel, {})]
            if txn is not None:
                recorded = WriterTransactions.merge_into(rows[0].get("metadata"), *txn)
                rows[0] = {**rows[0], "metadata": recorded}
            rows += [
                _namespace_row(snapshot, oid, values) for oid, values in pending.namespaces.items()
            ]
            rows += [
                _leaf_row(snapshot, leaf, states[leaf.object_id].commit, fingerprint)
                for leaf in pending.leaves
            ]
            schema = snapshot.rows.schema
            delete_where = (
                f"object_id LIKE '%{DELIMITER}%'" if pending.mode == "overwrite" else None
            )
            try:
                version = manifest.commit_rows(
                    snapshot, rows_table(schema, rows), delete_where=delete_where
                )
            except CommitConflict as exc:
                log.info("manifest commit conflict on attempt %d: %s", attempt + 1, exc)
                backoff.sleep(attempt)
                continue
            created = [
                leaf.object_id
                for leaf in pending.leaves
                if states[leaf.object_id].expected == _ABSENT
            ]
            deleted = 0
            if delete_where is not None:
                kept = {leaf.object_id for leaf in pending.leaves}
                deleted = sum(
                    1 for oid in snapshot.tables.column("object_id").to_pylist() if oid not in kept
                )
            return CommitResult(
                version=version,
                leaf_versions=versions,
                created=created,
                attempts=attempt + 1,
                rows=sum(leaf.rows for leaf in pending.leaves),
                deleted_leaves=deleted,
            )
    raise errors.ConcurrentModificationError(
        f"the __manifest at {manifest.root!r} kept changing under this write: gave up after "
        f"{backoff.attempts} commit attempts (the staged data stays invisible)"
    )


def merge_pending(writes: Sequence[PendingWrite]) -> PendingWrite:
    """Combine the pending writes staged by several workers (Spark tasks) into one.

    Every write must use the same spec version and mode. Leaves with the same object id are
    one leaf: their fragments are concatenated and their rows summed; namespaces are united.
    The leaf schema is the first write's.

    Raises :class:`~lance_partitioned.errors.InternalError` for an empty input, different spec
    versions or modes, or one leaf staged at two locations (the workers read different
    ``__manifest`` versions).

    >>> schema = pa.schema([("n", pa.int64())])
    >>> def task(rows):
    ...     leaf = LeafWrite("v1$a$dataset", "0_v1$a$dataset", [f"frag{rows}"], rows, {"k": 1})
    ...     return PendingWrite(1, schema, [leaf], {"v1$a": {"k": 1}})
    >>> merged = merge_pending([task(2), task(3)])
    >>> [(leaf.rows, leaf.fragments) for leaf in merged.leaves]
    [(5, ['frag2', 'frag3'])]
    """
    if not writes:
        raise errors.InternalError("merge_pending needs at least one pending write")
    first = writes[0]
    leaves: dict[str, LeafWrite] = {}
    namespaces: dict[str, dict[str, Any]] = {}
    for write in writes:
        if (write.spec_version, write.mode) != (first.spec_version, first.mode):
            raise errors.InternalError(
                f"cannot merge a {write.mode!r} write under spec v{write.spec_version} with a "
                f"{first.mode!r} write under spec v{first.spec_version}"
            )
        for object_id, values in write.namespaces.items():
            namespaces.setdefault(object_id, values)
        for leaf in write.leaves:
            seen = leaves.get(leaf.object_id)
            if seen is None:
                leaves[leaf.object_id] = LeafWrite(
                    leaf.object_id,
                    leaf.location,
                    list(leaf.fragments),
                    leaf.rows,
                    leaf.values,
                    leaf.replace,
                )
            elif seen.location != leaf.location:
                raise errors.InternalError(
                    f"leaf {leaf.object_id!r} was staged at {seen.location!r} and at "
                    f"{leaf.location!r}"
                )
            else:
                seen.fragments.extend(leaf.fragments)
                seen.rows += leaf.rows
                seen.replace = seen.replace or leaf.replace
    return PendingWrite(
        spec_version=first.spec_version,
        leaf_schema=first.leaf_schema,
        leaves=list(leaves.values()),
        namespaces=namespaces,
        mode=first.mode,
    )
