"""``scan``: read rows (pruned on the ``__manifest``) as a table, CSV, JSON lines or Parquet,
or explain the pruning with ``--explain``."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import IO, TYPE_CHECKING, Annotated, Any

import typer

from lance_partitioned.cli.app import DebugOpt, JsonOpt, StorageOpt, UsageError, app, stdout
from lance_partitioned.cli.model import AsOfOpt, UriArg, open_namespace
from lance_partitioned.cli.render import json_value, print_json, table, value_text

if TYPE_CHECKING:
    import pyarrow as pa

    from lance_partitioned.namespace import PartitionedNamespace

__all__ = ["explain"]

FORMATS = ("table", "csv", "json", "parquet")
#: Rows a ``table`` shows when no ``--limit`` is given.
TABLE_ROWS = 20


def explain(
    ns: PartitionedNamespace, filter: str | None, columns: Sequence[str] | None
) -> dict[str, Any]:
    """The pruning of a scan: leaves kept out of the total per spec version with the filter
    the ``__manifest`` is queried with, and the residual filter per kind of leaf."""
    from lance_partitioned.expressions import AlwaysTrue, to_sql
    from lance_partitioned.pruning.fieldnames import field_terms
    from lance_partitioned.scan import bound_filter, manifest_filter

    tasks = ns.plan_scan(filter, columns)
    total = Counter(ns.partitions(sizes=False).column("spec_version").to_pylist())
    kept = Counter(task.spec_version for task in tasks)
    fields = field_terms(ns.partition_specs, ns.namespace_schema)
    predicate = bound_filter(filter, ns.schema, fields)
    specs = []
    for spec in ns.partition_specs:
        projected = manifest_filter(predicate, spec, ns.namespace_schema, fields)
        specs.append(
            {
                "spec_version": spec.version,
                "leaves": total[spec.version],
                "kept": kept[spec.version],
                "manifest_filter": to_sql(projected),
            }
        )
    kinds: Counter[tuple[int, str]] = Counter()
    for task in tasks:
        residual = "" if isinstance(task.residual, AlwaysTrue) else to_sql(task.residual)
        kinds[(task.spec_version, residual)] += 1
    residuals = [
        {"spec_version": version, "leaves": count, "residual": text or None}
        for (version, text), count in sorted(kinds.items())
    ]
    return {
        "filter": filter,
        "filter_bound": to_sql(predicate),
        "leaves": sum(total.values()),
        "kept": len(tasks),
        "specs": specs,
        "residuals": residuals,
    }


def _print_explain(plan: dict[str, Any]) -> None:
    console = stdout()
    console.print(f"filter: {plan['filter_bound']}")
    console.print(f"leaves scanned: {plan['kept']} of {plan['leaves']}")
    console.print()
    rows = [
        [f"v{s['spec_version']}", f"{s['kept']} of {s['leaves']}", s["manifest_filter"]]
        for s in plan["specs"]
    ]
    console.print(
        table("pruning per spec version", ["spec", "leaves kept", "__manifest filter"], rows)
    )
    console.print()
    rows = [
        [
            f"v{r['spec_version']}",
            str(r["leaves"]),
            r["residual"] or "none (the partition values decide)",
        ]
        for r in plan["residuals"]
    ]
    console.print(table("residual filter per leaf kind", ["spec", "leaves", "residual"], rows))


@contextmanager
def _replacing(output: str) -> Iterator[str]:
    """A new file next to ``output`` to write; moved onto ``output`` when the block succeeds,
    removed when it fails (a failed scan leaves no empty or partial file behind)."""
    folder, name = os.path.split(os.path.abspath(output))
    temporary = os.path.join(folder, f".{name}.{os.urandom(4).hex()}.partial")
    try:
        yield temporary
        os.replace(temporary, output)
    except BaseException:
        with suppress(OSError):
            os.remove(temporary)
        raise


@contextmanager
def _sink(output: str | None, binary: bool) -> Iterator[IO[Any]]:
    if output is None:
        yield sys.stdout.buffer if binary else sys.stdout
        return
    if os.path.isdir(output):
        raise UsageError(f"cannot write {output!r}: it is a directory")
    with _replacing(output) as temporary:
        try:  # "x": a new file, with the permissions of any other new file
            handle = open(temporary, "xb" if binary else "x", encoding=None if binary else "utf-8")  # noqa: SIM115
        except OSError as exc:
            raise UsageError(f"cannot write {output!r}: {exc.strerror or exc}") from exc
        with handle:
            yield handle


def _limited(reader: pa.RecordBatchReader, limit: int | None) -> Iterator[pa.RecordBatch]:
    remaining = limit
    for batch in reader:
        if remaining is not None:
            batch = batch.slice(0, remaining)
            remaining -= batch.num_rows
        if batch.num_rows:
            yield batch
        if remaining == 0:
            return


def _write_csv(reader: pa.RecordBatchReader, limit: int | None, output: str | None) -> int:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rows = 0
    with _sink(output, binary=True) as handle:
        try:
            writer = pacsv.CSVWriter(handle, reader.schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise UsageError(
                f"these columns cannot be written as CSV ({exc}): pick columns with --columns, "
                "or use --format json or parquet"
            ) from exc
        with writer:
            for batch in _limited(reader, limit):
                writer.write_batch(batch)
                rows += batch.num_rows
    return rows


def _write_json(reader: pa.RecordBatchReader, limit: int | None, output: str | None) -> int:
    rows = 0
    with _sink(output, binary=False) as handle:
        for batch in _limited(reader, limit):
            for record in batch.to_pylist():
                handle.write(json.dumps(json_value(record), ensure_ascii=False) + "\n")
            rows += batch.num_rows
    return rows


def _write_parquet(reader: pa.RecordBatchReader, limit: int | None, output: str) -> int:
    import pyarrow.parquet as pq

    rows = 0
    if os.path.isdir(output):
        raise UsageError(f"cannot write {output!r}: it is a directory")
    with _replacing(output) as temporary:
        try:
            writer = pq.ParquetWriter(temporary, reader.schema)
        except OSError as exc:
            raise UsageError(f"cannot write {output!r}: {exc}") from exc
        with writer:
            for batch in _limited(reader, limit):
                writer.write_batch(batch)
                rows += batch.num_rows
    return rows


@app.command()
def scan(
    uri: UriArg,
    filter: Annotated[
        str | None,
        typer.Option("--filter", "-f", help="A SQL filter over the namespace columns."),
    ] = None,
    columns: Annotated[
        str | None, typer.Option("--columns", "-c", help="Comma-separated columns to read.")
    ] = None,
    limit: Annotated[int | None, typer.Option("--limit", "-n", min=0, help="Rows at most.")] = None,
    output_format: Annotated[
        str,
        typer.Option("--format", metavar="table|csv|json|parquet", help="json writes JSON lines."),
    ] = "table",
    output: Annotated[
        str | None, typer.Option("--output", "-o", help="Write to this file, not stdout.")
    ] = None,
    show_plan: Annotated[
        bool, typer.Option("--explain", help="Print the pruning instead of rows.")
    ] = False,
    as_of: AsOfOpt = None,
    json_output: JsonOpt = False,
    storage_option: StorageOpt = None,
    debug: DebugOpt = False,
) -> None:
    """Read rows, pruned on the __manifest, as a table, CSV, JSON lines or Parquet."""
    if output_format not in FORMATS:
        raise typer.BadParameter(
            f"{output_format!r} is not one of {', '.join(FORMATS)}", param_hint="--format"
        )
    if json_output and not show_plan:
        output_format = "json"
    if output_format == "parquet" and output is None:
        raise typer.BadParameter("parquet needs a file: add --output FILE", param_hint="--format")
    names = None if columns is None else [c.strip() for c in columns.split(",") if c.strip()]
    ns = open_namespace(uri, storage_option, as_of)
    if show_plan:
        plan = explain(ns, filter, names)
        if json_output:
            print_json(plan)
        else:
            _print_explain(plan)
        return
    if output_format == "table":
        shown = TABLE_ROWS if limit is None else limit
        data = ns.to_table(filter, names, limit=shown + 1)
        rows = [[value_text(v) for v in row.values()] for row in data.slice(0, shown).to_pylist()]
        console = stdout()
        console.print(table(None, data.column_names, rows))
        more = " (more rows exist: raise --limit)" if data.num_rows > shown else ""
        console.print(f"{min(shown, data.num_rows)} rows{more}")
        return
    reader = ns.to_batches(filter, names)
    if output_format == "csv":
        _write_csv(reader, limit, output)
    elif output_format == "json":
        _write_json(reader, limit, output)
    else:
        assert output is not None
        _write_parquet(reader, limit, output)
