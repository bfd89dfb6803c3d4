"""Planning (no commits) of how staged fragments meet a leaf table's schema.

Every write stages its fragments against the leaf schema of the namespace (with the field ids
Lance assigns to it in order, as if it created the leaf): staging never opens a leaf, so it
does not depend on what a leaf's latest, possibly uncommitted, version looks like. At commit,
:mod:`lance_partitioned.transaction` compares that staged schema with the leaf version it
commits on:

- :func:`plan_leaf` lists the metadata-only changes that let the leaf take the staged columns
  (add the nullable columns it lacks, rename, make nullable, widen a type where the namespace
  promoted it) and the columns it cannot take (a staged type the leaf cannot hold: the
  namespace schema changed while the write was staged);
- :func:`field_id_map` maps each staged field id to the leaf's own field id (columns are
  matched by the private field id each leaf column carries, else by name: a leaf written by
  another client), checking that every staged column has exactly the leaf's type;
- :func:`remap` rewrites the staged fragments' field ids with that map.

So a commit never publishes fragments whose columns the leaf would misread.

>>> import pyarrow as pa
>>> from lance.schema import LanceSchema
>>> from lance_partitioned.consistency import LEAF_FIELD_ID_KEY as K
>>> leaf = LanceSchema.from_pyarrow(pa.schema([pa.field("a", pa.int32(), metadata={K: "0"})]))
>>> target = pa.schema([pa.field("a", pa.int64(), metadata={K: "0"}),
...                     pa.field("b", pa.utf8(), metadata={K: "1"})])
>>> plan = plan_leaf(leaf, target)
>>> plan.casts, [f.name for f in plan.adds], plan.conflicts
([('a', DataType(int64))], ['b'], [])
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from lance.fragment import DataFile
from lance.schema import LanceSchema

from lance_partitioned.consistency import LEAF_FIELD_ID_KEY
from lance_partitioned.manifest import schema_fingerprint
from lance_partitioned.spec.promotion import can_promote

__all__ = [
    "LeafPlan",
    "Node",
    "field_id_map",
    "leaf_fingerprint",
    "nodes",
    "plan_leaf",
    "remap",
    "staged_fingerprint",
    "staged_ids",
]


@dataclass(frozen=True)
class Node:
    """One field of a Lance schema: its Lance field id, its Arrow field and its children."""

    id: int
    field: pa.Field
    children: tuple[Node, ...]

    @property
    def key(self) -> str | None:
        """The namespace field id the column carries (None: a leaf of another client)."""
        raw = (self.field.metadata or {}).get(LEAF_FIELD_ID_KEY.encode())
        return None if raw is None else raw.decode()


def _node(lance_field: Any) -> Node:
    return Node(
        int(lance_field.id()),
        lance_field.to_arrow(),
        tuple(_node(child) for child in lance_field.children()),
    )


def nodes(schema: LanceSchema) -> list[Node]:
    """The top-level fields of a Lance schema as :class:`Node` trees."""
    return [_node(f) for f in schema.fields()]


def staged_ids(target: pa.Schema) -> list[Node]:
    """The fields of ``target`` with the ids Lance gives them when staging with
    ``mode="overwrite"`` (depth-first positions)."""
    return nodes(LanceSchema.from_pyarrow(target))


def _ids(fields: Sequence[Node]) -> Iterator[int]:
    for node in fields:
        yield node.id
        yield from _ids(node.children)


def _fingerprint(schema: pa.Schema, fields: Sequence[Node]) -> str:
    ids = ",".join(str(i) for i in _ids(fields))
    return schema_fingerprint(schema.with_metadata({"lance-partitioned:ids": ids}))


def staged_fingerprint(target: pa.Schema) -> str:
    """The fingerprint of a leaf that holds exactly the staged schema ``target`` with the ids
    of :func:`staged_ids` (what a new or overwritten leaf is).

    >>> a = staged_fingerprint(pa.schema([("x", pa.int64())]))
    >>> a == staged_fingerprint(pa.schema([("x", pa.int32())])), len(a)
    (False, 16)
    """
    global _LAST
    last = _LAST
    if last is not None and last[0] is target:  # (a schema object never changes)
        return last[1]
    key = target.serialize().to_pybytes()  # equal bytes: the same schema, metadata and all
    with _STAGED_LOCK:
        found = _STAGED.get(key)
    if found is None:
        found = _fingerprint(target, staged_ids(target))
        with _STAGED_LOCK:
            if len(_STAGED) >= 64:
                _STAGED.clear()
            _STAGED[key] = found
    _LAST = (target, found)
    return found


# staged fingerprints by serialized schema, and the last schema object asked about: a write
# or an update asks once per leaf about the same schema, and computing a fingerprint
# converts the schema to Lance's (about 0.1 ms, holding the GIL)
_STAGED: dict[bytes, str] = {}
_STAGED_LOCK = threading.Lock()
_LAST: tuple[pa.Schema, str] | None = None


def leaf_fingerprint(dataset: Any) -> str:
    """The fingerprint of a leaf's schema (names, types, metadata and Lance field ids), equal
    to :func:`staged_fingerprint` of its Arrow schema when it takes staged fragments as they
    are."""
    return _fingerprint(dataset.schema, nodes(dataset.lance_schema))


def _match(
    candidates: Sequence[Node],
    wanted: Node,
    nested_list: bool,
    aliases: Mapping[str, str] | None = None,
) -> Node | None:
    """The leaf field holding ``wanted``: same field id key; else, in a leaf without one
    (another client's), same name, or the previous name in ``aliases`` (field id key to
    name, for a rename)."""
    if nested_list:  # a list's element: the one child
        return candidates[0] if candidates else None
    key = wanted.key
    if key is not None:
        for candidate in candidates:
            if candidate.key == key:
                return candidate
    names = [wanted.field.name]
    if aliases and key is not None and key in aliases:
        names.append(aliases[key])
    for name in names:
        for candidate in candidates:
            if candidate.field.name == name and candidate.key is None:
                return candidate
    return None


def _is_list(dtype: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(dtype)
        or pa.types.is_large_list(dtype)
        or pa.types.is_fixed_size_list(dtype)
    )


@dataclass
class LeafPlan:
    """The metadata-only changes a leaf needs before it can take the staged columns, applied
    in this order: ``nullable`` and ``casts`` (paths to make nullable, to widen), ``renames``
    (path, new name), ``adds`` (nullable fields, a struct child wrapped in its parents),
    ``stamps`` (field metadata by the new paths: a widened column's, which Lance drops, and
    the id key of another client's renamed column). Paths are Lance column paths (``"s.a"``
    for a struct child); the first three name the fields as the leaf has them.
    ``conflicts`` names the staged columns the leaf can never take as they are.
    """

    nullable: list[str] = field(default_factory=list)
    casts: list[tuple[str, pa.DataType]] = field(default_factory=list)
    renames: list[tuple[str, str]] = field(default_factory=list)
    adds: list[pa.Field] = field(default_factory=list)
    stamps: dict[str, dict[str, str]] = field(default_factory=dict)
    conflicts: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Whether the leaf takes the staged columns as it is."""
        return not (self.nullable or self.casts or self.renames or self.adds or self.stamps)


