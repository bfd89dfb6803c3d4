"""What a new user reads first: the README's first screen names the dialect written (spec
000, the draft) and links how it differs; the home page installs and runs a short example;
every public name, the result types included, is importable and in the API reference; the
query guide gives the rule of zoned timestamp literals."""

from __future__ import annotations

import re
from pathlib import Path

import lance_partitioned as lp
from tests.docs.test_docs import fenced_blocks

ROOT = Path(__file__).resolve().parents[2]
FIRST_SCREEN = 30  # lines
DIALECTS = "concepts.md#spec-000-and-the-published-partitioning-spec"


def test_the_readme_first_screen_names_the_dialect_and_links_the_differences() -> None:
    first = " ".join((ROOT / "README.md").read_text().splitlines()[:FIRST_SCREEN])
    assert re.search(r"spec 000\*{0,2}, the draft", first), first
    assert f"(docs/{DIALECTS})" in first


def test_the_home_page_installs_and_runs_a_short_example() -> None:
    home = ROOT / "docs" / "README.md"
    blocks = fenced_blocks(home)
    install, example = blocks[0], blocks[1]
    assert install.language == "bash"
    assert "pip install lance-partitioned" in install.code
    assert example.language == "python"
    assert example.runs  # test_docs runs it
    assert len([line for line in example.code.splitlines() if line.strip()]) <= 5
    assert f"]({DIALECTS})" in " ".join(home.read_text().split())


def test_every_public_name_is_importable_and_in_the_api_reference() -> None:
    api = (ROOT / "docs" / "api.md").read_text()
    documented = set(re.findall(r"^::: [\w.]+\.(\w+)$", api, re.MULTILINE))
    results = {"WriteResult", "DeleteResult", "UpdateResult", "MergeBuilder", "MergeResult"}
    assert results | {"OptimizeResult", "CleanupResult"} <= set(lp.__all__)
    for name in set(lp.__all__) - {"__version__", "errors"}:
        assert getattr(lp, name).__name__ == name
        assert name in documented, name
    from lance_partitioned.dml import DeleteResult, MergeBuilder

    assert (lp.DeleteResult, lp.MergeBuilder) == (DeleteResult, MergeBuilder)


def test_the_query_guide_gives_the_zoned_literal_rule() -> None:
    reading = " ".join((ROOT / "docs" / "reading.md").read_text().split())
    assert "A `TIMESTAMP` literal with an explicit UTC offset" in reading
    assert "means that instant" in reading
    assert "converted to the column's zone" in reading
