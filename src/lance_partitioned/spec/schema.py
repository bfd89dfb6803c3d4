"""The namespace schema of spec 000: field ids, deprecation and lookups.

The schema of a partitioned namespace is the union of every column that ever existed. Each
field, at every depth, carries its id under the metadata key ``lance:field_id`` (a decimal
string); ids are unique, never reused, and partition fields reference them as ``source_id``. A
dropped column stays in the schema with ``"lance:deprecated": "true"``.

Ids are assigned the way Lance assigns them: depth-first pre-order (a field, then its children,
then its next sibling) from 0. The element field of a list or large list and a map's
``entries``, ``key`` and ``value`` fields get ids too. A fixed-size list is one leaf (a vector)
unless its elements are structs, as in Lance: only then does its element field get an id.

pyarrow cannot keep metadata on a map's ``entries`` field, so the entries id is implicit in the
Arrow form: it is always the map's id + 1 (as pre-order assignment makes it). The JSON form
writes it out, and a JSON schema whose entries field carries anything else is rejected.

Deprecation (any case of ``true``) is allowed on top-level fields and struct children, the only
fields that can be removed from a read schema.

>>> import pyarrow as pa
>>> schema = NamespaceSchema.from_arrow(pa.schema([("id", pa.int64()), ("country", pa.string())]))
>>> schema.field_id("country")
1
>>> schema.to_json()["fields"][1]
{'name': 'country', 'nullable': True, 'type': {'type': 'utf8'}, 'metadata': {'lance:field_id': '1'}}
"""

from __future__ import annotations

import copy
import itertools
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa

from lance_partitioned.errors import SchemaError
from lance_partitioned.spec import nested
from lance_partitioned.spec.types import field_from_json, field_to_json

__all__ = ["DEPRECATED_KEY", "FIELD_ID_KEY", "NamespaceSchema"]

FIELD_ID_KEY = "lance:field_id"
DEPRECATED_KEY = "lance:deprecated"

_FIELD_ID_BYTES = FIELD_ID_KEY.encode()
_DEPRECATED_BYTES = DEPRECATED_KEY.encode()
_CANONICAL_ID = re.compile(r"0|[1-9][0-9]*")


@dataclass(frozen=True)
class _Node:
    """One field of the schema, at any depth."""

    field_id: int
    field: pa.Field
    path: tuple[str, ...]
    deprecated: bool  # the field itself or an ancestor


def _raw_id(field: pa.Field) -> bytes | None:
    return cast("bytes | None", (field.metadata or {}).get(_FIELD_ID_BYTES))


def _marked_deprecated(field: pa.Field) -> bool:
    value = (field.metadata or {}).get(_DEPRECATED_BYTES)
    return value is not None and value.decode("utf-8", "replace").strip().lower() == "true"


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path)


def _parse_id(field: pa.Field, path: tuple[str, ...]) -> int:
    raw = _raw_id(field)
    text = None if raw is None else raw.decode("utf-8", "replace")
    if text is None or not _CANONICAL_ID.fullmatch(text):
        got = "none" if text is None else repr(text)
        raise SchemaError(
            f"field {_dotted(path)!r} needs a non-negative integer {FIELD_ID_KEY}, got {got}"
        )
    return int(text)


