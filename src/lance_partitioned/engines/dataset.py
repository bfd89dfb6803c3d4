"""A namespace as a ``pyarrow.dataset.Dataset`` that DuckDB (and pyarrow) scan lazily.

DuckDB scans any ``pyarrow.dataset.Dataset`` it finds by name in a query: it calls
``scanner(columns=[...], filter=<pyarrow expression>)`` with the columns the query reads and
the filters it pushes down, then ``to_reader()``. :class:`PartitionedDataset` plans each such
scanner with our pruning (the expression translated by :mod:`.arrow_filter`), reads only the
leaves left and only the columns asked for, and runs the expression again on the batches
when part of it could not be translated. ``pylance``'s ``LanceDataset`` is scanned the same
way (it also subclasses ``pyarrow.dataset.Dataset`` and overrides every method).

>>> import tempfile, duckdb, pyarrow as pa, pyarrow.compute as pc
>>> import lance_partitioned as lp
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("country", pa.string())]),
...     partition_by="country")
>>> _ = ns.write(pa.table({"id": [1, 2, 3], "country": ["US", "FR", "US"]}))
>>> scans = []
>>> manifest = Manifest(ns.uri)
>>> ds = PartitionedDataset(Source(manifest, manifest.snapshot(), on_scan=scans.append))
>>> duckdb.sql("SELECT sum(id) AS s FROM ds WHERE country = 'US'").fetchall()
[(4,)]
>>> [(len(s.tasks), s.columns) for s in scans]
[(1, ('id',))]
>>> ds.to_table(filter=pc.field("id") > 1).num_rows
2
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from lance_partitioned import errors, scan
from lance_partitioned.engines.arrow_filter import translate_arrow
from lance_partitioned.engines.nodes import EXACT_TRUE, Translation
from lance_partitioned.engines.source import EngineScan, Source
from lance_partitioned.expressions import Predicate, and_
from lance_partitioned.manifest import Manifest

__all__ = ["PartitionedDataset", "PartitionedScanner"]

Filter: TypeAlias = "pc.Expression | str | Predicate | None"


class PartitionedDataset(pads.Dataset):  # type: ignore[misc]
    """A partitioned namespace, at one ``__manifest`` version, as a pyarrow dataset.

    Build it with :meth:`PartitionedNamespace.to_pyarrow_dataset
    <lance_partitioned.PartitionedNamespace.to_pyarrow_dataset>`. Every ``filter`` argument
    takes a ``pyarrow.compute.Expression``, or our SQL text or predicate.
    """

    def __init__(self, source: Source, filters: tuple[Filter, ...] = ()) -> None:
        # pyarrow's constructor refuses direct calls; every method used is overridden
        self._source = source
        self._filters = filters

    @property
    def schema(self) -> pa.Schema:
        """The namespace's read schema."""
        return self._source.schema

    def scanner(
        self,
        columns: Sequence[str] | None = None,
        filter: Filter = None,
        batch_size: int | None = None,
        **options: Any,
    ) -> PartitionedScanner:
        """A scanner of ``columns`` (all by default) of the rows matching ``filter``.

        Other pyarrow scan options (``batch_readahead``, ``use_threads``, ...) are accepted
        and ignored: reads run on our own bounded thread pool.
        """
        return PartitionedScanner(self._source, columns, (*self._filters, filter), batch_size)

    def to_table(
        self, columns: Sequence[str] | None = None, filter: Filter = None, **options: Any
    ) -> pa.Table:
        """Read the matching rows into one table."""
        return self.scanner(columns, filter, **options).to_table()

    def to_batches(
        self, columns: Sequence[str] | None = None, filter: Filter = None, **options: Any
    ) -> Iterator[pa.RecordBatch]:
        """Stream the matching rows."""
        return self.scanner(columns, filter, **options).to_batches()

    def head(
        self,
        num_rows: int,
        columns: Sequence[str] | None = None,
        filter: Filter = None,
        **options: Any,
    ) -> pa.Table:
        """The first ``num_rows`` matching rows (leaves read one at a time until enough)."""
        return self.scanner(columns, filter, **options).head(num_rows)

    def count_rows(self, filter: Filter = None, **options: Any) -> int:
        """Matching rows; counted from the ``__manifest`` where partition values decide."""
        return self.scanner([], filter, **options).count_rows()

    def take(
        self,
        indices: Any,
        columns: Sequence[str] | None = None,
        filter: Filter = None,
        **options: Any,
    ) -> pa.Table:
        """The rows at ``indices`` (positions among the matching rows, in scan order)."""
        return self.scanner(columns, filter, **options).take(indices)

    def filter(self, expression: Filter) -> PartitionedDataset:
        """This dataset with ``expression`` applied to every scan."""
        return PartitionedDataset(self._source, (*self._filters, expression))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as what reopens it: the namespace URI, version and filters."""
        source = self._source
        manifest = source.manifest
        state = (manifest.root, manifest.storage_options, source.snapshot.version, source.base)
        return _restore, (*state, source.on_scan, self._filters)

    def __repr__(self) -> str:
        source = self._source
        return f"PartitionedDataset({source.manifest.root!r}, version={source.snapshot.version})"

    def _unsupported(self, name: str) -> NoReturn:
        raise errors.UnsupportedOperationError(
            f"PartitionedDataset.{name} is not supported: read with to_table, to_batches or "
            "scanner, or query the dataset with DuckDB"
        )

    def get_fragments(self, filter: Any = None) -> NoReturn:
        self._unsupported("get_fragments")

    def join(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._unsupported("join")

    def join_asof(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._unsupported("join_asof")

    def sort_by(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._unsupported("sort_by")

    def replace_schema(self, schema: Any) -> NoReturn:
        self._unsupported("replace_schema")

    @property
    def partition_expression(self) -> pc.Expression:
        """Always true: pruning happens inside the scanner."""
        return pc.scalar(True)


class PartitionedScanner(pads.Scanner):  # type: ignore[misc]
    """One planned read of a :class:`PartitionedDataset` (what DuckDB's scan consumes)."""

    def __init__(
        self,
        source: Source,
        columns: Sequence[str] | None,
        filters: Sequence[Filter],
        batch_size: int | None = None,
    ) -> None:
        self._source = source
        self._output = source.output(columns)
        self._batch_size = batch_size
        arrow = [f for f in filters if isinstance(f, pc.Expression)]
        ours = [f for f in filters if f is not None and not isinstance(f, pc.Expression)]
        for f in ours:
            if not isinstance(f, (str, Predicate)):
                raise errors.InvalidInputError(
                    "filter must be a pyarrow.compute.Expression, a SQL string or a "
                    f"Predicate, got {type(f).__name__}"
                )
        self._arrow: pc.Expression | None = None
        for f in arrow:
            self._arrow = f if self._arrow is None else self._arrow & f
        translation = (
            EXACT_TRUE if self._arrow is None else translate_arrow(self._arrow, source.schema)
        )
        extra = [source.bind(f) for f in ours]
        self._translation = Translation(
            and_(translation.predicate, *extra), translation.exact, translation.columns
        )

    # ------------------------------------------------------------------ planning

    def _plan(self, limit: int | None = None) -> EngineScan:
        return self._source.plan("pyarrow", self._translation, self._output, limit)

    def _batches(self, plan: EngineScan) -> Iterator[pa.RecordBatch]:
        output = list(plan.output)
        for batch in self._source.batches(plan, self._batch_size):
            if not plan.exact:
                batch = batch.filter(self._arrow)
            yield batch.select(output)

    # ------------------------------------------------------------------ pyarrow's Scanner

    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of the batches returned."""
        return pa.schema([self._source.schema.field(name) for name in self._output])

    @property
    def dataset_schema(self) -> pa.Schema:
        """The namespace's read schema."""
        return self._source.schema

    def to_reader(self) -> pa.RecordBatchReader:
        """Plan now and stream the batches (what DuckDB reads)."""
        return pa.RecordBatchReader.from_batches(self.projected_schema, self._batches(self._plan()))

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """Plan now and stream the batches."""
        return self._batches(self._plan())

    def to_table(self) -> pa.Table:
        """Plan now and read every batch into one table."""
        plan = self._plan()
        if plan.exact and plan.output:
            schema = self._source.namespace_schema
            return scan.to_table(plan.tasks, schema, list(plan.output))
        return _table(self._batches(plan), self.projected_schema)

    def head(self, num_rows: int) -> pa.Table:
        """The first ``num_rows`` rows."""
        batches: list[pa.RecordBatch] = []
        rows = 0
        for batch in self._batches(self._plan(limit=num_rows)):
            batches.append(batch.slice(0, num_rows - rows))
            rows += batches[-1].num_rows
            if rows >= num_rows:
                break
        return _table(iter(batches), self.projected_schema)

    def count_rows(self) -> int:
        """Rows matching the filter; the ``__manifest`` counts leaves the filter keeps whole."""
        plan = self._plan()
        if plan.exact:
            return scan.count_rows(plan.tasks, self._source.namespace_schema)
        return sum(batch.num_rows for batch in self._batches(plan))

    def take(self, indices: Any) -> pa.Table:
        """The rows at ``indices`` among the scanned rows (reads up to the largest index)."""
        wanted = pa.array(indices, pa.int64())
        if wanted.null_count or (len(wanted) and pc.min(wanted).as_py() < 0):
            raise errors.InvalidInputError("take: indices must be non-negative integers")
        last = pc.max(wanted).as_py() if len(wanted) else -1
        table = self.head(last + 1)
        if last >= table.num_rows:
            raise errors.InvalidInputError(
                f"take: index {last} is out of bounds: the scan has {table.num_rows} rows"
            )
        return table.take(wanted)

    def __reduce__(self) -> NoReturn:
        raise errors.UnsupportedOperationError(
            "a PartitionedScanner cannot be pickled: pickle its PartitionedDataset instead"
        )

    def scan_batches(self) -> NoReturn:
        raise errors.UnsupportedOperationError(
            "PartitionedScanner.scan_batches is not supported (a namespace has no pyarrow "
            "fragments): use to_batches or to_reader"
        )


def _restore(
    uri: str,
    storage_options: dict[str, str],
    version: int,
    base: Predicate,
    on_scan: Any,
    filters: tuple[Filter, ...],
) -> PartitionedDataset:
    """A pickled :class:`PartitionedDataset`, reopened."""
    manifest = Manifest(uri, storage_options)
    source = Source(manifest, manifest.snapshot(version), base, on_scan=on_scan)
    return PartitionedDataset(source, filters)


def _table(batches: Iterator[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    """Batches into a table, keeping row counts when there are no columns."""
    parts = list(batches)
    if schema.names:
        return pa.Table.from_batches(parts, schema=schema)
    rows = sum(b.num_rows for b in parts)
    return pa.table({"_": pa.nulls(rows)}).drop_columns(["_"])
