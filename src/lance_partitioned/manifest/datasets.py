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


def open_leaf(
    uri: str,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    *,
    session: Session | None = None,
    action: str = "open",
    branch: str | None = None,
    tag: str | None = None,
) -> LanceDataset:
    """The Lance table at ``uri``, at ``version`` (None: its latest).

    ``action`` names what the caller does, for the message of a storage failure. A leaf
    that a published-dialect ``__manifest`` row pins to a ref opens at it: ``tag`` (the
    version it names; ``version`` is then ignored), or ``branch`` at ``version`` (None: the
    branch's latest), as the published text's ``read_tag`` / ``read_branch`` +
    ``read_version`` say; never its main branch.

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
    try:
        if tag is not None:
            return lance.dataset(uri, version=tag, storage_options=options, session=session)
        if branch is not None:
            main = lance.dataset(uri, storage_options=options, session=session)
            return main.checkout_version((branch, version))
        return lance.dataset(uri, version=version, storage_options=options, session=session)
    except (OSError, ValueError) as exc:
        typed = errors.storage_error(exc, uri, action)
        if typed is not None:
            raise typed from exc
        at = _ref_text(version, branch, tag)
        raise errors.TableNotFoundError(
            f"cannot open the Lance table at {uri!r}{at}: {exc}"
        ) from exc
