"""``history`` and ``tag`` in-process; the ``COLUMNS=80`` output of ``history`` through the
real console script, as a golden file (commit times replaced by ``<time>``: run with
``LANCE_PARTITIONED_UPDATE_GOLDEN=1`` to accept a deliberate change)."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp
from tests.cli.helpers import build, cli, console_script, events, one_line_error

GOLDEN = Path(__file__).parent / "golden"
_STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``events``: the namespace of the other goldens, its version 4 tagged ``first-load``."""
    folder = tmp_path_factory.mktemp("history")
    ns = build(folder / "events")
    ns.tags.create("first-load", version=4)
    return folder


@pytest.mark.console_script
def test_history_at_80_columns(parent: Path) -> None:
    result = console_script("history", "events", cwd=parent)
    assert result.code == 0, result.err
    assert "\x1b[" not in result.out
    assert max(len(line) for line in result.out.splitlines()) <= 80
    got = "\n".join(
        line.rstrip() for line in _STAMP.sub("YYYY-MM-DD hh:mm:ss", result.out).splitlines()
    )
    golden = GOLDEN / "history.txt"
    if os.environ.get("LANCE_PARTITIONED_UPDATE_GOLDEN"):
        golden.write_text(got + "\n", encoding="utf-8")
    assert got + "\n" == golden.read_text(encoding="utf-8")


def test_history_json_is_every_version_newest_first(parent: Path) -> None:
    ns = lp.PartitionedNamespace.open(str(parent / "events"))
    result = cli("history", parent / "events", "--json")
    assert result.code == 0, result.err
    found = result.json()
    assert [v["version"] for v in found] == list(range(ns.version, 0, -1))
    latest = found[0]
    assert set(latest) == {
        "version",
        "timestamp",
        "operation",
        "mode",
        "rows_added",
        "rows_removed",
        "rows_updated",
        "partitions_touched",
        "tags",
        "properties",
    }
    assert (latest["operation"], latest["mode"], latest["rows_added"]) == ("write", "append", 6)
    assert latest["properties"]["lance_partitioned.operation"] == "write"
    stamp = dt.datetime.fromisoformat(latest["timestamp"])
    assert stamp.utcoffset() == dt.timedelta(0)
    assert next(v for v in found if v["version"] == 4)["tags"] == ["first-load"]


def test_history_limit(parent: Path) -> None:
    limited = cli("history", parent / "events", "--limit", "2", "--json")
    assert limited.code == 0, limited.err
    assert [v["version"] for v in limited.json()] == [8, 7]
    text = cli("history", parent / "events", "--limit", "2")
    assert "the latest 2 of 8 versions" in text.out
    line = one_line_error(cli("history", parent / "events", "--limit", "0"))
    assert "--limit" in line


def test_tag_create_list_delete(tmp_path: Path) -> None:
    root = tmp_path / "events"
    ns = build(root, appends=1)
    made = cli("tag", root, "create", "nightly", "--json")
    assert made.code == 0, made.err
    assert made.json()["name"] == "nightly"
    assert made.json()["version"] == ns.version
    assert cli("tag", root, "create", "start", "--version", "1").code == 0
    first_write = ns.versions().to_pylist()[2]["timestamp"]
    at = cli("tag", root, "create", "by-time", "--at", first_write.isoformat(), "--json")
    assert at.json()["version"] == 3
    listed = cli("tag", root, "list")
    assert listed.code == 0, listed.err
    assert re.search(rf"nightly\s+│\s+{ns.version}\s", listed.out), listed.out
    assert "start" in listed.out
    as_json = {t["name"]: t["version"] for t in cli("tag", root, "list", "--json").json()}
    assert as_json == {"by-time": 3, "nightly": ns.version, "start": 1}
    assert cli("tag", root, "delete", "start").code == 0
    assert "start" not in lp.PartitionedNamespace.open(str(root)).tags.list()


def test_tag_mistakes_are_one_line_with_exit_2(tmp_path: Path) -> None:
    root = tmp_path / "events"
    build(root, appends=1)
    assert cli("tag", root, "create", "a").code == 0
    assert "'a' already exists" in one_line_error(cli("tag", root, "create", "a"))
    assert "'b' is not a tag" in one_line_error(cli("tag", root, "delete", "b"))
    assert "tag name 'a b'" in one_line_error(cli("tag", root, "create", "a b"))
    assert "version 99 does not exist" in one_line_error(
        cli("tag", root, "create", "c", "--version", "99")
    )
    both = one_line_error(cli("tag", root, "create", "c", "--version", "1", "--at", "2025-01-01"))
    assert "--version or --at" in both
    assert "--at" in one_line_error(cli("tag", root, "create", "c", "--at", "yesterday"))
    assert "before" in one_line_error(cli("tag", root, "create", "c", "--at", "2000-01-01"))


def test_history_shows_the_counts_of_row_level_changes(tmp_path: Path) -> None:
    """A delete, an update and a merge: rows added, removed, updated and leaves touched, in
    ``--json`` and in the table."""
    root = tmp_path / "events"
    ns = build(root, appends=1)  # ids 0-23 under spec v1, 1000-1005 under spec v2 (country)
    ns.delete("id < 3")  # one row in each of three v1 leaves
    ns.update("id >= 1000", {"amount": "amount + 1"})  # the six rows of the four v2 leaves
    source = pa.concat_tables([events(1000, 2), events(2000, 1)])  # US and NULL; FR
    ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    found = cli("history", root, "--limit", "3", "--json").json()
    keys = ("operation", "rows_added", "rows_removed", "rows_updated", "partitions_touched")
    assert [tuple(v[k] for k in keys) for v in found] == [
        ("merge", 1, 0, 2, 3),
        ("update", 0, 0, 6, 4),
        ("delete", 0, 3, 0, 3),
    ]
    text = cli("history", root, "--limit", "3").out
    cells = [[cell.strip() for cell in line.split("│")] for line in text.splitlines()]
    shown = {row[2]: row[3:] for row in cells if len(row) == 7}
    assert shown == {
        "merge": ["1", "0", "2", "3"],
        "update": ["0", "0", "6", "4"],
        "delete": ["0", "3", "0", "3"],
    }
    assert "+rows added, -rows removed, ~rows updated" in text
