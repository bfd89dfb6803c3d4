"""``verify`` reports leaves whose indexes do not match the definitions, as findings of their
own kind: the namespace stays healthy and readable."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from lance_partitioned.search.build import record_definitions
from lance_partitioned.verify import verify
from tests.cli.helpers import cli

from .helpers import namespace, rows


def test_verify_reports_missing_and_misplaced_leaf_indexes(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    ns.create_index("grp", "BTREE")
    ns.create_index("v", "IVF_FLAT", min_rows=1000)  # every leaf too small: flat, not missing
    assert verify(ns.uri).indexes == []
    ns.write(rows({"d": 4}, first_id=1000, seed=2))
    report = verify(ns.uri)
    assert report.healthy
    [missing] = report.indexes
    [new_leaf] = ns.plan_scan("tenant = 'd'")
    assert (missing.kind, missing.object_id) == ("index_missing", new_leaf.object_id)
    assert "grp_idx" in missing.message
    shown = cli("verify", ns.uri, "--json")
    assert shown.code == 0
    assert [p["kind"] for p in shown.json()["indexes"]] == ["index_missing"]
    assert "1 index finding" in cli("verify", ns.uri).out
    ns.optimize_indices()
    assert verify(ns.uri).indexes == []

    # an index of a definition's name on another column than the definition's
    ns.create_index("id", "BTREE", name="id_idx")
    grp_id = ns.namespace_schema.field_id("grp")
    record_definitions(
        ns._manifest,
        lambda found: {**found, "id_idx": dataclasses.replace(found["id_idx"], field_id=grp_id)},
        "test",
    )
    report = verify(ns.uri)
    assert report.healthy
    assert {p.kind for p in report.indexes} == {"index_column"}
    assert len(report.indexes) == 4
    assert ns.refresh().count_rows() == 64
