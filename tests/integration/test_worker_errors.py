"""An error in one worker of a per-leaf pool (issue 31): the operation raises the typed error of
that leaf and publishes nothing (the ``__manifest`` stays at its version, every row reads as
before), with the pool several threads wide."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from lance_partitioned.transaction.leaves import pause_at

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
KEYS = range(12)


def _namespace(tmp_path: Path) -> lp.PartitionedNamespace:
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=SCHEMA, partition_by="k", max_workers=4
    )
    ns.write(pa.table({"k": list(KEYS), "v": list(KEYS)}, schema=SCHEMA))
    return ns


def _disk_full() -> None:
    raise OSError("Generic LocalFileSystem error: No space left on device (os error 28)")


def _state(ns: lp.PartitionedNamespace) -> tuple[int, list[dict[str, int]]]:
    fresh = lp.PartitionedNamespace.open(ns.uri)
    return fresh.version, fresh.to_table().sort_by(
        [("k", "ascending"), ("v", "ascending")]
    ).to_pylist()


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda ns: ns.write(pa.table({"k": list(KEYS), "v": [100] * 12}, schema=SCHEMA)),
            id="append",
        ),
        pytest.param(lambda ns: ns.delete("v % 2 = 0"), id="delete"),
        pytest.param(lambda ns: ns.update("v >= 0", set={"v": "v + 1"}), id="update"),
    ],
)
def test_a_failing_leaf_commit_is_typed_and_publishes_nothing(
    tmp_path: Path, change: Callable[[lp.PartitionedNamespace], object]
) -> None:
    ns = _namespace(tmp_path)
    before = _state(ns)
    with contextlib.ExitStack() as stack:
        # every leaf commit fails, each leaf's first attempt and the look again it makes after
        # an OSError alike (each pause fires once, whichever leaf reaches it)
        for _ in range(2 * len(KEYS)):
            stack.enter_context(pause_at("leaf_commit", _disk_full))
        stack.enter_context(pytest.raises(errors.StorageError, match="no space"))
        change(ns)
    assert _state(ns) == before
    change(ns.refresh())  # and the namespace takes the change once the storage is back
    assert _state(ns)[0] == before[0] + 1
