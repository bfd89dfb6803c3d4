"""The sources an import reads: each a schema, the source's own partitioning (as the
``partition_by`` shorthand) and an ordered list of :class:`Unit` s, the pieces an import
commits and records (a file of a Hive tree, a data file of a Delta or Iceberg table, a fragment
of a Lance dataset). Each unit is read as a stream of Arrow record batches, one unit at a time.

======================  ==============================================  ====================
Format                  What ``src`` is                                 Unit id
======================  ==============================================  ====================
``hive`` (Parquet,      a directory of ``key=value`` directories        the file's path
CSV, JSON)              (URL-decoded, ``__HIVE_DEFAULT_PARTITION__``    relative to ``src``
                        is NULL)
``spec001``             ``key=value`` directories of ``key=value.lance``  ``<leaf>#fragment-<id>``
                        Lance datasets (:mod:`.layouts`)
``lance``               a Lance dataset                                 ``fragment-<id>``
``delta``               a Delta table (deltalake)                       the data file's path
``iceberg``             an Iceberg table: its metadata JSON file, its   the data file's path
                        table directory, or a pyiceberg ``Table``
======================  ==============================================  ====================
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import pyarrow as pa
import pyarrow.dataset as ds

from lance_partitioned import errors
from lance_partitioned.interop.layouts import is_spec001, leaf_directories, spec001_source
from lance_partitioned.interop.storage import SourceTree
from lance_partitioned.interop.units import Source, Unit, partition_type, quoted

__all__ = [
    "FORMATS",
    "Format",
    "Source",
    "Unit",
    "bare_schema",
    "detect_format",
    "open_source",
    "require",
]

Format = Literal["hive", "spec001", "lance", "delta", "iceberg", "auto"]
FORMATS: tuple[str, ...] = ("hive", "spec001", "lance", "delta", "iceberg", "auto")
_FILE_FORMATS = {".parquet": "parquet", ".csv": "csv", ".json": "json", ".jsonl": "json"}


def require(module: str) -> Any:
    """Import ``module`` of the ``interop`` extra, or raise a typed error naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise errors.UnsupportedOperationError(
            f"{module} is not installed: install the interop extra "
            "(pip install 'lance-partitioned[interop]')"
        ) from exc


def detect_format(src: Any, storage_options: Mapping[str, str] | None = None) -> str:
    """The format of ``src``: a pyiceberg ``Table`` or a ``*.metadata.json`` file or a
    directory with ``metadata/*.metadata.json`` is ``iceberg``, a directory with
    ``_delta_log`` ``delta``, with ``_versions`` ``lance``, with ``key=value.lance`` leaf
    datasets ``spec001``, any other directory ``hive``. An object-store prefix is listed
    with ``storage_options``.

    >>> detect_format("/nowhere/t.metadata.json")
    'iceberg'
    """
    if not isinstance(src, (str, os.PathLike)):
        return "iceberg"
    if os.fspath(src).endswith(".metadata.json"):
        return "iceberg"
    if "://" in os.fspath(src) and not os.fspath(src).startswith("file://"):
        return _detect_remote(SourceTree.open(src, storage_options))
    path = Path(os.fspath(src).removeprefix("file://"))
    if (path / "_delta_log").is_dir():
        return "delta"
    if (path / "_versions").is_dir():
        return "lance"
    if (path / "metadata").is_dir() and any((path / "metadata").glob("*.metadata.json")):
        return "iceberg"
    if path.is_dir():
        return "spec001" if is_spec001(path) else "hive"
    raise errors.InvalidInputError(
        f"cannot tell the format of {str(src)!r} (not a directory): pass format="
        "'hive', 'lance', 'delta' or 'iceberg'"
    )


def _detect_remote(tree: SourceTree) -> str:
    directories = tree.directories()
    top = {d for d in directories if "/" not in d}
    if "_delta_log" in top:
        return "delta"
    if "_versions" in top:
        return "lance"
    if "metadata" in top and any(
        f.startswith("metadata/") and f.endswith(".metadata.json") for f in tree.files()
    ):
        return "iceberg"
    if leaf_directories(directories):
        return "spec001"
    if directories or tree.files():
        return "hive"
    raise errors.TableNotFoundError(f"the import source {tree.uri!r} has no files")


def open_source(
    src: Any, format: str | None = None, storage_options: Mapping[str, str] | None = None
) -> Source:
    """Open ``src`` for import (``format`` None or ``"auto"``: :func:`detect_format`)."""
    if format not in (None, *FORMATS):
        raise errors.InvalidInputError(f"format {format!r} is not one of {list(FORMATS)}")
    kind = detect_format(src, storage_options) if format in (None, "auto") else format
    if kind != "iceberg" and isinstance(src, (str, os.PathLike)):
        local = Path(src)
        if "://" not in str(src) and not local.exists():
            raise errors.TableNotFoundError(f"the import source {str(src)!r} does not exist")
    opener = {
        "hive": _hive,
        "spec001": spec001_source,
        "lance": _lance,
        "delta": _delta,
        "iceberg": _iceberg,
    }[kind]
    return opener(src, dict(storage_options or {}))


