"""Damaged namespaces (corrupted ``__manifest`` metadata, unknown keys and columns, missing
leaves, versions and roots) and time travel: each a typed error with nothing changed, or the
data read back exactly. See :mod:`tests.reliability.hostile`.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest
from lance import LanceDataset, LanceOperation

import lance_partitioned as lp
from lance_partitioned import errors
from tests.reliability.hostile import (
    BASE,
    base_rows,
    expect_typed,
    make_base_ns,
    rows,
)


@pytest.fixture
def base_ns(tmp_path: Path) -> lp.PartitionedNamespace:
    """A namespace partitioned by ``k`` with four rows in three partitions."""
    return make_base_ns(tmp_path)


# ---------------------------------------------------------------- 7. corrupted __manifest
def set_table_metadata(
    root: Path, updates: dict[str, str] | None = None, delete: tuple[str, ...] = ()
) -> None:
    """Rewrite the ``__manifest`` table metadata as another (faulty) client would."""
    uri = str(root / "__manifest")
    manifest = lance.dataset(uri)
    metadata = {**manifest.metadata, **(updates or {})}
    for key in delete:
        metadata.pop(key)
    LanceDataset.commit(
        uri,
        LanceOperation.UpdateConfig(
            table_metadata_updates=LanceOperation.UpdateMap(metadata, replace=True)
        ),
        read_version=manifest.version,
    )


def _edit_json(root: Path, key: str, edit: Callable[[Any], Any]) -> str:
    return json.dumps(edit(json.loads(lance.dataset(str(root / "__manifest")).metadata[key])))


def _schema_field(update: dict[str, Any]) -> Callable[[Any], Any]:
    def edit(schema: Any) -> Any:
        schema["fields"][1].update(update)
        return schema

    return edit


def _spec_field(update: dict[str, Any]) -> Callable[[Any], Any]:
    def edit(spec: Any) -> Any:
        spec[0].update(update)
        return spec

    return edit


# (id, corruption of the root properties, error on open)
CORRUPT_METADATA: list[Any] = [
    pytest.param(
        lambda r: {"schema": '{"fields": [{"name": "id"'}, errors.SchemaError, id="schema-truncated"
    ),
    pytest.param(lambda r: {"schema": "[]"}, errors.SchemaError, id="schema-is-a-list"),
    pytest.param(lambda r: {"schema": "null"}, errors.SchemaError, id="schema-is-null"),
    pytest.param(
        lambda r: {"schema": '{"fields": 5}'}, errors.SchemaError, id="schema-fields-not-list"
    ),
    pytest.param(lambda r: {"schema": "{}"}, errors.SchemaError, id="schema-without-fields"),
    pytest.param(lambda r: {"schema": ""}, errors.SchemaError, id="schema-empty-string"),
    pytest.param(
        lambda r: {"schema": _edit_json(r, "schema", _schema_field({"type": {"type": "int128"}}))},
        errors.SchemaError,
        id="schema-unknown-type",
    ),
    pytest.param(
        lambda r: {"schema": _edit_json(r, "schema", _schema_field({"type": None}))},
        errors.SchemaError,
        id="schema-field-without-type",
    ),
    pytest.param(
        lambda r: {
            "schema": _edit_json(r, "schema", _schema_field({"metadata": {"lance:field_id": "0"}}))
        },
        errors.SchemaError,
        id="schema-duplicate-field-id",
    ),
    pytest.param(
        lambda r: {"partition_spec_v1": '[{"field_id": 1, "name"'},
        errors.PartitionSpecError,
        id="spec-truncated",
    ),
    pytest.param(
        lambda r: {"partition_spec_v1": '{"id": 2, "fields": []}'},
        errors.PartitionSpecError,
        id="spec-upstream-object-shape-wrong-id",
    ),
    pytest.param(
        lambda r: {"partition_spec_v1": '[{"field_id": 1}]'},
        errors.PartitionSpecError,
        id="spec-field-missing-keys",
    ),
    pytest.param(
        lambda r: {
            "partition_spec_v1": _edit_json(r, "partition_spec_v1", _spec_field({"source_id": 99}))
        },
        errors.PartitionSpecError,
        id="spec-unknown-source-id",
    ),
    pytest.param(
        lambda r: {
            "partition_spec_v1": _edit_json(
                r, "partition_spec_v1", _spec_field({"result_type": {"type": "utf9"}})
            )
        },
        errors.PartitionSpecError,
        id="spec-unknown-result-type",
    ),
    pytest.param(
        lambda r: {
            "partition_spec_v1": _edit_json(
                r, "partition_spec_v1", _spec_field({"field_id": "one"})
            )
        },
        errors.PartitionSpecError,
        id="spec-field-id-not-int",
    ),
    pytest.param(
        lambda r: {
            "partition_spec_v1": _edit_json(
                r, "partition_spec_v1", _spec_field({"name": "object_id"})
            )
        },
        errors.PartitionSpecError,
        id="spec-reserved-name",
    ),
    pytest.param(
        lambda r: {"partition_spec_v1": "42"}, errors.PartitionSpecError, id="spec-is-a-number"
    ),
]


@pytest.mark.parametrize(("corrupt", "error"), CORRUPT_METADATA)
def test_corrupted_manifest_metadata_is_a_typed_error(
    base_ns: lp.PartitionedNamespace,
    corrupt: Callable[[Path], dict[str, str]],
    error: type[errors.LancePartitionedError],
) -> None:
    root = Path(base_ns.uri)
    set_table_metadata(root, corrupt(root))
    expect_typed(root, error, lambda: lp.PartitionedNamespace.open(str(root)))
    expect_typed(root, error, lambda: base_ns.write(base_rows([9], ["a"])))
    expect_typed(root, error, lambda: base_ns.add_columns([pa.field("x", pa.int8())]))


@pytest.mark.parametrize(
    ("delete", "error"),
    [
        pytest.param(("schema",), errors.SchemaError, id="schema-key-missing"),
        pytest.param(
            ("partition_spec_v1",), errors.NotAPartitionedNamespaceError, id="spec-key-missing"
        ),
    ],
)
def test_missing_manifest_keys_are_a_typed_error(
    base_ns: lp.PartitionedNamespace,
    delete: tuple[str, ...],
    error: type[errors.LancePartitionedError],
) -> None:
    root = Path(base_ns.uri)
    set_table_metadata(root, delete=delete)
    expect_typed(root, error, lambda: lp.PartitionedNamespace.open(str(root)))


@pytest.mark.parametrize(
    ("key", "edit"),
    [
        pytest.param("x-owner", None, id="top-level-key"),
        pytest.param("partition_spec_v1", _spec_field({"x-owner": "ops"}), id="spec-field-key"),
        pytest.param("schema", lambda s: {**s, "x-owner": "ops"}, id="schema-top-level-key"),
        pytest.param("schema", _schema_field({"x-owner": "ops"}), id="schema-field-key"),
        pytest.param("schema", lambda s: s, id="pretty-printed-json"),
    ],
)
def test_unknown_keys_are_read_and_kept_through_writes_and_evolution(
    base_ns: lp.PartitionedNamespace, key: str, edit: Callable[[Any], Any] | None
) -> None:
    root = Path(base_ns.uri)
    if edit is None:
        value = "ops"
    else:
        value = json.dumps(
            edit(json.loads(lance.dataset(str(root / "__manifest")).metadata[key])), indent=2
        )
    set_table_metadata(root, {key: value})
    ns = lp.PartitionedNamespace.open(str(root))
    assert rows(ns.to_table()) == rows(base_rows([1, 2, 3, 4], ["a", "b", None, "a"]))
    ns.write(base_rows([5], ["c"]))
    assert ns.count_rows() == 5

    def kept() -> bool:
        stored = lance.dataset(str(root / "__manifest")).metadata[key]
        if edit is None:
            return stored == value
        text = json.dumps(json.loads(stored), sort_keys=True)
        return '"x-owner": "ops"' in text or "x-owner" not in value

    assert kept(), "a write dropped a key it does not own"
    ns.add_columns([pa.field("x", pa.int8())])
    ns.rename_column("x", "y")
    ns.update_partition_spec("k, bucket(2, id)")
    assert kept(), "evolution dropped a key it does not own"
    assert ns.count_rows() == 5


def _rewrite_leaf_rows(root: Path, update: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Change the ``__manifest`` leaf rows as another (faulty) client would."""
    uri = str(root / "__manifest")
    manifest = lance.dataset(uri)
    table = manifest.to_table()
    changed = [update(row) for row in table.to_pylist() if row["object_type"] == "table"]
    manifest.merge_insert("object_id").when_matched_update_all().execute(
        pa.Table.from_pylist(changed, schema=table.schema)
    )


