"""``lance-partitioned index URI create|list|stats|drop`` and ``lance-partitioned search``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.cli.helpers import cli

from .helpers import namespace


def test_index_commands_and_search(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    uri = ns.uri
    made = cli("index", uri, "create", "grp", "BTREE", "--json")
    assert made.code == 0, made.err
    assert made.json()["leaves_indexed"] == 3
    made = cli("index", uri, "create", "txt", "INVERTED", "--name", "words")
    assert made.code == 0, made.err
    assert "3 leaves indexed" in made.out
    listed = cli("index", uri, "list", "--json").json()
    assert [d["name"] for d in listed] == ["grp_idx", "words"]
    stats = cli("index", uri, "stats", "grp_idx", "--json").json()
    assert (stats["leaves_indexed"], stats["rows_unindexed"]) == (3, 0)
    query = tmp_path / "q.npy"
    np.save(query, np.zeros(4, np.float32))
    found = cli(
        "search",
        uri,
        "--vector",
        f"@{query}",
        "--k",
        "4",
        "--filter",
        "tenant = 'c'",
        "--columns",
        "id,tenant",
        "--json",
    )
    assert found.code == 0, found.err
    rows = found.json()
    assert len(rows) == 4
    assert {row["tenant"] for row in rows} == {"c"}
    texts = cli("search", uri, "--text", "mango", "--k", "2", "-c", "txt")
    assert texts.code == 0, texts.err
    assert "mango" in texts.out
    assert cli("search", uri).code == 2
    dropped = cli("index", uri, "drop", "words", "--json")
    assert dropped.code == 0, dropped.err
    assert cli("index", uri, "stats", "words").code == 2
