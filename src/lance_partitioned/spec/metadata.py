"""The root properties of a partitioned namespace: the ``__manifest`` table metadata.

This is the one module that knows their JSON. Spec 000 stores, as JSON strings in the
``__manifest`` table's metadata map:

- ``schema``: the namespace schema, a JsonArrowSchema object;
- ``partition_spec_v<N>``: one JSON array of partition fields per spec version ``N``.

Every other key belongs to someone else (pylance, other clients) and is ignored here; the
caller keeps it. Values are written as compact JSON (``separators=(",", ":")``, non-ASCII
kept as UTF-8) with keys in a stable order, so equal metadata gives equal strings.

>>> import pyarrow as pa
>>> from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
>>> from lance_partitioned.spec.schema import NamespaceSchema
>>> schema = NamespaceSchema.from_arrow(pa.schema([("country", pa.utf8())]))
>>> spec = PartitionSpec(1, (PartitionField(1, "country", 0, "col", pa.utf8()),))
>>> props = NamespaceMetadata(schema, (spec,)).to_table_metadata()
>>> props["partition_spec_v1"]
'[{"field_id":1,"name":"country","source_id":0,"expression":"col","result_type":{"type":"utf8"}}]'
>>> parsed = NamespaceMetadata.from_table_metadata({**props, "owner": "pylance"})
>>> parsed == NamespaceMetadata(schema, (spec,))
True
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.spec.evaluate import valid_time_zone
from lance_partitioned.spec.partitioning import (
    PartitionField,
    PartitionSpec,
    bind_spec,
    check_authored,
    validate_specs,
)
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.shorthand import parse_partition_by, warn_ambiguous_date_parts

__all__ = [
    "LANCE_RESERVED_COLUMNS",
    "SCHEMA_KEY",
    "SPEC_KEY_PREFIX",
    "NamespaceMetadata",
    "check_column_names",
    "keep_unknown_keys",
]

SCHEMA_KEY = "schema"
"""The metadata key of the namespace schema."""

SPEC_KEY_PREFIX = "partition_spec_v"
"""The metadata key of partition spec version ``N`` is ``partition_spec_v<N>``."""


def _spec_key_version(key: str) -> int | None:
    """The version ``N`` of a ``partition_spec_v<N>`` key, or None for any other key."""
    if not key.startswith(SPEC_KEY_PREFIX):
        return None
    digits = key[len(SPEC_KEY_PREFIX) :]
    if not (digits.isascii() and digits.isdigit()):
        return None
    return int(digits)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _loads(key: str, value: Any, error: type[errors.InvalidInputError]) -> Any:
    if not isinstance(value, str):
        raise error(f"__manifest metadata key {key!r} must hold a JSON string, got {value!r}")
    try:
        return json.loads(value)
    except ValueError as exc:
        raise error(f"__manifest metadata key {key!r} is not valid JSON: {exc}") from exc


# Characters Lance cannot take in a column name: it refuses a top-level ``.`` on write (a
# path separator) and cannot select a column whose name holds a backtick (pylance 14).
_FORBIDDEN_IN_NAMES = (".", "`")
LANCE_RESERVED_COLUMNS: frozenset[str] = frozenset(
    {"_rowid", "_rowaddr", "_rowoffset", "_row_created_at_version", "_row_last_updated_at_version"}
)
"""Top-level column names pylance 14 refuses on write ("is a reserved name"): its row id, row
address and row version columns. Names that only appear in search results (``_distance``,
``_score``) are accepted by Lance, and so by us; so are these names inside a struct."""


def _names(fields: Sequence[pa.Field], path: tuple[str, ...] = ()) -> dict[str, tuple[str, ...]]:
    """``lance:field_id`` -> path of names, for every field at every depth."""
    out: dict[str, tuple[str, ...]] = {}
    for child in fields:
        here = (*path, child.name)
        raw = (child.metadata or {}).get(b"lance:field_id")
        out[raw.decode() if raw is not None else ".".join(here)] = here
        dtype = child.type
        if pa.types.is_struct(dtype):
            out.update(_names([dtype.field(i) for i in range(dtype.num_fields)], here))
        elif pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
            out.update(_names([dtype.value_field], here))
    return out


def check_column_names(schema: NamespaceSchema, before: NamespaceSchema | None = None) -> None:
    """Refuse a column name that Lance cannot store or select (``.``, a backtick, a top-level
    name of :data:`LANCE_RESERVED_COLUMNS`), for every field that is new or renamed since
    ``before`` (names another client already wrote load).

    Raises
    ------
    SchemaError
        Naming the column and the character.

    Examples
    --------
    >>> check_column_names(NamespaceSchema.from_arrow(pa.schema([("a_b", pa.int8())])))
    >>> check_column_names(NamespaceSchema.from_arrow(pa.schema([("dot.ted", pa.int8())])))
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.SchemaError: column name 'dot.ted' contains '.', ...
    >>> check_column_names(NamespaceSchema.from_arrow(pa.schema([("_rowid", pa.int8())])))
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.SchemaError: column name '_rowid' is reserved by Lance ...
    """
    old = {} if before is None else _names(list(before.arrow_schema))
    for field_id, path in _names(list(schema.arrow_schema)).items():
        if old.get(field_id) == path:
            continue
        if len(path) == 1 and path[0] in LANCE_RESERVED_COLUMNS:
            raise errors.SchemaError(
                f"column name {path[0]!r} is reserved by Lance (its "
                f"{', '.join(sorted(LANCE_RESERVED_COLUMNS))} columns): choose another name"
            )
        for char in _FORBIDDEN_IN_NAMES:
            if char in path[-1]:
                raise errors.SchemaError(
                    f"column name {'.'.join(path)!r} contains {char!r}, which Lance cannot "
                    "store or select in a column name; choose another name"
                )
    _check_time_zones(schema, before)


def _zones(dtype: pa.DataType) -> Iterator[str]:
    """Every time zone named by ``dtype`` or its children."""
    if pa.types.is_timestamp(dtype) and dtype.tz is not None:
        yield dtype.tz
    for i in range(dtype.num_fields):
        yield from _zones(dtype.field(i).type)


def _check_time_zones(schema: NamespaceSchema, before: NamespaceSchema | None) -> None:
    """Refuse a time zone DataFusion cannot read (a typo would make every later write of a
    partition expression over the column fail); zones another client already wrote load.

    >>> zoned = pa.schema([("ts", pa.timestamp("us", "Europe/Paris"))])
    >>> check_column_names(NamespaceSchema.from_arrow(zoned))
    >>> bad = pa.schema([("ts", pa.timestamp("us", "Mars/Olympus"))])
    >>> check_column_names(NamespaceSchema.from_arrow(bad))
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.SchemaError: column 'ts': unknown time zone 'Mars/Olympus', ...
    """
    known = set() if before is None else {z for f in before.arrow_schema for z in _zones(f.type)}
    for field in schema.arrow_schema:
        for zone in _zones(field.type):
            if zone not in known and not valid_time_zone(zone):
                raise errors.SchemaError(
                    f"column {field.name!r}: unknown time zone {zone!r}, write an IANA name "
                    "(Europe/Paris, UTC) or a fixed offset (+05:30)"
                )


def _deprecated(schema: NamespaceSchema, field_id: int) -> bool:
    try:
        return schema.is_deprecated(field_id)
    except errors.SchemaError:
        return False  # validate_specs reports a missing source


@dataclass(frozen=True)
class NamespaceMetadata:
    """The schema and every partition spec version of a namespace, validated together.

    Parameters
    ----------
    schema : NamespaceSchema
        The namespace schema.
    specs : tuple of PartitionSpec
        At least one version; stored sorted by version.

    Raises
    ------
    PartitionSpecError
        No spec, or the specs break a rule of
        :func:`~lance_partitioned.spec.partitioning.validate_specs` against the schema. These
        are the loading rules: a spec on a deprecated column (Appendix E) loads;
        :meth:`with_spec` and :meth:`with_schema` hold what this package authors to the
        stricter :func:`~lance_partitioned.spec.partitioning.check_authored`.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("d", pa.date32()), ("s", pa.utf8())]))
    >>> v1 = PartitionSpec(1, (PartitionField(1, "d", 0, "col", pa.date32()),))
    >>> v2 = PartitionSpec(2, (PartitionField(2, "s", 1, "col", pa.utf8()),))
    >>> meta = NamespaceMetadata(schema, (v2, v1))
    >>> [s.version for s in meta.specs], meta.current_spec.version
    ([1, 2], 2)
    >>> meta.partition_columns()
    [('d', DataType(date32[day])), ('s', DataType(string))]
    """

    schema: NamespaceSchema
    specs: tuple[PartitionSpec, ...]

    @classmethod
    def create(
        cls, schema: pa.Schema, partition_by: str | Sequence[PartitionField]
    ) -> NamespaceMetadata:
        """The metadata of a new namespace: ``schema`` (field ids assigned depth-first unless
        every field carries one) and its first partition spec, ``partition_by`` as the
        shorthand or as bound fields. Every client that creates a namespace (the Python API,
        the Spark writer) builds it here, held to the rules this package authors to.

        Raises
        ------
        SchemaError
            A column name that Lance cannot store (:func:`check_column_names`).
        PartitionSpecError
            A spec that breaks a rule of spec 000.

        >>> meta = NamespaceMetadata.create(pa.schema([("k", pa.utf8())]), "k")
        >>> [f.name for f in meta.current_spec.fields]
        ['k']
        """
        ns_schema = NamespaceSchema.from_arrow(schema)
        check_column_names(ns_schema)
        if isinstance(partition_by, str):
            unbound = parse_partition_by(partition_by, ns_schema)
            spec = bind_spec(unbound, existing=(), schema=ns_schema)
        else:
            spec = PartitionSpec(1, tuple(partition_by))
            validate_specs([spec], ns_schema)
            check_authored(spec, ns_schema)
            warn_ambiguous_date_parts(spec.fields, ns_schema)
        return cls(ns_schema, (spec,))

    def __post_init__(self) -> None:
        if not isinstance(self.schema, NamespaceSchema):
            raise errors.SchemaError(
                f"NamespaceMetadata needs a NamespaceSchema, got {type(self.schema).__name__}"
            )
        specs = tuple(sorted(self.specs, key=lambda spec: spec.version))
        if not specs:
            raise errors.PartitionSpecError(
                "a partitioned namespace needs at least one partition spec version"
            )
        validate_specs(specs, self.schema)
        object.__setattr__(self, "specs", specs)

    @property
    def current_spec(self) -> PartitionSpec:
        """The newest spec (highest version): the one new data is written with."""
        return self.specs[-1]

    def spec(self, version: int) -> PartitionSpec:
        """The spec of ``version``; :class:`PartitionSpecError` if there is none."""
        for spec in self.specs:
            if spec.version == version:
                return spec
        known = ", ".join(f"v{spec.version}" for spec in self.specs)
        raise errors.PartitionSpecError(
            f"there is no partition spec version v{version} (versions: {known})"
        )

    @staticmethod
    def is_partitioned(table_metadata: Mapping[str, str]) -> bool:
        """Whether ``table_metadata`` has a ``partition_spec_v<N>`` key (spec 000).

        Examples
        --------
        >>> NamespaceMetadata.is_partitioned({"partition_spec_v3": "[]"})
        True
        >>> NamespaceMetadata.is_partitioned({"schema": "{}", "partition_spec_vx": "[]"})
        False
        """
        return any(_spec_key_version(key) is not None for key in table_metadata)

    @staticmethod
    def own_keys(table_metadata: Mapping[str, str]) -> dict[str, str]:
        """The entries of ``table_metadata`` that spec 000 defines: the schema and the
        partition specs (what a conflicting metadata commit is compared on).

        Examples
        --------
        >>> NamespaceMetadata.own_keys({"schema": "{}", "partition_spec_v1": "[]", "x": "1"})
        {'schema': '{}', 'partition_spec_v1': '[]'}
        """
        return {
            key: value
            for key, value in table_metadata.items()
            if key == "schema" or _spec_key_version(key) is not None
        }

    @classmethod
    def from_table_metadata(cls, table_metadata: Mapping[str, str]) -> NamespaceMetadata:
        """Parse the ``__manifest`` table metadata; keys other than ours are ignored.

        Raises
        ------
        NotAPartitionedNamespaceError
            No ``partition_spec_v<N>`` key.
        SchemaError
            ``schema`` is missing, not JSON, or not a valid namespace schema.
        PartitionSpecError
            A spec key is not canonical (``partition_spec_v01``), not JSON, or malformed,
            or the specs break a rule of spec 000.
        """
        raw_specs: list[tuple[int, str, str]] = []
        for key, value in table_metadata.items():
            version = _spec_key_version(key)
            if version is None:
                continue
            if key != f"{SPEC_KEY_PREFIX}{version}" or version < 1:
                raise errors.PartitionSpecError(
                    f"__manifest metadata key {key!r} is not a valid partition spec key "
                    f"(expected {SPEC_KEY_PREFIX}<N> with N >= 1 and no leading zero)"
                )
            raw_specs.append((version, key, value))
        if not raw_specs:
            raise errors.NotAPartitionedNamespaceError(
                f"the __manifest metadata has no {SPEC_KEY_PREFIX}<N> key: "
                "this is not a partitioned namespace"
            )
        if SCHEMA_KEY not in table_metadata:
            raise errors.SchemaError(
                f"the __manifest metadata has no {SCHEMA_KEY!r} key (the namespace schema)"
            )
        schema_obj = _loads(SCHEMA_KEY, table_metadata[SCHEMA_KEY], errors.SchemaError)
        try:
            schema = NamespaceSchema.from_json(schema_obj)
        except errors.SchemaError:
            raise
        except errors.InvalidInputError as exc:
            raise errors.SchemaError(f"__manifest metadata key {SCHEMA_KEY!r}: {exc}") from exc
        from lance_partitioned.spec.dialects import detect_dialect, load_spec

        specs: list[PartitionSpec] = []
        dialects: set[str] = set()
        ids: dict[str, int] = {}
        for version, key, value in sorted(raw_specs):
            obj = _loads(key, value, errors.PartitionSpecError)
            dialects.add(detect_dialect(obj, key).value)
            specs.append(load_spec(version, obj, ids))
        if len(dialects) > 1:
            raise errors.PartitionSpecError(
                "the partition specs mix the two dialects (JSON arrays of spec 000 and "
                "published objects); a namespace uses one"
            )
        return cls(schema, tuple(specs))

    def to_table_metadata(self) -> dict[str, str]:
        """Our keys as compact JSON strings: ``schema``, then every spec by version."""
        result = {SCHEMA_KEY: _dumps(self.schema.to_json())}
        for spec in self.specs:
            result[spec.key] = _dumps(spec.to_json())
        return result

    def with_spec(self, spec: PartitionSpec) -> NamespaceMetadata:
        """A copy with ``spec`` added as the new current version (validated).

        Raises
        ------
        PartitionSpecError
            ``spec.version`` is not above the current version, or a rule is broken.
        """
        if spec.version <= self.current_spec.version:
            raise errors.PartitionSpecError(
                f"new partition spec v{spec.version} must have a version above the current "
                f"v{self.current_spec.version}"
            )
        from lance_partitioned.spec.dialects import PublishedSpec, published_spec

        if isinstance(self.current_spec, PublishedSpec):  # keep the namespace's dialect
            spec = published_spec(spec, self.specs, self.schema)
        updated = NamespaceMetadata(self.schema, (*self.specs, spec))
        check_authored(spec, self.schema)
        return updated

    def with_schema(self, schema: NamespaceSchema) -> NamespaceMetadata:
        """A copy with ``schema`` as the namespace schema (validated against every spec).

        Raises
        ------
        PartitionSpecError
            The change deprecates a source column of the current spec (evolve the spec
            first: new data would otherwise be partitioned by a column it cannot hold). A
            current spec that already used a deprecated column when loaded (Appendix E)
            stays as it is.
        """
        current = self.current_spec
        for spec_field in current.fields:
            source = spec_field.source_id
            if _deprecated(schema, source) and not _deprecated(self.schema, source):
                raise errors.PartitionSpecError(
                    f"{current.key} field {spec_field.name!r}: source column "
                    f"{self.schema.name_of(source)!r} (source_id {source}) would become "
                    "deprecated while the newest partition spec uses it; update the partition "
                    "spec first"
                )
        check_column_names(schema, before=self.schema)
        return NamespaceMetadata(schema, self.specs)

    def partition_columns(self) -> list[tuple[str, pa.DataType]]:
        """The ``__manifest`` partition columns: one per distinct field name, all versions.

        In order of first appearance (by version, then level); the type is the field's
        ``result_type`` (the same in every version, by spec 000).
        """
        columns: dict[str, pa.DataType] = {}
        for spec in self.specs:
            for spec_field in spec.fields:
                columns.setdefault(spec_field.name, spec_field.result_type)
        return list(columns.items())


# The JSON keys this package writes; every other key of a loaded object belongs to someone else.
_SCHEMA_KEYS = frozenset({"fields", "metadata"})
_FIELD_KEYS = frozenset({"name", "nullable", "type", "metadata"})
_TYPE_KEYS = frozenset(
    {"type", "fields", "length", "precision", "scale", "unit", "timezone", "keys_sorted"}
)
_PARTITION_FIELD_KEYS = frozenset({"field_id", "name", "source_id", "expression", "result_type"})


def _copy_unknown(old: Any, new: Any, known: frozenset[str]) -> None:
    """Copy into ``new`` every key of ``old`` that is not ``known`` and not in ``new``."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key, value in old.items():
            if key not in known and key not in new:
                new[key] = value


