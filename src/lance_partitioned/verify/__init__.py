"""``verify``: check a partitioned namespace on disk against spec 000 (an fsck).

What is checked, on one ``__manifest`` version read as stored (:meth:`Manifest.read_raw`, so
a corrupt key is reported instead of failing the read):

- the table metadata: ``schema`` and every ``partition_spec_v<N>`` are valid JSON and valid
  together, and the ``__manifest`` has a column of each partition field's ``result_type``;
  every row's ``metadata`` is a JSON object of strings;
- names: object ids are unique, start with the ``v<N>`` of an existing spec, partition
  namespace names are 16 base36 characters, a leaf is named ``dataset`` at the depth its spec
  gives, its parent namespaces exist, and its ``location`` follows ``<hash>_<object_id>``;
- partition values: every row carries the values of its parent namespace;
- every leaf's ``location`` exists and opens at its ``read_version``, and no version was
  committed to it past that ``read_version``: versions that no ``__manifest`` version names
  are an *interrupted write* (a writer stopped between its leaf commits and its ``__manifest``
  commit, or a commit made outside the namespace), which ``repair=True``, ``cleanup`` and the
  next write to the partition roll back (:mod:`lance_partitioned.maintenance.rollback`); to
  tell them from versions that an older ``__manifest`` version names (``leaf_ahead``: the
  ``__manifest`` was rolled back outside the namespace), a leaf past its ``read_version``
  makes verify read two columns of every ``__manifest`` version;
- every leaf's schema is compatible with the namespace schema (spec 000's read rules), and a
  sample of its rows converts to it;
- the partition expressions, re-applied to the sampled rows, give the leaf's partition values.

``verify(uri, repair=True)`` rolls the leaves of interrupted writes back to their
``read_version`` (a Lance ``Restore``, as the next write would; it removes nothing, so it is
safe while writers run) and lists them in :attr:`Report.repaired` instead of the problems.

When the namespace defines indexes, every leaf is checked to hold them
(:mod:`lance_partitioned.search.verify`): a leaf missing one, or holding one of that name on
another column, is listed in :attr:`Report.indexes`, not in the problems (reads are right
either way).

Directories under a local root that no leaf of the version read references are reported with
their sizes as *orphans* (leftovers of interrupted writes, or leaves an older ``__manifest``
version still references for time travel): they are not problems.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> root = tempfile.mkdtemp()
>>> ns = lp.PartitionedNamespace.create(
...     root, schema=pa.schema([("id", pa.int64()), ("country", pa.string())]),
...     partition_by="country")
>>> _ = ns.write(pa.table({"id": [1, 2, 3], "country": ["US", "FR", "US"]}))
>>> report = verify(root)
>>> report.healthy, report.leaves, report.rows_sampled
(True, 2, 3)
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

from lance_partitioned import errors
from lance_partitioned.manifest import MANIFEST_DIR, Manifest, local_path
from lance_partitioned.search.definitions import INDICES_KEY
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.verify.leaves import Ahead, LeafChecks, judge_ahead
from lance_partitioned.verify.report import Orphan, Problem, Report, lance_message
from lance_partitioned.verify.rows import check_columns, check_rows
from lance_partitioned.verify.values import SampleChecks

__all__ = ["Orphan", "Problem", "Report", "lance_message", "verify"]


def verify(
    uri: str,
    storage_options: Mapping[str, str] | None = None,
    *,
    sample_rows: int = 1000,
    threads: int | None = None,
    repair: bool = False,
    version: int | str | dt.datetime | None = None,
) -> Report:
    """Check the namespace at ``uri`` (its latest ``__manifest`` version, or ``version``).

    Parameters
    ----------
    uri : str
        The namespace root.
    storage_options : dict, optional
        Passed to every Lance call.
    sample_rows : int
        Rows read from each leaf to check its values (its first ones).
    threads : int, optional
        Leaves checked in parallel (default: :func:`lance_partitioned.runtime.max_workers`,
        which reads ``LANCE_PARTITIONED_MAX_WORKERS``).
    repair : bool
        Roll the leaves of interrupted writes back to their ``read_version`` (see
        :mod:`lance_partitioned.maintenance.rollback`; nothing is removed, so it is safe
        while writers run) and list them in ``Report.repaired``. Nothing else is repaired.
        Only with the latest version.
    version : int, str or datetime, optional
        The ``__manifest`` version to check, as :meth:`PartitionedNamespace.open` takes it (a
        number, a tag, a time). Orphan directories are listed only for the latest version
        (``Report.orphans`` is None otherwise).

    Raises
    ------
    NamespaceNotFoundError
        No ``__manifest`` at ``uri``.
    NotAPartitionedNamespaceError
        A directory namespace without any ``partition_spec_v<N>`` key.
    StorageError
        With ``repair``: the storage refused a rollback.
    """
    from lance_partitioned.history import resolve_version

    manifest = Manifest(uri, storage_options)
    number = resolve_version(manifest, version)
    if repair and number is not None:
        raise errors.InvalidInputError(
            "repair rolls back the leaves of the latest __manifest version: not with a version"
        )
    raw = manifest.read_raw(number)
    problems: list[Problem] = []
    metadata: NamespaceMetadata | None
    try:
        metadata = NamespaceMetadata.from_table_metadata(raw.table_metadata)
    except errors.NotAPartitionedNamespaceError:
        raise errors.NotAPartitionedNamespaceError(
            f"{manifest.root!r} is a directory namespace but not a partitioned namespace: "
            "its __manifest metadata has no partition_spec_v<N> key"
        ) from None
    except errors.InvalidInputError as exc:
        problems.append(Problem("metadata", None, f"the __manifest table metadata: {exc}"))
        metadata = None
    if metadata is not None:
        problems.extend(check_columns(metadata, raw.partition_columns))
    entries = raw.entries
    problems.extend(check_rows(entries, metadata))
    leaves = [entry for entry in entries if entry.is_table]
    width = max(1, min(threads or manifest.max_workers, len(leaves) or 1))
    sampled = 0
    ahead: list[Ahead] = []
    # each leaf's problems, in the order the leaves are listed; the partition values of the
    # samples are checked many leaves at once (verify.values)
    checks = SampleChecks(len(leaves))
    leaf_checks = LeafChecks(manifest, metadata, sample_rows)
    with ThreadPoolExecutor(max_workers=width) as pool:
        for position, (found, rows, leaf_ahead, samples) in enumerate(
            pool.map(lambda pair: leaf_checks.check(pair[1], pair[0]), enumerate(leaves))
        ):
            checks.found[position].extend(found)  # before the ones of its samples
            sampled += rows
            if leaf_ahead is not None:
                ahead.append(leaf_ahead)
            checks.add(samples)
    checks.flush()
    problems.extend(problem for found in checks.found for problem in found)
    repaired: list[Problem] = []
    if ahead:
        problems.extend(judge_ahead(manifest, raw.version, ahead, repaired if repair else None))
    referenced = {entry.location for entry in leaves if entry.location}
    indexes: list[Problem] = []
    if metadata is not None and INDICES_KEY in raw.table_metadata:
        from lance_partitioned.search.verify import check_indexes

        indexes = [Problem(*found) for found in check_indexes(manifest, raw.version, width)]
    return Report(
        version=raw.version,
        leaves=len(leaves),
        rows_sampled=sampled,
        problems=problems,
        orphans=_orphans(manifest.root, referenced) if number is None else None,
        repaired=repaired,
        indexes=indexes,
    )


def _size(path: str) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(folder, name))
            except OSError:
                continue
    return total


def _orphans(root: str, referenced: set[str]) -> list[Orphan] | None:
    local = local_path(root)
    if local is None:
        return None
    out = []
    with os.scandir(local) as entries:
        for item in sorted(entries, key=lambda e: e.name):
            if item.is_dir() and item.name != MANIFEST_DIR and item.name not in referenced:
                out.append(Orphan(item.name, _size(item.path)))
    return out
