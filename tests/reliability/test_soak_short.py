"""The short modes of the soak harnesses in ``benchmarks/soak/`` (the long ones run by hand).

Each harness checks the namespace itself and exits 1 with the seed on the first mismatch;
these tests run it, require exit status 0, and read its printed summary back.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.helpers import run


def _table(stdout: str) -> list[dict[str, str]]:
    """The rows of the last Markdown table printed."""
    tables: list[list[str]] = []
    previous = False
    for line in stdout.splitlines():
        is_row = line.startswith("|")
        if is_row and not previous:
            tables.append([])
        if is_row:
            tables[-1].append(line)
        previous = is_row
    header, _separator, *body = tables[-1]
    names = [cell.strip() for cell in header.split("|")[1:-1]]
    return [
        dict(zip(names, (cell.strip() for cell in line.split("|")[1:-1]), strict=True))
        for line in body
    ]


@pytest.mark.slow
def test_sigkill_soak_short_mode(tmp_path: Path) -> None:
    """20 writers killed at random phases; after each, the namespace holds exactly the writes
    that returned (the one in flight whole or not at all) and the next write succeeds."""
    done = run("soak/kill.py", "--short", "--dir", str(tmp_path))
    assert "20 kills survived" in done.stdout, done.stdout
    by_operation = _table(done.stdout)
    assert sum(int(row["kills"]) for row in by_operation) == 20
    # the kills landed inside operations, not only between them
    assert sum(int(row["kills"]) for row in by_operation if row["operation in flight"] != "none")
    assert (tmp_path / "ns" / "__manifest").is_dir()


@pytest.mark.slow
def test_concurrency_soak_short_mode(tmp_path: Path) -> None:
    """4 writers, 2 readers and an evolver (adding, renaming and dropping columns, changing the
    partition spec) for 30 s; every __manifest version is replayed."""
    done = run(
        "soak/concurrency.py",
        "--short",
        "--evolutions",
        "add,rename,drop,spec",
        "--dir",
        str(tmp_path),
    )
    (row,) = _table(done.stdout)
    assert row["writers"] == "4"
    commits, versions = int(row["commits"]), int(row["versions replayed"])
    assert commits > 0, done.stdout
    # a write that gave up (ConcurrentModificationError) is allowed: the replay checked that
    # it is invisible in every version
    assert versions >= commits + int(row["evolutions"]), done.stdout
    assert int(row["reads checked"]) > 0, done.stdout