def _field_id_of(obj: Any) -> str | None:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    value = metadata.get("lance:field_id") if isinstance(metadata, dict) else None
    return value if isinstance(value, str) else None


def _schema_fields(fields: Any, out: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every field object of a JsonArrowSchema, at every depth, by its ``lance:field_id``."""
    for obj in fields if isinstance(fields, list) else []:
        field_id = _field_id_of(obj)
        if field_id is not None:
            out.setdefault(field_id, obj)
        dtype = obj.get("type") if isinstance(obj, dict) else None
        if isinstance(dtype, dict):
            _schema_fields(dtype.get("fields"), out)
    return out


def _keep_in_fields(old_by_id: dict[str, dict[str, Any]], fields: Any) -> None:
    for obj in fields if isinstance(fields, list) else []:
        old = old_by_id.get(_field_id_of(obj) or "")
        if old is not None:
            _copy_unknown(old, obj, _FIELD_KEYS)
            _copy_unknown(old.get("type"), obj.get("type"), _TYPE_KEYS)
        dtype = obj.get("type") if isinstance(obj, dict) else None
        if isinstance(dtype, dict):
            _keep_in_fields(old_by_id, dtype.get("fields"))


def keep_unknown_keys(key: str, old: str, new: str) -> str:
    """``new``, the value we write under ``__manifest`` metadata ``key``, with every JSON key
    that ``old`` (the value it replaces, maybe another client's) holds and we do not own.

    Kept at every level: the schema object's own keys, each field object's and each type
    object's (fields matched by ``lance:field_id``, so renamed and promoted columns keep
    theirs), and each partition field object's and its ``result_type``'s (matched by
    ``field_id``). A key we write ourselves always takes our value; keys we own that we no
    longer write (a promoted type's old parameters) are not resurrected. ``new`` is returned
    unchanged when nothing is to be kept or ``old`` is not JSON we understand.

    Examples
    --------
    >>> old = '[{"field_id": 1, "name": "d", "x-owner": "geo", "result_type": {"type": "utf8"}}]'
    >>> new = ('[{"field_id":1,"name":"d","source_id":0,"expression":"col",'
    ...        '"result_type":{"type":"utf8"}}]')
    >>> json.loads(keep_unknown_keys("partition_spec_v1", old, new))[0]["x-owner"]
    'geo'
    >>> old = '{"x-generator": "them", "fields": []}'
    >>> keep_unknown_keys("schema", old, '{"fields":[]}')
    '{"fields":[],"x-generator":"them"}'
    """
    try:
        old_obj, new_obj = json.loads(old), json.loads(new)
    except ValueError:
        return new
    if key == SCHEMA_KEY and isinstance(old_obj, dict) and isinstance(new_obj, dict):
        _copy_unknown(old_obj, new_obj, _SCHEMA_KEYS)
        _keep_in_fields(_schema_fields(old_obj.get("fields"), {}), new_obj.get("fields"))
    elif _spec_key_version(key) is not None and isinstance(old_obj, list):
        by_id = {
            obj.get("field_id"): obj
            for obj in old_obj
            if isinstance(obj, dict) and _is_json_int(obj.get("field_id"))
        }
        for obj in new_obj if isinstance(new_obj, list) else []:
            previous = by_id.get(obj.get("field_id")) if isinstance(obj, dict) else None
            if previous is not None:
                _copy_unknown(previous, obj, _PARTITION_FIELD_KEYS)
                _copy_unknown(previous.get("result_type"), obj.get("result_type"), _TYPE_KEYS)
    else:
        return new
    result = _dumps(new_obj)
    return new if result == _dumps(json.loads(new)) else result


def _is_json_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