def test_unreadable_leaf_statistics_are_ignored(base_ns: lp.PartitionedNamespace) -> None:
    root = Path(base_ns.uri)
    _rewrite_leaf_rows(root, lambda row: {**row, "metadata": "{not json"})
    ns = lp.PartitionedNamespace.open(str(root))
    assert ns.count_rows() == 4
    assert ns.count_rows("k = 'a'") == 2


def test_an_unknown_manifest_column_is_read_and_kept(base_ns: lp.PartitionedNamespace) -> None:
    root = Path(base_ns.uri)
    lance.dataset(str(root / "__manifest")).add_columns(pa.field("x_owner", pa.string()))
    ns = lp.PartitionedNamespace.open(str(root))
    assert ns.count_rows() == 4
    ns.write(base_rows([5], ["c"]))
    assert "x_owner" in lance.dataset(str(root / "__manifest")).schema.names
    expected = pa.concat_tables(
        [base_rows([1, 2, 3, 4], ["a", "b", None, "a"]), base_rows([5], ["c"])]
    )
    assert rows(lp.PartitionedNamespace.open(str(root)).to_table()) == rows(expected)


def test_an_unknown_object_type_row_is_ignored(base_ns: lp.PartitionedNamespace) -> None:
    root = Path(base_ns.uri)
    manifest = lance.dataset(str(root / "__manifest"))
    manifest.insert(
        pa.Table.from_pylist(
            [{"object_id": "v1$view", "object_type": "view", "location": "elsewhere"}],
            schema=manifest.schema,
        )
    )
    ns = lp.PartitionedNamespace.open(str(root))
    assert rows(ns.to_table()) == rows(base_rows([1, 2, 3, 4], ["a", "b", None, "a"]))
    ns.write(base_rows([5], ["a"]))
    assert ns.count_rows("k = 'a'") == 3