def _wrap(parents: Sequence[str], child: pa.Field) -> pa.Field:
    """``child`` under the struct parents ``parents`` (outermost first), for ``add_columns``."""
    out = child
    for name in reversed(parents):
        out = pa.field(name, pa.struct([out]))
    return out


def _plan(
    plan: LeafPlan,
    leaf: Sequence[Node],
    target: Sequence[Node],
    path: Sequence[str],
    new_path: Sequence[str],
    in_list: bool,
    aliases: Mapping[str, str] | None,
    listed: bool = False,
) -> None:
    """Compare ``leaf`` with ``target`` fields at one level; ``in_list``: the level is a
    list's element, ``listed``: a list is above it (Lance cannot change fields there)."""
    matched = set()
    for wanted in target:
        found = _match(leaf, wanted, in_list, aliases)
        name = wanted.field.name
        if found is None:
            if in_list or listed or not wanted.field.nullable:
                plan.conflicts.append(".".join([*new_path, name]))
            else:
                taken = next((n for n in leaf if n.field.name == name), None)
                if taken is not None:  # a dropped column of that name: move it aside
                    aside = f"_deprecated_{taken.key}_{name}"
                    plan.renames.append((".".join([*path, name]), aside))
                plan.adds.append(_wrap(new_path, wanted.field))
            continue
        matched.add(found.id)
        here = [*path, found.field.name]
        there = [*new_path, name]
        if not in_list and found.field.name != name:
            if listed:
                plan.conflicts.append(f"{'.'.join(there)} (named {found.field.name!r})")
            plan.renames.append((".".join(here), name))
            if found.key is None and wanted.key is not None:
                # another client's column: it carries the id from now on, so that readers
                # of the namespace schema before and after the rename both find it
                plan.stamps[".".join(there)] = {LEAF_FIELD_ID_KEY: wanted.key}
        if wanted.field.nullable and not found.field.nullable:
            plan.nullable.append(".".join(here))
        have, want = found.field.type, wanted.field.type
        if pa.types.is_struct(have) and pa.types.is_struct(want):
            _plan(plan, found.children, wanted.children, here, there, False, aliases, listed)
        elif _is_list(have) and _is_list(want) and type(have) is type(want):
            _plan(plan, found.children, wanted.children, here, there, True, aliases, True)
        elif have != want:
            if can_promote(have, want) and not listed:
                plan.casts.append((".".join(here), want))
                # Lance makes a cast column a new field, without the field's metadata
                metadata = {
                    k.decode(): v.decode() for k, v in (wanted.field.metadata or {}).items()
                }
                if metadata:
                    plan.stamps[".".join(there)] = metadata
            else:
                plan.conflicts.append(f"{'.'.join(there)} ({want} staged, {have} in the leaf)")
    for extra in leaf:
        if extra.id not in matched and not extra.field.nullable:
            plan.nullable.append(".".join([*path, extra.field.name]))


