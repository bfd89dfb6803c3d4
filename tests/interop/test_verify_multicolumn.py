"""``verify`` checks published fields over several source columns (``multi_bucket``, an
``expression`` over ``col0..colN``): a leaf whose rows do not evaluate to its recorded value
is a finding; one of another client's ``multi_bucket`` (unknown bytes) is not judged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import pytest

from lance_partitioned.verify import verify
from tests.interop.published import build
from tests.interop.test_published_dialect import (
    IDENTITY_S,
    MULTI_BUCKET,
    MULTI_EXPRESSION,
    ROWS,
    SCHEMA,
)

pytestmark = pytest.mark.interop

MARKED = {**MULTI_BUCKET, "transform": {**MULTI_BUCKET["transform"], "hash_encoding": "iceberg"}}


def _shift(root: str, column: str, modulo: int) -> str:
    """Record a wrong value of ``column`` for one leaf of the ``__manifest`` and its partition
    namespace (pylance alone); the leaf's object id."""
    manifest = lance.dataset(f"{root}/__manifest")
    leaf = next(
        r
        for r in manifest.to_table().to_pylist()
        if r["object_type"] == "table" and r[column] is not None
    )
    wrong = (leaf[column] + 1) % modulo
    parent = leaf["object_id"].rsplit("$", 1)[0]  # (its namespace records the value too)
    where = f"object_id IN ('{leaf['object_id']}', '{parent}')"
    manifest.update({column: str(wrong)}, where=where)
    return str(leaf["object_id"])


@pytest.mark.parametrize(
    ("multi", "modulo"), [(MARKED, 4), (MULTI_EXPRESSION, 1000)], ids=["multi_bucket", "expr"]
)
def test_verify_checks_a_field_over_several_columns(
    tmp_path: Path, multi: dict[str, Any], modulo: int
) -> None:
    built = build(str(tmp_path), SCHEMA, [IDENTITY_S, multi], ROWS)
    assert not verify(built.root).problems
    column = f"partition_field_{multi['field_id']}"
    wrong = _shift(built.root, column, modulo)
    problems = verify(built.root).problems
    assert [(p.kind, p.object_id) for p in problems] == [("partition_value", wrong)]
    assert column in problems[0].message
    # another client's multi_bucket (no hash_encoding marker): its bytes are unknown, so its
    # values are not judged
    foreign = build(str(tmp_path / "foreign"), SCHEMA, [IDENTITY_S, MULTI_BUCKET], ROWS)
    _shift(foreign.root, "partition_field_m", 4)
    assert not verify(foreign.root).problems
