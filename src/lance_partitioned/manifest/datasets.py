"""Opening the Lance tables of a namespace: :func:`open_leaf`, the one place that does.

Every leaf table (and the ``__manifest`` itself) is opened through :func:`open_leaf`, which
maps what Lance raises to one pair of typed errors: a storage failure (permission denied, no
space, a path that is a file) to its :class:`~lance_partitioned.errors.StorageError`
(:func:`~lance_partitioned.errors.storage_error`), anything else (no table there, a version it
does not have, a manifest that does not parse) to
:class:`~lance_partitioned.errors.TableNotFoundError`, with Lance's error as its cause. A
caller that gives the failure a meaning of its own (a leaf the ``__manifest`` lists is
missing: the namespace is corrupt) catches ``TableNotFoundError``.
"""

from __future__ import annotations

from collections.abc import Mapping

import lance
from lance import LanceDataset
from lance.lance import _Session as Session

from lance_partitioned import errors

__all__ = ["open_leaf"]


def open_leaf(
    uri: str,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    *,
    session: Session | None = None,
    action: str = "open",
) -> LanceDataset:
    """The Lance table at ``uri``, at ``version`` (None: its latest).

    ``action`` names what the caller does, for the message of a storage failure.

    Raises
    ------
    StorageError
        The storage refused (:class:`~lance_partitioned.errors.PermissionDeniedError` when it
        denied access), naming ``uri`` and ``action``.
    TableNotFoundError
        There is no Lance table at ``uri``, or it has no version ``version``, or it cannot be
        read as one; the message holds Lance's, which is the error's cause.

    >>> import tempfile
    >>> open_leaf(tempfile.mkdtemp() + "/nothing")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.TableNotFoundError: cannot open the Lance table at '...'...
    """
    try:
        return lance.dataset(
            uri,
            version=version,
            storage_options=dict(storage_options) if storage_options else None,
            session=session,
        )
    except (OSError, ValueError) as exc:
        typed = errors.storage_error(exc, uri, action)
        if typed is not None:
            raise typed from exc
        at = "" if version is None else f" at version {version}"
        raise errors.TableNotFoundError(
            f"cannot open the Lance table at {uri!r}{at}: {exc}"
        ) from exc
