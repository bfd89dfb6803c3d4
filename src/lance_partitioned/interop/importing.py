"""``import_``: copy a source (:mod:`lance_partitioned.interop.sources`) into a partitioned
namespace, streamed and resumable exactly once.

The source's units are read in their stable order and committed in groups (about
``commit_rows`` rows each) through the namespace's one write path: each group is staged
(:func:`lance_partitioned.ingest.stage`) and committed by
:func:`lance_partitioned.dml.commit_staged` with the idempotency parameter ``txn`` = (this
import's application id, units done including the group). The count of units done is so
recorded atomically with their rows, in the same ``__manifest`` commit; the commit's
transaction properties also name the source and its last unit. A rerun of the same import
(same source and destination) reads that count and starts after it: a killed import, run again,
finishes without a row lost or duplicated. The units must keep their order between runs: a
rerun whose source's unit at the recorded position is not the recorded last unit is refused
(the source changed meanwhile: import it into a new namespace).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_partitioned import errors

if TYPE_CHECKING:
    from lance_partitioned.ingest import WriteOptions
    from lance_partitioned.interop.sources import Source, Unit
    from lance_partitioned.spec.partitioning import PartitionField

__all__ = ["ImportProgress", "ImportResult", "app_id", "import_"]

_DETAIL = "lance_partitioned."  # the prefix of an operation's details in the properties

#: Rows committed together by default: a group's rows are staged with bounded memory.
COMMIT_ROWS = 4_000_000


@dataclass(frozen=True)
class ImportProgress:
    """Reported after each batch read and after each commit.

    Attributes
    ----------
    units_done, units_total : int
        Units committed (those of earlier runs included) and in the source.
    rows : int
        Rows read by this run.
    commits : int
        ``__manifest`` commits made by this run.
    """

    units_done: int
    units_total: int
    rows: int
    commits: int


@dataclass(frozen=True)
class ImportResult:
    """What :func:`import_` did.

    Attributes
    ----------
    version : int
        The namespace's ``__manifest`` version after the import.
    rows : int
        Rows imported by this run.
    units : int
        Units in the source.
    units_skipped : int
        Units an earlier run had committed, skipped by this one.
    commits : int
        ``__manifest`` commits of this run (the namespace's creation not counted).
    partition_by : str
        The partition spec the rows were written with (``name = expression`` per field).
    seconds : float
        Wall time.
    """

    version: int
    rows: int
    units: int
    units_skipped: int
    commits: int
    partition_by: str
    seconds: float


def app_id(source: Source) -> str:
    """The idempotency application id of importing ``source``: its format and location.

    >>> from lance_partitioned.interop.sources import Source
    >>> app_id(Source("/data/t", "hive", pa.schema([]), "", []))
    'import-hive-...'
    """
    digest = hashlib.sha1(f"{source.format}:{source.uri}".encode()).hexdigest()[:16]
    return f"import-{source.format}-{digest}"


def import_(
    src: Any,
    dst: str,
    *,
    partition_by: str | Sequence[PartitionField] | None = None,
    format: str | None = None,
    storage_options: Mapping[str, str] | None = None,
    source_options: Mapping[str, str] | None = None,
    progress: Callable[[ImportProgress], None] | None = None,
    commit_rows: int = COMMIT_ROWS,
    write_options: WriteOptions | None = None,
) -> ImportResult:
    """Import ``src`` into the partitioned namespace ``dst`` (created when absent).

    Parameters
    ----------
    src : str or pyiceberg Table
        A Hive-style directory tree of Parquet, CSV or JSON files, a spec-001 layout of
        ``key=value.lance`` leaf datasets, a Lance dataset, a Delta
        table, or an Iceberg table (its metadata JSON file, its table directory or a
        ``pyiceberg.table.Table``).
    dst : str
        The namespace's root directory or object-store URI.
    partition_by : str or list of PartitionField, optional
        The partition spec of a namespace this call creates (default: the source's
        partitioning: its Hive directories, the Delta partition columns, the Iceberg spec
        translated). For an existing namespace it must equal the current spec.
    format : {"hive", "spec001", "lance", "delta", "iceberg", "auto"}, optional
        The source's format (default: detected).
    storage_options, source_options : mapping, optional
        Storage options of the namespace and of the source.
    progress : callable, optional
        Called with an :class:`ImportProgress` after each batch and each commit.
    commit_rows : int
        Units are committed in groups of about this many rows (each unit whole).
    write_options : WriteOptions, optional
        The write's buffers and threads (default: :class:`~lance_partitioned.ingest.WriteOptions`
        with the namespace's ``max_workers``); its ``max_buffer_bytes`` bounds what an import
        holds, whatever the source's size.

    Raises
    ------
    PartitionSpecError
        ``partition_by`` differs from an existing namespace's spec, or the source's
        partitioning has no spec-000 equivalent and none was given.
    UnsupportedOperationError
        A Delta or Iceberg source without the ``interop`` extra installed.

    Examples
    --------
    >>> import tempfile, pyarrow as pa, pyarrow.dataset as ds
    >>> import lance_partitioned as lp
    >>> tree, uri = tempfile.mkdtemp(), tempfile.mkdtemp()
    >>> ds.write_dataset(pa.table({"v": [1, 2, 3], "k": ["a", "b", "a"]}), tree,
    ...     format="parquet", partitioning=["k"], partitioning_flavor="hive")
    >>> result = lp.import_(tree, uri)
    >>> result.rows, result.partition_by
    (3, 'k = col')
    >>> lp.import_(tree, uri).units_skipped  # run again: every unit is already there
    2
    """
    from lance_partitioned.interop.sources import open_source

    if commit_rows < 1:
        raise errors.InvalidInputError(f"commit_rows must be at least 1, not {commit_rows}")
    started = time.perf_counter()
    source = open_source(src, format, source_options)
    ns, spec_text = _namespace(source, dst, partition_by, storage_options)
    result = _run(ns, source, progress, commit_rows, write_options)
    return ImportResult(
        version=result[0],
        rows=result[1],
        units=len(source.units),
        units_skipped=result[2],
        commits=result[3],
        partition_by=spec_text,
        seconds=time.perf_counter() - started,
    )


def _namespace(
    source: Source,
    dst: str,
    partition_by: str | Sequence[PartitionField] | None,
    storage_options: Mapping[str, str] | None,
) -> tuple[Any, str]:
    from lance_partitioned.entry import check_partition_by
    from lance_partitioned.interop.sources import bare_schema
    from lance_partitioned.manifest import Manifest
    from lance_partitioned.namespace import PartitionedNamespace
    from lance_partitioned.writing import plain_schema

    if Manifest(str(dst), dict(storage_options or {})).exists():
        ns = PartitionedNamespace.open(dst, storage_options=storage_options)
        if partition_by is not None:
            check_partition_by(ns, partition_by)
    else:
        if partition_by is None and source.partition_error is not None:
            raise errors.PartitionSpecError(source.partition_error)
        ns = PartitionedNamespace.create(
            dst,
            schema=plain_schema(bare_schema(source.schema)),
            partition_by=source.partition_by if partition_by is None else partition_by,
            storage_options=storage_options,
        )
    fields = ns.current_spec.fields
    return ns, ", ".join(f"{f.name} = {f.expression}" for f in fields)


@dataclass
class _Run:
    """What this run did so far, and how it reports it."""

    total: int
    progress: Callable[[ImportProgress], None] | None
    rows: int = 0  # rows read by this run (committed, plus those of the group being read)
    committed_rows: int = 0
    commits: int = 0

    def report(self, units_done: int) -> None:
        if self.progress is not None:
            self.progress(ImportProgress(units_done, self.total, self.rows, self.commits))


def _run(
    ns: Any,
    source: Source,
    progress: Callable[[ImportProgress], None] | None,
    commit_rows: int,
    write_options: WriteOptions | None = None,
) -> tuple[int, int, int, int]:
    """Commit the units not done yet; (version, rows, units skipped, commits)."""
    from lance_partitioned.consistency import leaf_schema
    from lance_partitioned.dml import commit_staged
    from lance_partitioned.ingest import WriteOptions, stage
    from lance_partitioned.manifest import Manifest, WriterTransactions

    manifest = Manifest(ns.uri, ns.storage_options, max_workers=ns.max_workers)
    options = write_options or WriteOptions(threads=ns.max_workers)
    application = app_id(source)
    run = _Run(len(source.units), progress)
    skipped: int | None = None
    with errors.typed_storage_errors(ns.uri, "import"):
        while True:
            snapshot = manifest.snapshot()
            version = snapshot.version
            done = min(WriterTransactions.version_of(snapshot, application) or 0, run.total)
            if skipped is None:
                skipped = done
                _check_resumed(manifest, source, done)
            if done >= run.total:
                break
            taken: list[Unit] = []
            run.rows = run.committed_rows
            batches = _group(source.units[done:], taken, run, commit_rows, done)
            pending = stage(
                manifest,
                snapshot,
                pa.RecordBatchReader.from_batches(source.schema, batches),
                mode="append",
                target=leaf_schema(snapshot.metadata.schema),
                options=options,
            )
            details = {
                "import_source": source.uri,
                "import_format": source.format,
                "import_units_done": str(done + len(taken)),
                "import_last_unit": taken[-1].id,
            }
            result = commit_staged(
                manifest,
                pending,
                leaf_threads=options.threads,
                txn=(application, done + len(taken)),
                details=details,
            )
            version = result.version
            if not result.skipped:  # else a concurrent run of this import committed them
                run.committed_rows = run.rows
                run.commits += 1
            run.report(done + len(taken))
    return version, run.committed_rows, skipped or 0, run.commits


def _check_resumed(manifest: Any, source: Source, done: int) -> None:
    """A resumed import (``done`` units recorded) whose recorded last unit is not the
    ``done``-th of the source now is refused: the source changed since, and skipping the
    first ``done`` units would lose or duplicate rows. Nothing is checked when the commit
    that recorded it was cleaned up."""
    from lance_partitioned.manifest.versions import list_versions

    if done == 0:
        return
    for info in reversed(list_versions(manifest)):
        props = info.properties
        if props.get(_DETAIL + "import_source") == source.uri and props.get(
            _DETAIL + "import_units_done"
        ) == str(done):
            recorded = props.get(_DETAIL + "import_last_unit")
            if done > len(source.units) or recorded != source.units[done - 1].id:
                now = source.units[done - 1].id if done <= len(source.units) else "nothing"
                raise errors.InvalidInputError(
                    f"the import of {source.uri!r} into {manifest.root!r} recorded {done} "
                    f"units done, the last {recorded!r}, but unit {done} of the source is now "
                    f"{now!r}: the source changed since, and resuming would lose or duplicate "
                    "rows; import it into a new namespace"
                )
            return


def _group(
    units: Sequence[Unit], taken: list[Unit], run: _Run, commit_rows: int, done: int
) -> Iterator[pa.RecordBatch]:
    """The batches of the first units of ``units`` adding up to ``commit_rows`` rows (each
    unit whole, at least one), appended to ``taken`` as they are read."""
    group_rows = 0
    for unit in units:
        taken.append(unit)
        for batch in unit.read():
            group_rows += batch.num_rows
            run.rows += batch.num_rows
            yield batch
            run.report(done + len(taken) - 1)
        if group_rows >= commit_rows:
            return
