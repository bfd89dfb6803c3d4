"""The two dialects of ``partition_spec_v<N>``, loaded into one field model.

Spec 000 (the dialect this package writes by default) stores a spec version as a JSON *array*
of fields ``{field_id: int, name, source_id, expression over col, result_type}``; the text
published upstream stores a JSON *object* ``{"id": N, "fields": [...]}`` of fields
``{field_id: str, source_ids: [int], transform: {...} | expression over col0.., result_type}``.
:func:`detect_dialect` tells them apart by that shape alone; a namespace never mixes them.

A published field loads as a :class:`PublishedField`: a
:class:`~lance_partitioned.spec.partitioning.PartitionField` whose ``name`` is its
``__manifest`` column (``partition_field_<field_id>``), so every reader, pruner and writer of
this package handles it as it handles a spec-000 field. It keeps its published ``key`` (the
string ``field_id``), its ``source_ids`` and its ``transform`` object, and writes them back
unchanged (:meth:`PublishedSpec.to_json`). Its integer ``field_id`` is a stand-in numbered by
first appearance of each key, never written.

>>> spec = load_spec(1, {"id": 1, "fields": [{"field_id": "b", "source_ids": [0],
...     "transform": {"type": "bucket", "num_buckets": 8, "hash_encoding": "iceberg"},
...     "result_type": {"type": "int32"}}]})
>>> field = spec.fields[0]
>>> field.name, field.key, field.source_ids, field.transform
('partition_field_b', 'b', (0,), Murmur3Bucket(8))
>>> spec.to_json() == {"id": 1, "fields": [field.published_json]}
True
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.expressions.ranges import FAILED, Preimage
from lance_partitioned.spec.fastpath import is_string
from lance_partitioned.spec.multicolumn import MultiColumn, multi_bucket_expression
from lance_partitioned.spec.murmur3 import (
    ENCODING,
    bucket_murmur3,
    can_murmur3,
    encoding_agnostic,
    murmur3_array,
    murmur3_scalar,
)
from lance_partitioned.spec.partitioning import PartitionField, PartitionSpec
from lance_partitioned.spec.schema import NamespaceSchema
from lance_partitioned.spec.transforms import Identity, Transform, parse_transform
from lance_partitioned.spec.types import type_from_json, type_to_json

__all__ = [
    "COLUMN_PREFIX",
    "Dialect",
    "Murmur3Bucket",
    "PublishedField",
    "PublishedSpec",
    "detect_dialect",
    "identity_columns",
    "in_dialect",
    "load_spec",
    "published_spec",
]

COLUMN_PREFIX = "partition_field_"
"""A published field's ``__manifest`` column is ``partition_field_<field_id>``."""

_TEMPORAL = frozenset({"year", "month", "day", "hour"})
_TRANSFORMS = frozenset(
    {"identity", "year", "month", "day", "hour", "bucket", "multi_bucket", "truncate"}
)


class Dialect(str, Enum):
    """The JSON dialect of a namespace's partition specs."""

    SPEC000 = "spec000"
    PUBLISHED = "published"


def detect_dialect(obj: Any, key: str = "a partition spec") -> Dialect:
    """The dialect of one parsed ``partition_spec_v<N>`` value, by its JSON shape.

    Raises
    ------
    PartitionSpecError
        Neither an array nor an object with ``id`` and ``fields``.

    >>> detect_dialect([]), detect_dialect({"id": 1, "fields": []})
    (<Dialect.SPEC000: 'spec000'>, <Dialect.PUBLISHED: 'published'>)
    """
    if isinstance(obj, list):
        return Dialect.SPEC000
    if isinstance(obj, Mapping) and "fields" in obj and "id" in obj:
        return Dialect.PUBLISHED
    raise errors.PartitionSpecError(
        f"{key} must be a JSON array of fields (spec 000) or an object "
        f'{{"id": N, "fields": [...]}} (the published text), got {type(obj).__name__}'
    )


