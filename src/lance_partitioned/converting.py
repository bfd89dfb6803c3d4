"""The marker of a dialect conversion under way, and how writers honour it (issue 28).

:func:`lance_partitioned.convert.convert` moves each partition value of the ``__manifest`` to
the column the other dialect names, in several commits (pylance 14 cannot change columns, rows
and table metadata in one). Between its ``rows`` commit (every partition row filled in the new
columns) and its ``publish`` commit (the specs in the new dialect), a writer can still create
partition rows. So that none of them holds its values in the old columns only, the conversion
first records the moves in the ``__manifest`` table metadata under :data:`MARKER`, and every
``__manifest`` commit of the transaction protocol fills, in each partition row it writes, the
new column of each moved field from the old one (:func:`fill_moved`). ``publish`` removes the
marker in the same commit that publishes the specs.

Why that suffices: the marker is committed before ``rows``, and ``rows`` rewrites the spec
version rows (``v1``, ``v2``, …), which every protocol commit rewrites too, so any commit
planned on a snapshot older than ``rows`` conflicts with it and is planned again on a newer
snapshot, which has the marker. A marker left by a crashed conversion is harmless (the old
columns stay those the specs name) and is replaced by the next conversion.

>>> moves = {1: [("s", "partition_field_s")]}
>>> fill_moved([{"object_id": "v1$a", "s": "a"}], moves, ["s", "partition_field_s"])
[{'object_id': 'v1$a', 's': 'a', 'partition_field_s': 'a'}]
>>> pending_moves({MARKER: marker_value(moves)}) == moves
True
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

__all__ = ["MARKER", "fill_moved", "marker_value", "named_for", "pending_moves"]

log = logging.getLogger(__name__)

MARKER = "lance_partitioned.converting"
"""The ``__manifest`` table metadata key of a conversion under way: JSON, spec version to the
list of ``[old column, new column]`` of its fields."""

_PARTITION_ROW = re.compile(r"^v([0-9]+)\$")

Moves = Mapping[int, Sequence[tuple[str, str]]]


def marker_value(moves: Moves) -> str:
    """The :data:`MARKER` value recording ``moves`` (only the columns that change)."""
    return json.dumps(
        {str(v): [[a, b] for a, b in pairs if a != b] for v, pairs in sorted(moves.items())},
        sort_keys=True,
    )


def pending_moves(table_metadata: Mapping[str, str]) -> dict[int, list[tuple[str, str]]]:
    """The moves of the conversion under way recorded in ``table_metadata`` (empty: none).

    A value we cannot read is logged and ignored: the specs still name the old columns, so a
    row written without the new ones stays readable (the conversion's ``rows`` step, rerun,
    fills them).
    """
    text = table_metadata.get(MARKER)
    if not text:
        return {}
    try:
        raw = json.loads(text)
        return {
            int(version): [(str(a), str(b)) for a, b in pairs] for version, pairs in raw.items()
        }
    except (ValueError, TypeError, AttributeError) as exc:
        log.warning("ignoring an unreadable %s marker: %s", MARKER, exc)
        return {}


def fill_moved(
    rows: list[dict[str, Any]], moves: Moves, columns: Collection[str]
) -> list[dict[str, Any]]:
    """``rows`` (``__manifest`` rows about to be committed) with, in each partition row
    (``v<N>$...``) of a spec version in ``moves``, every new column of ``columns`` that is
    NULL holding the value of its old column."""
    if not moves:
        return rows
    out = []
    for row in rows:
        match = _PARTITION_ROW.match(str(row.get("object_id", "")))
        pairs = moves.get(int(match[1]), ()) if match else ()
        filled = {
            new: row[old]
            for old, new in pairs
            if new in columns and row.get(new) is None and row.get(old) is not None
        }
        out.append({**row, **filled} if filled else row)
    return out


_PUBLISHED_PREFIX = "partition_field_"


def _other_name(name: str) -> str:
    """The ``__manifest`` column of the same field in the other dialect."""
    if name.startswith(_PUBLISHED_PREFIX):
        return name[len(_PUBLISHED_PREFIX) :]
    return _PUBLISHED_PREFIX + name


def named_for(fields: Sequence[str], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` (partition values by ``__manifest`` column, computed when a write was
    staged) with the value of each field of ``fields`` (the columns of its spec version now)
    that it lacks taken from the field's column in the other dialect: a write staged before a
    conversion and committed after it.

    >>> named_for(["partition_field_s"], {"s": "a"})
    {'s': 'a', 'partition_field_s': 'a'}
    """
    found = {
        name: values[_other_name(name)]
        for name in fields
        if name not in values and _other_name(name) in values
    }
    return {**values, **found} if found else dict(values)