# ---------------------------------------------------------------- 8. missing leaves and roots
def _leaf_of(ns: lp.PartitionedNamespace, key: str) -> Path:
    location = ns.partitions(f"k = '{key}'", sizes=False).column("location")[0].as_py()
    return Path(ns.uri) / location


def _delete_leaf(ns: lp.PartitionedNamespace) -> None:
    shutil.rmtree(_leaf_of(ns, "b"))


def _unpin_leaf(ns: lp.PartitionedNamespace) -> None:
    _rewrite_leaf_rows(
        Path(ns.uri),
        lambda row: {**row, "read_version": 99} if row["k"] == "b" else row,
    )


def _read(ns: lp.PartitionedNamespace) -> Any:
    return ns.to_table()


def _pruned_read(ns: lp.PartitionedNamespace) -> Any:
    return ns.to_table("k = 'b'")


def _append(ns: lp.PartitionedNamespace) -> Any:
    return ns.write(base_rows([9], ["b"]))


MISSING_LEAF_CASES: list[Any] = [
    pytest.param(_delete_leaf, _read, id="deleted-leaf-read"),
    pytest.param(_delete_leaf, _pruned_read, id="deleted-leaf-pruned-read"),
    pytest.param(_delete_leaf, _append, id="deleted-leaf-append"),
    pytest.param(_unpin_leaf, _read, id="missing-version-read"),
    pytest.param(_unpin_leaf, _pruned_read, id="missing-version-pruned-read"),
    pytest.param(_unpin_leaf, _append, id="missing-version-append"),
    pytest.param(
        _unpin_leaf,
        lambda ns: ns.write(base_rows([9], ["b"]), mode="overwrite_partitions"),
        id="missing-version-overwrite-partitions",
    ),
]


@pytest.mark.parametrize(("damage", "call"), MISSING_LEAF_CASES)
def test_a_missing_leaf_is_a_typed_error(
    base_ns: lp.PartitionedNamespace,
    damage: Callable[[lp.PartitionedNamespace], None],
    call: Callable[[lp.PartitionedNamespace], Any],
) -> None:
    damage(base_ns)
    ns = lp.PartitionedNamespace.open(base_ns.uri)
    leaf = ns.partitions("k = 'b'", sizes=False).column("object_id")[0].as_py()
    error = expect_typed(Path(ns.uri), errors.LancePartitionedError, lambda: call(ns))
    assert leaf in str(error), "the error names the leaf"


@pytest.mark.parametrize("damage", [_delete_leaf, _unpin_leaf], ids=["deleted", "unpinned"])
def test_partitions_of_a_damaged_namespace_list_every_leaf(
    base_ns: lp.PartitionedNamespace, damage: Callable[[lp.PartitionedNamespace], None]
) -> None:
    """A leaf that cannot be opened at its ``read_version`` does not hide the others: its
    sizes are NULL and one warning names it."""
    damage(base_ns)
    ns = lp.PartitionedNamespace.open(base_ns.uri)
    leaf = ns.partitions("k = 'b'", sizes=False).column("object_id")[0].as_py()
    with pytest.warns(lp.UnreadableLeafWarning, match="verify") as caught:
        listing = ns.partitions()
    assert len(caught) == 1
    assert leaf in str(caught[0].message)
    by_leaf = {row["object_id"]: row for row in listing.to_pylist()}
    assert by_leaf[leaf]["rows"] is None
    others = [row["rows"] for oid, row in by_leaf.items() if oid != leaf]
    assert others
    assert all(isinstance(n, int) and n > 0 for n in others)