class Murmur3Bucket(Transform):
    """``abs(murmur3(col)) % N`` as int32: the published ``bucket`` transform.

    Parameters
    ----------
    num_buckets : int
        ``N``, in ``[1, 2^31 - 1]``.
    known_encoding : bool
        Whether the writer hashed the bytes of :mod:`lance_partitioned.spec.murmur3`. If not,
        ``=`` and IN never prune (another client may have hashed other bytes).

    >>> Murmur3Bucket(16).apply(pa.array([34, None], pa.int32())).to_pylist()
    [3, None]
    """

    def __init__(self, num_buckets: int, *, known_encoding: bool = True) -> None:
        if not isinstance(num_buckets, int) or not 1 <= num_buckets < (1 << 31):
            raise errors.PartitionSpecError(
                f"bucket: num_buckets must be an int in [1, 2^31 - 1], got {num_buckets!r}"
            )
        self.num_buckets = num_buckets
        self.known_encoding = known_encoding

    @property
    def expression(self) -> str:
        return f"abs(murmur3(col)) % {self.num_buckets}"

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return pa.int32()

    def can_apply(self, source: pa.DataType) -> bool:
        return can_murmur3(source)

    def _apply(self, values: pa.Array) -> pa.Array:
        if not (self.known_encoding or encoding_agnostic(values.type)):
            raise errors.TransformError(
                f"bucket[{self.num_buckets}] of another client, whose murmur3 bytes for "
                f"{values.type} are unknown (no hash_encoding marker): its buckets cannot be "
                "computed here (reads scan these leaves; writes are refused)"
            )
        return bucket_murmur3(murmur3_array(values), self.num_buckets)

    def apply_reference(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        """DataFusion has no ``murmur3``: the reference is the fast path."""
        return self.apply(values)

    def _parameters(self) -> tuple[Any, ...]:
        return (self.num_buckets,) if self.known_encoding else (self.num_buckets, False)

    def _literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        if not (self.known_encoding or encoding_agnostic(source)):
            return FAILED  # another client's bytes: no literal has a known bucket
        hashed = murmur3_scalar(value, source)
        return None if hashed is None else abs(hashed) % self.num_buckets

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        if value is None:
            return Preimage(null=True)  # only NULL hashes to NULL
        return Preimage(null=False, image=True)


def _forms() -> None:
    from lance_partitioned.spec.transforms import register_transform

    register_transform(r"abs\(murmur3\(col\)\)%([0-9]+)", lambda m: Murmur3Bucket(int(m[1])))


_forms()


@dataclass(frozen=True)
class PublishedField(PartitionField):
    """A field of the published dialect, as a :class:`PartitionField` named by its column.

    ``field_id`` is a stand-in int; ``key`` is the published string ``field_id``.
    """

    key: str = ""
    source_ids: tuple[int, ...] = ()
    published_json: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @cached_property
    def transform(self) -> Transform:
        """The transform; a ``bucket`` knows whether its hash encoding is ours; a field over
        several columns is a :class:`~lance_partitioned.spec.multicolumn.MultiColumn`."""
        spec = self.published_json.get("transform")
        known = isinstance(spec, Mapping) and spec.get("hash_encoding") == ENCODING
        if len(self.source_ids) > 1:
            buckets = spec.get("num_buckets") if isinstance(spec, Mapping) else None
            return MultiColumn(
                self.name,
                self.expression,
                len(self.source_ids),
                self.result_type,
                source_ids=self.source_ids,
                num_buckets=buckets if isinstance(buckets, int) else None,
                known_encoding=known,
            )
        parsed = parse_transform(self.expression, self.result_type)
        if isinstance(parsed, Murmur3Bucket) and isinstance(spec, Mapping):
            return Murmur3Bucket(parsed.num_buckets, known_encoding=known)
        return parsed

    def to_json(self) -> dict[str, Any]:
        """The published field object, as loaded (unknown keys kept)."""
        return dict(self.published_json)


def _param(spec: Mapping[str, Any], name: str, key: str) -> int:
    value = spec.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise errors.PartitionSpecError(
            f"published partition field {key!r}: transform {spec.get('type')!r} needs a "
            f"positive JSON int {name!r}, got {value!r}"
        )
    return value


@dataclass(frozen=True)
class PublishedSpec(PartitionSpec):
    """A spec version of the published dialect; :meth:`to_json` writes the object form."""

    def to_json(self) -> Any:
        return {"id": self.version, "fields": [f.to_json() for f in self.fields]}


def _expression_of(
    obj: Mapping[str, Any], key: str, sources: Sequence[int], result_type: pa.DataType
) -> str:
    transform = obj.get("transform")
    expression = obj.get("expression")
    if (transform is None) == (expression is None):
        raise errors.PartitionSpecError(
            f"published partition field {key!r}: exactly one of 'transform' and 'expression' "
            "must be given"
        )
    if expression is not None:
        if not isinstance(expression, str) or not expression.strip():
            raise errors.PartitionSpecError(
                f"published partition field {key!r}: 'expression' must be a non-empty string"
            )
        if len(sources) > 1:
            return expression  # over col0..colN: a MultiColumn field (PublishedField.transform)
        if re.search(r"\bcol[1-9][0-9]*\b", expression):
            raise errors.PartitionSpecError(
                f"published partition field {key!r}: its expression reads columns beyond its "
                f"one source (source_ids {list(sources)})"
            )
        return re.sub(r"\bcol0\b", "col", expression)
    if not isinstance(transform, Mapping) or transform.get("type") not in _TRANSFORMS:
        raise errors.PartitionSpecError(
            f"published partition field {key!r}: unknown transform {transform!r}"
        )
    kind = transform["type"]
    if kind == "multi_bucket":
        buckets = _param(transform, "num_buckets", key)
        if len(sources) == 1:  # murmur3_multi of one column is its murmur3
            return f"abs(murmur3(col)) % {buckets}"
        return multi_bucket_expression(buckets, len(sources))
    if len(sources) != 1:
        raise errors.PartitionSpecError(
            f"published partition field {key!r}: transform {kind!r} takes one source column, "
            f"got source_ids {list(sources)}"
        )
    if kind == "identity":
        return "col"
    if kind in _TEMPORAL:
        return f"date_part('{kind}', col)"
    if kind == "bucket":
        return f"abs(murmur3(col)) % {_param(transform, 'num_buckets', key)}"
    width = _param(transform, "width", key)
    return f"left(col, {width})" if is_string(result_type) else f"col - (col % {width})"


def _published_field(obj: Any, ids: dict[str, int]) -> PublishedField:
    if not isinstance(obj, Mapping):
        raise errors.PartitionSpecError(
            f"a published partition field must be a JSON object, got {type(obj).__name__}"
        )
    key = obj.get("field_id")
    if not isinstance(key, str) or not key:
        raise errors.PartitionSpecError(
            f"a published partition field needs a non-empty JSON string 'field_id', got {key!r}"
        )
    sources = obj.get("source_ids")
    if (
        not isinstance(sources, list)
        or not sources
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sources)
    ):
        raise errors.PartitionSpecError(
            f"published partition field {key!r}: 'source_ids' must be a non-empty JSON array "
            f"of ints >= 0, got {sources!r}"
        )
    if not isinstance(obj.get("result_type"), Mapping):
        raise errors.PartitionSpecError(
            f"published partition field {key!r}: 'result_type' must be a JSON object"
        )
    try:
        result_type = type_from_json(obj["result_type"])
    except errors.PartitionSpecError:
        raise
    except errors.InvalidInputError as exc:
        raise errors.PartitionSpecError(
            f"published partition field {key!r}: bad 'result_type': {exc}"
        ) from exc
    expression = _expression_of(obj, key, sources, result_type)
    return PublishedField(
        field_id=ids.setdefault(key, len(ids) + 1),
        name=f"{COLUMN_PREFIX}{key}",
        source_id=sources[0],
        expression=expression,
        result_type=result_type,
        key=key,
        source_ids=tuple(sources),
        published_json=dict(obj),
    )


