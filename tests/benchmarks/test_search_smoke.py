"""Smoke test of ``benchmarks/search.py``: it runs end to end and prints its tables, our flat
search (every leaf under 10,000 rows) at recall 1.0."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.benchmarks.helpers import load, run


@pytest.mark.slow
def test_search_benchmark_runs_and_prints_its_tables() -> None:
    done = run("search.py", "--rows", "3000", "--dim", "16", "--tenants", "6", "--queries", "3")
    lines = done.stdout.splitlines()
    assert "| query | system | recall@10 | QPS (1 thread) | QPS (2 threads) |" in lines
    ours = [line for line in lines if "| ours | 1.000 |" in line]
    assert len(ours) == 4, done.stdout
    assert any(line.startswith("| FTS global | ours |") for line in lines), done.stdout


def test_search_benchmark_btree_demo_prints_the_user_id_table(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    search = load("search")
    monkeypatch.setattr(
        sys, "argv", ["search.py", "--btree-demo", "--rows", "2000", "--repeats", "1"]
    )
    search.main()
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("| query |"))
    assert header.startswith("| query | no index (ms) | BTREE on user_id (ms) | speed-up |")
    assert "floor: pylance alone, BTREE (ms)" in header, out
    assert any(line.startswith('| `ns.count_rows("user_id = 4242")` |') for line in lines), out
    assert any(line.startswith('| `ns.to_table(filter="user_id = 4242")` |') for line in lines)
    assert "23 of 23 leaves scanned (no pruning)" in out, out


def test_search_benchmark_runs_the_cases_asked_with_recall_over_more_queries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--cases`` runs only those vector queries; ``--recall-queries`` measures recall@10 on
    more queries than the QPS runs; ``--rounds``: QPS the median of that many runs."""
    search = load("search")
    argv = ["search.py", "--rows", "2000", "--dim", "16", "--tenants", "4", "--queries", "2"]
    argv += ["--root", str(tmp_path), "--cases", "largest", "--recall-queries", "5"]
    monkeypatch.setattr(sys, "argv", [*argv, "--rounds", "2"])
    search.main()
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| tenant ")]
    assert rows, out
    assert all(line.startswith("| tenant largest (") for line in rows), out
    assert "| ours | 1.000 |" in rows[0], out
    assert not any(line.startswith("| global |") for line in out.splitlines()), out
    assert "2 queries (recall over 5)" in out, out
    assert "the median of 2 runs" in out, out
