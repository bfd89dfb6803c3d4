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

import os
import stat
from collections.abc import Mapping

import lance
from lance import LanceDataset
from lance.lance import _Session as Session

from lance_partitioned import errors

__all__ = ["file_on_the_way", "open_leaf"]


def _ref_text(version: int | None, branch: str | None, tag: str | None) -> str:
    """Where a table was opened, for a message.

    >>> _ref_text(3, "exp", None), _ref_text(None, None, "t1"), _ref_text(None, None, None)
    (" at version 3 of branch 'exp'", " at tag 't1'", '')
    """
    if tag is not None:
        return f" at tag {tag!r}"
    at = "" if version is None else f" at version {version}"
    if branch is not None:
        return f"{at or ' at the latest version'} of branch {branch!r}"
    return at


def file_on_the_way(uri: str) -> str | None:
    """The local path, ``uri`` itself or one of its parents, that is a file and not a
    directory, which stops a table being there; None when there is none or ``uri`` is on an
    object store. One ``stat`` for a path that exists or does not.

    Lance takes seconds to fail under such a path (it retries); callers fail at once.

    >>> import tempfile
    >>> root = tempfile.mkdtemp()
    >>> file_on_the_way(root + "/ns/__manifest") is None
    True
    >>> _ = open(root + "/ns", "w").close()
    >>> file_on_the_way(root + "/ns/__manifest") == root + "/ns"
    True
    """
    if "://" in uri and not uri.startswith("file://"):
        return None
    path = uri.removeprefix("file://")
    while path:
        try:
            mode = os.stat(path).st_mode
        except NotADirectoryError:  # a parent is a file: find it
            parent = os.path.dirname(path.rstrip("/"))
            if parent == path:
                return None
            path = parent
            continue
        except OSError:  # missing, or the storage refuses: Lance says which
            return None
        return None if stat.S_ISDIR(mode) else path
    return None


def open_leaf(
    uri: str,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    *,
    session: Session | None = None,
    action: str = "open",
    branch: str | None = None,
    tag: str | None = None,
    block_size: int | None = None,
) -> LanceDataset:
    """The Lance table at ``uri``, at ``version`` (None: its latest).

    ``action`` names what the caller does, for the message of a storage failure. A leaf
    that a published-dialect ``__manifest`` row pins to a ref opens at it: ``tag`` (the
    version it names; ``version`` is then ignored), or ``branch`` at ``version`` (None: the
    branch's latest), as the published text's ``read_tag`` / ``read_branch`` +
    ``read_version`` say; never its main branch. ``block_size``: Lance's smallest read, in
    bytes (None: Lance's default, 64 KiB on an object store).

    Raises
    ------
    StorageError
        The storage refused (:class:`~lance_partitioned.errors.PermissionDeniedError` when it
        denied access), naming ``uri`` and ``action``.
    TableNotFoundError
        There is no Lance table at ``uri``, or it has no version ``version`` (on ``branch``),
        or no tag ``tag``, or it cannot be read as one; the message holds Lance's, which is
        the error's cause.

    >>> import tempfile
    >>> open_leaf(tempfile.mkdtemp() + "/nothing")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.TableNotFoundError: cannot open the Lance table at '...'...
    """
    options = dict(storage_options) if storage_options else None
    blocked = file_on_the_way(uri)
    try:
        if blocked is not None:  # what Lance raises there, after seconds of retries
            raise ValueError(
                f"{uri!r}: the path {blocked!r} on the way is a file, not a directory (os error 20)"
            )
        if tag is not None:
            return lance.dataset(
                uri, version=tag, storage_options=options, session=session, block_size=block_size
            )
        if branch is not None:
            main = lance.dataset(
                uri, storage_options=options, session=session, block_size=block_size
            )
            return main.checkout_version((branch, version))
        return lance.dataset(
            uri, version=version, storage_options=options, session=session, block_size=block_size
        )
    except (OSError, ValueError) as exc:
        typed = errors.storage_error(exc, uri, action)
        if typed is not None:
            raise typed from exc
        at = _ref_text(version, branch, tag)
        raise errors.TableNotFoundError(
            f"cannot open the Lance table at {uri!r}{at}: {exc}"
        ) from exc
