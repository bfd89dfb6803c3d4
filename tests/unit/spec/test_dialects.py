"""The published dialect's spec JSON: detection by shape, loading rules, expressions."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lance_partitioned import errors
from lance_partitioned.spec.dialects import Dialect, PublishedSpec, detect_dialect, load_spec
from lance_partitioned.spec.transforms import Months, Truncate, Year


def _field(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "field_id": "y",
        "source_ids": [1],
        "transform": {"type": "year"},
        "result_type": {"type": "int32"},
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def test_detect_by_shape() -> None:
    assert detect_dialect([]) is Dialect.SPEC000
    assert detect_dialect({"id": 2, "fields": []}) is Dialect.PUBLISHED
    with pytest.raises(errors.PartitionSpecError, match="partition_spec_v3"):
        detect_dialect({"fields": []}, "partition_spec_v3")


def test_transforms_and_expressions_load() -> None:
    spec = load_spec(
        1,
        {
            "id": 1,
            "fields": [
                _field(),
                _field(field_id="t", transform={"type": "truncate", "width": 3},
                       result_type={"type": "utf8"}, source_ids=[2]),
                _field(field_id="m", transform=None, source_ids=[1],
                       expression="(date_part('year', col0) - 1970) * 12 + "
                       "date_part('month', col0) - 1"),
            ],
        },
    )  # fmt: skip
    assert isinstance(spec, PublishedSpec)
    assert [f.transform for f in spec.fields] == [Year(), Truncate(3, string=True), Months()]
    assert [f.name for f in spec.fields] == ["partition_field_y", "partition_field_t",
                                             "partition_field_m"]  # fmt: skip
    assert spec.fields[2].to_json()["expression"].count("col0") == 2  # written back as read


@pytest.mark.parametrize(
    ("obj", "error", "match"),
    [
        ({"id": 2, "fields": []}, errors.PartitionSpecError, "'id' must equal 1"),
        ({"id": 1, "fields": [_field(expression="col0")]}, errors.PartitionSpecError,
         "exactly one"),
        ({"id": 1, "fields": [_field(transform=None)]}, errors.PartitionSpecError, "exactly one"),
        ({"id": 1, "fields": [_field(field_id=7)]}, errors.PartitionSpecError, "field_id"),
        ({"id": 1, "fields": [_field(source_ids=[])]}, errors.PartitionSpecError, "source_ids"),
        ({"id": 1, "fields": [_field(transform={"type": "bucket"})]}, errors.PartitionSpecError,
         "num_buckets"),
        ({"id": 1, "fields": [_field(transform={"type": "zorder"})]}, errors.PartitionSpecError,
         "unknown transform"),
        ({"id": 1, "fields": [_field(transform=None, expression="col0 + col1",
                                     source_ids=[1])]}, errors.PartitionSpecError,
         "beyond its one source"),
        ({"id": 1, "fields": [_field(source_ids=[1, 2])]}, errors.PartitionSpecError,
         "takes one source column"),
    ],
)  # fmt: skip
def test_malformed_specs_are_typed_errors(
    obj: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        load_spec(1, obj)


def test_multi_column_fields_load_as_scanned_fields() -> None:
    from lance_partitioned.spec.multicolumn import MultiColumn  # (new module)

    multi = _field(transform={"type": "multi_bucket", "num_buckets": 8}, source_ids=[1, 2])
    expr = _field(field_id="e", transform=None, expression="col0 + col1", source_ids=[2, 1])
    spec = load_spec(1, {"id": 1, "fields": [multi, expr]})
    bucket, summed = (f.transform for f in spec.fields)
    assert isinstance(bucket, MultiColumn)
    assert bucket.expression == "abs(murmur3_multi(col0, col1)) % 8"
    assert isinstance(summed, MultiColumn)
    assert summed.expression == "col0 + col1"
    assert not bucket.projects_on(pa.int64())
    assert spec.to_json()["fields"] == [{**multi}, {**expr}]  # written back as read
    with pytest.raises(errors.TransformError, match="every source column"):
        bucket.apply(pa.array([1]))


def test_one_key_keeps_one_stand_in_id_across_versions() -> None:
    ids: dict[str, int] = {}
    v1 = load_spec(1, {"id": 1, "fields": [_field()]}, ids)
    country = _field(field_id="c", transform={"type": "identity"}, result_type={"type": "utf8"})
    v2 = load_spec(2, {"id": 2, "fields": [country, _field()]}, ids)
    assert v1.fields[0].field_id == v2.fields[1].field_id == 1
    assert v2.fields[0].field_id == 2
    assert v2.fields[0].result_type == pa.utf8()
