"""What :func:`lance_partitioned.verify.verify` reports: the problems, orphans and findings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Orphan", "Problem", "Report", "lance_message"]

_RUST_LOCATION = re.compile(r",?\s*/[^,()\s]*\.rs:\d+:\d+")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the namespace.

    Attributes
    ----------
    kind : str
        A stable code: ``metadata``, ``properties``, ``name``, ``parent``, ``location``,
        ``missing_leaf``, ``missing_version``, ``interrupted_write`` (leaf versions above the
        ``read_version`` that no ``__manifest`` version names), ``leaf_ahead`` (leaf versions
        above the ``read_version`` that an older ``__manifest`` version names: the
        ``__manifest`` was rolled back outside the namespace), ``schema``,
        ``partition_value``.
    object_id : str or None
        The ``__manifest`` row at fault (None: the table metadata).
    message : str
        What is wrong and what it means.
    """

    kind: str
    object_id: str | None
    message: str


@dataclass(frozen=True)
class Orphan:
    """A directory under the root that no leaf of the ``__manifest`` version read references."""

    location: str
    bytes: int


@dataclass(frozen=True)
class Report:
    """What :func:`verify` found.

    Attributes
    ----------
    version : int
        The ``__manifest`` version checked.
    leaves : int
        Leaf table rows checked.
    rows_sampled : int
        Leaf rows read to re-apply the partition expressions.
    problems : list of Problem
        Empty when the namespace is healthy.
    orphans : list of Orphan or None
        None when the root is not a local directory (not listed).
    repaired : list of Problem
        With ``repair=True``: the ``interrupted_write`` problems that were repaired (the leaf
        rolled back to its ``read_version``); they are not in ``problems``.
    indexes : list of Problem
        Leaves whose indexes do not match the index definitions (kinds ``index_missing``,
        ``index_column``, ``index_definition``; see :mod:`lance_partitioned.search.verify`):
        findings, not problems (``healthy`` ignores them).
    """

    version: int
    leaves: int
    rows_sampled: int
    problems: list[Problem] = field(default_factory=list)
    orphans: list[Orphan] | None = None
    repaired: list[Problem] = field(default_factory=list)
    indexes: list[Problem] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        """Whether no problem was found (orphans are not problems)."""
        return not self.problems


def lance_message(exc: BaseException) -> str:
    """A Lance error message without the Rust source locations it carries.

    >>> lance_message(ValueError("Not found: a/b, /src/lance-io/src/local.rs:273:40, x"))
    'Not found: a/b, x'
    """
    return _RUST_LOCATION.sub("", str(exc)).strip()
