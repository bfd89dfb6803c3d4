"""The cost model in ``docs/concepts.md`` exists, and the ``PartitionCountWarning`` points to it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lance_partitioned import errors, writing

CONCEPTS = Path(__file__).resolve().parents[2] / "docs" / "concepts.md"
SECTION = "What a leaf costs"


def test_concepts_has_a_cost_model_with_the_floor_and_bucket() -> None:
    text = CONCEPTS.read_text(encoding="utf-8")
    match = re.search(rf"^## {SECTION}\n(.*?)(?=^## )", text, re.M | re.S)
    assert match is not None, f"no '## {SECTION}' section in {CONCEPTS}"
    body = match.group(1)
    for needle in ("floor", "bucket(N, col)", "months(ts)", "max_workers", "PartitionCountWarning"):
        assert needle in body, needle


def test_the_partition_count_warning_points_to_the_cost_model() -> None:
    rows = [1] * (writing.MAX_NEW_PARTITIONS + 1)
    with pytest.warns(errors.PartitionCountWarning, match=rf"'{SECTION}' in docs/concepts\.md"):
        writing.warn_partition_count(rows, "id")
