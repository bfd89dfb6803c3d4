"""What a ``__manifest`` commit did, recorded as the Lance *transaction properties* of the
version it creates: the one place that defines those keys and their encoding.

Every commit of lance-partitioned sets, on the Lance transaction of its ``__manifest``
commit (read back with ``LanceDataset.read_transaction(version).transaction_properties``):

=========================================  ====================================================
key                                        value
=========================================  ====================================================
``lance_partitioned.operation``            ``create``, ``write``, ``evolve``, ``optimize``,
                                           ``delete``, ``update``, ``merge``, …
``lance_partitioned.mode``                 how it ran: a write's mode (``append``,
                                           ``overwrite``, ``overwrite_partitions``), an
                                           evolution's kind (``add_columns``, …)
``lance_partitioned.rows_added``           rows it inserted (decimal)
``lance_partitioned.rows_removed``         rows it deleted (decimal)
``lance_partitioned.rows_updated``         rows it replaced by new values (decimal): an
                                           ``update``'s or ``merge``'s, a moved row included
``lance_partitioned.partitions_touched``   leaf tables it wrote, changed or dropped (decimal)
``lance_partitioned.client``               ``lance-partitioned <version>``
``lance_partitioned.<other>``              free-form details (``step``, ``engine``, …)
=========================================  ====================================================

The three row counts are disjoint: an updated row counts in ``rows_updated`` only (not as
one row removed and one added, which is how Lance stores it), so the rows a version holds are
those of the previous version plus ``rows_added`` minus ``rows_removed``. A key is absent when
its value is not known (a commit made before the key existed). Other clients ignore these
properties; a version another client committed has none, and reading is
tolerant: a value that is not what we write reads as unknown.

>>> op = Operation("write", mode="append", rows_added=3, partitions_touched=2)
>>> props = op.to_properties()
>>> props["lance_partitioned.rows_added"], props["lance_partitioned.mode"]
('3', 'append')
>>> Operation.from_properties(props) == op
True
>>> Operation.from_properties({"__lance_commit_message": "another client"}) is None
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from lance_partitioned import __version__, errors

__all__ = ["CLIENT", "PREFIX", "Operation"]

PREFIX = "lance_partitioned."
CLIENT = f"lance-partitioned {__version__}"

_NAME = f"{PREFIX}operation"
_MODE = f"{PREFIX}mode"
_ROWS_ADDED = f"{PREFIX}rows_added"
_ROWS_REMOVED = f"{PREFIX}rows_removed"
_ROWS_UPDATED = f"{PREFIX}rows_updated"
_PARTITIONS = f"{PREFIX}partitions_touched"
_CLIENT = f"{PREFIX}client"


def _count(text: str | None) -> int | None:
    """A non-negative decimal count, or None for anything else (tolerant reading)."""
    if text is None or not text.isascii() or not text.isdigit():
        return None
    return int(text)


@dataclass(frozen=True)
class Operation:
    """One operation as recorded on the ``__manifest`` version it committed.

    Attributes
    ----------
    name : str
        ``create``, ``write``, ``evolve``, ``optimize``, ``delete``, ``update``, ``merge``, …
    mode : str, optional
        A write's mode, an evolution's kind.
    rows_added, rows_removed, rows_updated : int, optional
        Rows inserted, deleted, and replaced by new values (disjoint); None when not known.
    partitions_touched : int, optional
        Leaf tables written, changed or dropped.
    details : Mapping[str, str]
        Free-form details, stored as ``lance_partitioned.<key>``.
    client : str, optional
        The client that committed it (``lance-partitioned <version>``).
    """

    name: str
    mode: str | None = None
    rows_added: int | None = None
    rows_removed: int | None = None
    rows_updated: int | None = None
    partitions_touched: int | None = None
    details: Mapping[str, str] = field(default_factory=dict)
    client: str | None = CLIENT

    KEYS: ClassVar[frozenset[str]] = frozenset(
        {_NAME, _MODE, _ROWS_ADDED, _ROWS_REMOVED, _ROWS_UPDATED, _PARTITIONS, _CLIENT}
    )

    def __post_init__(self) -> None:
        if not self.name:
            raise errors.InternalError("an operation name cannot be empty")

    def with_details(self, **details: str) -> Operation:
        """This operation with more details (a step of a multi-commit operation).

        >>> Operation("evolve", "add_columns").with_details(step="publish").details
        {'step': 'publish'}
        """
        return dataclasses.replace(self, details={**self.details, **details})

    def counted(
        self, added: int = 0, removed: int = 0, updated: int = 0, partitions: int = 0
    ) -> Operation:
        """This operation with its counts: rows inserted, deleted, replaced (disjoint) and
        leaf tables written, changed or dropped.

        >>> Operation("delete").counted(removed=3, partitions=1).to_properties()[
        ...     "lance_partitioned.rows_removed"]
        '3'
        """
        return dataclasses.replace(
            self,
            rows_added=added,
            rows_removed=removed,
            rows_updated=updated,
            partitions_touched=partitions,
        )

    def to_properties(self) -> dict[str, str]:
        """The Lance transaction properties that record this operation."""
        out = {_NAME: self.name}
        if self.mode is not None:
            out[_MODE] = self.mode
        for key, count in (
            (_ROWS_ADDED, self.rows_added),
            (_ROWS_REMOVED, self.rows_removed),
            (_ROWS_UPDATED, self.rows_updated),
            (_PARTITIONS, self.partitions_touched),
        ):
            if count is not None:
                out[key] = str(count)
        if self.client is not None:
            out[_CLIENT] = self.client
        for key, value in self.details.items():
            name = f"{PREFIX}{key}"
            if name in self.KEYS:
                raise errors.InternalError(
                    f"detail {key!r} of operation {self.name!r} would replace the {key} field"
                )
            out[name] = value
        return out

    @classmethod
    def from_properties(cls, properties: Mapping[str, str] | None) -> Operation | None:
        """The operation recorded in a version's transaction properties; None when they do
        not record one (another client's commit)."""
        if not properties or not properties.get(_NAME):
            return None
        details = {
            key[len(PREFIX) :]: value
            for key, value in properties.items()
            if key.startswith(PREFIX) and key not in cls.KEYS
        }
        return cls(
            name=properties[_NAME],
            mode=properties.get(_MODE),
            rows_added=_count(properties.get(_ROWS_ADDED)),
            rows_removed=_count(properties.get(_ROWS_REMOVED)),
            rows_updated=_count(properties.get(_ROWS_UPDATED)),
            partitions_touched=_count(properties.get(_PARTITIONS)),
            details=details,
            client=properties.get(_CLIENT),
        )
