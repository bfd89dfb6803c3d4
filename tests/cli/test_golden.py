"""``COLUMNS=80`` output of describe, partitions and stats, kept as golden files.

The namespace is built from fixed data, and the command runs in its parent directory with a
relative URI, so the output holds no absolute path; the commit time is replaced by
``<time>``. To accept a deliberate change of the output, run the tests with
``LANCE_PARTITIONED_UPDATE_GOLDEN=1`` and review the diff of ``tests/cli/golden/``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.cli.helpers import build, cli

GOLDEN = Path(__file__).parent / "golden"
_TIME = re.compile(r"committed \d{4}-\d\d-\d\d \d\d:\d\d:\d\d")


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("golden")
    build(folder / "events")
    return folder


def normalise(text: str) -> str:
    text = _TIME.sub("committed <time>", text)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("describe", ["describe", "events"]),
        ("partitions", ["partitions", "events"]),
        ("stats", ["stats", "events", "--small-fragments", "3"]),
    ],
)
def test_output_at_80_columns(parent: Path, name: str, args: list[str]) -> None:
    result = cli(*args, cwd=parent)
    assert result.code == 0, result.err
    assert "\x1b[" not in result.out  # no colour when stdout is not a terminal
    assert max(len(line) for line in result.out.splitlines()) <= 80
    got = normalise(result.out)
    golden = GOLDEN / f"{name}.txt"
    if os.environ.get("LANCE_PARTITIONED_UPDATE_GOLDEN"):
        golden.write_text(got, encoding="utf-8")
    assert got == golden.read_text(encoding="utf-8")