# ------------------------------------------------------------------ hive
def _hive(src: Any, storage_options: dict[str, str]) -> Source:
    tree = SourceTree.open(src, storage_options)
    if tree.local:
        suffixes = {p.suffix.lower() for p in Path(tree.base).rglob("*") if p.is_file()}
    else:
        suffixes = {PurePosixPath(f).suffix.lower() for f in tree.files()}
    found = sorted({_FILE_FORMATS[s] for s in suffixes if s in _FILE_FORMATS})
    if len(found) != 1:
        raise errors.InvalidInputError(
            f"a Hive-style tree holds files of one format (.parquet, .csv or .json): "
            f"{tree.uri!r} has {found or 'none'}"
        )
    file_format = found[0]
    try:
        discovered = ds.dataset(
            tree.base,
            filesystem=tree.fs,
            format=file_format,
            partitioning="hive",
            exclude_invalid_files=False,
        )
    except (OSError, pa.ArrowInvalid) as exc:
        raise errors.InvalidInputError(f"cannot read the Hive tree {tree.uri!r}: {exc}") from exc
    keys = [ds.get_partition_keys(f.partition_expression) for f in discovered.get_fragments()]
    names = list(discovered.partitioning.schema.names)
    partition_schema = pa.schema(
        [pa.field(name, partition_type(name, keys, discovered.schema)) for name in names]
    )
    dataset = ds.dataset(
        tree.base,
        filesystem=tree.fs,
        format=file_format,
        partitioning=ds.partitioning(partition_schema, flavor="hive"),
        exclude_invalid_files=False,
    )
    schema = pa.schema(
        [f if f.name not in names else partition_schema.field(f.name) for f in dataset.schema]
    )
    units = [
        Unit(tree.relative(fragment.path), _fragment_reader(fragment, schema))
        for fragment in sorted(dataset.get_fragments(), key=lambda f: f.path)
    ]
    return Source(tree.uri, "hive", schema, ", ".join(quoted(n) for n in names), units)


def _fragment_reader(fragment: Any, schema: pa.Schema) -> Callable[[], Iterator[pa.RecordBatch]]:
    def read() -> Iterator[pa.RecordBatch]:
        for batch in fragment.to_batches(schema=schema):
            if batch.num_rows:
                yield batch

    return read


# ------------------------------------------------------------------ lance
def _lance(src: Any, storage_options: dict[str, str]) -> Source:
    from lance_partitioned.manifest import open_leaf

    uri = os.fspath(src)
    uri = uri if "://" in uri else os.path.abspath(uri)
    dataset = open_leaf(uri, storage_options=storage_options, action="open the dataset to import")
    units = [
        Unit(f"fragment-{fragment.fragment_id}", _lance_reader(fragment))
        for fragment in sorted(dataset.get_fragments(), key=lambda f: f.fragment_id)
    ]
    return Source(uri, "lance", dataset.schema, "", units)


def _lance_reader(fragment: Any) -> Callable[[], Iterator[pa.RecordBatch]]:
    def read() -> Iterator[pa.RecordBatch]:
        yield from fragment.to_batches()

    return read


# ------------------------------------------------------------------ delta
def _delta(src: Any, storage_options: dict[str, str]) -> Source:
    deltalake = require("deltalake")
    uri = os.fspath(src)
    uri = uri if "://" in uri else os.path.abspath(uri)
    try:
        table = deltalake.DeltaTable(uri, storage_options=storage_options or None)
        dataset = table.to_pyarrow_dataset()
    except Exception as exc:  # deltalake's errors: not a table, an unsupported feature
        raise errors.InvalidInputError(f"cannot read the Delta table at {uri!r}: {exc}") from exc
    columns = list(table.metadata().partition_columns)
    schema = dataset.schema
    units = [
        Unit(fragment.path, _fragment_reader(fragment, schema))
        for fragment in sorted(dataset.get_fragments(), key=lambda f: f.path)
    ]
    return Source(uri, "delta", schema, ", ".join(quoted(c) for c in columns), units)


# ------------------------------------------------------------------ iceberg
_PERIODS = {"year": "years", "month": "months", "day": "date", "hour": "hours"}


