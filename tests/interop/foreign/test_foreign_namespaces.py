"""lance_partitioned on namespaces another client wrote (issue 15): reads, pruning,
``describe_*``, appends, ``overwrite_partitions`` and evolution, each against an oracle computed
from the rows the builder wrote (plain pyarrow), never from reading the namespace back."""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from tests.interop.foreign.builders import BUILDERS, Foreign, opaque_expression, rows_table

pytestmark = pytest.mark.interop

D = dt.date


@pytest.fixture(params=list(BUILDERS))
def foreign(request: pytest.FixtureRequest, tmp_path: os.PathLike[str]) -> Foreign:
    return BUILDERS[request.param](str(tmp_path))


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return table.sort_by("id").to_pylist()


def _oracle(foreign: Foreign, mask: Any = None) -> list[dict[str, Any]]:
    table = foreign.expected
    if mask is not None:
        table = table.filter(mask(table))
    return _rows(table)


def _row(foreign: Foreign, id_: int, date: dt.date | None, country: str | None) -> pa.Table:
    """One row in the namespace's write schema (Appendix E has no live country column)."""
    table = rows_table([(id_, date, country)])
    return table.drop_columns(["country"]) if foreign.deprecated_source else table


def _manifest_rows(foreign: Foreign) -> list[dict[str, Any]]:
    return lance.dataset(f"{foreign.root}/__manifest").to_table().to_pylist()


def test_reads_every_visible_row(foreign: Foreign) -> None:
    ns = lp.PartitionedNamespace.open(foreign.root)
    assert _rows(ns.to_table()) == _oracle(foreign)
    assert ns.count_rows() == foreign.expected.num_rows
    assert len(ns.partitions()) == len(foreign.leaves)
    streamed = ns.to_batches().read_all()
    assert _rows(streamed) == _oracle(foreign)


def test_pruning_on_each_spec_version(foreign: Foreign) -> None:
    ns = lp.PartitionedNamespace.open(foreign.root)
    day = D(2025, 12, 10)
    tasks = ns.plan_scan(f"event_date = DATE '{day}'")
    # v1: only the 2025-12-10 leaf; v2: only the 2025 leaves (event_year = 2025)
    v1 = [t for t in tasks if t.spec_version == 1]
    v2 = [t for t in tasks if t.spec_version == 2]
    assert [t.object_id for t in v1] == [foreign.leaf(event_date=day).object_id]
    assert {dict(t.partition_values)["event_year"] for t in v2} == {2025}
    got = ns.to_table(f"event_date = DATE '{day}'")
    assert _rows(got) == _oracle(foreign, lambda t: pc.equal(t["event_date"], pa.scalar(day)))
    assert ns.count_rows("event_date IS NULL") == sum(
        1 for r in _oracle(foreign) if r["event_date"] is None
    )


def test_describe_keeps_row_properties_and_adds_partition_values(foreign: Foreign) -> None:
    ns = lp.PartitionedNamespace.open(foreign.root).as_lance_namespace()
    leaf = foreign.leaf(event_date=D(2025, 12, 11))
    parts = leaf.object_id.split("$")
    described = ns.describe_table(ln.DescribeTableRequest(id=parts))
    assert (described.properties or {})["partition.event_date"] == "2025-12-11"
    assert described.location == f"{foreign.root}/{leaf.location}"
    namespace = ns.describe_namespace(ln.DescribeNamespaceRequest(id=parts[:2]))
    properties = namespace.properties or {}
    assert properties["partition.event_date"] == "2025-12-11"
    for key, value in foreign.row_properties.get("$".join(parts[:2]), {}).items():
        assert properties[key] == value
    root = ns.describe_namespace(ln.DescribeNamespaceRequest(id=[]))
    assert {"schema", "partition_spec_v1", "partition_spec_v2"} <= set(root.properties or {})
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["v1", "v2"]


