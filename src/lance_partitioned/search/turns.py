"""Client threads searching one namespace take turns through its in-memory passes.

A search answered from memory (:mod:`.ivfpq` codes, :mod:`.flat` vectors, the winners'
columns kept by :mod:`.rows`) is about a millisecond of short numpy and Arrow calls, each of
which releases the GIL and takes it back. Two client threads searching at once then hand the
GIL to each other at every such call (each waits for the other's Python step to end before
its own next step), and two threads answer fewer queries per second than one. Inside
:func:`turn` the thread holding the namespace's lock runs its pass alone: its calls take the
GIL back at once, and the other thread waits on the lock, not on the GIL. The passes are
numpy only (no Lance call, no I/O is ever made under the lock): the IVF_PQ pass over the
kept leaves' codes, the small leaves' exact pass, and the read of winners' rows already in
memory (a row missing from a leaf's kept columns, which a fixed leaf version never has, would
be read by Lance there). Lance's own searches and reads (leaves searched by Lance, rows not
kept yet) run outside it, in parallel as before.

A probe on issue 29's largest tenant (one leaf of 233,805 rows, about 1 ms of such calls per
search), two client threads answered about 10% more queries per second taking turns than
contending for the GIL; one thread is unchanged (an uncontended lock).

>>> with turn("/data/ns"):
...     pass
"""

from __future__ import annotations

import threading

__all__ = ["turn"]

_locks: dict[str, threading.Lock] = {}
_create_lock = threading.Lock()


def turn(root: str) -> threading.Lock:
    """The lock of the namespace at ``root`` (one per namespace root in the process)."""
    found = _locks.get(root)
    if found is None:
        with _create_lock:
            found = _locks.setdefault(root, threading.Lock())
    return found
