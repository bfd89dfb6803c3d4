"""``PartitionedNamespace.restore``: a new commit whose rows are an earlier version's."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import errors

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.string()), ("amount", pa.float64())])


def _rows(ns: lp.PartitionedNamespace) -> list[dict[str, object]]:
    return sorted(ns.to_table().to_pylist(), key=lambda r: r["id"])


def _history(tmp_path: Path) -> tuple[lp.PartitionedNamespace, int, list[dict[str, object]]]:
    ns = lp.PartitionedNamespace.create(str(tmp_path), schema=SCHEMA, partition_by="country")
    ns.write(pa.table({"id": [1, 2, 3], "country": ["US", "FR", None], "amount": [1.0, 2.0, 3.0]}))
    good, rows = ns.version, _rows(ns)
    ns.write(pa.table({"id": [4], "country": ["DE"], "amount": [4.0]}))
    ns.delete("country = 'US'")
    ns.update("id = 2", {"amount": "amount * 10"})
    return ns, good, rows


def test_restore_a_version_number(tmp_path: Path) -> None:
    ns, good, rows = _history(tmp_path)
    before = ns.version
    result = ns.restore(good)
    assert result.version == before + 1 == ns.version
    assert (result.restored_version, result.rows) == (good, 3)
    assert _rows(ns) == rows
    assert ns.count_rows("country = 'DE'") == 0  # a partition created since is gone
    last = ns.versions().to_pylist()[-1]
    assert (last["operation"], last["mode"]) == ("restore", "overwrite")
    assert last["rows_added"] == 3
    # the versions in between stay readable, and the restore can be undone the same way
    assert len(_rows(lp.PartitionedNamespace.open(ns.uri, version=before))) == 3
    ns.restore(before)
    assert _rows(ns) == _rows(lp.PartitionedNamespace.open(ns.uri, version=before))


def test_restore_a_tag_and_a_time(tmp_path: Path) -> None:
    ns, good, rows = _history(tmp_path)
    ns.tags.create("good", good)
    ns.restore("good")
    assert _rows(ns) == rows
    ns.delete("id > 0")
    assert ns.count_rows() == 0
    time.sleep(0.01)
    moment = dt.datetime.now(dt.timezone.utc)
    time.sleep(0.01)
    ns.write(pa.table({"id": [8], "country": ["US"], "amount": [8.0]}))
    ns.restore(moment)  # the empty version current at that time
    assert ns.count_rows() == 0


def test_restore_keeps_the_current_schema(tmp_path: Path) -> None:
    ns, good, rows = _history(tmp_path)
    ns.rename_column("amount", "value")
    ns.add_columns([pa.field("note", pa.string())])
    ns.restore(good)
    assert ns.schema.names == ["id", "country", "value", "note"]
    assert _rows(ns) == [
        {"id": r["id"], "country": r["country"], "value": r["amount"], "note": None} for r in rows
    ]


def test_restore_of_a_missing_version_or_tag_is_a_typed_error(tmp_path: Path) -> None:
    ns = _history(tmp_path)[0]
    with pytest.raises(errors.TableVersionNotFoundError):
        ns.restore(ns.version + 5)
    with pytest.raises(errors.TagNotFoundError):
        ns.restore("nope")
    pinned = lp.PartitionedNamespace.open(ns.uri, version=2)
    with pytest.raises(errors.UnsupportedOperationError, match="read-only"):
        pinned.restore(2)
