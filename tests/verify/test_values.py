"""The partition values of the leaves' samples, checked many leaves at once
(``lance_partitioned.verify.values``): the same problems, in the same order, as checked one
leaf at a time, and a query that fails still names its leaf."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.verify import values, verify


def _leaf(ns: lp.PartitionedNamespace, where: str) -> str:
    (row,) = ns.partitions(where, sizes=False).to_pylist()
    return str(row["object_id"])


def test_batched_checks_find_what_one_leaf_at_a_time_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ns"
    countries = ["US", "FR", "DE", "UK", "ES", "IT"]
    ids = list(range(60))
    data = pa.table({"id": ids, "country": [countries[i % 6] for i in ids]})
    ns = lp.PartitionedNamespace.create(
        str(root), schema=data.schema, partition_by="country, truncate(10, id) AS decade"
    )
    ns.write(data)
    assert len(ns.partitions(sizes=False)) == 36
    manifest = lance.dataset(str(root / "__manifest"))
    # rows that do not belong to their leaf: a wrong country (the leaf and its namespace row),
    # a wrong decade, and both on one leaf
    country = _leaf(ns, "country = 'US' AND decade = 0")
    decade = _leaf(ns, "country = 'FR' AND decade = 10")
    both = _leaf(ns, "country = 'DE' AND decade = 20")
    manifest.update({"country": "'CA'"}, where=f"object_id = '{country}'")
    manifest.update({"decade": "90"}, where=f"object_id = '{decade}'")
    manifest.update({"country": "'AT'", "decade": "80"}, where=f"object_id = '{both}'")

    batched = verify(str(root))
    monkeypatch.setattr(values, "BATCH_VALUES", 1)  # every leaf checked on its own
    alone = verify(str(root))

    assert batched.problems == alone.problems
    assert batched.rows_sampled == alone.rows_sampled == 60
    # the __manifest's own checks find the rows whose parent namespace row disagrees; the
    # samples find every leaf whose rows do not give its values
    sampled = [p for p in batched.problems if "sampled rows give" in p.message]
    found = [(p.kind, p.object_id) for p in sampled]
    # in the order verify lists the leaves: the __manifest's rows as stored
    listed = lance.dataset(str(root / "__manifest")).to_table().column("object_id").to_pylist()
    in_order = sorted([country, decade, both, both], key=listed.index)
    assert found == [("partition_value", oid) for oid in in_order], batched.problems
    messages = [p.message for p in sampled if p.object_id == both]
    assert "give country = 'DE'" in messages[0]
    assert "partition value is 'AT'" in messages[0]
    assert "give decade = 20" in messages[1]
    assert "partition value is 80" in messages[1]
    (wrong_country,) = [p.message for p in sampled if p.object_id == country]
    assert "2 of 2 sampled rows give country = 'US'" in wrong_country  # ids 0 and 6


def test_a_failing_query_is_checked_again_leaf_by_leaf(tmp_path: Path) -> None:
    """A leaf whose values the field's result_type cannot hold fails the batch's query: the
    problem names that leaf, and its healthy neighbours have none."""
    root = tmp_path / "ns"
    data = pa.table({"id": [1, 2, 3], "k": [5, 7, 9]})
    ns = lp.PartitionedNamespace.create(
        str(root), schema=data.schema, partition_by="expr('col', k, 'int8') AS small"
    )
    ns.write(data)
    (row,) = ns.partitions("small = 7", sizes=False).to_pylist()
    uri = str(root / str(row["location"]))
    # pylance alone appends a value int8 cannot hold, and the leaf's row publishes it
    lance.write_dataset(pa.table({"id": [4], "k": [1000]}), uri, mode="append")
    latest = lance.dataset(uri).version
    manifest = lance.dataset(str(root / "__manifest"))
    manifest.update({"read_version": f"{latest}"}, where=f"object_id = '{row['object_id']}'")

    report = verify(str(root))

    assert [(p.kind, p.object_id) for p in report.problems] == [
        ("partition_value", row["object_id"])
    ]
    assert "int8" in report.problems[0].message, report.problems[0].message
