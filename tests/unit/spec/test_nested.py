"""The nested-type visitor, and the walkers that use it, on every nested kind (maps included)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lance_partitioned.consistency import LEAF_FIELD_ID_KEY, leaf_schema
from lance_partitioned.spec import nested
from lance_partitioned.spec.schema import FIELD_ID_KEY, NamespaceSchema

ID = FIELD_ID_KEY.encode()
LEAF_ID = LEAF_FIELD_ID_KEY.encode()
POINT = pa.struct([("x", pa.int32()), ("y", pa.int32())])
NESTED = pa.schema(
    [
        ("s", POINT),
        ("l", pa.list_(POINT)),
        ("ll", pa.large_list(pa.int64())),
        ("fsl", pa.list_(POINT, 2)),
        ("vec", pa.list_(pa.float32(), 4)),
        ("m", pa.map_(pa.utf8(), POINT)),
        ("dict", pa.dictionary(pa.int32(), POINT)),
        ("n", pa.int64()),
    ]
)


def _ids(field: pa.Field, key: bytes) -> list[tuple[str, str | None]]:
    """(dotted path, id under ``key``) of every field at or below ``field``, in pre-order."""
    return [
        (".".join(node.path), (node.field.metadata or {}).get(key, b"").decode() or None)
        for node in nested.walk([field])
    ]


@pytest.mark.parametrize("field", list(NESTED))
def test_map_field_identity_rebuilds_the_same_type(field: pa.Field) -> None:
    assert nested.map_field(field, lambda f: f).equals(field, check_metadata=True)


def test_kinds_and_children() -> None:
    kinds = {f.name: nested.kind(f.type) for f in NESTED}
    assert kinds == {
        "s": "struct",
        "l": "list",
        "ll": "list",
        "fsl": "list",
        "vec": "leaf",  # a Lance vector: its element is not a field
        "m": "map",
        "dict": "struct",
        "n": "leaf",
    }
    paths = [".".join(n.path) for n in nested.walk(NESTED)]
    assert "m.entries.value.x" in paths
    assert "dict.x" in paths
    assert "vec.item" not in paths


def test_map_field_reaches_map_keys_and_values() -> None:
    def tag(f: pa.Field) -> pa.Field:
        return f.with_metadata({"seen": "1"})

    tagged = nested.map_field(NESTED.field("m"), tag)
    value = tagged.type.item_field
    assert tagged.type.key_field.metadata == {b"seen": b"1"}
    assert value.metadata == {b"seen": b"1"}
    assert value.type.field("x").metadata == {b"seen": b"1"}


def test_leaf_schema_moves_the_ids_of_map_keys_and_values() -> None:
    """Every field id of a leaf column sits under the leaf's private key, map fields too."""
    schema = NamespaceSchema.from_arrow(pa.schema([NESTED.field("m"), NESTED.field("l")]))
    leaf = leaf_schema(schema)
    for column in leaf:
        assert all(value is None for _, value in _ids(column, ID)), _ids(column, ID)
    namespace_ids = dict(_ids(schema.arrow_schema.field("m"), ID))
    leaf_ids = dict(_ids(leaf.field("m"), LEAF_ID))
    for path in ("m", "m.entries.key", "m.entries.value", "m.entries.value.x"):
        assert leaf_ids[path] == namespace_ids[path] is not None
