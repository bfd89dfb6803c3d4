"""Text and JSON renderings shared by the commands: sizes, values, types, JSON output.

>>> human_bytes(0), human_bytes(1536), human_bytes(5 * 1024**3)
('0 B', '1.5 KiB', '5.0 GiB')
>>> value_text(None), value_text(dt.date(2025, 1, 5)), value_text("US")
('NULL', '2025-01-05', 'US')
>>> json_value(dt.datetime(2025, 1, 5, 10, tzinfo=dt.timezone.utc))
'2025-01-05T10:00:00+00:00'
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when used: `--help` imports neither pyarrow nor rich's tables
    import pyarrow as pa
    from rich.table import Table

__all__ = [
    "bar",
    "human_bytes",
    "human_count",
    "json_value",
    "print_json",
    "table",
    "type_text",
    "value_text",
]

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def human_bytes(size: int | float) -> str:
    """A byte count in binary units with one decimal."""
    value = float(size)
    for unit in _UNITS:
        if abs(value) < 1024 or unit == _UNITS[-1]:
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def human_count(count: int | float) -> str:
    """A count with thousands separators.

    >>> human_count(1234567)
    '1,234,567'
    """
    return f"{int(count):,}"


def json_value(value: Any) -> Any:
    """A Python value as JSON: dates and times in ISO 8601, decimals and big ints as text,
    bytes as base64, containers recursively."""
    if value is None or isinstance(value, (bool, str, float)):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**53 else str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return str(value)


def value_text(value: Any) -> str:
    """A partition or cell value for a table: NULL, ISO dates, plain text."""
    if value is None:
        return "NULL"
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    return str(value)


def type_text(dtype: pa.DataType) -> str:
    """An Arrow type in the JsonArrowDataType vocabulary of spec 000.

    >>> import pyarrow as pa
    >>> type_text(pa.timestamp("us", "UTC")), type_text(pa.list_(pa.int32()))
    ('timestamp(us, UTC)', 'list<int32>')
    """
    from lance_partitioned.spec.types import type_to_json

    return _json_type_text(type_to_json(dtype))


def _json_type_text(obj: Mapping[str, Any]) -> str:
    name = str(obj["type"])
    fields = obj.get("fields")
    if isinstance(fields, list) and fields:
        inner = ", ".join(_json_type_text(f["type"]) for f in fields)
        if name == "struct":
            inner = ", ".join(f"{f['name']}: {_json_type_text(f['type'])}" for f in fields)
        return f"{name}<{inner}>"
    params = [str(v) for k, v in obj.items() if k != "type" and v is not None]
    return f"{name}({', '.join(params)})" if params else name


def print_json(obj: Any) -> None:
    """Write ``obj`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(json_value(obj), indent=2, ensure_ascii=False) + "\n")


def table(
    title: str | None,
    columns: Sequence[str | tuple[str, str]],
    rows: Sequence[Sequence[str]],
) -> Table:
    """A Rich table; a column given as ``(name, "right")`` is right-aligned."""
    from rich.table import Table

    out = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for column in columns:
        name, justify = (column, "left") if isinstance(column, str) else column
        out.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for row in rows:
        out.add_row(*row)
    return out


def bar(value: float, maximum: float, width: int) -> str:
    """A horizontal bar of ``width`` cells at most, in eighths of a cell.

    >>> bar(1, 2, 4), bar(0, 2, 4), bar(2, 2, 4)
    ('██', '', '████')
    """
    if maximum <= 0 or width <= 0:
        return ""
    eighths = round(8 * width * value / maximum)
    full, rest = divmod(eighths, 8)
    return "█" * full + ("" if rest == 0 else " ▏▎▍▌▋▊▉"[rest])
