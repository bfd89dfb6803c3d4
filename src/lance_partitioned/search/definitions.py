"""Index definitions: what a namespace says should be indexed, kept in its root properties.

A definition is recorded in the ``__manifest`` table metadata under the key
:data:`INDICES_KEY` (``lance-partitioned.indices``), a JSON object mapping each index name to
its definition. Spec 000 clients ignore keys they do not know, and lance-partitioned keeps
every key of that object it does not know itself, so the property is unknown-key-safe both
ways. The indexed column is recorded by its field id: a renamed column's index keeps working.

>>> d = IndexDefinition("emb_idx", 3, "emb", "IVF_PQ", {"metric": "cosine"}, None, 10_000)
>>> loaded = load_definitions({INDICES_KEY: dump_definitions({"emb_idx": d})})
>>> loaded["emb_idx"] == d, d.kind
(True, 'vector')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lance_partitioned import errors

__all__ = [
    "INDEX_TYPES",
    "INDICES_KEY",
    "IVF_MIN_ROWS",
    "IndexDefinition",
    "dump_definitions",
    "load_definitions",
]

INDICES_KEY = "lance-partitioned.indices"
"""The ``__manifest`` table metadata key holding the index definitions (a JSON object)."""

IVF_MIN_ROWS = 10_000
"""Default fewest rows a leaf needs for an IVF index to be trained on it: smaller leaves are
searched flat (exact), which at that size costs about what an index probe does."""

VECTOR_TYPES = ("IVF_PQ", "IVF_HNSW_SQ", "IVF_FLAT")
SCALAR_TYPES = ("BTREE", "BITMAP", "LABEL_LIST", "ZONEMAP")
TEXT_TYPES = ("INVERTED",)
INDEX_TYPES = (*VECTOR_TYPES, *SCALAR_TYPES, *TEXT_TYPES)
"""The index types :meth:`~lance_partitioned.PartitionedNamespace.create_index` builds."""

_KNOWN = frozenset({"name", "field_id", "column", "index_type", "params", "filter", "min_rows"})


@dataclass(frozen=True)
class IndexDefinition:
    """One namespace index: the Lance index of that name that each kept leaf should have.

    Attributes
    ----------
    name : str
        The index name (the Lance index name on every leaf).
    field_id : int
        The namespace field id of the indexed column.
    column : str
        The column's name when the index was created (informative: the field id decides).
    index_type : str
        One of :data:`INDEX_TYPES`.
    params : dict
        Parameters passed to pylance's index build (``metric``, ``num_partitions``, …).
    filter : str or None
        Only leaves a scan with this filter reads are indexed (None: every leaf).
    min_rows : int
        Leaves with fewer rows are left flat (vector indexes; 1 for the others).
    """

    name: str
    field_id: int
    column: str
    index_type: str
    params: dict[str, Any] = field(default_factory=dict)
    filter: str | None = None
    min_rows: int = 1
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def kind(self) -> str:
        """``"vector"``, ``"scalar"`` or ``"text"``."""
        if self.index_type in VECTOR_TYPES:
            return "vector"
        return "text" if self.index_type in TEXT_TYPES else "scalar"

    def to_json(self) -> dict[str, Any]:
        """The JSON object recorded (unknown keys read earlier kept)."""
        return {
            **self.extra,
            "name": self.name,
            "field_id": self.field_id,
            "column": self.column,
            "index_type": self.index_type,
            "params": self.params,
            "filter": self.filter,
            "min_rows": self.min_rows,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> IndexDefinition:
        """Parse one definition; :class:`~lance_partitioned.errors.CorruptNamespaceError` when
        a key we need is missing or mistyped."""
        try:
            return cls(
                name=str(obj["name"]),
                field_id=int(obj["field_id"]),
                column=str(obj["column"]),
                index_type=str(obj["index_type"]).upper(),
                params=dict(obj.get("params") or {}),
                filter=obj.get("filter"),
                min_rows=int(obj.get("min_rows") or 1),
                extra={k: v for k, v in obj.items() if k not in _KNOWN},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise errors.CorruptNamespaceError(
                f"__manifest metadata key {INDICES_KEY!r} holds an invalid index definition "
                f"{dict(obj)!r}: {exc!r}"
            ) from exc


def load_definitions(table_metadata: Mapping[str, str]) -> dict[str, IndexDefinition]:
    """The index definitions of a ``__manifest`` table metadata map, by name."""
    raw = table_metadata.get(INDICES_KEY)
    if not raw:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError as exc:
        raise errors.CorruptNamespaceError(
            f"__manifest metadata key {INDICES_KEY!r} is not JSON: {exc}"
        ) from exc
    if not isinstance(parsed, dict):
        raise errors.CorruptNamespaceError(f"__manifest metadata key {INDICES_KEY!r} is not a map")
    return {
        name: IndexDefinition.from_json(obj)
        for name, obj in parsed.items()
        if isinstance(obj, dict)
    }


def dump_definitions(definitions: Mapping[str, IndexDefinition]) -> str:
    """The JSON value of :data:`INDICES_KEY` for ``definitions`` (compact, sorted keys)."""
    body = {name: d.to_json() for name, d in sorted(definitions.items())}
    return json.dumps(body, sort_keys=True, separators=(",", ":"))