def test_overwriting_the_partition_of_a_deleted_leaf_is_a_typed_error(
    base_ns: lp.PartitionedNamespace,
) -> None:
    """Issue 16 item 7: a write into a leaf whose directory is gone is refused before anything
    is staged, rather than replacing the leaf (which could hide the damage)."""
    _delete_leaf(base_ns)
    ns = lp.PartitionedNamespace.open(base_ns.uri)
    leaf = ns.partitions("k = 'b'", sizes=False).column("object_id")[0].as_py()
    error = expect_typed(
        Path(ns.uri),
        errors.CorruptNamespaceError,
        lambda: ns.write(base_rows([9], ["b"]), mode="overwrite_partitions"),
    )
    assert leaf in str(error), "the error names the leaf"


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(_delete_leaf, id="leaf-dir-deleted"),
        pytest.param(_unpin_leaf, id="pinned-version-missing"),
    ],
)
def test_other_partitions_stay_readable_and_writable_beside_a_missing_leaf(
    base_ns: lp.PartitionedNamespace, damage: Callable[[lp.PartitionedNamespace], None]
) -> None:
    damage(base_ns)
    ns = lp.PartitionedNamespace.open(base_ns.uri)
    assert sorted(ns.to_table("k = 'a'").column("id").to_pylist()) == [1, 4]
    ns.write(base_rows([9], ["a"]))
    assert sorted(ns.to_table("k = 'a'").column("id").to_pylist()) == [1, 4, 9]


def test_a_missing_manifest_is_namespace_not_found(base_ns: lp.PartitionedNamespace) -> None:
    shutil.rmtree(Path(base_ns.uri) / "__manifest")
    with pytest.raises(errors.NamespaceNotFoundError, match="__manifest"):
        lp.PartitionedNamespace.open(base_ns.uri)


def test_a_plain_lance_table_is_not_a_partitioned_namespace(tmp_path: Path) -> None:
    plain = lance.write_dataset(pa.table({"object_id": ["x"]}), str(tmp_path / "__manifest"))
    with pytest.raises(errors.NotAPartitionedNamespaceError, match="partition_spec"):
        lp.PartitionedNamespace.open(str(tmp_path))
    assert lance.dataset(plain.uri).version == plain.version


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda root: lp.PartitionedNamespace.open(root), id="open"),
        pytest.param(
            lambda root: lp.PartitionedNamespace.create(root, schema=BASE, partition_by="k"),
            id="create",
        ),
        pytest.param(
            lambda root: lp.PartitionedNamespace.create(
                f"{root}/sub", schema=BASE, partition_by="k"
            ),
            id="create-below",
        ),
    ],
)
def test_a_root_that_is_a_file_is_a_typed_error(tmp_path: Path, call: Callable[[str], Any]) -> None:
    root = tmp_path / "file"
    root.write_text("not a directory")
    with pytest.raises(errors.LancePartitionedError, match="file"):
        call(str(root))
    assert root.read_text() == "not a directory"


# ---------------------------------------------------------------- 9. time travel
@pytest.mark.parametrize(
    "version",
    [
        pytest.param(0, id="zero"),
        pytest.param(-1, id="negative"),
        pytest.param(10**9, id="far-future"),
        pytest.param(2**64, id="beyond-uint64"),
    ],
)
def test_time_travel_to_a_missing_version_is_a_typed_error(
    base_ns: lp.PartitionedNamespace, version: int
) -> None:
    expect_typed(
        Path(base_ns.uri),
        errors.TableVersionNotFoundError,
        lambda: lp.PartitionedNamespace.open(base_ns.uri, version=version),
    )


def test_time_travel_reads_each_version_as_it_was(base_ns: lp.PartitionedNamespace) -> None:
    first = base_ns.version
    base_ns.write(base_rows([5], ["c"]), mode="overwrite")
    old = lp.PartitionedNamespace.open(base_ns.uri, version=first)
    assert rows(old.to_table()) == rows(base_rows([1, 2, 3, 4], ["a", "b", None, "a"]))
    assert rows(lp.PartitionedNamespace.open(base_ns.uri).to_table()) == rows(base_rows([5], ["c"]))