def test_append_finds_existing_partitions_by_value(foreign: Foreign) -> None:
    ns = lp.PartitionedNamespace.open(foreign.root)
    country = None if foreign.deprecated_source else "US"
    before = len(ns.partitions())
    result = ns.write(_row(foreign, 100, D(2025, 4, 4), country))
    if foreign.deprecated_source:  # country is deprecated: the row goes to (2025, NULL)
        assert result.partitions_created == 1
    else:
        assert result.partitions_created == 0
        leaf = foreign.leaf(event_year=2025, country="US")
        assert [p["object_id"] for p in ns.partitions("object_id LIKE 'v2%'").to_pylist()].count(
            leaf.object_id
        ) == 1
    assert len(ns.partitions()) == before + result.partitions_created
    expected = pa.concat_tables([foreign.expected, _row(foreign, 100, D(2025, 4, 4), country)])
    assert _rows(ns.to_table()) == _rows(expected)
    assert _rows(lp.PartitionedNamespace.open(foreign.root).to_table()) == _rows(expected)


def test_overwrite_partitions_replaces_the_foreign_rows(foreign: Foreign) -> None:
    ns = lp.PartitionedNamespace.open(foreign.root)
    # Appendix E: the current spec's country is the deprecated legacy_field, NULL on write,
    # so the row's partition is (2025, NULL), which no foreign leaf holds
    country = None if foreign.deprecated_source else "US"
    new = _row(foreign, 200, D(2025, 6, 6), country)
    result = ns.write(new, mode="overwrite_partitions")
    assert result.partitions_created == (1 if foreign.deprecated_source else 0)
    replaced = [
        r["id"]
        for r in _oracle(foreign)
        # rows of every spec version in the written partition go (issue 19: a v1 row of
        # (2025, US) is in the v2 partition (2025, US) too)
        if r["event_date"] is not None
        and r["event_date"].year == 2025
        and r.get("country", None) == country
        and not foreign.deprecated_source
    ]
    kept = foreign.expected.filter(pc.invert(pc.is_in(foreign.expected["id"], pa.array(replaced))))
    assert _rows(ns.to_table()) == _rows(pa.concat_tables([kept, new]))


def test_evolution_then_writes(foreign: Foreign) -> None:
    ns = lp.PartitionedNamespace.open(foreign.root)
    ns.add_columns([pa.field("note", pa.string())])
    ns.update_partition_spec("event_date")  # v3 (v1's field, same id: the reuse rule)
    assert ns.current_spec.version == 3
    assert ns.current_spec.fields[0].field_id == 1
    new = _row(foreign, 300, D(2025, 12, 10), "FR").append_column(
        "note", pa.array(["evolved"], pa.string())
    )
    ns.write(new)
    expected = foreign.expected.append_column(
        "note", pa.nulls(foreign.expected.num_rows, pa.string())
    )
    assert _rows(ns.to_table()) == _rows(pa.concat_tables([expected, new]))
    assert ns.count_rows("event_date = DATE '2025-12-10'") == 1 + sum(
        1 for r in _oracle(foreign) if r["event_date"] == D(2025, 12, 10)
    )


def test_unknown_keys_survive_every_rewrite(tmp_path: os.PathLike[str]) -> None:
    foreign = BUILDERS["appendix_a_pretty"](str(tmp_path))
    ns = lp.PartitionedNamespace.open(foreign.root)
    ns.add_columns([pa.field("note", pa.string())])
    ns.rename_column("note", "remark")
    ns.update_partition_spec("event_date")
    ns.write(rows_table([(7, D(2025, 1, 1), "US")]))
    ns.drop_columns(["remark"])
    ns.alter_column_type("id", pa.int64())  # a no-op promotion still rewrites nothing
    metadata = lance.dataset(f"{foreign.root}/__manifest").metadata
    schema = json.loads(metadata["schema"])
    assert schema["x-generator"] == "foreign-client 0.1"
    assert schema["fields"][2]["x-doc"] == "ISO 3166 code"
    assert json.loads(metadata["partition_spec_v2"])[1]["x-owner"] == "geo-team"
    assert metadata["x-foreign-key"] == "kept"


def test_writes_add_a_nullable_read_version_column(tmp_path: os.PathLike[str]) -> None:
    foreign = BUILDERS["no_read_version"](str(tmp_path))
    ns = lp.PartitionedNamespace.open(foreign.root)
    ns.write(rows_table([(500, D(2025, 2, 2), "US")]))
    manifest = lance.dataset(f"{foreign.root}/__manifest")
    field = manifest.schema.field("read_version")
    assert field.type == pa.uint64()
    assert field.nullable
    by_id = {r["object_id"]: r for r in manifest.to_table().to_pylist()}
    touched = foreign.leaf(event_year=2025, country="US").object_id
    assert by_id[touched]["read_version"] is not None
    untouched = foreign.leaf(event_year=2025, country="FR").object_id
    assert by_id[untouched]["read_version"] is None


