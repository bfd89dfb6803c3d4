"""The steps of a cleanup that tests can hook (a crash or a concurrent writer injected at a
precise point), and the one way a cleanup deletes files: each file passes the ``"file"`` step
before it goes.

>>> seen = []
>>> with on_step("file", seen.append):
...     step("file", "a/b.lance")
>>> seen
['a/b.lance']
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

from lance_partitioned.maintenance.files import Store, StoredFile
from lance_partitioned.maintenance.versions import Removed
from lance_partitioned.runtime.hooks import Hooks

__all__ = ["STEPS", "delete", "on_step", "step"]

STEPS = ("manifest_versions", "leaf_staged", "leaf_versions", "leaf_directory", "journal", "file")
_STEPS = Hooks("cleanup step", STEPS)


@contextlib.contextmanager
def on_step(point: str, action: Callable[[str], None]) -> Iterator[None]:
    """Call ``action(detail)`` each time a cleanup reaches ``point`` while the block runs.

    For tests that inject a crash (an exception from ``action``) or a concurrent writer at a
    precise step. Points: ``"manifest_versions"`` (before removing ``__manifest`` versions),
    ``"leaf_staged"`` and ``"leaf_versions"`` (before removing a leaf's staged files or
    versions; detail: the leaf URI), ``"leaf_directory"`` and ``"journal"`` (before removing
    a directory; detail: its path), ``"file"`` (before deleting one file; detail: its path).

    >>> with on_step("nowhere", print):
    ...     pass
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.InternalError: no cleanup step 'nowhere'
    """
    with _STEPS.hooked(point, action):
        yield


def step(point: str, detail: str) -> None:
    """Run the actions hooked on ``point`` (:func:`on_step`) with ``detail``."""
    _STEPS.fire(point, detail)


def delete(store: Store, files: Sequence[StoredFile], dry_run: bool) -> Removed:
    """Delete ``files`` from ``store``, each after the ``"file"`` step (with ``dry_run``:
    nothing); what they were, counted as one removal. Where the store deletes many files a
    request (:attr:`Store.bulk`), every step runs first, then one deletion of them all (in
    no particular order: callers pass files whose order does not matter)."""
    if not dry_run:
        if store.bulk:
            for stored in files:
                step("file", stored.path)
            store.delete([stored.path for stored in files])
        else:
            for stored in files:
                step("file", stored.path)
                store.delete([stored.path])
    return Removed(len(files), len(files), sum(f.size for f in files))
