"""Partition specs: fields, versions, field-id assignment and the rules of spec 000.

A partition spec version ``N`` is stored in the ``__manifest`` metadata under the key
``partition_spec_v<N>`` as a JSON array of partition fields (spec 000, "Partitioning"):

>>> import pyarrow as pa
>>> spec = PartitionSpec(1, (PartitionField(1, "event_date", 1, "col", pa.date32()),))
>>> spec.key
'partition_spec_v1'
>>> spec.to_json()
[{'field_id': 1, 'name': 'event_date', 'source_id': 1, 'expression': 'col',
  'result_type': {'type': 'date32'}}]

Field ids follow the reuse rule of spec 000: a field with the same ``source_id``, ``name``
and ``expression`` as a field of *any* earlier version keeps that field's id; every other
field gets a new id, greater than every id ever assigned (:func:`bind_spec`). Expressions
are compared as exact strings, as the spec states them.

:func:`validate_specs` checks every rule over all versions at once; each violation is a
:class:`~lance_partitioned.errors.PartitionSpecError` naming the field and the version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.transforms import Transform, parse_transform
from lance_partitioned.spec.types import type_from_json, type_to_json

__all__ = [
    "FIRST_FIELD_ID",
    "RESERVED_NAMES",
    "PartitionField",
    "PartitionSpec",
    "UnboundPartitionField",
    "bind_spec",
    "check_authored",
    "validate_specs",
]

RESERVED_NAMES: frozenset[str] = frozenset(
    {"object_id", "object_type", "location", "metadata", "base_objects", "read_version"}
)
"""Columns of the ``__manifest`` table itself: no partition field may use these names."""

FIRST_FIELD_ID = 1
"""The id of the first partition field ever assigned (Appendix A numbers them from 1)."""

_JSON_KEYS = ("field_id", "name", "source_id", "expression", "result_type")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class PartitionField:
    """One partition field of a spec version, exactly as stored in ``partition_spec_v<N>``.

    Parameters
    ----------
    field_id : int
        Identifies the field across all spec versions; never reused for another field.
    name : str
        The partition field name, also the ``__manifest`` column name.
    source_id : int
        The ``lance:field_id`` of the source column in the namespace schema.
    expression : str
        DataFusion SQL over ``col`` (the source column), e.g. ``"date_part('year', col)"``.
    result_type : pyarrow.DataType
        The declared type of the expression's result.

    Examples
    --------
    >>> import pyarrow as pa
    >>> year = PartitionField(2, "event_year", 1, "date_part('year', col)", pa.int32())
    >>> year.transform
    Year()
    >>> PartitionField.from_json(year.to_json()) == year
    True
    """

    field_id: int
    name: str
    source_id: int
    expression: str
    result_type: pa.DataType

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise errors.PartitionSpecError(
                f"partition field name must be a non-empty string, got {self.name!r}"
            )
        for attr in ("field_id", "source_id"):
            value = getattr(self, attr)
            if not _is_int(value) or value < 0:
                raise errors.PartitionSpecError(
                    f"partition field {self.name!r}: {attr} must be an integer >= 0, got {value!r}"
                )
        if not isinstance(self.expression, str) or not self.expression.strip():
            raise errors.PartitionSpecError(
                f"partition field {self.name!r}: expression must be a non-empty string, "
                f"got {self.expression!r}"
            )
        if not isinstance(self.result_type, pa.DataType):
            raise errors.PartitionSpecError(
                f"partition field {self.name!r}: result_type must be a pyarrow.DataType, "
                f"got {self.result_type!r}"
            )

    @cached_property
    def transform(self) -> Transform:
        """The transform of :attr:`expression` (an Appendix D form, or opaque SQL); cached."""
        return parse_transform(self.expression, self.result_type)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of spec 000, keys in the spec's order."""
        return {
            "field_id": self.field_id,
            "name": self.name,
            "source_id": self.source_id,
            "expression": self.expression,
            "result_type": type_to_json(self.result_type),
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> PartitionField:
        """Parse one partition field object; unknown keys are ignored.

        Raises
        ------
        PartitionSpecError
            A key is missing or has the wrong JSON type, or ``result_type`` is not a
            JsonArrowDataType this package knows.
        """
        if not isinstance(obj, Mapping):
            raise errors.PartitionSpecError(
                f"a partition field must be a JSON object, got {type(obj).__name__}"
            )
        label = repr(obj["name"]) if isinstance(obj.get("name"), str) else "<unnamed>"
        for key in _JSON_KEYS:
            if key not in obj:
                raise errors.PartitionSpecError(
                    f"partition field {label} is missing the key {key!r}"
                )
        for key in ("field_id", "source_id"):
            if not _is_int(obj[key]):
                raise errors.PartitionSpecError(
                    f"partition field {label}: {key!r} must be a JSON int, got {obj[key]!r}"
                )
        for key in ("name", "expression"):
            if not isinstance(obj[key], str):
                raise errors.PartitionSpecError(
                    f"partition field {label}: {key!r} must be a JSON string, got {obj[key]!r}"
                )
        if not isinstance(obj["result_type"], Mapping):
            raise errors.PartitionSpecError(
                f"partition field {label}: 'result_type' must be a JSON object, "
                f"got {obj['result_type']!r}"
            )
        try:
            result_type = type_from_json(obj["result_type"])
        except errors.PartitionSpecError:
            raise
        except errors.InvalidInputError as exc:
            raise errors.PartitionSpecError(
                f"partition field {label}: bad 'result_type': {exc}"
            ) from exc
        return cls(
            field_id=obj["field_id"],
            name=obj["name"],
            source_id=obj["source_id"],
            expression=obj["expression"],
            result_type=result_type,
        )


@dataclass(frozen=True)
class UnboundPartitionField:
    """A partition field without its field id, as the ``partition_by`` shorthand yields it.

    :func:`bind_spec` assigns the id.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lance_partitioned.spec.transforms import Bucket
    >>> UnboundPartitionField("user_bucket", 3, Bucket(16), pa.int64()).expression
    'abs(hash(col)) % 16'
    """

    name: str
    source_id: int
    transform: Transform
    result_type: pa.DataType

    @property
    def expression(self) -> str:
        """The transform's canonical DataFusion SQL text."""
        return self.transform.expression


@dataclass(frozen=True)
class PartitionSpec:
    """One version of the partitioning: an ordered tuple of partition fields.

    The order of :attr:`fields` is the order of the partition levels under ``v<version>``.
    An empty spec is an unpartitioned namespace (one leaf table per spec version).

    Examples
    --------
    >>> import pyarrow as pa
    >>> spec = PartitionSpec(2, (
    ...     PartitionField(2, "event_year", 1, "date_part('year', col)", pa.int32()),
    ...     PartitionField(3, "country", 2, "col", pa.utf8()),
    ... ))
    >>> spec.key, spec.names
    ('partition_spec_v2', ['event_year', 'country'])
    >>> spec.field("country").field_id
    3
    >>> PartitionSpec.from_json(2, spec.to_json()) == spec
    True
    """

    version: int
    fields: tuple[PartitionField, ...] = ()

    def __post_init__(self) -> None:
        if not _is_int(self.version) or self.version < 1:
            raise errors.PartitionSpecError(
                f"partition spec version must be an integer >= 1, got {self.version!r}"
            )
        fields = tuple(self.fields)
        for spec_field in fields:
            if not isinstance(spec_field, PartitionField):
                raise errors.PartitionSpecError(
                    f"partition spec v{self.version}: expected PartitionField, "
                    f"got {type(spec_field).__name__}"
                )
        object.__setattr__(self, "fields", fields)

    @property
    def key(self) -> str:
        """The ``__manifest`` metadata key of this version, ``partition_spec_v<version>``."""
        return f"partition_spec_v{self.version}"

    @property
    def names(self) -> list[str]:
        """The partition field names, in level order."""
        return [spec_field.name for spec_field in self.fields]

    @property
    def is_unpartitioned(self) -> bool:
        """True when the spec has no fields."""
        return not self.fields

    def field(self, name: str) -> PartitionField:
        """The field called ``name``; :class:`PartitionSpecError` if there is none."""
        for spec_field in self.fields:
            if spec_field.name == name:
                return spec_field
        raise errors.PartitionSpecError(
            f"partition spec v{self.version} has no partition field {name!r} "
            f"(fields: {', '.join(self.names) or 'none'})"
        )

    def to_json(self) -> list[dict[str, Any]]:
        """The JSON array stored under :attr:`key`."""
        return [spec_field.to_json() for spec_field in self.fields]

    @classmethod
    def from_json(cls, version: int, obj: Sequence[Mapping[str, Any]]) -> PartitionSpec:
        """Parse the JSON array of version ``version``.

        Raises
        ------
        PartitionSpecError
            ``obj`` is not an array, or one of its fields is malformed.
        """
        if isinstance(obj, (str, bytes, Mapping)) or not isinstance(obj, Sequence):
            raise errors.PartitionSpecError(
                f"partition_spec_v{version} must be a JSON array, got {type(obj).__name__}"
            )
        try:
            fields = tuple(PartitionField.from_json(item) for item in obj)
        except errors.PartitionSpecError as exc:
            raise errors.PartitionSpecError(f"partition_spec_v{version}: {exc}") from exc
        return cls(version, fields)

    def same_fields(self, unbound: Sequence[UnboundPartitionField]) -> bool:
        """True when ``unbound`` describes exactly these fields, in the same order.

        Names, source ids, expressions and result types must all match: evolving to such a
        spec would be a no-op.
        """
        return len(unbound) == len(self.fields) and all(
            (f.name, f.source_id, f.expression, f.result_type)
            == (u.name, u.source_id, u.expression, u.result_type)
            for f, u in zip(self.fields, unbound, strict=True)
        )


def bind_spec(
    unbound: Sequence[UnboundPartitionField],
    *,
    existing: Sequence[PartitionSpec],
    schema: NamespaceSchema,
) -> PartitionSpec:
    """Assign a version and field ids to ``unbound`` and validate it with ``existing``.

    The version is one more than the newest existing version (1 for the first spec). A
    field with the same ``source_id``, ``name`` and ``expression`` as a field of any
    existing version reuses that field's id; any other field gets one more than the
    largest id ever assigned (:data:`FIRST_FIELD_ID` for the very first).

    Parameters
    ----------
    unbound : sequence of UnboundPartitionField
        The new spec's fields, in level order.
    existing : sequence of PartitionSpec
        Every version already stored.
    schema : NamespaceSchema
        The namespace schema the source ids refer to.

    Returns
    -------
    PartitionSpec
        The new version.

    Raises
    ------
    PartitionSpecError
        The new spec, together with ``existing``, breaks a rule of :func:`validate_specs`.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from lance_partitioned.spec.transforms import Identity, Year
    >>> schema = NamespaceSchema.from_arrow(pa.schema(
    ...     [("id", pa.int64()), ("event_date", pa.date32()), ("country", pa.utf8())]))
    >>> v1 = bind_spec([UnboundPartitionField("event_date", 1, Identity(), pa.date32())],
    ...                existing=[], schema=schema)
    >>> v2 = bind_spec([UnboundPartitionField("event_year", 1, Year(), pa.int32()),
    ...                 UnboundPartitionField("country", 2, Identity(), pa.utf8())],
    ...                existing=[v1], schema=schema)
    >>> v2.version, [f.field_id for f in v2.fields]
    (2, [2, 3])
    """
    version = max((spec.version for spec in existing), default=0) + 1
    known: dict[tuple[int, str, str], int] = {}
    next_id = FIRST_FIELD_ID
    for spec in existing:
        for spec_field in spec.fields:
            known.setdefault(
                (spec_field.source_id, spec_field.name, spec_field.expression), spec_field.field_id
            )
            next_id = max(next_id, spec_field.field_id + 1)
    fields: list[PartitionField] = []
    for item in unbound:
        identity = (item.source_id, item.name, item.expression)
        field_id = known.get(identity)
        if field_id is None:
            field_id = next_id
            next_id += 1
            known[identity] = field_id
        fields.append(
            PartitionField(field_id, item.name, item.source_id, item.expression, item.result_type)
        )
    spec = PartitionSpec(version, tuple(fields))
    validate_specs([*existing, spec], schema)
    check_authored(spec, schema)
    return spec


def validate_specs(specs: Sequence[PartitionSpec], schema: NamespaceSchema) -> None:
    """Check the rules every namespace must follow, over all its partition spec versions.

    These are what loading checks (be tolerant of what other clients wrote): versions are
    unique; a field id always denotes the same ``(source_id, name, expression)``, and the
    same ``(source_id, name, expression)`` always has the same field id (both MUSTs of
    spec 000); a name has one ``result_type`` across versions (a MUST); names are unique
    within a spec (one ``__manifest`` column cannot hold two values) and not in
    :data:`RESERVED_NAMES`; the source exists in the schema. A deprecated source (Appendix
    E) and an expression this package does not recognise (an opaque transform) load;
    :func:`check_authored` holds what only a new spec must satisfy.

    Raises
    ------
    PartitionSpecError
        The first rule broken, naming the field and the version.

    Examples
    --------
    >>> import pyarrow as pa
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("s", pa.utf8())]))
    >>> validate_specs([PartitionSpec(1, (PartitionField(1, "s", 0, "col", pa.utf8()),))], schema)
    >>> validate_specs(
    ...     [PartitionSpec(1, (PartitionField(1, "s", 9, "col", pa.utf8()),))], schema)
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.PartitionSpecError: partition_spec_v1 field 's': source_id 9 ...
    """
    versions: set[int] = set()
    for spec in specs:
        if spec.version in versions:
            raise errors.PartitionSpecError(f"partition_spec_v{spec.version} is defined twice")
        versions.add(spec.version)
    by_id: dict[int, tuple[PartitionField, int]] = {}
    by_identity: dict[tuple[int, str, str], tuple[PartitionField, int]] = {}
    by_name: dict[str, tuple[PartitionField, int]] = {}
    for spec in sorted(specs, key=lambda s: s.version):
        seen: set[str] = set()
        for spec_field in spec.fields:
            where = f"partition_spec_v{spec.version} field {spec_field.name!r}"
            _check_name(spec_field, where, seen)
            _check_across_versions(spec_field, spec.version, where, by_id, by_identity, by_name)
            _check_source(spec_field, where, schema)


def check_authored(spec: PartitionSpec, schema: NamespaceSchema) -> None:
    """The rules a spec this package authors must follow (``create``,
    ``update_partition_spec``), beyond :func:`validate_specs`.

    Its source columns are not deprecated (spec 000: new spec versions should not reference
    them); each expression applies to its source type; and, the MUSTs of spec 000 that
    loading cannot check without evaluating, each expression is deterministic and maps NULL
    to NULL (:func:`~lance_partitioned.spec.evaluate.check_expression`).

    Raises
    ------
    PartitionSpecError
        The first rule broken, naming the field and the version.

    Examples
    --------
    >>> import pyarrow as pa
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("n", pa.int64())]))
    >>> check_authored(PartitionSpec(1, (PartitionField(1, "n", 0, "col", pa.int64()),)), schema)
    >>> check_authored(
    ...     PartitionSpec(1, (PartitionField(1, "y", 0, "date_part('year', col)", pa.int32()),)),
    ...     schema)
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.PartitionSpecError: partition_spec_v1 field 'y': ...
    >>> check_authored(
    ...     PartitionSpec(1, (PartitionField(1, "c", 0, "coalesce(col, 0)", pa.int64()),)), schema)
    Traceback (most recent call last):
    ...
    lance_partitioned.errors.PartitionExpressionError: partition_spec_v1 field 'c': ...
    """
    from lance_partitioned.spec.evaluate import check_expression

    for spec_field in spec.fields:
        where = f"partition_spec_v{spec.version} field {spec_field.name!r}"
        column = schema.name_of(spec_field.source_id)
        if schema.is_deprecated(spec_field.source_id):
            raise errors.PartitionSpecError(
                f"{where}: source column {column!r} (source_id {spec_field.source_id}) is "
                "deprecated; a new partition spec may not use it"
            )
        source = schema.field_by_id(spec_field.source_id)
        if not spec_field.transform.can_apply(source.type):
            raise errors.PartitionSpecError(
                f"{where}: expression {spec_field.expression!r} cannot be applied to source "
                f"column {column!r} of type {source.type}"
            )
        try:
            check_expression(spec_field.expression, source.type, spec_field.result_type)
        except errors.PartitionSpecError as exc:
            raise type(exc)(f"{where}: {exc}") from exc


def _check_name(spec_field: PartitionField, where: str, seen: set[str]) -> None:
    if spec_field.name in RESERVED_NAMES:
        raise errors.PartitionSpecError(
            f"{where}: the name {spec_field.name!r} is reserved for a __manifest column "
            f"({', '.join(sorted(RESERVED_NAMES))})"
        )
    if spec_field.name in seen:
        raise errors.PartitionSpecError(f"{where}: the name {spec_field.name!r} is used twice")
    seen.add(spec_field.name)


def _check_across_versions(
    spec_field: PartitionField,
    version: int,
    where: str,
    by_id: dict[int, tuple[PartitionField, int]],
    by_identity: dict[tuple[int, str, str], tuple[PartitionField, int]],
    by_name: dict[str, tuple[PartitionField, int]],
) -> None:
    identity = (spec_field.source_id, spec_field.name, spec_field.expression)
    previous = by_id.get(spec_field.field_id)
    if previous is not None:
        other, other_version = previous
        if (other.source_id, other.name, other.expression) != identity:
            raise errors.PartitionSpecError(
                f"{where}: field_id {spec_field.field_id} is already the id of field "
                f"{other.name!r} (source_id {other.source_id}, expression {other.expression!r}) "
                f"in partition_spec_v{other_version}; field ids are never reused"
            )
    previous = by_identity.get(identity)
    if previous is not None:
        other, other_version = previous
        if other.field_id != spec_field.field_id:
            raise errors.PartitionSpecError(
                f"{where}: has field_id {spec_field.field_id} but the same field (source_id "
                f"{spec_field.source_id}, expression {spec_field.expression!r}) has field_id "
                f"{other.field_id} in partition_spec_v{other_version}; the id must be reused"
            )
    previous = by_name.get(spec_field.name)
    if previous is not None:
        other, other_version = previous
        if other.result_type != spec_field.result_type:
            raise errors.PartitionSpecError(
                f"{where}: result_type {spec_field.result_type} differs from "
                f"{other.result_type} of the field of the same name in "
                f"partition_spec_v{other_version}"
            )
    by_id.setdefault(spec_field.field_id, (spec_field, version))
    by_identity.setdefault(identity, (spec_field, version))
    by_name.setdefault(spec_field.name, (spec_field, version))


def _check_source(spec_field: PartitionField, where: str, schema: NamespaceSchema) -> None:
    try:
        schema.field_by_id(spec_field.source_id)
    except errors.SchemaError as exc:
        raise errors.PartitionSpecError(
            f"{where}: source_id {spec_field.source_id} is not a field of the namespace schema"
        ) from exc
