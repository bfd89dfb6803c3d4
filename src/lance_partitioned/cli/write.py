"""``create`` and ``write``: make a namespace, and stream files into it with progress."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lance_partitioned.cli.app import (
    DebugOpt,
    JsonOpt,
    StorageOpt,
    UsageError,
    app,
    stderr,
    stdout,
    storage_options,
)
from lance_partitioned.cli.model import UriArg, open_namespace, schema_fields, spec_json
from lance_partitioned.cli.render import human_bytes, human_count, print_json

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.dataset as pads


__all__ = ["input_dataset", "parse_schema", "parse_type"]

_SUFFIXES = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
}
FORMATS = ("auto", "parquet", "csv", "json")


# ----------------------------------------------------------------------------- schemas


def parse_type(text: str) -> pa.DataType:
    """A column type: a JsonArrowDataType name (``int64``, ``utf8``) or object, or the type
    as pyarrow prints it (``string``, ``double``, ``timestamp[us, tz=UTC]``,
    ``decimal128(10, 2)``, ``list<string>``).

    >>> parse_type("int64"), parse_type('{"type": "timestamp", "unit": "us", "timezone": "UTC"}')
    (DataType(int64), TimestampType(timestamp[us, tz=UTC]))
    >>> parse_type("timestamp[ms, tz=Europe/Paris]"), parse_type("list<decimal128(10, 2)>")
    (TimestampType(timestamp[ms, tz=Europe/Paris]), ListType(list<item: decimal128(10, 2)>))
    """
    from lance_partitioned.errors import UnknownTypeError
    from lance_partitioned.spec.types import type_from_json

    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            obj = json.loads(stripped)
        except ValueError as exc:
            raise UsageError(f"type {text!r} is not valid JSON: {exc}") from exc
        return type_from_json(obj)
    try:
        return type_from_json({"type": stripped})
    except UnknownTypeError:
        dtype = _pyarrow_type(stripped)
        if dtype is None:
            raise UsageError(
                f"unknown type {text!r}: write a JsonArrowDataType name or object (int64, "
                'utf8, {"type": "timestamp", "unit": "us"}) or the type as pyarrow prints it '
                "(string, double, date32, timestamp[us], timestamp[us, tz=UTC], "
                "decimal128(10, 2), list<string>)"
            ) from None
        return dtype


_TIMESTAMP = re.compile(r"timestamp\[(s|ms|us|ns)(?:,\s*tz=([^\]]+))?\]", re.IGNORECASE)
_DECIMAL = re.compile(r"decimal(32|64|128|256)?\(\s*(\d+)\s*,\s*(-?\d+)\s*\)", re.IGNORECASE)
_LIST = re.compile(r"(large_)?list<(?:item:\s*)?(.+)>", re.IGNORECASE)


def _pyarrow_type(text: str) -> pa.DataType | None:
    """``text`` read the way pyarrow prints types, or None."""
    import pyarrow as pa

    if match := _TIMESTAMP.fullmatch(text):
        unit, zone = match.group(1).lower(), match.group(2)
        try:
            return pa.timestamp(unit, zone.strip() if zone else None)
        except (ValueError, TypeError) as exc:  # an unknown time zone
            raise UsageError(f"type {text!r}: {exc}") from exc
    if match := _DECIMAL.fullmatch(text):
        width, precision, scale = match.group(1) or "128", int(match.group(2)), int(match.group(3))
        factory = {"32": pa.decimal32, "64": pa.decimal64, "128": pa.decimal128}
        try:
            return factory.get(width, pa.decimal256)(precision, scale)
        except ValueError as exc:
            raise UsageError(f"type {text!r}: {exc}") from exc
    if match := _LIST.fullmatch(text):
        item = parse_type(match.group(2))
        return pa.large_list(item) if match.group(1) else pa.list_(item)
    try:
        return pa.type_for_alias(text)
    except (ValueError, KeyError):
        return None


def parse_schema(text: str) -> pa.Schema:
    """``--schema``: a JSON file or JSON text, either a JsonArrowSchema (``{"fields": [...]}``)
    or a map of column name to type (a name or a JsonArrowDataType object); or a Parquet
    file, whose schema is taken.

    >>> parse_schema('{"id": "int64", "country": "utf8"}')
    id: int64
    country: string
    """
    import pyarrow as pa

    from lance_partitioned.spec.types import field_from_json

    source = text.strip()
    if not source.startswith("{"):
        path = Path(source)
        if not path.is_file():
            raise UsageError(f"--schema: no such file {source!r} (and not JSON text)")
        if path.suffix in (".parquet", ".pq"):
            import pyarrow.parquet as pq

            return pq.read_schema(path)
        source = path.read_text(encoding="utf-8")
    try:
        obj = json.loads(source)
    except ValueError as exc:
        raise UsageError(f"--schema is not valid JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise UsageError("--schema must be a JSON object")
    if isinstance(obj.get("fields"), list):
        return pa.schema([field_from_json(f) for f in obj["fields"]])
    fields = []
    for name, spec in obj.items():
        dtype = parse_type(spec) if isinstance(spec, str) else parse_type(json.dumps(spec))
        fields.append(pa.field(name, dtype))
    return pa.schema(fields)


# ----------------------------------------------------------------------------- input


def _files(paths: Sequence[str]) -> list[Path]:
    out: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and not any(part.startswith((".", "_")) for part in p.parts[len(path.parts) :])
            )
            if not found:
                raise UsageError(f"directory {text!r} holds no files")
            out.extend(found)
        elif path.is_file():
            out.append(path)
        else:
            raise UsageError(f"no such file or directory: {text!r}")
    return out


def _format_of(path: Path, chosen: str) -> str:
    if chosen != "auto":
        return chosen
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise UsageError(f"cannot tell the format of {str(path)!r} from its name: pass --format")
    return kind


def _file_format(kind: str, target: pa.Schema) -> pads.FileFormat:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.dataset as pads
    import pyarrow.json as pajson

    plain = {f.name: f.type for f in target if not pa.types.is_nested(f.type)}
    if kind == "csv":
        return pads.CsvFileFormat(
            convert_options=pacsv.ConvertOptions(column_types=plain, strings_can_be_null=True)
        )
    if kind == "json":
        return pads.JsonFileFormat(
            parse_options=pajson.ParseOptions(explicit_schema=pa.schema(plain))
        )
    return pads.ParquetFileFormat()


def input_dataset(paths: Sequence[str], chosen: str, target: pa.Schema) -> pads.Dataset:
    """The input files as one ``pyarrow.dataset`` (schemas unified), columns that the namespace
    knows read with the namespace types (CSV, JSON)."""
    import pyarrow as pa
    import pyarrow.dataset as pads

    files = _files(paths)
    kinds = {path: _format_of(path, chosen) for path in files}
    try:
        known = {f.name: f.type for f in target}
        schemas = []
        for path in files:
            found = pads.dataset(str(path), format=_file_format(kinds[path], target)).schema
            if kinds[path] != "parquet":  # text: read the namespace's columns as its types
                found = pa.schema([pa.field(f.name, known.get(f.name, f.type)) for f in found])
            schemas.append(found)
        schema = pa.unify_schemas(schemas, promote_options="permissive")
        groups: dict[str, list[str]] = {}
        for path in files:
            groups.setdefault(kinds[path], []).append(str(path))
        children = [
            pads.dataset(group, format=_file_format(kind, target), schema=schema)
            for kind, group in groups.items()
        ]
    except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
        raise UsageError(f"cannot read the input files: {exc}") from exc
    return children[0] if len(children) == 1 else pads.dataset(children)


def _known_rows(dataset: pads.Dataset) -> int | None:
    """The row count when it is in file metadata (Parquet only), else None."""
    import pyarrow.dataset as pads

    children = dataset.children if isinstance(dataset, pads.UnionDataset) else [dataset]
    if all(isinstance(c.format, pads.ParquetFileFormat) for c in children):
        return int(dataset.count_rows())
    return None


# ----------------------------------------------------------------------------- progress


def _counting(reader: pa.RecordBatchReader, seen: dict[str, int]) -> pa.RecordBatchReader:
    import pyarrow as pa

    def batches() -> Iterator[pa.RecordBatch]:
        try:
            for batch in reader:
                seen["bytes"] += batch.nbytes
                yield batch
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            raise UsageError(f"cannot read the input files: {exc}") from exc

    return pa.RecordBatchReader.from_batches(reader.schema, batches())


def _check_missing(ns: Any, names: Sequence[str], allow: bool, merge: bool) -> None:
    """Namespace columns the input files lack are an error unless ``--allow-missing-columns``;
    a partition source column among them always is (its partition would be NULL for every
    row). An input column the namespace lacks is left to the write's own error."""
    live = ns.schema.names
    if not merge and any(name not in live for name in names):
        return
    missing = [name for name in live if name not in names]
    if not missing:
        return
    schema = ns.namespace_schema
    sources = {
        schema.name_of(f.source_id).split(".")[0]
        for f in ns.current_spec.fields
        if not schema.is_deprecated(f.source_id)
    }
    unplaced = [name for name in missing if name in sources]
    if unplaced:
        raise UsageError(
            f"the input has no column {', '.join(map(repr, unplaced))}, a partition source "
            "column of the current spec: every row's partition would be NULL. Add the column "
            "to the input files"
        )
    if not allow:
        raise UsageError(
            f"the input has no column {', '.join(map(repr, missing))} of the namespace: pass "
            "--allow-missing-columns to write NULL in them"
        )


