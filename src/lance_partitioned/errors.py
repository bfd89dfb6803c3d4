"""The one error hierarchy of lance-partitioned.

Every error raised on purpose by this package derives from :class:`LancePartitionedError`,
which itself derives from :class:`lance_namespace.errors.LanceNamespaceError`. Each concrete
class also derives from the matching lance-namespace error, so code written against pylance
and lance-namespace keeps catching what it expects:

>>> import lance_namespace
>>> issubclass(TableNotFoundError, lance_namespace.TableNotFoundError)
True
>>> issubclass(TableNotFoundError, LancePartitionedError)
True
>>> try:
...     raise PartitionSpecError("partition field name 'location' is reserved")
... except lance_namespace.InvalidInputError as exc:
...     print(exc)
partition field name 'location' is reserved

Every message names the thing at fault (a column, a type, a partition field, a token).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from lance_partitioned.registration import errors_module

if TYPE_CHECKING:
    from lance_namespace import errors as _ln
else:  # lance_namespace.errors alone: not the REST client that ``import lance_namespace`` loads
    _ln = errors_module()

__all__ = [
    "CastError",
    "ConcurrentModificationError",
    "CorruptNamespaceError",
    "DuplicateKeyError",
    "InternalError",
    "InvalidInputError",
    "LancePartitionedError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotFoundError",
    "NotAPartitionedNamespaceError",
    "PartitionByParseError",
    "PartitionCountWarning",
    "PartitionExpressionError",
    "PartitionSpecError",
    "PermissionDeniedError",
    "PredicateViolationError",
    "SchemaError",
    "SchemaInputTypeError",
    "SchemaMismatchError",
    "StorageError",
    "TableNotFoundError",
    "TableVersionNotFoundError",
    "TagAlreadyExistsError",
    "TagNotFoundError",
    "TransformError",
    "UnknownTypeError",
    "UnsupportedOperationError",
]


class LancePartitionedError(_ln.LanceNamespaceError):
    """Root of every error raised by lance-partitioned."""


class InvalidInputError(LancePartitionedError, _ln.InvalidInputError):
    """The caller passed something the format or the API does not accept."""


class PredicateViolationError(InvalidInputError):
    """Rows written to replace the rows matching a predicate do not all satisfy it."""


class DuplicateKeyError(InvalidInputError):
    """Several rows of a merge's source match one target row that the merge would update."""


class UnknownTypeError(InvalidInputError):
    """A JsonArrowDataType name (or an Arrow type) that this package cannot represent."""


class SchemaError(InvalidInputError):
    """A namespace schema that breaks a rule of spec 000 (field ids, deprecation, evolution)."""


class SchemaInputTypeError(InvalidInputError, TypeError):
    """``create(schema=...)`` was given an object that is not a schema nor something a schema
    is taken from (the message lists what is accepted). Also a ``TypeError``."""


class SchemaMismatchError(LancePartitionedError, _ln.TableSchemaValidationError):
    """Data whose schema does not fit the namespace schema (spec 000 consistency rules)."""


class CastError(SchemaMismatchError):
    """A value cannot be converted to the required type without loss."""


class PartitionSpecError(InvalidInputError):
    """A partition spec that breaks a rule of spec 000 (field ids, names, result types)."""


class PartitionExpressionError(PartitionSpecError):
    """A partition expression that breaks a MUST of spec 000: it is not deterministic
    (DataFusion calls one of its functions volatile), or it maps NULL to a non-NULL value."""


class CorruptNamespaceError(LancePartitionedError, _ln.InvalidTableStateError):
    """The namespace on disk contradicts its ``__manifest``: a leaf table it lists is missing,
    or lacks the version it pins. The message names the object id and the location."""


class StorageError(LancePartitionedError, _ln.ServiceUnavailableError):
    """The storage refused an operation (permission denied, no space left, a path that is a
    file): the message names the path and what the operating system said. Nothing the
    operation staged is left visible."""


class PermissionDeniedError(StorageError, _ln.PermissionDeniedError):
    """The storage denied access to a path (a read-only directory, missing credentials)."""


class PartitionByParseError(PartitionSpecError):
    """A ``partition_by`` shorthand string that cannot be parsed.

    Attributes
    ----------
    text : str
        The whole shorthand string.
    position : int
        Offset of the offending token in ``text``.
    """

    def __init__(self, message: str, *, text: str = "", position: int = 0) -> None:
        super().__init__(message)
        self.text = text
        self.position = position


class TransformError(InvalidInputError):
    """A partition transform cannot be applied to a column, or its result cannot be cast."""


class NamespaceNotFoundError(LancePartitionedError, _ln.NamespaceNotFoundError):
    """No namespace at the given location or object id."""