def _iceberg(src: Any, storage_options: dict[str, str]) -> Source:
    require("pyiceberg")
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow

    table = src if not isinstance(src, (str, os.PathLike)) else _static_table(src, storage_options)
    schema = table.schema()
    arrow_schema = schema_to_pyarrow(schema, include_field_ids=False)
    scan = ArrowScan(table.metadata, table.io, schema, AlwaysTrue())
    tasks = sorted(table.scan().plan_files(), key=lambda t: str(t.file.file_path))

    def reader(task: Any) -> Callable[[], Iterator[pa.RecordBatch]]:
        def read() -> Iterator[pa.RecordBatch]:
            for batch in scan.to_record_batches([task]):
                yield pa.RecordBatch.from_arrays(batch.columns, schema=arrow_schema)

        return read

    units = [Unit(str(task.file.file_path), reader(task)) for task in tasks]
    uri = str(table.metadata_location)
    try:
        partition_by, problem = _iceberg_partition_by(table, schema), None
    except errors.PartitionSpecError as exc:
        partition_by, problem = "", str(exc)
    return Source(uri, "iceberg", arrow_schema, partition_by, units, problem)


def _static_table(src: Any, storage_options: dict[str, str]) -> Any:
    from pyiceberg.table import StaticTable

    text = os.fspath(src)
    path = Path(text)
    if "://" in text:
        location = text
    elif not path.name.endswith(".metadata.json"):
        candidates = sorted(
            (path / "metadata").glob("*.metadata.json"), key=lambda p: p.stat().st_mtime
        )
        if not candidates:
            raise errors.TableNotFoundError(f"no Iceberg metadata JSON file under {str(path)!r}")
        location = str(candidates[-1].absolute())
    else:
        location = str(path.absolute())
    try:
        return StaticTable.from_metadata(location, properties=storage_options)
    except Exception as exc:  # pyiceberg's errors: a missing file, bad JSON
        raise errors.InvalidInputError(
            f"cannot read the Iceberg table {location!r}: {exc}"
        ) from exc


def _iceberg_partition_by(table: Any, schema: Any) -> str:
    """The Iceberg partition spec as our shorthand, field by field: identity as the column,
    year/month/day/hour as our period transforms (the same values), ``bucket[N]`` as
    ``bucket(N, col)`` and ``truncate[W]`` as ``truncate(W, col)``. The import computes every
    row's partition values itself, so the namespace is partitioned as the table was (the same
    number of buckets on the same column, the same widths), with the namespace's own
    functions: a row's bucket is the namespace's hash of it (Iceberg's is
    ``(murmur3(v) & 0x7FFFFFFF) % N``, neither dialect's), an integer's truncation rounds
    toward zero where Iceberg's rounds down. Other transforms (void, unknown ones) need
    ``partition_by``."""
    from pyiceberg.transforms import (
        BucketTransform,
        DayTransform,
        HourTransform,
        IdentityTransform,
        MonthTransform,
        TruncateTransform,
        YearTransform,
    )

    periods: dict[Any, str] = {YearTransform: "year", MonthTransform: "month"}
    periods.update({DayTransform: "day", HourTransform: "hour"})
    parts: list[str] = []
    for field in table.spec().fields:
        column = quoted(schema.find_column_name(field.source_id))
        transform = field.transform
        if isinstance(transform, IdentityTransform):
            parts.append(column)
        elif type(transform) in periods:
            parts.append(f"{_PERIODS[periods[type(transform)]]}({column})")
        elif isinstance(transform, TruncateTransform):
            parts.append(f"truncate({transform.width}, {column})")
        elif isinstance(transform, BucketTransform):
            parts.append(f"bucket({transform.num_buckets}, {column})")
        else:
            raise errors.PartitionSpecError(
                f"the Iceberg partition field {field.name!r} ({transform} of {column}) has no "
                "equivalent here: pass partition_by (--partition-by), e.g. "
                f"'bucket(16, {column})' or '{column}'"
            )
    return ", ".join(parts)


def bare_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` without field or schema metadata (another writer's field ids: a
    namespace assigns its own).

    >>> bare_schema(pa.schema([pa.field("a", pa.int64(), metadata={"lance:field_id": "0"})]))
    a: int64
    """
    return pa.schema([_bare_field(f) for f in schema])


def _bare_field(field: pa.Field) -> pa.Field:
    return pa.field(field.name, _bare_type(field.type), field.nullable)


def _bare_type(dtype: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(dtype):
        return pa.struct([_bare_field(dtype.field(i)) for i in range(dtype.num_fields)])
    if pa.types.is_list(dtype):
        return pa.list_(_bare_field(dtype.value_field))
    if pa.types.is_large_list(dtype):
        return pa.large_list(_bare_field(dtype.value_field))
    if pa.types.is_fixed_size_list(dtype):
        return pa.list_(_bare_field(dtype.value_field), dtype.list_size)
    if pa.types.is_map(dtype):
        return pa.map_(_bare_field(dtype.key_field), _bare_field(dtype.item_field))
    return dtype
