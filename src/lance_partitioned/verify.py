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
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.consistency import conform_batch, conform_for_read, leaf_field
from lance_partitioned.maintenance.rollback import (
    Unpublished,
    find_unpublished,
    naming_versions,
    roll_back,
)
from lance_partitioned.manifest import (
    LEAF_NAME,
    MANIFEST_DIR,
    Manifest,
    ManifestEntry,
    local_path,
    open_leaf,
    properties_error,
)
from lance_partitioned.search.definitions import INDICES_KEY
from lance_partitioned.spec.evaluate import evaluate
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.multicolumn import MultiColumn, sources_of
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import FIELD_ID_KEY
from lance_partitioned.spec.sourcepaths import source_values, struct_source_paths

__all__ = ["Orphan", "Problem", "Report", "verify"]

_PARTITION_NAME = re.compile(r"[0-9a-z]{16}")
_SPEC_NAMESPACE = re.compile(r"v([1-9][0-9]*)")
_RUST_LOCATION = re.compile(r",?\s*/[^,()\s]*\.rs:\d+:\d+")
_LOCATION = re.compile(r"[0-9a-f]+_(?P<object_id>.+)")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the namespace.

    Attributes
    ----------
    kind : str
        A stable code: ``metadata``, ``properties``, ``name``, ``parent``, ``location``,
        ``missing_leaf``, ``missing_version``, ``interrupted_write`` (leaf versions above the
        ``read_version`` that no ``__manifest`` version names), ``leaf_ahead`` (leaf versions
        above the ``read_version`` that an older ``__manifest`` version names: the
        ``__manifest`` was rolled back outside the namespace), ``schema``,
        ``partition_value``.
    object_id : str or None
        The ``__manifest`` row at fault (None: the table metadata).
    message : str
        What is wrong and what it means.
    """

    kind: str
    object_id: str | None
    message: str


@dataclass(frozen=True)
class Orphan:
    """A directory under the root that no leaf of the ``__manifest`` version read references."""

    location: str
    bytes: int


@dataclass(frozen=True)
class Report:
    """What :func:`verify` found.

    Attributes
    ----------
    version : int
        The ``__manifest`` version checked.
    leaves : int
        Leaf table rows checked.
    rows_sampled : int
        Leaf rows read to re-apply the partition expressions.
    problems : list of Problem
        Empty when the namespace is healthy.
    orphans : list of Orphan or None
        None when the root is not a local directory (not listed).
    repaired : list of Problem
        With ``repair=True``: the ``interrupted_write`` problems that were repaired (the leaf
        rolled back to its ``read_version``); they are not in ``problems``.
    indexes : list of Problem
        Leaves whose indexes do not match the index definitions (kinds ``index_missing``,
        ``index_column``, ``index_definition``; see :mod:`lance_partitioned.search.verify`):
        findings, not problems (``healthy`` ignores them).
    """

    version: int
    leaves: int
    rows_sampled: int
    problems: list[Problem] = field(default_factory=list)
    orphans: list[Orphan] | None = None
    repaired: list[Problem] = field(default_factory=list)
    indexes: list[Problem] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        """Whether no problem was found (orphans are not problems)."""
        return not self.problems


def lance_message(exc: BaseException) -> str:
    """A Lance error message without the Rust source locations it carries.

    >>> lance_message(ValueError("Not found: a/b, /src/lance-io/src/local.rs:273:40, x"))
    'Not found: a/b, x'
    """
    return _RUST_LOCATION.sub("", str(exc)).strip()


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
        problems.extend(_check_columns(metadata, raw.partition_columns))
    entries = raw.entries
    problems.extend(_check_rows(entries, metadata))
    leaves = [entry for entry in entries if entry.is_table]
    width = max(1, min(threads or manifest.max_workers, len(leaves) or 1))
    sampled = 0
    ahead: list[_Ahead] = []
    with ThreadPoolExecutor(max_workers=width) as pool:
        for found, rows, leaf_ahead in pool.map(
            lambda e: _check_leaf(manifest, e, metadata, sample_rows), leaves
        ):
            problems.extend(found)
            sampled += rows
            if leaf_ahead is not None:
                ahead.append(leaf_ahead)
    repaired: list[Problem] = []
    if ahead:
        problems.extend(_judge_ahead(manifest, raw.version, ahead, repaired if repair else None))
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


# ------------------------------------------------------------------------- manifest rows


def _check_columns(
    metadata: NamespaceMetadata, columns: Mapping[str, pa.DataType]
) -> list[Problem]:
    """The ``__manifest`` has a column of the ``result_type`` of every partition field name."""
    out = []
    for name, dtype in metadata.partition_columns():
        found = columns.get(name)
        if found is None:
            out.append(
                Problem(
                    "metadata", None, f"the __manifest has no column for partition field {name!r}"
                )
            )
        elif found != dtype:
            out.append(
                Problem(
                    "metadata",
                    None,
                    f"the __manifest column {name!r} is {found}, but the partition field's "
                    f"result_type is {dtype}",
                )
            )
    return out


def _spec_of(entry: ManifestEntry, metadata: NamespaceMetadata | None) -> PartitionSpec | None:
    match = _SPEC_NAMESPACE.fullmatch(entry.path[0])
    if match is None or metadata is None:
        return None
    version = int(match.group(1))
    return next((s for s in metadata.specs if s.version == version), None)


def _check_rows(
    entries: Sequence[ManifestEntry], metadata: NamespaceMetadata | None
) -> list[Problem]:
    problems: list[Problem] = []
    by_id = {entry.object_id: entry for entry in entries}
    for object_id, count in sorted(Counter(e.object_id for e in entries).items()):
        if count > 1:
            problems.append(
                Problem("name", object_id, f"object id appears in {count} __manifest rows")
            )
    for entry in sorted(entries, key=lambda e: e.object_id):
        problems.extend(_check_row(entry, by_id, metadata))
    return problems


def _check_row(
    entry: ManifestEntry, by_id: Mapping[str, ManifestEntry], metadata: NamespaceMetadata | None
) -> list[Problem]:
    oid = entry.object_id
    out: list[Problem] = []
    reason = properties_error(entry.metadata)
    if reason is not None:
        out.append(Problem("properties", oid, f"the row's metadata JSON is {reason}"))
    if not (entry.is_table or entry.is_namespace):
        out.append(Problem("name", oid, f"unknown object_type {entry.object_type!r}"))
        return out
    path = entry.path
    if _SPEC_NAMESPACE.fullmatch(path[0]) is None:
        out.append(Problem("name", oid, f"{path[0]!r} is not a spec version namespace (v<N>)"))
        return out
    spec = _spec_of(entry, metadata)
    if metadata is not None and spec is None:
        out.append(Problem("name", oid, f"there is no partition spec {path[0]}"))
        return out
    names = path[1:-1] if entry.is_table else path[1:]
    for name in names:
        if _PARTITION_NAME.fullmatch(name) is None:
            out.append(
                Problem("name", oid, f"partition namespace name {name!r} is not 16 base36 chars")
            )
    if entry.is_table:
        out.extend(_check_leaf_name(entry, spec))
    if len(path) > 1:
        parent = by_id.get("$".join(path[:-1]))
        if parent is None or not parent.is_namespace:
            out.append(
                Problem("parent", oid, f"parent namespace {'$'.join(path[:-1])!r} is missing")
            )
        elif spec is not None:
            out.extend(_check_inherited(entry, parent, spec))
    return out


def _check_leaf_name(entry: ManifestEntry, spec: PartitionSpec | None) -> list[Problem]:
    oid = entry.object_id
    path = entry.path
    out = []
    if path[-1] != LEAF_NAME:
        out.append(Problem("name", oid, f"a leaf table must be named {LEAF_NAME!r}"))
    if spec is not None and len(path) != len(spec.fields) + 2:
        out.append(
            Problem(
                "name",
                oid,
                f"a leaf of v{spec.version} sits under {len(spec.fields)} partition "
                f"level(s), this one under {len(path) - 2}",
            )
        )
    location = entry.location
    if not location:
        out.append(Problem("location", oid, "the leaf has no location"))
    elif "://" not in location and not location.startswith("/"):
        match = _LOCATION.fullmatch(location)
        if match is None or match.group("object_id") != oid:
            out.append(Problem("location", oid, f"location {location!r} is not <hash>_<object_id>"))
    return out


def _check_inherited(
    entry: ManifestEntry, parent: ManifestEntry, spec: PartitionSpec
) -> list[Problem]:
    """The row carries its parent's partition values (levels above the parent's depth)."""
    depth = len(parent.path) - 1  # partition levels the parent namespace stands for
    out = []
    for spec_field in spec.fields[:depth]:
        mine = entry.values.get(spec_field.name)
        theirs = parent.values.get(spec_field.name)
        if mine != theirs:
            out.append(
                Problem(
                    "partition_value",
                    entry.object_id,
                    f"{spec_field.name} is {mine!r} but its parent namespace's is {theirs!r}",
                )
            )
    return out


# ---------------------------------------------------------------------------------- leaves


@dataclass(frozen=True)
class _Ahead:
    """A leaf whose latest version is past its ``read_version``, and the rows it has more."""

    found: Unpublished
    rows: int


def _open(manifest: Manifest, entry: ManifestEntry) -> tuple[Any, list[Problem], _Ahead | None]:
    """The leaf at its read_version (None when it cannot be opened), what is wrong, and the
    versions past its read_version (judged by :func:`_judge_ahead`)."""
    oid = entry.object_id
    uri = manifest.table_uri(entry.location or "")
    options = manifest.storage_options or None
    try:
        latest = open_leaf(uri, storage_options=options, action="verify a leaf")
    except (errors.TableNotFoundError, errors.StorageError) as exc:
        return (
            None,
            [
                Problem(
                    "missing_leaf",
                    oid,
                    f"location {entry.location!r} is not a Lance table: "
                    f"{lance_message(exc.__cause__ or exc)}",
                )
            ],
            None,
        )
    if entry.read_version is None or entry.read_version == latest.version:
        return latest, [], None
    try:
        dataset = open_leaf(uri, entry.read_version, options, action="verify a leaf")
    except (errors.TableNotFoundError, errors.StorageError) as exc:
        return (
            None,
            [
                Problem(
                    "missing_version",
                    oid,
                    f"read_version {entry.read_version} does not open: "
                    f"{lance_message(exc.__cause__ or exc)}",
                )
            ],
            None,
        )
    found = find_unpublished(oid, uri, latest, entry.read_version)
    if found is None:
        return dataset, [], None
    return dataset, [], _Ahead(found, latest.count_rows() - dataset.count_rows())


def _judge_ahead(
    manifest: Manifest, checked: int, ahead: Sequence[_Ahead], repaired: list[Problem] | None
) -> list[Problem]:
    """The problems of leaves past their ``read_version`` in ``__manifest`` version
    ``checked``: versions that no ``__manifest`` version names are an interrupted write
    (rolled back, and added to ``repaired``, when it is a list); versions that an older one
    names mean the ``__manifest`` was rolled back outside the namespace; versions that a
    newer one names were published since ``checked`` was read (not a problem)."""
    named = naming_versions(manifest, [a.found.uri for a in ahead], skip=checked)
    problems = []
    for item in sorted(ahead, key=lambda a: a.found.object_id):
        found, r = item.found, item.found.read_version
        names = {
            version: by
            for version, by in named.get(found.uri, {}).items()
            if version in found.versions
        }
        by = sorted({m for ms in names.values() for m in ms})
        if by and by[0] > checked:
            continue
        if by:
            problems.append(
                Problem(
                    "leaf_ahead",
                    found.object_id,
                    f"the leaf is at version {found.latest}, past its read_version {r} "
                    f"({item.rows:+d} rows), and older __manifest versions {by} name leaf "
                    f"versions {sorted(names)}: the __manifest was rolled back outside the "
                    "namespace; readers of the latest version do not see them, and the next "
                    f"write to this partition rolls the leaf back to version {r}",
                )
            )
            continue
        problem = Problem(
            "interrupted_write",
            found.object_id,
            f"{found.describe()} above its read_version {r} ({item.rows:+d} rows), named by "
            "no __manifest version: an interrupted write (a writer stopped between its leaf "
            "commits and its __manifest commit, or still in progress), or a commit made "
            "outside the namespace. Readers do not see them; `verify --repair`, a cleanup "
            "once they are older than its retention, or the next write to this partition "
            f"rolls the leaf back to version {r}",
        )
        if repaired is None:
            problems.append(problem)
        elif roll_back(found, manifest.storage_options):
            repaired.append(problem)
        else:
            problems.append(
                Problem(
                    problem.kind,
                    problem.object_id,
                    f"{problem.message} (not repaired: the leaf moved meanwhile, a writer is "
                    "at work on it; run verify again)",
                )
            )
    return problems


def _top_level_ids(metadata: NamespaceMetadata) -> dict[int, pa.Field]:
    out = {}
    for f in metadata.schema.arrow_schema:
        raw = (f.metadata or {}).get(FIELD_ID_KEY.encode())
        if raw is not None:
            out[int(raw)] = f
    return out


def _check_leaf(
    manifest: Manifest,
    entry: ManifestEntry,
    metadata: NamespaceMetadata | None,
    sample_rows: int,
) -> tuple[list[Problem], int, _Ahead | None]:
    if not entry.location:
        return [], 0, None
    dataset, problems, ahead = _open(manifest, entry)
    if dataset is None or metadata is None:
        return problems, 0, ahead
    found, sampled = _check_contents(entry, dataset, metadata, sample_rows)
    return problems + found, sampled, ahead


def _check_contents(
    entry: ManifestEntry, dataset: Any, metadata: NamespaceMetadata, sample_rows: int
) -> tuple[list[Problem], int]:
    """The leaf's schema against the namespace's, and a sample of its rows against its
    partition values."""
    problems: list[Problem] = []
    oid = entry.object_id
    leaf = dataset.schema
    read = metadata.schema.read_schema()
    top = _top_level_ids(metadata)
    spec = _spec_of(entry, metadata)
    fields = () if spec is None else spec.fields
    nested = struct_source_paths(metadata.schema, (s for f in fields for s in sources_of(f)))
    spec_fields = [
        f for f in fields if all(s in top or s in nested for s in sources_of(f))
    ]  # (a field over several columns: every one of them)
    needed = list(read)
    for source_id in (s for f in spec_fields for s in sources_of(f)):
        if source_id in nested:
            continue  # a struct child: read with its live struct column
        source = top[source_id]
        if source.name not in {f.name for f in needed}:
            needed.append(source)  # a deprecated source column
    sources = [leaf_field(leaf, target) for target in needed]
    for target, source in zip(needed, sources, strict=True):
        if source is None:
            if not target.nullable:
                problems.append(
                    Problem(
                        "schema", oid, f"the leaf lacks the non-nullable column {target.name!r}"
                    )
                )
            continue
        try:
            conform_for_read(pa.array([], source.type), source, target, 0)
        except errors.CastError as exc:
            problems.append(Problem("schema", oid, f"the leaf's {exc}"))
    if any(p.kind == "schema" for p in problems):
        return problems, 0
    schema = pa.schema(needed)
    scan_columns = sorted({s.name for s in sources if s is not None})
    if not scan_columns:
        return problems, 0
    try:
        table = dataset.to_table(columns=scan_columns, limit=sample_rows)
        batches = [conform_batch(b, sources, schema) for b in table.to_batches()]
    except errors.CastError as exc:
        problems.append(Problem("schema", oid, f"a sampled row does not convert: {exc}"))
        return problems, 0
    sample = pa.Table.from_batches(batches, schema=schema)
    for spec_field in spec_fields:
        columns = [
            source_values(sample, metadata.schema, source_id)
            if source_id in nested
            else sample.column(top[source_id].name)
            for source_id in sources_of(spec_field)
        ]
        found = _check_values(entry, spec_field, columns)
        if found is not None:
            problems.append(found)
    return problems, sample.num_rows


def _check_values(
    entry: ManifestEntry,
    spec_field: PartitionField,
    columns: Sequence[pa.ChunkedArray | pa.Array],
) -> Problem | None:
    """Re-apply the partition expression to sampled source values (``columns``, ``col0``
    first: several for a published field over several columns); compare with the leaf's."""
    if len(columns[0]) == 0:
        return None
    transform = spec_field.transform
    try:
        if isinstance(transform, MultiColumn):
            computed = transform.apply_columns(columns).to_pylist()
        else:
            computed = evaluate(
                spec_field.expression, columns[0], spec_field.result_type
            ).to_pylist()
    except errors.TransformError as exc:
        if isinstance(transform, MultiColumn) and not transform.known_encoding:
            return None  # another client's murmur3 bytes: its buckets cannot be computed
        return Problem("partition_value", entry.object_id, str(exc))
    expected = entry.values.get(spec_field.name)
    wrong = Counter(v for v in computed if v != expected)
    if not wrong:
        return None
    value, _ = wrong.most_common(1)[0]
    return Problem(
        "partition_value",
        entry.object_id,
        f"{sum(wrong.values())} of {len(computed)} sampled rows give {spec_field.name} = "
        f"{value!r} ({spec_field.expression}), but the leaf's partition value is {expected!r}",
    )


# --------------------------------------------------------------------------------- orphans


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