def load_spec(version: int, obj: Any, ids: dict[str, int] | None = None) -> PartitionSpec:
    """One parsed ``partition_spec_v<N>`` value of either dialect as a spec.

    Parameters
    ----------
    version : int
        ``N`` of the key.
    obj : Any
        The parsed JSON value.
    ids : dict, optional
        The stand-in int of each published field key, shared across the versions of one
        namespace (so one key keeps one id); filled in.

    Raises
    ------
    PartitionSpecError
        A malformed spec, or a published ``id`` other than ``N``.
    """
    if detect_dialect(obj, f"partition_spec_v{version}") is Dialect.SPEC000:
        return PartitionSpec.from_json(version, obj)
    if obj["id"] != version or isinstance(obj["id"], bool):
        raise errors.PartitionSpecError(
            f"partition_spec_v{version}: 'id' must equal {version}, got {obj['id']!r}"
        )
    fields = obj["fields"]
    if not isinstance(fields, list):
        raise errors.PartitionSpecError(
            f"partition_spec_v{version}: 'fields' must be a JSON array, got {fields!r}"
        )
    ids = {} if ids is None else ids
    return PublishedSpec(version, tuple(_published_field(f, ids) for f in fields))


def identity_columns(spec: PartitionSpec, schema: NamespaceSchema) -> list[tuple[int, str]]:
    """``(index in spec.fields, column)`` of each identity field whose source column is live: a
    leaf that lacks that column holds the field's partition value in it (a writer may keep
    partition values only in the ``__manifest``).

    >>> schema = NamespaceSchema.from_arrow(pa.schema([("s", pa.utf8())]))
    >>> spec = PartitionSpec(1, (PartitionField(1, "s", 0, "col", pa.utf8()),))
    >>> identity_columns(spec, schema)
    [(0, 's')]
    """
    out: list[tuple[int, str]] = []
    for index, spec_field in enumerate(spec.fields):
        if not isinstance(spec_field.transform, Identity):
            continue
        try:
            if schema.is_deprecated(spec_field.source_id):
                continue
            out.append((index, schema.name_of(spec_field.source_id)))
        except errors.SchemaError:
            continue
    return out


