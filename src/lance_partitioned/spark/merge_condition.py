"""The key columns of a Spark merge's ``on=`` or ``condition=``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from lance_partitioned import errors

__all__ = ["keys_of"]

_EQUALITY = re.compile(r"^\s*(\w+)\.`?(\w+)`?\s*=\s*(\w+)\.`?(\w+)`?\s*$")


def keys_of(on: str | Sequence[str] | None, condition: str | None) -> list[str]:
    """The key columns of ``on``, or of a ``condition`` that ANDs equalities of one column
    on both sides (``"t.id = s.id AND t.day = s.day"``).

    >>> keys_of(None, "t.id = s.id AND target.day = source.day")
    ['id', 'day']
    """
    if (on is None) == (condition is None):
        raise errors.InvalidInputError("merge needs on= (key columns) or condition=, not both")
    if on is not None:
        return [on] if isinstance(on, str) else list(on)
    assert condition is not None
    keys = []
    for part in re.split(r"\s+and\s+", condition.strip(), flags=re.IGNORECASE):
        found = _EQUALITY.match(part)
        if found is None or found.group(2) != found.group(4) or found.group(1) == found.group(3):
            raise errors.InvalidInputError(
                f"merge condition {condition!r}: only equalities of one column in the target "
                "and the source, joined by AND, are supported (like 't.id = s.id'); use on="
            )
        keys.append(found.group(2))
    return keys
