"""What an import reads, whatever the format: a :class:`Source` of :class:`Unit` s, and how
partition values parsed from ``key=value`` paths are typed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

__all__ = ["Source", "Unit", "partition_type", "quoted"]


@dataclass(frozen=True)
class Unit:
    """One piece of a source that an import commits whole: ``id`` is stable across runs."""

    id: str
    read: Callable[[], Iterator[pa.RecordBatch]]


@dataclass(frozen=True)
class Source:
    """A source opened for import.

    Attributes
    ----------
    uri : str
        What was opened (an absolute path for a local source).
    format : str
        ``hive``, ``lance``, ``delta`` or ``iceberg``.
    schema : pyarrow.Schema
        The schema of every unit's batches.
    partition_by : str
        The source's partitioning as the ``partition_by`` shorthand (``""``: none).
    units : list of Unit
        In a stable order (sorted by id).
    partition_error : str, optional
        Why the source's partitioning has no spec-000 equivalent (``partition_by`` is then
        ``""`` and an import needs one given).
    """

    uri: str
    format: str
    schema: pa.Schema
    partition_by: str
    units: list[Unit]
    partition_error: str | None = None


def partition_type(name: str, keys: list[dict[str, Any]], schema: pa.Schema) -> pa.DataType:
    """A partition column's type, from its type in ``schema`` and its values in ``keys``
    (each partition's values by column): int64 for integers, date32 when every value is an
    ISO date, string otherwise.

    >>> partition_type("d", [{"d": "2025-01-31"}, {"d": None}], pa.schema([("d", pa.string())]))
    DataType(date32[day])
    >>> partition_type("n", [{"n": "-7"}], pa.schema([("n", pa.string())]))
    DataType(int64)
    """
    discovered = schema.field(name).type
    if pa.types.is_integer(discovered):
        return pa.int64()
    values = [str(k[name]) for k in keys if k.get(name) is not None]
    if values and all(_is_integer(v) for v in values):
        return pa.int64()
    if values and all(_is_date(v) for v in values):
        return pa.date32()
    return pa.string()


def _is_integer(text: str) -> bool:
    digits = text[1:] if text[:1] == "-" else text
    return digits.isascii() and digits.isdigit() and len(digits) < 19


def _is_date(text: str) -> bool:
    if len(text) != 10:
        return False
    try:
        dt.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def quoted(name: str) -> str:
    """``name`` as the ``partition_by`` shorthand spells it (double-quoted unless a plain
    identifier)."""
    return name if name.isidentifier() else '"' + name.replace('"', '""') + '"'
