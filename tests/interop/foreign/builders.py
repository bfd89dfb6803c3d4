"""Foreign partitioned namespaces, built as another spec-000 client would: pylance and pyarrow
only, never lance_partitioned.

Every builder writes the same logical data (Appendix A of spec 000: ``id``, ``event_date``,
``country``; ``v1`` partitioned by ``event_date``, ``v2`` by ``event_year`` and ``country``)
with random 16-character base36 partition names and random 8-hex directory prefixes, and
returns a :class:`Foreign` with the rows a reader must see (the oracle), computed from what was
written, not by reading the namespace back.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pyarrow.ipc
from lance.namespace import DirectoryNamespace

from tests.appendix import APPENDIX_A

BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"

# Appendix A (tests/appendix.py), pretty-printed by the builders that say so.
SCHEMA_JSON: dict[str, Any] = APPENDIX_A["schema"]
SPEC_V1: list[dict[str, Any]] = APPENDIX_A["partition_spec_v1"]
SPEC_V2: list[dict[str, Any]] = APPENDIX_A["partition_spec_v2"]
PARTITION_COLUMNS = [
    pa.field("event_date", pa.date32()),
    pa.field("event_year", pa.int32()),
    pa.field("country", pa.string()),
]
READ_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("event_date", pa.date32()),
        pa.field("country", pa.string()),
    ]
)
# pylance's DirectoryNamespace manifest columns (the Directory Namespace spec)
_PK = {b"lance-schema:unenforced-primary-key:position": b"0"}
BASE_FIELDS = [
    pa.field("object_id", pa.string(), nullable=False, metadata=_PK),
    pa.field("object_type", pa.string(), nullable=False),
    pa.field("location", pa.string()),
    pa.field("metadata", pa.string()),
    pa.field("base_objects", pa.list_(pa.field("object_id", pa.string()))),
]
D = dt.date

# (id, event_date, country) rows of each spec version's leaves, grouped by partition
V1_ROWS = [
    (1, D(2025, 12, 10), "US"),
    (2, D(2025, 12, 10), "FR"),
    (3, D(2025, 12, 11), "US"),
    (4, None, "DE"),
]
V2_ROWS = [
    (10, D(2025, 3, 1), "US"),
    (11, D(2025, 7, 9), "US"),
    (12, D(2025, 1, 2), "FR"),
    (13, D(2026, 2, 2), "US"),
    (14, D(2026, 5, 5), None),
]


def random_name(rng: random.Random) -> str:
    return "".join(rng.choice(BASE36) for _ in range(16))


def random_prefix(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(8))


def rows_table(rows: Sequence[tuple[Any, ...]], schema: pa.Schema = READ_SCHEMA) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    return pa.table(
        {f.name: pa.array(list(c), f.type) for f, c in zip(schema, columns, strict=True)},
        schema=schema,
    )


@dataclass
class Leaf:
    object_id: str
    location: str
    spec_version: int
    values: dict[str, Any]
    read_version: int | None


@dataclass
class Foreign:
    """A foreign namespace and what a reader must see in it."""

    root: str
    expected: pa.Table  # every visible row, in the read schema
    leaves: list[Leaf]
    row_properties: dict[str, dict[str, str]] = field(default_factory=dict)
    pretty: bool = False
    deprecated_source: bool = False
    has_read_version: bool = True
    v1_ids: set[int] = field(default_factory=lambda: {row[0] for row in V1_ROWS})

    def leaf(self, **values: Any) -> Leaf:
        """The leaf with exactly these partition values (the names of its spec)."""
        found = [leaf for leaf in self.leaves if leaf.values == values]
        assert len(found) == 1, (values, self.leaves)
        return found[0]


def _v1_groups() -> dict[tuple[Any, ...], list[tuple[Any, ...]]]:
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for row in V1_ROWS:
        groups.setdefault((row[1],), []).append(row)
    return groups


def _v2_groups() -> dict[tuple[Any, ...], list[tuple[Any, ...]]]:
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for row in V2_ROWS:
        year = None if row[1] is None else row[1].year
        groups.setdefault((year, row[2]), []).append(row)
    return groups


def _plan(rng: random.Random) -> list[tuple[int, list[str], dict[str, Any], list[tuple[Any, ...]]]]:
    """(spec version, object id parts of the leaf's namespace, values, rows) of every leaf,
    with random partition names."""
    plan = []
    for (date,), rows in _v1_groups().items():
        plan.append((1, ["v1", random_name(rng)], {"event_date": date}, rows))
    years: dict[Any, str] = {}
    for (year, country), rows in _v2_groups().items():
        level1 = years.setdefault(year, random_name(rng))
        plan.append(
            (
                2,
                ["v2", level1, random_name(rng)],
                {"event_year": year, "country": country},
                rows,
            )
        )
    return plan


def _namespace_rows(
    plan: list[tuple[int, list[str], dict[str, Any], list[tuple[Any, ...]]]],
) -> list[dict[str, Any]]:
    """Every namespace row (spec versions and partition levels) with inherited values."""
    out: dict[str, dict[str, Any]] = {
        "v1": {"object_id": "v1", "object_type": "namespace"},
        "v2": {"object_id": "v2", "object_type": "namespace"},
    }
    for _version, parts, values, _rows in plan:
        names = list(values)
        for depth in range(2, len(parts) + 1):
            object_id = "$".join(parts[:depth])
            inherited = {n: values[n] for n in names[: depth - 1]}
            out.setdefault(
                object_id, {"object_id": object_id, "object_type": "namespace", **inherited}
            )
    return list(out.values())


def _leaf_data(rows: list[tuple[Any, ...]], deprecated: bool) -> pa.Table:
    """Leaf data in the leaf's own schema (Appendix E leaves call country legacy_field)."""
    table = rows_table(rows)
    if deprecated:
        table = table.rename_columns(["id", "event_date", "legacy_field"])
    return table


def _write_leaves(
    root: str,
    plan: list[tuple[int, list[str], dict[str, Any], list[tuple[Any, ...]]]],
    rng: random.Random,
    *,
    deprecated: bool = False,
) -> list[Leaf]:
    leaves = []
    for version, parts, values, rows in plan:
        object_id = "$".join([*parts, "dataset"])
        location = f"{random_prefix(rng)}_{object_id}"
        ds = lance.write_dataset(_leaf_data(rows, deprecated), f"{root}/{location}")
        leaves.append(Leaf(object_id, location, version, values, int(ds.version)))
    return leaves


def _metadata(pretty: bool, schema: dict[str, Any] = SCHEMA_JSON) -> dict[str, str]:
    def dumps(obj: Any) -> str:
        return json.dumps(obj, indent=2) if pretty else json.dumps(obj, separators=(",", ":"))

    return {
        "partition_spec_v1": dumps(SPEC_V1),
        "partition_spec_v2": dumps(SPEC_V2),
        "schema": dumps(schema),
    }


def _manifest_table(
    rows: list[dict[str, Any]], *, read_version: bool, extra: Sequence[pa.Field] = ()
) -> pa.Table:
    fields = [*BASE_FIELDS]
    if read_version:
        fields.append(pa.field("read_version", pa.uint64()))
    fields += [*PARTITION_COLUMNS, *extra]
    schema = pa.schema(fields)
    return pa.table(
        {f.name: pa.array([row.get(f.name) for row in rows], f.type) for f in schema},
        schema=schema,
    )


def _leaf_rows(leaves: list[Leaf], pinned: Callable[[Leaf], int | None]) -> list[dict[str, Any]]:
    return [
        {
            "object_id": leaf.object_id,
            "object_type": "table",
            "location": leaf.location,
            "read_version": pinned(leaf),
            **leaf.values,
        }
        for leaf in leaves
    ]


def _expected(plan: list[tuple[int, list[str], dict[str, Any], list[tuple[Any, ...]]]]) -> pa.Table:
    return rows_table([row for *_, rows in plan for row in rows])


# ---------------------------------------------------------------------------------- builders


def hand_written_without_read_version(root: str, seed: int = 1) -> Foreign:
    """A ``__manifest`` written with ``lance.write_dataset``: no ``read_version`` column."""
    rng = random.Random(seed)
    plan = _plan(rng)
    leaves = _write_leaves(root, plan, rng)
    rows = _namespace_rows(plan) + _leaf_rows(leaves, lambda leaf: None)
    ds = lance.write_dataset(_manifest_table(rows, read_version=False), f"{root}/__manifest")
    ds.update_metadata(_metadata(pretty=False))
    for leaf in leaves:
        leaf.read_version = None
    return Foreign(root, _expected(plan), leaves, has_read_version=False)


def null_read_versions_and_leaves_ahead(root: str, seed: int = 2) -> Foreign:
    """``read_version`` present: NULL for half the leaves (read the latest), pinned for the
    others, and every leaf has a newer version (uncommitted rows of a crashed writer) that only
    the NULL ones may show."""
    rng = random.Random(seed)
    plan = _plan(rng)
    leaves = _write_leaves(root, plan, rng)
    expected = _expected(plan)
    extra: list[tuple[Any, ...]] = []
    v1_ids = {row[0] for row in V1_ROWS}
    for i, (leaf, (version, _parts, values, rows)) in enumerate(zip(leaves, plan, strict=True)):
        ahead = [(1000 + i, rows[0][1], rows[0][2])]
        if version == 1:
            v1_ids.add(1000 + i)
        lance.write_dataset(rows_table(ahead), f"{root}/{leaf.location}", mode="append")
        if i % 2 == 0:
            leaf.read_version = None  # latest: the appended row is visible
            extra += ahead
        del values
    rows_ = _namespace_rows(plan) + _leaf_rows(leaves, lambda leaf: leaf.read_version)
    ds = lance.write_dataset(_manifest_table(rows_, read_version=True), f"{root}/__manifest")
    ds.update_metadata(_metadata(pretty=False))
    return Foreign(root, pa.concat_tables([expected, rows_table(extra)]), leaves, v1_ids=v1_ids)


def appendix_a_pretty(root: str, seed: int = 3) -> Foreign:
    """Appendix A metadata pretty-printed, with keys we do not own at every level."""
    rng = random.Random(seed)
    plan = _plan(rng)
    leaves = _write_leaves(root, plan, rng)
    rows = _namespace_rows(plan) + _leaf_rows(leaves, lambda leaf: leaf.read_version)
    ds = lance.write_dataset(_manifest_table(rows, read_version=True), f"{root}/__manifest")
    schema = json.loads(json.dumps(SCHEMA_JSON))
    schema["x-generator"] = "foreign-client 0.1"
    schema["fields"][2]["x-doc"] = "ISO 3166 code"
    metadata = _metadata(pretty=True, schema=schema)
    spec = json.loads(metadata["partition_spec_v2"])
    spec[1]["x-owner"] = "geo-team"
    metadata["partition_spec_v2"] = json.dumps(spec, indent=2)
    metadata["x-foreign-key"] = "kept"
    ds.update_metadata(metadata)
    return Foreign(root, _expected(plan), leaves, pretty=True)


def appendix_e_deprecated_source(root: str, seed: int = 4) -> Foreign:
    """Appendix E: the schema's field 2 is ``legacy_field``, deprecated, and Appendix A's
    ``partition_spec_v2`` partitions by it (``country``, source_id 2). Pretty-printed."""
    rng = random.Random(seed)
    plan = _plan(rng)
    leaves = _write_leaves(root, plan, rng, deprecated=True)
    rows = _namespace_rows(plan) + _leaf_rows(leaves, lambda leaf: leaf.read_version)
    ds = lance.write_dataset(_manifest_table(rows, read_version=True), f"{root}/__manifest")
    schema = json.loads(json.dumps(SCHEMA_JSON))
    schema["fields"][2] = {
        "name": "legacy_field",
        "nullable": True,
        "type": {"type": "utf8"},
        "metadata": {"lance:field_id": "2", "lance:deprecated": "true"},
    }
    ds.update_metadata(_metadata(pretty=True, schema=schema))
    expected = _expected(plan).drop_columns(["country"])
    return Foreign(root, expected, leaves, pretty=True, deprecated_source=True)


def _ipc(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def via_directory_namespace(root: str, seed: int = 5) -> Foreign:
    """Namespaces and leaf tables created through pylance's ``DirectoryNamespace`` (a row with
    its own properties, ``owner=ops``), then the partition columns, values and metadata added
    to ``__manifest`` with plain Lance calls, as a foreign client would. No ``read_version``."""
    rng = random.Random(seed)
    plan = _plan(rng)
    directory = DirectoryNamespace(root=root)
    properties: dict[str, dict[str, str]] = {}
    for row in _namespace_rows(plan):
        parts = row["object_id"].split("$")
        props = {"owner": "ops", "team": row["object_id"]} if len(parts) == 2 else None
        if props:
            properties[row["object_id"]] = props
        directory.create_namespace(ln.CreateNamespaceRequest(id=parts, properties=props))
    leaves = []
    for version, parts, values, rows in plan:
        ids = [*parts, "dataset"]
        directory.create_table(ln.CreateTableRequest(id=ids), _ipc(rows_table(rows)))
        described = directory.describe_table(ln.DescribeTableRequest(id=ids))
        location = (described.location or "").rstrip("/").rsplit("/", 1)[-1]
        leaves.append(Leaf("$".join(ids), location, version, values, None))
    manifest = lance.dataset(f"{root}/__manifest")
    manifest.add_columns(PARTITION_COLUMNS)
    manifest = lance.dataset(f"{root}/__manifest")
    values_rows = _namespace_rows(plan) + _leaf_rows(leaves, lambda leaf: None)
    update = pa.table(
        {
            "object_id": [r["object_id"] for r in values_rows],
            **{
                f.name: pa.array([r.get(f.name) for r in values_rows], f.type)
                for f in PARTITION_COLUMNS
            },
        }
    )
    manifest.merge_insert("object_id").when_matched_update_all().execute(update)
    lance.dataset(f"{root}/__manifest").update_metadata(_metadata(pretty=False))
    return Foreign(root, _expected(plan), leaves, row_properties=properties, has_read_version=False)


BUILDERS: dict[str, Callable[[str], Foreign]] = {
    "directory_namespace": via_directory_namespace,
    "no_read_version": hand_written_without_read_version,
    "null_read_versions": null_read_versions_and_leaves_ahead,
    "appendix_a_pretty": appendix_a_pretty,
    "appendix_e": appendix_e_deprecated_source,
}


def opaque_expression(root: str, seed: int = 6) -> Foreign:
    """One spec whose only field is an expression outside Appendix D, ``upper(col)`` over
    ``country`` (so ``us`` and ``US`` share a partition), hand-written with random names."""
    rng = random.Random(seed)
    rows = [(1, D(2025, 1, 1), "us"), (2, D(2025, 1, 2), "US"), (3, D(2025, 1, 3), "fr")]
    groups: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        groups.setdefault(row[2].upper(), []).append(row)
    leaves = []
    manifest_rows: list[dict[str, Any]] = [{"object_id": "v1", "object_type": "namespace"}]
    for value, group in groups.items():
        parent = f"v1${random_name(rng)}"
        object_id = f"{parent}$dataset"
        location = f"{random_prefix(rng)}_{object_id}"
        ds = lance.write_dataset(rows_table(group), f"{root}/{location}")
        leaves.append(Leaf(object_id, location, 1, {"country_upper": value}, int(ds.version)))
        manifest_rows.append(
            {"object_id": parent, "object_type": "namespace", "country_upper": value}
        )
        manifest_rows.append(
            {
                "object_id": object_id,
                "object_type": "table",
                "location": location,
                "read_version": int(ds.version),
                "country_upper": value,
            }
        )
    schema = pa.schema(
        [
            *BASE_FIELDS,
            pa.field("read_version", pa.uint64()),
            pa.field("country_upper", pa.string()),
        ]
    )
    table = pa.table(
        {f.name: pa.array([r.get(f.name) for r in manifest_rows], f.type) for f in schema},
        schema=schema,
    )
    ds = lance.write_dataset(table, f"{root}/__manifest")
    spec = [
        {
            "field_id": 1,
            "name": "country_upper",
            "source_id": 2,
            "expression": "upper(col)",
            "result_type": {"type": "utf8"},
        }
    ]
    ds.update_metadata({"partition_spec_v1": json.dumps(spec), "schema": json.dumps(SCHEMA_JSON)})
    return Foreign(root, rows_table(rows), leaves)
