"""The encoding of an operation as Lance transaction properties (``lance_partitioned.*``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lance_partitioned import errors
from lance_partitioned.manifest.operations import PREFIX, Operation


def test_round_trip_with_every_field() -> None:
    operation = Operation(
        "write",
        mode="overwrite_partitions",
        rows_added=12,
        rows_removed=3,
        partitions_touched=2,
        details={"engine": "spark", "txn_app_id": "etl"},
    )
    properties = operation.to_properties()
    assert properties == {
        "lance_partitioned.operation": "write",
        "lance_partitioned.mode": "overwrite_partitions",
        "lance_partitioned.rows_added": "12",
        "lance_partitioned.rows_removed": "3",
        "lance_partitioned.partitions_touched": "2",
        "lance_partitioned.engine": "spark",
        "lance_partitioned.txn_app_id": "etl",
        "lance_partitioned.client": properties["lance_partitioned.client"],
    }
    assert properties["lance_partitioned.client"].startswith("lance-partitioned ")
    assert Operation.from_properties(properties) == operation


def test_unknown_fields_are_omitted_not_written_as_empty() -> None:
    properties = Operation("evolve", mode="add_columns").to_properties()
    assert "lance_partitioned.rows_added" not in properties
    back = Operation.from_properties(properties)
    assert back is not None
    assert (back.rows_added, back.rows_removed, back.partitions_touched) == (None, None, None)


def test_properties_of_other_clients_are_not_an_operation() -> None:
    assert Operation.from_properties(None) is None
    assert Operation.from_properties({}) is None
    assert Operation.from_properties({"__lance_commit_message": "hi", "other.key": "1"}) is None


def test_reading_is_tolerant_of_values_we_did_not_write() -> None:
    back = Operation.from_properties(
        {
            "lance_partitioned.operation": "write",
            "lance_partitioned.rows_added": "many",  # not a number: unknown, not an error
            "lance_partitioned.rows_removed": "-4",
            "lance_partitioned.future_key": "x",
            "someone.else": "y",
        }
    )
    assert back is not None
    assert (back.name, back.rows_added, back.rows_removed) == ("write", None, None)
    assert back.details == {"future_key": "x"}


def test_details_may_not_shadow_a_field() -> None:
    with pytest.raises(errors.InternalError, match="mode"):
        Operation("write", details={"mode": "append"}).to_properties()
    with pytest.raises(errors.InternalError, match="operation name"):
        Operation("")


_text = st.text(min_size=1, max_size=8)


@given(
    name=_text,
    mode=st.none() | _text,
    counts=st.tuples(*(st.none() | st.integers(0, 2**63 - 1) for _ in range(3))),
    details=st.dictionaries(st.from_regex(r"[a-z][a-z_]{0,8}", fullmatch=True), st.text()),
)
def test_any_operation_round_trips(
    name: str,
    mode: str | None,
    counts: tuple[int | None, int | None, int | None],
    details: dict[str, str],
) -> None:
    details = {k: v for k, v in details.items() if f"{PREFIX}{k}" not in Operation.KEYS}
    operation = Operation(name, mode, *counts, details=details)
    assert Operation.from_properties(operation.to_properties()) == operation