@app.command()
def create(
    uri: UriArg,
    schema: Annotated[
        str,
        typer.Option(
            "--schema",
            help='A JSON file or JSON text: {"fields": [...]} (JsonArrowSchema) or '
            '{"column": "type", ...}; or a Parquet file to take the schema of.',
        ),
    ],
    partition_by: Annotated[
        str,
        typer.Option(
            "--partition-by", help='The partition spec, e.g. "year(ts), country, bucket(16, id)".'
        ),
    ],
    exist_ok: Annotated[
        bool, typer.Option("--exist-ok", help="Succeed if the same namespace already exists.")
    ] = False,
    dialect: Annotated[
        str,
        typer.Option(
            "--dialect",
            help="How partition specs are written: spec000 (default) or published "
            "(the text published upstream).",
        ),
    ] = "spec000",
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Create a partitioned namespace with a schema and a first partition spec."""
    from lance_partitioned.namespace import PartitionedNamespace

    arrow = parse_schema(schema)
    ns = PartitionedNamespace.create(
        uri,
        schema=arrow,
        partition_by=partition_by,
        storage_options=storage_options(storage_option),
        exist_ok=exist_ok,
        dialect=dialect,
    )
    spec = spec_json(ns.current_spec, ns.namespace_schema, True)
    if json_output:
        fields = [
            {k: v for k, v in f.items() if k != "depth"} for f in schema_fields(ns.namespace_schema)
        ]
        print_json({"uri": ns.uri, "manifest_version": ns.version, "schema": fields, "spec": spec})
        return
    described = ", ".join(f"{f['name']} = {f['expression']}" for f in spec["fields"])
    stdout().print(
        f"created {ns.uri}: {len(ns.schema)} columns, partition spec v1: "
        f"{described or 'unpartitioned'}"
    )


@app.command()
def write(
    uri: UriArg,
    files: Annotated[list[str], typer.Argument(help="Input files or directories.")],
    mode: Annotated[
        str,
        typer.Option(
            "--mode", metavar="append|overwrite|overwrite_partitions", help="How to write."
        ),
    ] = "append",
    input_format: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="auto|parquet|csv|json",
            help="Input format (auto: from each file's extension; json is JSON lines).",
        ),
    ] = "auto",
    schema_mode: Annotated[
        str | None,
        typer.Option(
            "--schema-mode",
            metavar="merge",
            help="merge: add the input's columns that the namespace lacks (before the write).",
        ),
    ] = None,
    allow_missing_columns: Annotated[
        bool,
        typer.Option(
            "--allow-missing-columns",
            help="Write NULL in the namespace columns the input lacks (never in a partition "
            "source column).",
        ),
    ] = False,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Stream files into the namespace in one atomic commit, with bounded memory."""
    from lance_partitioned.transaction import WRITE_MODES

    if schema_mode not in (None, "merge"):
        raise typer.BadParameter(f"{schema_mode!r} is not merge", param_hint="--schema-mode")
    if mode not in WRITE_MODES:
        raise typer.BadParameter(
            f"{mode!r} is not one of {', '.join(WRITE_MODES)}", param_hint="--mode"
        )
    if input_format not in FORMATS:
        raise typer.BadParameter(
            f"{input_format!r} is not one of {', '.join(FORMATS)}", param_hint="--format"
        )
    ns = open_namespace(uri, storage_option)
    dataset = input_dataset(files, input_format, ns.schema)
    _check_missing(ns, dataset.schema.names, allow_missing_columns, schema_mode == "merge")
    total = _known_rows(dataset)
    seen = {"bytes": 0}
    scanner = dataset.scanner(batch_size=1 << 16, batch_readahead=4, fragment_readahead=1)
    reader = _counting(scanner.to_reader(), seen)
    from lance_partitioned.cli.progress import rows_progress

    started = time.perf_counter()
    with rows_progress(stderr(), disable=json_output) as bar:
        task = bar.add_task("writing", total=total, partitions=0, bytes=0)

        def progress(report: Any) -> None:
            bar.update(
                task, completed=report.rows, partitions=report.partitions, bytes=seen["bytes"]
            )

        result = ns.write(
            reader,
            mode=mode,
            progress=progress,
            schema_mode="merge" if schema_mode == "merge" else None,
        )
        bar.update(
            task, completed=result.rows_written, bytes=seen["bytes"], description="committed"
        )
    seconds = time.perf_counter() - started
    out = {
        "manifest_version": result.version,
        "rows_written": result.rows_written,
        "partitions_created": result.partitions_created,
        "partitions_touched": result.partitions_touched,
        "partitions_removed": result.partitions_removed,
        "attempts": result.attempts,
        "input_files": len(_files(files)),
        "input_bytes": seen["bytes"],
        "seconds": round(seconds, 3),
    }
    if json_output:
        print_json(out)
        return
    rate = human_count(result.rows_written / seconds) if seconds else "0"
    stdout().print(
        f"wrote {human_count(result.rows_written)} rows ({human_bytes(seen['bytes'])} in memory) "
        f"to {result.partitions_touched} partitions ({result.partitions_created} new"
        + (f", {result.partitions_removed} removed" if result.partitions_removed else "")
        + f") in {seconds:.1f} s, {rate} rows/s: __manifest version {result.version}"
    )
