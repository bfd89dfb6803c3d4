"""Long-lived thread pools for the per-leaf work of reads and counts.

A count or a read of a few dozen leaves answered by an index takes a few milliseconds of
Lance work; starting a fresh ``ThreadPoolExecutor`` for it (threads started, then joined)
costs as much again on a loaded machine. :func:`leaf_pool` hands out one pool per width,
kept for the life of the process (threads are daemon threads, idle when unused). Work
submitted from a thread of one of these pools gets a fresh pool instead, so a task that
itself fans out never waits on the pool it occupies. A forked child starts without pools.

>>> with leaf_pool(2) as pool:
...     sorted(pool.map(abs, [-2, 1]))
[1, 2]
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor

__all__ = ["leaf_pool"]

_pools: dict[int, ThreadPoolExecutor] = {}
_lock = threading.Lock()
_local = threading.local()


def _mark() -> None:
    _local.inside = True


def _shared(width: int) -> ThreadPoolExecutor:
    with _lock:
        pool = _pools.get(width)
        if pool is None:
            pool = ThreadPoolExecutor(
                max_workers=width, thread_name_prefix="lp-leaves", initializer=_mark
            )
            _pools[width] = pool
        return pool


@contextlib.contextmanager
def leaf_pool(width: int) -> Iterator[Executor]:
    """A pool of ``width`` threads: the shared one, or a fresh one (shut down on exit) when
    called from a thread of a shared pool."""
    if getattr(_local, "inside", False):
        with ThreadPoolExecutor(max_workers=width) as pool:
            yield pool
        return
    yield _shared(width)


def _forget() -> None:  # the parent's threads do not exist in a forked child
    _pools.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)