class NotAPartitionedNamespaceError(NamespaceNotFoundError):
    """A location that exists but is not a partitioned namespace (no ``partition_spec_v*``)."""


class NamespaceAlreadyExistsError(LancePartitionedError, _ln.NamespaceAlreadyExistsError):
    """A namespace already exists where a new one was to be created."""


class TableNotFoundError(LancePartitionedError, _ln.TableNotFoundError):
    """No table with the given object id."""


class TableVersionNotFoundError(LancePartitionedError, _ln.TableVersionNotFoundError):
    """A requested ``__manifest`` or leaf version does not exist."""


class TagNotFoundError(TableVersionNotFoundError, _ln.TableTagNotFoundError):
    """No tag of that name on the ``__manifest`` (a version given as a string is a tag name)."""


class TagAlreadyExistsError(InvalidInputError, _ln.TableTagAlreadyExistsError):
    """A tag of that name already exists on the ``__manifest``."""


class ConcurrentModificationError(LancePartitionedError, _ln.ConcurrentModificationError):
    """A commit kept conflicting with concurrent writers and gave up after its retries."""


class ConcurrentSchemaChangeError(ConcurrentModificationError):
    """The namespace schema or partition spec changed while a write was staged, so that its
    staged data no longer fits: nothing was committed; write the data again."""


class UnsupportedOperationError(LancePartitionedError, _ln.UnsupportedOperationError):
    """An operation that a partitioned namespace does not support."""


class ChangeCommitError(UnsupportedOperationError):
    """A streaming read met a ``__manifest`` version that changed or removed rows (an
    overwrite, a delete, an update, a merge): a stream only follows appends, unless told to
    skip such versions (``skipChangeCommits``)."""


class InternalError(LancePartitionedError, _ln.InternalError):
    """A broken invariant inside lance-partitioned (a bug: please report it)."""


class PartitionCountWarning(UserWarning):
    """A write created very many small partitions (more than 1,000 new leaf tables averaging
    under 10,000 rows): each is a Lance table with its own files, so reads, writes and
    maintenance pay per partition. The message gives the numbers, suggests partitioning
    by ``bucket(N, col)`` or a coarser transform, and points to the cost model ("What a leaf
    costs" in ``docs/concepts.md``)."""


# What the operating system said, as Lance reports it in an OSError's text, and our class for it.
_STORAGE_FAILURES: tuple[tuple[tuple[str, ...], type[StorageError], str], ...] = (
    (("os error 28", "no space left"), StorageError, "no space left on the device"),
    (("os error 122", "quota exceeded"), StorageError, "the disk quota is exceeded"),
    (("os error 27", "file too large"), StorageError, "a file grew past the size limit"),
    (("os error 30", "read-only file system"), PermissionDeniedError, "it is read-only"),
    (("os error 13", "permission denied"), PermissionDeniedError, "permission denied"),
    (("os error 20", "not a directory"), StorageError, "a path on the way is a file"),
)


def storage_error(exc: BaseException, path: str, action: str) -> StorageError | None:
    """The typed error for a storage failure Lance reported as a raw ``OSError`` (or
    ``ValueError``), naming ``path`` and ``action``; None when ``exc`` is not one.

    >>> error = storage_error(OSError("LanceError(IO): No space left on device (os error 28)"),
    ...                       "/data/ns", "write")
    >>> type(error).__name__, str(error)  # doctest: +ELLIPSIS
    ('StorageError', "cannot write at '/data/ns': no space left on the device (LanceError...")
    >>> storage_error(ValueError("bad filter"), "/data/ns", "read") is None
    True
    """
    if not isinstance(exc, (OSError, ValueError)) or isinstance(exc, LancePartitionedError):
        return None
    text = str(exc)
    lowered = text.lower()
    for needles, cls, what in _STORAGE_FAILURES:
        if any(needle in lowered for needle in needles):
            return cls(f"cannot {action} at {path!r}: {what} ({text})")
    return None


@contextlib.contextmanager
def typed_storage_errors(path: str, action: str) -> Iterator[None]:
    """Raise a raw storage failure of the block (an ``OSError`` or ``ValueError`` that
    :func:`storage_error` recognises) as its typed error naming ``path`` and ``action``;
    anything else passes unchanged.

    >>> with typed_storage_errors("/data/ns", "delete"):  # doctest: +ELLIPSIS
    ...     raise OSError("LanceError(IO): Read-only file system (os error 30)")
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.PermissionDeniedError: cannot delete at '/data/ns': it is read-only...
    """
    try:
        yield
    except (OSError, ValueError) as exc:
        typed = storage_error(exc, path, action)
        if typed is None:
            raise
        raise typed from exc