def test_appendix_e_evolves_away_from_the_deprecated_source(tmp_path: os.PathLike[str]) -> None:
    foreign = BUILDERS["appendix_e"](str(tmp_path))
    ns = lp.PartitionedNamespace.open(foreign.root)
    assert ns.current_spec.fields[1].name == "country"
    with pytest.raises(lp.errors.PartitionSpecError, match="deprecated"):
        ns.update_partition_spec("year(event_date) AS event_year, legacy_field")
    ns.update_partition_spec("event_date")
    ns.write(_row(foreign, 400, D(2025, 12, 10), None), mode="overwrite_partitions")
    day = D(2025, 12, 10)
    other_days = pc.fill_null(pc.not_equal(foreign.expected["event_date"], day), True)
    kept = foreign.expected.filter(other_days)
    assert _rows(ns.to_table()) == _rows(pa.concat_tables([kept, _row(foreign, 400, day, None)]))
    # the rows of that date under the older specs are replaced too (issue 19)
    assert ns.count_rows("event_date = DATE '2025-12-10'") == 1


def test_rename_on_foreign_leaves(tmp_path: os.PathLike[str]) -> None:
    foreign = BUILDERS["no_read_version"](str(tmp_path))
    ns = lp.PartitionedNamespace.open(foreign.root)
    ns.rename_column("country", "region")
    got = ns.to_table(columns=["id", "region"]).sort_by("id")
    assert (
        got.column("region").to_pylist()
        == foreign.expected.sort_by("id").column("country").to_pylist()
    )


def test_a_leaf_value_the_namespace_type_cannot_hold_is_a_cast_error(
    tmp_path: os.PathLike[str],
) -> None:
    """Spec 000, read rules: the namespace type wins, and a conversion that is not possible
    must be an error (another client rewrote a leaf with event_date as text)."""
    foreign = BUILDERS["no_read_version"](str(tmp_path))
    leaf = foreign.leaf(event_date=D(2025, 12, 11))
    bad = pa.table(
        {
            "id": pa.array([3], pa.int64()),
            "event_date": ["not a date"],
            "country": ["US"],
        }
    )
    lance.write_dataset(bad, f"{foreign.root}/{leaf.location}", mode="overwrite")
    ns = lp.PartitionedNamespace.open(foreign.root)
    with pytest.raises(lp.errors.CastError, match="'event_date'"):
        ns.to_table()
    assert ns.count_rows("event_date = DATE '2025-12-10'") == 2  # other leaves still read


def test_an_expression_outside_appendix_d_is_opaque(tmp_path: os.PathLike[str]) -> None:
    foreign = opaque_expression(str(tmp_path))
    ns = lp.PartitionedNamespace.open(foreign.root)
    assert _rows(ns.to_table()) == _oracle(foreign)
    tasks = ns.plan_scan("country = 'us'")  # pruned by evaluating upper('us') = 'US'
    assert [t.object_id for t in tasks] == [foreign.leaf(country_upper="US").object_id]
    assert _rows(ns.to_table("country = 'us'")) == _oracle(
        foreign, lambda t: pc.equal(t["country"], "us")
    )
    result = ns.write(rows_table([(4, D(2025, 2, 1), "Us")]))  # into the foreign US leaf
    assert result.partitions_created == 0
    assert ns.count_rows("country IN ('us', 'Us')") == 2


def test_partitions_sizes_on_a_foreign_namespace(foreign: Foreign) -> None:
    """Each leaf's rows and fragments as pylance counts them at its ``read_version`` (the
    latest when NULL); together, every visible row."""
    ns = lp.PartitionedNamespace.open(foreign.root)
    leaves = ns.partitions().to_pylist()
    assert sum(leaf["rows"] for leaf in leaves) == foreign.expected.num_rows
    for leaf in leaves:
        dataset = lance.dataset(f"{foreign.root}/{leaf['location']}", version=leaf["read_version"])
        assert leaf["rows"] == dataset.count_rows()
        assert leaf["fragments"] == len(dataset.get_fragments())
        assert leaf["bytes"] > 0