def plan_leaf(
    leaf: LanceSchema, target: pa.Schema, aliases: Mapping[str, str] | None = None
) -> LeafPlan:
    """What the leaf with schema ``leaf`` needs before it takes fragments staged in
    ``target`` (see the module docstring). ``conflicts`` names the staged columns it can
    never take as they are. ``aliases`` maps a field id key to a previous name of the field,
    which a leaf of another client may still use (a rename)."""
    plan = LeafPlan()
    _plan(plan, nodes(leaf), staged_ids(target), [], [], False, aliases)
    return plan


def _pairs(
    leaf: Sequence[Node], target: Sequence[Node], in_list: bool
) -> Iterator[tuple[Node, Node]]:
    for wanted in target:
        found = _match(leaf, wanted, in_list)
        if found is None:
            raise KeyError(wanted.field.name)
        yield wanted, found
        yield from _pairs(found.children, wanted.children, _is_list(wanted.field.type))


def _same_kind(a: pa.DataType, b: pa.DataType) -> bool:
    if pa.types.is_struct(a) or _is_list(a):
        return type(a) is type(b)
    return bool(a == b)


def field_id_map(leaf: LanceSchema, target: pa.Schema) -> dict[int, int] | str:
    """Staged field id to leaf field id, or the name of the first staged column that the leaf
    does not hold with exactly the staged type (the plan was not applied, or could not be)."""
    mapping = {}
    try:
        for wanted, found in _pairs(nodes(leaf), staged_ids(target), False):
            if not _same_kind(wanted.field.type, found.field.type):
                return str(wanted.field.name)
            mapping[wanted.id] = found.id
    except KeyError as missing:
        return str(missing.args[0])
    return mapping


def remap(fragments: Sequence[Any], mapping: Mapping[int, int]) -> list[Any]:
    """The staged fragments with their data files' field ids mapped (unchanged when the map
    is the identity)."""
    if all(k == v for k, v in mapping.items()):
        return list(fragments)
    out = []
    for fragment in fragments:
        files = [
            DataFile(
                f.path,
                [mapping.get(i, i) if i >= 0 else i for i in f.fields],
                list(f.column_indices),
                f.file_major_version,
                f.file_minor_version,
                f.file_size_bytes,
                f.base_id,
            )
            for f in fragment.files
        ]
        out.append(dataclasses.replace(fragment, files=files))
    return out
