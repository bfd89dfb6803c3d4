"""``--version``, and ``--as-of VERSION|TAG|DATETIME`` on every read command: ``scan``,
``describe``, ``partitions``, ``stats`` and ``verify`` read that ``__manifest`` version."""

from __future__ import annotations

import json
import time
from typing import Any

import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned.cli import run

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.string())])


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out, err = _run(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str]:
    """A namespace, the version of its first write (3 rows in 2 leaves, tagged ``first``;
    the latest version adds 2 rows and a leaf) and the ISO time of that version's commit."""
    root = str(tmp_path_factory.mktemp("asof") / "ns")
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="country")
    ns.write(pa.table({"id": [1, 2, 3], "country": ["US", "FR", "US"]}, schema=SCHEMA))
    first = ns.version
    ns.tags.create("first")
    time.sleep(0.01)  # the next commit's time is after version 2's
    ns.write(pa.table({"id": [4, 5], "country": ["DE", "US"]}, schema=SCHEMA))
    (row,) = [row for row in ns.versions().to_pylist() if row["version"] == first]
    return root, str(first), row["timestamp"].isoformat()


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "--version")
    assert (code, out, err) == (0, f"lance-partitioned {lp.__version__}\n", "")


@pytest.mark.parametrize("as_of", ["version", "tag", "time"])
def test_describe_reads_the_version_as_of(
    history: tuple[str, str, str], as_of: str, capsys: pytest.CaptureFixture[str]
) -> None:
    root, first, when = history
    named = {"version": first, "tag": "first", "time": when}[as_of]
    out = _json(capsys, "describe", root, "--as-of", named)
    assert out["manifest_version"] == int(first)
    assert (out["counts"]["leaves"], out["counts"]["rows"]) == (2, 3)
    assert _json(capsys, "describe", root)["counts"]["rows"] == 5


def test_partitions_stats_scan_verify_read_the_version_as_of(
    history: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, first, _ = history
    listed = _json(capsys, "partitions", root, "--as-of", "first")
    assert sorted(leaf["values"]["country"] for leaf in listed) == ["FR", "US"]
    assert _json(capsys, "stats", root, "--as-of", first)["rows"] == 3
    code, out, err = _run(capsys, "scan", root, "--as-of", "first", "--format", "json")
    assert code == 0, err
    assert sorted(json.loads(line)["id"] for line in out.splitlines()) == [1, 2, 3]
    checked = _json(capsys, "verify", root, "--as-of", first)
    assert (checked["manifest_version"], checked["leaves"], checked["healthy"]) == (
        int(first),
        2,
        True,
    )
    assert _json(capsys, "verify", root)["leaves"] == 3


def test_as_of_errors_are_one_line_with_exit_2(
    history: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    root, first, _ = history
    for args, expected in [
        (("scan", root, "--as-of", "nosuch"), "'nosuch' is not a tag"),
        (("describe", root, "--as-of", "99"), "version 99 does not exist"),
        (("stats", root, "--as-of", "2000-01-01"), "no __manifest version"),
        (("verify", root, "--as-of", first, "--repair"), "not with --as-of"),
    ]:
        code, _, err = _run(capsys, *args)
        assert code == 2, (args, err)
        assert len(err.strip().splitlines()) == 1, err
        assert expected in err, err
