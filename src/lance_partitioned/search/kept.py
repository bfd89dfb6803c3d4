"""A count of the search caches' evictions, so what is built on their entries is rebuilt.

The caches of :mod:`.ivfpq`, :mod:`.encode` and :mod:`.flat` drop entries past their byte
caps (least recently used first) or on ``clear()``; each drop calls :func:`dropped`. The
arrangement of a search's leaves kept per scan plan (:mod:`.prepared`) holds those entries:
it is used again only while :func:`generation` is the one it was made at, so nothing it holds
outlives its cache for longer than the next search.

>>> before = generation()
>>> dropped()
>>> generation() == before + 1
True
"""

from __future__ import annotations

import threading

__all__ = ["dropped", "generation"]

_lock = threading.Lock()
_generation = 0


def dropped() -> None:
    """Count one eviction (or clear) in a search cache."""
    global _generation
    with _lock:
        _generation += 1


def generation() -> int:
    """How many evictions the search caches made so far."""
    return _generation
