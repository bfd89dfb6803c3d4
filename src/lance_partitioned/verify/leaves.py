"""The checks of each leaf: it opens at its ``read_version``, no unpublished version lies past
it, its schema reads as the namespace's, and its sampled rows give its partition values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
from lance_partitioned.manifest import Manifest, ManifestEntry, open_leaf
from lance_partitioned.spec.metadata import NamespaceMetadata
from lance_partitioned.spec.multicolumn import sources_of
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import FIELD_ID_KEY
from lance_partitioned.spec.sourcepaths import source_values, struct_source_paths
from lance_partitioned.verify.report import Problem, lance_message
from lance_partitioned.verify.rows import spec_of
from lance_partitioned.verify.values import Sampled

__all__ = ["Ahead", "LeafChecks", "judge_ahead"]


@dataclass(frozen=True)
class Ahead:
    """A leaf whose latest version is past its ``read_version``, and the rows it has more."""

    found: Unpublished
    rows: int


def _open(manifest: Manifest, entry: ManifestEntry) -> tuple[Any, list[Problem], Ahead | None]:
    """The leaf at its read_version (None when it cannot be opened), what is wrong, and the
    versions past its read_version (judged by :func:`judge_ahead`)."""
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
    return dataset, [], Ahead(found, latest.count_rows() - dataset.count_rows())


def judge_ahead(
    manifest: Manifest, checked: int, ahead: Sequence[Ahead], repaired: list[Problem] | None
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


@dataclass(frozen=True)
class _Reading:
    """How the leaves of one partition spec and one leaf schema are checked and sampled:
    the same for every such leaf, so worked out once per ``verify``."""

    problems: tuple[str, ...]  # the messages of the leaf schema's problems (kind "schema")
    sources: list[pa.Field | None]  # the leaf field read for each field of ``schema``
    schema: pa.Schema  # the sample's schema: the namespace's, and deprecated sources
    columns: list[str] | None  # the leaf columns read (None: every one, no projection)
    spec_fields: list[PartitionField]  # the fields whose sources the sample holds
    nested: dict[int, str]  # their sources that are struct children, by id


class LeafChecks:
    """The checks of the leaves of one namespace version (:meth:`check`), sharing what
    every leaf of one spec and one schema shares (thread-safe: a race computes it twice).

    Parameters
    ----------
    manifest : Manifest
        The namespace.
    metadata : NamespaceMetadata or None
        Its metadata (None when it does not parse: the leaves are only opened).
    sample_rows : int
        Rows read from each leaf to check its values (its first ones).
    """

    def __init__(
        self, manifest: Manifest, metadata: NamespaceMetadata | None, sample_rows: int
    ) -> None:
        self.manifest = manifest
        self.metadata = metadata
        self.sample_rows = sample_rows
        self._top = {} if metadata is None else _top_level_ids(metadata)
        self._readings: dict[tuple[int | None, bytes], _Reading] = {}

    def check(
        self, entry: ManifestEntry, position: int = 0
    ) -> tuple[list[Problem], int, Ahead | None, list[Sampled]]:
        """The problems of the leaf of ``entry`` (the ``position``-th listed), the rows
        sampled, its versions past its ``read_version``, and its sampled source values, whose
        partition values the caller checks (:class:`~lance_partitioned.verify.values.SampleChecks`,
        many leaves at once)."""
        if not entry.location:
            return [], 0, None, []
        dataset, problems, ahead = _open(self.manifest, entry)
        if dataset is None or self.metadata is None:
            return problems, 0, ahead, []
        found, sampled, pending = self._check_contents(self.metadata, entry, dataset, position)
        return problems + found, sampled, ahead, pending

    def _reading(
        self, metadata: NamespaceMetadata, entry: ManifestEntry, leaf: pa.Schema
    ) -> _Reading:
        spec = spec_of(entry, metadata)
        key = (None if spec is None else spec.version, leaf.serialize().to_pybytes())
        known = self._readings.get(key)
        if known is None:
            known = self._readings[key] = _plan_reading(metadata, self._top, spec, leaf)
        return known

    def _check_contents(
        self, metadata: NamespaceMetadata, entry: ManifestEntry, dataset: Any, position: int
    ) -> tuple[list[Problem], int, list[Sampled]]:
        """The leaf's schema against the namespace's, and a sample of its rows: the values
        of each partition field's source columns, to check against its partition values."""
        oid = entry.object_id
        reading = self._reading(metadata, entry, dataset.schema)
        problems = [Problem("schema", oid, message) for message in reading.problems]
        if problems or reading.columns == []:
            return problems, 0, []  # (no column to read)
        try:
            table = dataset.to_table(columns=reading.columns, limit=self.sample_rows)
            batches = [
                conform_batch(b, reading.sources, reading.schema) for b in table.to_batches()
            ]
        except errors.CastError as exc:
            problems.append(Problem("schema", oid, f"a sampled row does not convert: {exc}"))
            return problems, 0, []
        sample = pa.Table.from_batches(batches, schema=reading.schema)
        pending = []
        for index, spec_field in enumerate(reading.spec_fields):
            columns = [
                source_values(sample, metadata.schema, source_id)
                if source_id in reading.nested
                else sample.column(self._top[source_id].name)
                for source_id in sources_of(spec_field)
            ]
            arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
            pending.append(Sampled(position, index, entry, spec_field, arrays))
        return problems, sample.num_rows, pending


def _plan_reading(
    metadata: NamespaceMetadata,
    top: dict[int, pa.Field],
    spec: PartitionSpec | None,
    leaf: pa.Schema,
) -> _Reading:
    """What the leaves of ``spec`` whose schema is ``leaf`` are checked and sampled with."""
    fields = () if spec is None else spec.fields
    nested = struct_source_paths(metadata.schema, (s for f in fields for s in sources_of(f)))
    spec_fields = [
        f for f in fields if all(s in top or s in nested for s in sources_of(f))
    ]  # (a field over several columns: every one of them)
    needed = list(metadata.schema.read_schema())
    for source_id in (s for f in spec_fields for s in sources_of(f)):
        if source_id in nested:
            continue  # a struct child: read with its live struct column
        source = top[source_id]
        if source.name not in {f.name for f in needed}:
            needed.append(source)  # a deprecated source column
    sources = [leaf_field(leaf, target) for target in needed]
    problems: list[str] = []
    for target, source in zip(needed, sources, strict=True):
        if source is None:
            if not target.nullable:
                problems.append(f"the leaf lacks the non-nullable column {target.name!r}")
            continue
        try:
            conform_for_read(pa.array([], source.type), source, target, 0)
        except errors.CastError as exc:
            problems.append(f"the leaf's {exc}")
    scan = sorted({s.name for s in sources if s is not None})
    # every column of the leaf: read without a projection, which Lance plans more slowly
    columns = None if scan and set(scan) == set(leaf.names) else scan
    return _Reading(tuple(problems), sources, pa.schema(needed), columns, spec_fields, nested)
