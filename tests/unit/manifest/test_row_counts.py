"""``LeafStats.num_rows_column`` (an unfiltered plan's row counts, read column by column)
answers as ``LeafStats.num_rows_at`` does, row by row, whatever the ``metadata`` JSON holds."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lance_partitioned.manifest import LeafStats

CANONICAL = LeafStats(3, 42).merge_into(None)
WITH_SCHEMA = LeafStats(3, 7, schema="0123456789abcdef").merge_into(None)
METADATA = [
    CANONICAL,
    WITH_SCHEMA,
    LeafStats(3, 5).merge_into('{"owner": "ops"}'),  # another client's key beside ours
    json.dumps({"lance-partitioned.num_rows": "9", "lance-partitioned.num_rows_version": "3"}),
    '{"lance-partitioned.num_rows":"8","lance-partitioned.num_rows_version":"3"}',  # no spaces
    # our key, escaped inside another key's value: not a row count
    json.dumps(
        {"a": '"lance-partitioned.num_rows": "1", "lance-partitioned.num_rows_version": "3"'}
    ),
    '{"lance-partitioned.num_rows": "x", "lance-partitioned.num_rows_version": "3"}',
    "not json",
    "[]",
    "",
    None,
]


@pytest.mark.parametrize("version", [3, 4, None])
def test_the_column_answers_as_each_row_does(version: int | None) -> None:
    versions = pa.array([version] * len(METADATA), pa.int64())
    expected = [LeafStats.num_rows_at(text, version) for text in METADATA]
    assert LeafStats.num_rows_column(pa.array(METADATA, pa.string()), versions) == expected
    chunked = pa.chunked_array([METADATA[:3], METADATA[3:]], pa.string())
    assert LeafStats.num_rows_column(chunked, pa.chunked_array([versions])) == expected
    if version == 3:
        assert expected[:5] == [42, 7, 5, 9, 8]
