"""Named points in an operation where tests hook an action (a crash, another writer): the
one registry behind :func:`lance_partitioned.transaction.pause_at` and
:func:`lance_partitioned.maintenance.cleanup.on_step`.

>>> points = Hooks("demo point", ("here",))
>>> seen = []
>>> with points.hooked("here", seen.append):
...     points.fire("here", "a"); points.fire("here", "b")
>>> points.fire("here", "c")  # nothing hooked any more
>>> seen
['a', 'b']
>>> with points.hooked("there", print):
...     pass
Traceback (most recent call last):
...
lance_partitioned.errors.InternalError: no demo point 'there'
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from lance_partitioned import errors

__all__ = ["Hooks"]


class Hooks:
    """The actions hooked on each of ``points`` (``kind`` names a point in errors); thread-safe
    to hook and fire."""

    def __init__(self, kind: str, points: Sequence[str]) -> None:
        self.kind = kind
        self.points = tuple(points)
        self._actions: dict[str, list[Callable[..., None]]] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def hooked(self, point: str, action: Callable[..., None]) -> Iterator[None]:
        """``action`` called by each :meth:`fire` of ``point`` while the block runs."""
        if point not in self.points:
            raise errors.InternalError(f"no {self.kind} {point!r}")
        with self._lock:
            self._actions.setdefault(point, []).append(action)
        try:
            yield
        finally:
            with self._lock:
                self._actions[point].remove(action)

    def fire(self, point: str, *args: Any) -> None:
        """Call the actions hooked on ``point`` with ``args`` (none: nothing happens)."""
        actions = self._actions.get(point)
        if actions:
            for action in list(actions):
                action(*args)