class NamespaceSchema:
    """The schema of a partitioned namespace: an immutable value object.

    Parameters
    ----------
    arrow_schema : pyarrow.Schema
        Every field (deprecated ones included) with its ``lance:field_id``, at every depth
        except a map's entries field (its id is the map's + 1).

    Raises
    ------
    SchemaError
        If a field has no id, a non-integer or negative id, an id already taken, a
        deprecated mark where nothing can be dropped, or a name shared with a live sibling.
    UnknownTypeError
        If a field's type has no JsonArrowDataType encoding.

    Examples
    --------
    >>> import pyarrow as pa
    >>> s = NamespaceSchema(pa.schema([
    ...     pa.field("id", pa.int64(), nullable=False, metadata={"lance:field_id": "0"}),
    ...     pa.field("old", pa.utf8(),
    ...              metadata={"lance:field_id": "1", "lance:deprecated": "true"}),
    ... ]))
    >>> s.names, s.max_field_id, s.is_deprecated(1)
    (['id'], 1, True)
    >>> s == NamespaceSchema.from_json(s.to_json())
    True
    """

    __slots__ = ("_by_id", "_dropped", "_json", "_key", "_live", "_read", "_schema")

    _schema: pa.Schema
    _by_id: dict[int, _Node]
    _live: dict[str, _Node]
    _dropped: dict[str, int]
    _read: pa.Schema
    _json: dict[str, Any]
    _key: str

    def __init__(self, arrow_schema: pa.Schema) -> None:
        nodes: list[_Node] = []
        by_id: dict[int, _Node] = {}
        live_siblings: set[tuple[int, str]] = set()
        for field, path, parent, parent_index in nested.walk(arrow_schema):
            if parent == "map":  # the entries field: pyarrow keeps no metadata on it
                field_id = nodes[parent_index].field_id + 1
            else:
                field_id = _parse_id(field, path)
            if field_id in by_id:
                raise SchemaError(
                    f"field {_dotted(path)!r} reuses lance:field_id {field_id} of field "
                    f"{_dotted(by_id[field_id].path)!r}"
                )
            marked = _marked_deprecated(field)
            if marked and parent not in ("schema", "struct"):
                raise SchemaError(
                    f"field {_dotted(path)!r} is marked {DEPRECATED_KEY} but only top-level "
                    "fields and struct children can be dropped"
                )
            deprecated = marked or (parent_index >= 0 and nodes[parent_index].deprecated)
            if not deprecated and parent in ("schema", "struct"):
                if (parent_index, field.name) in live_siblings:
                    raise SchemaError(f"two live fields are named {_dotted(path)!r}")
                live_siblings.add((parent_index, field.name))
            if nested.is_vector(field.type) and _raw_id(field.type.value_field) is not None:
                raise SchemaError(
                    f"field {_dotted(path)!r} is a fixed-size list of {field.type.value_type}: "
                    f"its element is not a schema field and cannot carry a {FIELD_ID_KEY}"
                )
            node = _Node(field_id, field, path, deprecated)
            nodes.append(node)
            by_id[field_id] = node
        top = [n for n in nodes if len(n.path) == 1]
        set_ = object.__setattr__
        set_(self, "_schema", arrow_schema)
        set_(self, "_by_id", by_id)
        set_(self, "_live", {n.field.name: n for n in top if not n.deprecated})
        set_(self, "_dropped", {n.field.name: n.field_id for n in top if n.deprecated})
        set_(self, "_read", _without_deprecated(arrow_schema))
        set_(self, "_json", _schema_to_json(arrow_schema))
        set_(self, "_key", json.dumps(self._json, sort_keys=True))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"NamespaceSchema is immutable: cannot set {name!r}")

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        # Rebuild from the JSON form: the slots cannot be set once built, and pickling a
        # pyarrow fixed-size list type drops its element field's metadata (pyarrow 26).
        return (NamespaceSchema.from_json, (self._json,))

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_arrow(cls, schema: pa.Schema) -> NamespaceSchema:
        """Build a namespace schema for a new namespace, assigning field ids if needed.

        Parameters
        ----------
        schema : pyarrow.Schema
            Either no field carries a ``lance:field_id`` (ids are then assigned depth-first
            pre-order from 0, as Lance does) or every field does (kept as they are).

        Returns
        -------
        NamespaceSchema

        Raises
        ------
        SchemaError
            If some fields carry an id and others do not, or the ids are invalid.

        Examples
        --------
        >>> import pyarrow as pa
        >>> s = NamespaceSchema.from_arrow(pa.schema([
        ...     ("id", pa.int64()),
        ...     ("s", pa.struct([("a", pa.int32()), ("b", pa.utf8())])),
        ...     ("x", pa.float64()),
        ... ]))
        >>> [(s.name_of(i), i) for i in range(s.max_field_id + 1)]
        [('id', 0), ('s', 1), ('s.a', 2), ('s.b', 3), ('x', 4)]
        """
        walked = [(n.field, n.path) for n in nested.walk(schema) if n.parent != "map"]
        with_id = [p for f, p in walked if _raw_id(f) is not None]
        without = [p for f, p in walked if _raw_id(f) is None]
        if not without:
            return cls(schema)
        if with_id:
            raise SchemaError(
                f"field {_dotted(without[0])!r} has no {FIELD_ID_KEY} but field "
                f"{_dotted(with_id[0])!r} has one: give every field an id, or none"
            )
        counter = itertools.count()
        fields = [_assign_ids(field, counter) for field in schema]
        return cls(pa.schema(fields, metadata=schema.metadata))

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> NamespaceSchema:
        """Parse a JsonArrowSchema object (``{"fields": [...], "metadata"?: {...}}``).

        Parameters
        ----------
        obj : Mapping
            The parsed value of the ``schema`` property (not the JSON string).

        Returns
        -------
        NamespaceSchema

        Raises
        ------
        SchemaError
            If the object is malformed or breaks a rule of the namespace schema.
        UnknownTypeError
            If a type cannot be decoded.

        Examples
        --------
        >>> s = NamespaceSchema.from_json({"fields": [
        ...     {"name": "id", "nullable": False, "type": {"type": "int64"},
        ...      "metadata": {"lance:field_id": "0"}}]})
        >>> s.arrow_schema
        id: int64 not null
          -- field metadata --
          lance:field_id: '0'
        """
        if not isinstance(obj, Mapping) or not isinstance(obj.get("fields"), list):
            raise SchemaError(f"a JsonArrowSchema needs a 'fields' list, got {obj!r}")
        metadata = obj.get("metadata")
        if metadata is not None and not (
            isinstance(metadata, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
        ):
            raise SchemaError("schema 'metadata' must map strings to strings")
        for field in obj["fields"]:
            _check_entries_ids(field, ())
        fields = [field_from_json(field) for field in obj["fields"]]
        return cls(pa.schema(fields, metadata=dict(metadata) if metadata else None))

    # ------------------------------------------------------------------ views

    def to_json(self) -> dict[str, Any]:
        """The JsonArrowSchema object (a fresh copy), every field and id included.

        Examples
        --------
        >>> import pyarrow as pa
        >>> NamespaceSchema.from_arrow(pa.schema([("d", pa.date32())])).to_json()
        {'fields': [{'name': 'd', 'nullable': True, 'type': {'type': 'date32'},
                     'metadata': {'lance:field_id': '0'}}]}
        """
        return copy.deepcopy(self._json)

    @property
    def arrow_schema(self) -> pa.Schema:
        """Every field, deprecated ones included, with their metadata.

        Examples
        --------
        >>> import pyarrow as pa
        >>> NamespaceSchema.from_arrow(pa.schema([("d", pa.date32())])).arrow_schema.names
        ['d']
        """
        return self._schema

    def read_schema(self) -> pa.Schema:
        """The schema to read with: deprecated fields removed at every depth, metadata kept.

        Examples
        --------
        >>> import pyarrow as pa
        >>> s = NamespaceSchema(pa.schema([
        ...     pa.field("a", pa.int32(), metadata={"lance:field_id": "0"}),
        ...     pa.field("b", pa.int32(), metadata={"lance:field_id": "1",
        ...                                         "lance:deprecated": "true"}),
        ... ]))
        >>> s.read_schema().names
        ['a']
        """
        return self._read

    @property
    def max_field_id(self) -> int:
        """The largest id ever assigned (deprecated fields included); -1 if there are no fields.

        Examples
        --------
        >>> import pyarrow as pa
        >>> NamespaceSchema(pa.schema([])).max_field_id
        -1
        """
        return max(self._by_id, default=-1)

    @property
    def names(self) -> list[str]:
        """Top-level column names, deprecated ones excluded, in schema order.

        Examples
        --------
        >>> import pyarrow as pa
        >>> NamespaceSchema.from_arrow(pa.schema([("a", pa.int8()), ("b", pa.int8())])).names
        ['a', 'b']
        """
        return list(self._live)

    # ------------------------------------------------------------------ lookups

    def top_level_field(self, name: str) -> pa.Field:
        """The live (not deprecated) top-level field called ``name``.

        Raises
        ------
        SchemaError
            If there is no such live column.

        Examples
        --------
        >>> import pyarrow as pa
        >>> NamespaceSchema.from_arrow(pa.schema([("a", pa.int8())])).top_level_field("a").type
        DataType(int8)
        """
        return self._live_node(name).field

    def _live_node(self, name: str) -> _Node:
        node = self._live.get(name)
        if node is None:
            dropped = self._dropped.get(name)
            why = "" if dropped is None else f" (it was dropped: field id {dropped} is deprecated)"
            raise SchemaError(f"column {name!r} is not in the namespace schema{why}")
        return node

    def field_id(self, name: str) -> int:
        """The id of the live top-level column ``name``.

        Raises
        ------
        SchemaError
            If there is no such live column.

        Examples
        --------
        >>> import pyarrow as pa
        >>> s = NamespaceSchema.from_arrow(pa.schema([("a", pa.int8()), ("b", pa.int8())]))
        >>> s.field_id("b")
        1
        """
        return self._live_node(name).field_id

    def _node(self, field_id: int) -> _Node:
        node = self._by_id.get(field_id)
        if node is None:
            raise SchemaError(f"field id {field_id} is not in the namespace schema")
        return node

    def field_by_id(self, field_id: int) -> pa.Field:
        """The field with id ``field_id``, at any depth, deprecated or not.

        Raises
        ------
        SchemaError
            If no field has that id.

        Examples
        --------
        >>> import pyarrow as pa
        >>> s = NamespaceSchema.from_arrow(pa.schema([("s", pa.struct([("a", pa.int32())]))]))
        >>> s.field_by_id(1).name
        'a'
        """
        return self._node(field_id).field

    def name_of(self, field_id: int) -> str:
        """The name of a top-level field, or the dotted path of a nested one (``"s.a"``).

        Raises
        ------
        SchemaError
            If no field has that id.

        Examples
        --------
        >>> import pyarrow as pa
        >>> s = NamespaceSchema.from_arrow(pa.schema([("tags", pa.list_(pa.utf8()))]))
        >>> s.name_of(0), s.name_of(1)
        ('tags', 'tags.item')
        """
        return _dotted(self._node(field_id).path)

    def path_of(self, field_id: int) -> tuple[str, ...]:
        """The names from the top-level field down to the field ``field_id``.

        Raises
        ------
        SchemaError
            If no field has that id.

        Examples
        --------
        >>> import pyarrow as pa
        >>> s = NamespaceSchema.from_arrow(pa.schema([("s", pa.struct([("a.b", pa.int8())]))]))
        >>> s.path_of(1)
        ('s', 'a.b')
        """
        return self._node(field_id).path

    def is_deprecated(self, field_id: int) -> bool:
        """Whether the field or one of its ancestors is deprecated.

        Raises
        ------
        SchemaError
            If no field has that id.

        Examples
        --------
        >>> import pyarrow as pa
        >>> NamespaceSchema.from_arrow(pa.schema([("a", pa.int8())])).is_deprecated(0)
        False
        """
        return self._node(field_id).deprecated

    # ------------------------------------------------------------------ value semantics

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NamespaceSchema):
            return NotImplemented
        return self._json == other._json

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"NamespaceSchema({self._key})"