def _transform_json(transform: Transform) -> dict[str, Any] | None:
    """The published transform object of one of ours (None: write an expression)."""
    from lance_partitioned.spec.transforms import Bucket, Day, Hour, Month, Truncate, Year

    if isinstance(transform, Identity):
        return {"type": "identity"}
    for kind, cls in (("year", Year), ("month", Month), ("day", Day), ("hour", Hour)):
        if type(transform) is cls:
            return {"type": kind}
    if isinstance(transform, (Bucket, Murmur3Bucket)):
        return {"type": "bucket", "num_buckets": transform.num_buckets, "hash_encoding": ENCODING}
    if isinstance(transform, Truncate):
        return {"type": "truncate", "width": transform.width}
    return None


def published_spec(
    spec: PartitionSpec, existing: Sequence[PartitionSpec], schema: NamespaceSchema
) -> PublishedSpec:
    """``spec`` (authored as spec 000 fields) in the published dialect.

    A field with the ``source_ids`` and transform of an earlier published field reuses its
    ``field_id``; a new one takes its spec-000 name as ``field_id`` (suffixed when taken).
    ``bucket`` becomes the published murmur3 bucket (int32), marked with our hash encoding.

    >>> import pyarrow as pa
    >>> from lance_partitioned.spec.shorthand import parse_partition_by
    >>> from lance_partitioned.spec.partitioning import bind_spec
    >>> schema = NamespaceSchema.from_arrow(pa.schema([("n", pa.int64())]))
    >>> spec = bind_spec(parse_partition_by("bucket(8, n)", schema), existing=(), schema=schema)
    >>> published_spec(spec, (), schema).to_json()["fields"][0]["transform"]
    {'type': 'bucket', 'num_buckets': 8, 'hash_encoding': 'iceberg'}
    """
    known: list[PublishedField] = [
        f for s in existing for f in s.fields if isinstance(f, PublishedField)
    ]
    ids = {f.key: f.field_id for f in known}
    fields: list[PublishedField] = []
    for spec_field in spec.fields:
        if isinstance(spec_field, PublishedField):
            fields.append(spec_field)
            continue
        transform_obj = _transform_json(spec_field.transform)
        source = schema.field_by_id(spec_field.source_id).type
        if transform_obj is None:
            body: dict[str, Any] = {"expression": re.sub(r"\bcol\b", "col0", spec_field.expression)}
            result_type = spec_field.result_type
        else:
            body = {"transform": transform_obj}
            kind = transform_obj["type"]
            result_type = pa.int32() if kind == "bucket" else spec_field.result_type
            if kind == "bucket" and not can_murmur3(source):
                raise errors.PartitionSpecError(
                    f"partition field {spec_field.name!r}: murmur3 has no encoding for {source}"
                )
        candidate = {"source_ids": [spec_field.source_id], **body}
        same = [
            f
            for f in known
            if f.published_json.get("source_ids") == candidate["source_ids"]
            and all(f.published_json.get(k) == v for k, v in body.items())
        ]
        if same:
            fields.append(same[0])
            continue
        key, n = spec_field.name, 2
        while key in ids:
            key, n = f"{spec_field.name}_{n}", n + 1
        ids[key] = max(ids.values(), default=0) + 1
        obj = {
            "field_id": key,
            **candidate,
            "result_type": type_to_json(result_type),
        }
        fields.append(_published_field(obj, ids))
        known.append(fields[-1])
    return PublishedSpec(spec.version, tuple(fields))


def in_dialect(
    specs: Sequence[PartitionSpec], schema: NamespaceSchema, dialect: str | Dialect
) -> tuple[PartitionSpec, ...]:
    """The partition specs of a new namespace, written in ``dialect``.

    Raises
    ------
    InvalidInputError
        ``dialect`` is neither ``"spec000"`` nor ``"published"``.

    >>> import pyarrow as pa
    >>> from lance_partitioned.spec.metadata import NamespaceMetadata
    >>> meta = NamespaceMetadata.create(pa.schema([("k", pa.utf8())]), "k")
    >>> specs = in_dialect(meta.specs, meta.schema, "published")
    >>> NamespaceMetadata(meta.schema, specs).to_table_metadata()["partition_spec_v1"]
    '{"id":1,"fields":[{"field_id":"k","source_ids":[0],"transform":{"type":"identity"},\
"result_type":{"type":"utf8"}}]}'
    """
    try:
        chosen = Dialect(dialect)
    except ValueError:
        raise errors.InvalidInputError(
            f"dialect must be 'spec000' or 'published', got {dialect!r}"
        ) from None
    if chosen is Dialect.SPEC000:
        return tuple(specs)
    out: list[PartitionSpec] = []
    for spec in specs:
        out.append(published_spec(spec, out, schema))
    return tuple(out)
