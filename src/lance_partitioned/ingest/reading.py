"""The input of a write: anything that speaks Arrow, read as a stream of chunks of bounded
size, and the batches handed to Lance, merged up to a useful size."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Collection, Iterable, Iterator
from typing import Any

import pyarrow as pa

from lance_partitioned import errors

__all__ = ["as_reader", "coalesce", "drop_pandas_index"]


def as_reader(data: Any) -> pa.RecordBatchReader:
    """Anything that speaks Arrow, as a stream of record batches.

    Accepts a ``pyarrow.Table``, ``RecordBatch`` or ``RecordBatchReader``, any object with
    ``__arrow_c_stream__`` (pandas, polars, DuckDB results), a Polars ``LazyFrame`` (run
    with Polars' streaming engine, its batches read one at a time), or an iterable of
    record batches.

    >>> as_reader(pa.table({"a": [1, 2]})).read_all().num_rows
    2
    >>> as_reader([pa.record_batch({"a": [1]}), pa.record_batch({"a": [2]})]).read_all().num_rows
    2
    """
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa.Table):
        return data.to_reader()
    if isinstance(data, pa.RecordBatch):
        return pa.RecordBatchReader.from_batches(data.schema, [data])
    polars = sys.modules.get("polars")  # a LazyFrame comes with polars imported
    if polars is not None and isinstance(data, polars.LazyFrame):
        return _lazy_frame(data)
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader.from_stream(data)
    if isinstance(data, Iterable) and not isinstance(data, (str, bytes, dict)):
        iterator = iter(data)
        try:
            first = next(iterator)
        except StopIteration:
            raise errors.InvalidInputError(
                "cannot write an empty iterable: it has no schema (pass an empty "
                "pyarrow.Table instead)"
            ) from None
        if isinstance(first, pa.Table):
            batches: Iterator[Any] = itertools.chain([first], iterator)
            flat = (
                b for t in batches for b in (t.to_batches() if isinstance(t, pa.Table) else [t])
            )
            return pa.RecordBatchReader.from_batches(first.schema, flat)
        if isinstance(first, pa.RecordBatch):
            return pa.RecordBatchReader.from_batches(
                first.schema, itertools.chain([first], iterator)
            )
    raise errors.InvalidInputError(
        f"cannot write an object of type {type(data).__name__}: pass a pyarrow Table, "
        "RecordBatch or RecordBatchReader, an object with __arrow_c_stream__, or an "
        "iterable of RecordBatches"
    )


def _lazy_frame(frame: Any) -> pa.RecordBatchReader:
    """A Polars ``LazyFrame`` as a stream: ``collect_batches`` runs the query with the
    streaming engine and hands over one ``DataFrame`` at a time (never the whole result)."""
    import polars as pl

    schema = pa.RecordBatchReader.from_stream(pl.DataFrame(schema=frame.collect_schema())).schema

    def batches() -> Iterator[pa.RecordBatch]:
        for part in frame.collect_batches(engine="streaming"):
            for batch in pa.RecordBatchReader.from_stream(part):
                yield batch if batch.schema == schema else batch.cast(schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


def drop_pandas_index(reader: pa.RecordBatchReader, keep: Collection[str]) -> pa.RecordBatchReader:
    """``reader`` without the columns that hold a pandas index (``__index_level_0__``, or a
    named index) when they are not in ``keep`` (the namespace's columns), as deltalake and
    pylance do: a filtered DataFrame's index is not data. An index named like a namespace
    column stays, as that column.

    >>> import pandas as pd
    >>> frame = pd.DataFrame({"a": [1, 2, 3]}).iloc[[0, 2]]
    >>> drop_pandas_index(pa.RecordBatchReader.from_stream(frame), ["a"]).schema.names
    ['a']
    """
    metadata = reader.schema.pandas_metadata
    if not metadata:
        return reader
    names = reader.schema.names
    index = [c for c in metadata.get("index_columns", []) if isinstance(c, str)]
    dropped = {c for c in index if c not in keep and c in names}
    if not dropped:
        return reader
    kept = [i for i, name in enumerate(names) if name not in dropped]
    schema = pa.schema([reader.schema.field(i) for i in kept])
    return pa.RecordBatchReader.from_batches(
        schema, (batch.select(kept) for batch in _batches(reader))
    )


def _chunks(reader: pa.RecordBatchReader, chunk_bytes: int) -> Iterator[pa.Table]:
    """The input in tables of about ``chunk_bytes``: small batches are gathered, big ones cut
    (zero-copy) into even pieces that stay whole chunks, so most chunks are one contiguous
    batch (a gather from several batches first concatenates them)."""
    pending: list[pa.RecordBatch] = []
    size = 0
    for batch in _batches(reader):
        if batch.num_rows == 0:
            continue
        if batch.nbytes >= chunk_bytes:
            if pending:
                yield pa.Table.from_batches(pending, schema=reader.schema)
                pending, size = [], 0
            pieces = -(-batch.nbytes // chunk_bytes)
            step = -(-batch.num_rows // pieces)
            for start in range(0, batch.num_rows, step):
                yield pa.Table.from_batches([batch.slice(start, step)], schema=reader.schema)
            continue
        pending.append(batch)
        size += batch.nbytes
        if size >= chunk_bytes:
            yield pa.Table.from_batches(pending, schema=reader.schema)
            pending, size = [], 0
    if pending:
        yield pa.Table.from_batches(pending, schema=reader.schema)


def _batches(reader: pa.RecordBatchReader) -> Iterator[pa.RecordBatch]:
    """The reader's batches; a batch whose schema differs from the reader's (an iterable of
    batches of several schemas) is a :class:`~lance_partitioned.errors.SchemaMismatchError`."""
    iterator = iter(reader)
    while True:
        try:
            batch = next(iterator)
        except StopIteration:
            return
        except pa.ArrowInvalid as exc:
            if "schema" not in str(exc).lower():
                raise
            raise _mixed(reader.schema, str(exc)) from exc
        if not batch.schema.equals(reader.schema, check_metadata=False):
            raise _mixed(reader.schema, f"a batch has the schema {batch.schema}")
        yield batch


def _mixed(first: pa.Schema, problem: str) -> errors.SchemaMismatchError:
    return errors.SchemaMismatchError(
        f"the record batches of one write must share one schema, the first batch's ({first}); "
        f"{problem}. Cast them to one schema first"
    )


def coalesce(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """``batches`` with runs of small ones merged, lazily, into batches of about ``rows``
    rows; a batch that is big enough on its own passes as it is (no copy).

    >>> small = [pa.record_batch({"a": [i]}) for i in range(5)]
    >>> [b.num_rows for b in coalesce(small, rows=2)]
    [2, 2, 1]
    >>> big = pa.record_batch({"a": list(range(4))})
    >>> [b.num_rows for b in coalesce([small[0], big, small[1]], rows=2)]
    [1, 4, 1]
    """
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows >= rows:
            if pending:
                yield pa.concat_batches(pending)
                pending, count = [], 0
            yield batch
            continue
        pending.append(batch)
        count += batch.num_rows
        if count >= rows:
            yield pa.concat_batches(pending)
            pending, count = [], 0
    if pending:
        yield pa.concat_batches(pending)