def _assign_ids(field: pa.Field, counter: Iterator[int]) -> pa.Field:
    """``field`` with ids assigned to it and its descendants in pre-order (a map's entries
    field takes one, implicitly: pyarrow keeps no metadata on it)."""
    metadata = {**(field.metadata or {}), _FIELD_ID_BYTES: str(next(counter)).encode()}
    below = [_assign_ids(child, counter) for child in nested.children(field.type)]
    return field.with_type(nested.rebuild(field.type, below)).with_metadata(metadata)


def _drop_deprecated(field: pa.Field) -> pa.Field:
    """``field`` without the deprecated struct children at any depth below it."""

    def drop(f: pa.Field) -> pa.Field:
        if not pa.types.is_struct(f.type):
            return f
        return f.with_type(pa.struct([c for c in f.type if not _marked_deprecated(c)]))

    return nested.map_field(field, drop)


def _without_deprecated(schema: pa.Schema) -> pa.Schema:
    kept = [_drop_deprecated(f) for f in schema if not _marked_deprecated(f)]
    return pa.schema(kept, metadata=schema.metadata)


def _schema_to_json(schema: pa.Schema) -> dict[str, Any]:
    fields = [field_to_json(field) for field in schema]
    for field in fields:
        _add_entries_ids(field)
    out: dict[str, Any] = {"fields": fields}
    metadata = {k.decode(): v.decode() for k, v in (schema.metadata or {}).items()}
    if metadata:
        out["metadata"] = metadata
    return out


