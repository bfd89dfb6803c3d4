"""The checks of each leaf, worked out once per partition spec and leaf schema
(``lance_partitioned.verify.leaves.LeafChecks``): leaves of another schema or another spec
get their own."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa

import lance_partitioned as lp
from lance_partitioned.verify import verify


def test_a_leaf_of_another_schema_is_judged_on_its_own(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    data = pa.table({"id": [1, 2, 3, 4], "country": ["US", "FR", "DE", "US"]})
    ns = lp.PartitionedNamespace.create(str(root), schema=data.schema, partition_by="country")
    ns.write(data)
    # a new spec: the same rows under it, in leaves of spec version 2
    ns.update_partition_spec("country, truncate(2, id) AS pair")
    ns.write(pa.table({"id": [10, 11], "country": ["US", "FR"]}))
    # pylance alone rewrites the v1 DE leaf with ids as lists, and its row publishes it
    (row,) = ns.partitions("spec_version = 1 AND country = 'DE'", sizes=False).to_pylist()
    uri = str(root / str(row["location"]))
    bad = pa.table({"id": pa.array([[3]]), "country": ["DE"]})
    lance.write_dataset(bad, uri, mode="overwrite")
    manifest = lance.dataset(str(root / "__manifest"))
    version = lance.dataset(uri).version
    manifest.update({"read_version": f"{version}"}, where=f"object_id = '{row['object_id']}'")
    # and the v2 FR leaf says its ids are in another pair than they are
    (wrong,) = ns.partitions("spec_version = 2 AND country = 'FR'", sizes=False).to_pylist()
    manifest.update({"pair": "99"}, where=f"object_id = '{wrong['object_id']}'")

    report = verify(str(root))

    # the __manifest's own check finds the FR row's pair against its parent namespace row;
    # the leaves' checks find the rest
    leaves = [p for p in report.problems if "is 99 but" not in p.message]
    assert sorted((p.kind, p.object_id) for p in leaves) == [
        ("partition_value", wrong["object_id"]),
        ("schema", row["object_id"]),
    ], report.problems
    schema, value = sorted(leaves, key=lambda p: p.kind != "schema")
    # judged by its own schema (not by a sample read as the others' schema)
    assert schema.message.startswith("the leaf's"), schema.message
    # judged by its own spec's fields
    assert "1 of 1 sampled rows give pair = 10" in value.message, value.message
    # every other leaf was sampled, under either spec: 3 rows of v1, 2 of v2
    assert report.rows_sampled == 5
    assert report.leaves == 5