def _add_entries_ids(field: dict[str, Any]) -> None:
    """Write the implicit id (map id + 1) of every map's entries field into the JSON form."""
    dtype = field["type"]
    children = dtype.get("fields", [])
    if dtype["type"] == "fixed_size_list" and children[0]["type"]["type"] != "struct":
        return  # a vector: nothing below it is a schema field
    for child in children:
        _add_entries_ids(child)
    if dtype["type"] == "map":
        map_id = int(field["metadata"][FIELD_ID_KEY])
        dtype["fields"][0]["metadata"] = {FIELD_ID_KEY: str(map_id + 1)}


def _check_entries_ids(field: Any, parent: tuple[str, ...]) -> None:
    """Reject JSON whose map entries carry what pyarrow cannot keep (shape errors pass on)."""
    if not isinstance(field, Mapping) or not isinstance(field.get("type"), Mapping):
        return
    path = (*parent, str(field.get("name")))
    dtype = field["type"]
    children = dtype.get("fields")
    if not isinstance(children, list):
        return
    for child in children:
        _check_entries_ids(child, path)
    if str(dtype.get("type")).lower() != "map" or len(children) != 1:
        return
    entries = children[0]
    if not isinstance(entries, Mapping) or not entries.get("metadata"):
        return
    raw_map_id = (field.get("metadata") or {}).get(FIELD_ID_KEY)
    if not isinstance(raw_map_id, str) or not _CANONICAL_ID.fullmatch(raw_map_id):
        return  # the map field's own id is reported by NamespaceSchema.__init__
    expected = {FIELD_ID_KEY: str(int(raw_map_id) + 1)}
    if dict(entries["metadata"]) != expected:
        raise SchemaError(
            f"map field {_dotted(path)!r}: its entries field may only carry "
            f"{FIELD_ID_KEY} = {int(raw_map_id) + 1} (the map's id + 1, since pyarrow keeps no "
            f"metadata on a map's entries), got {dict(entries['metadata'])!r}"
        )
