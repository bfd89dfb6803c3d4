"""optimize racing appends and overwrites run by other processes on the same namespace: no
row is lost or duplicated, and a compaction of a leaf version that is no longer current is
never published. The other writer runs at a precise step of the optimize (``pause_at`` in the
optimizing process, which waits for it), or freely alongside repeated optimizes."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import pytest

import lance_partitioned as lp
from lance_partitioned import transaction
from lance_partitioned.manifest import CommitConflict
from lance_partitioned.manifest.table import Manifest
from tests.maintenance.optimize_helpers import (
    appended,
    events,
    ids_at,
    leaf_fragments,
    read_versions,
)

_CTX = mp.get_context("spawn")


def _append(root: str, start: int, count: int, countries: list[str] | None = None) -> None:
    lp.PartitionedNamespace.open(root).write(events(start, count, countries))


def _overwrite(root: str, start: int, count: int, countries: list[str]) -> None:
    lp.PartitionedNamespace.open(root).write(
        events(start, count, countries), mode="overwrite_partitions"
    )


def _appender(root: str, first: int, rounds: int, per_round: int) -> None:
    ns = lp.PartitionedNamespace.open(root)
    for r in range(rounds):
        ns.write(events(first + r * per_round, per_round))


def _run(target: Any, *args: Any) -> None:
    """Run ``target(*args)`` in another process and wait for it."""
    process = _CTX.Process(target=target, args=args)
    process.start()
    process.join(timeout=300)
    assert process.exitcode == 0


def test_an_append_between_the_leaf_commits_and_the_manifest_commit(tmp_path: Path) -> None:
    ns = appended(tmp_path / "ns", 5)
    with transaction.pause_at("leaves_committed", lambda: _run(_append, ns.uri, 100, 6)):
        result = ns.optimize(compact_manifest=False)
    # the manifest commit lost to the append, which moved every leaf: the compactions were
    # rebased over it (WriteSerializable, as Delta's optimize): each leaf holds its compacted
    # fragment and the one appended meanwhile, which the next optimize compacts
    assert result.attempts == 2
    assert ids_at(ns.uri) == [*range(60), *range(100, 106)]
    assert set(leaf_fragments(ns).values()) == {2}
    assert result.leaves_compacted == 3
    assert result.fragments_before == 15  # the 5 appends per leaf it compacted
    ns.refresh().optimize(compact_manifest=False)
    assert set(leaf_fragments(ns).values()) == {1}
    assert ids_at(ns.uri) == [*range(60), *range(100, 106)]


def test_an_overwrite_between_the_leaf_commits_and_the_manifest_commit(tmp_path: Path) -> None:
    ns = appended(tmp_path / "ns", 5)
    before = read_versions(ns)
    us = next(t.object_id for t in ns.plan_scan("country = 'US'"))
    seen: list[str] = []

    def overwrite() -> None:
        _run(_overwrite, ns.uri, 100, 4, ["US"])

    with transaction.pause_at("leaves_committed", overwrite):
        result = ns.optimize(compact_manifest=False, progress=lambda p: seen.append(p.object_id))
    assert result.attempts == 2
    # only the leaf that moved was planned again; the others' compactions were reused
    assert sorted(seen) == sorted([*before, us])
    us_ids = [i for i in range(60) if i % 3 == 0]
    assert ids_at(ns.uri) == sorted({*range(60)} - set(us_ids) | set(range(100, 104)))
    # the overwritten leaf has one fragment: nothing to compact, its overwrite stays published
    (us_leaf,) = [leaf for leaf in result.leaves if leaf.object_id == us]
    assert not us_leaf.compacted
    assert result.leaves_compacted == 2
    assert read_versions(ns)[us] == us_leaf.read_version != before[us]
    assert set(leaf_fragments(ns).values()) == {1}


def test_an_append_just_before_a_leaf_commit(tmp_path: Path) -> None:
    ns = appended(tmp_path / "ns", 5)
    with transaction.pause_at("leaf_commit", lambda: _run(_append, ns.uri, 100, 6)):
        result = ns.optimize(compact_manifest=False)
    assert result.attempts >= 2
    assert ids_at(ns.uri) == [*range(60), *range(100, 106)]
    # rebased over the append (WriteSerializable): its fragment stays until the next optimize
    assert set(leaf_fragments(ns).values()) <= {1, 2}
    ns.refresh().optimize(compact_manifest=False)
    assert set(leaf_fragments(ns).values()) == {1}
    assert ids_at(ns.uri) == [*range(60), *range(100, 106)]


def test_a_commit_during_the_manifest_compaction_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = appended(tmp_path / "ns", 3)
    for n in range(6):
        ns.write(events(1000 + n, 1, countries=[f"C{n}"]))
    real = Manifest.compact
    outcomes: list[str] = []

    def compact(self: Manifest, **kwargs: Any) -> Any:
        hook = None if outcomes else (lambda: _run(_append, ns.uri, 100, 3, ["C0"]))
        try:
            done = real(self, **kwargs, before_commit=hook)
        except CommitConflict:
            outcomes.append("conflict")
            raise
        outcomes.append("committed")
        return done

    monkeypatch.setattr(Manifest, "compact", compact)
    ns.optimize()
    assert outcomes[-1] == "committed"
    assert ids_at(ns.uri) == sorted([*range(36), *range(1000, 1006), *range(100, 103)])
    assert ns.refresh().count_rows("country = 'C0'") == 4


@pytest.mark.slow
def test_optimizes_racing_free_running_writers(tmp_path: Path) -> None:
    ns = appended(tmp_path / "ns", 2)
    for n in range(3):  # a JP leaf of 3 fragments, which the overwriter replaces
        ns.write(events(3000 + n, 1, countries=["JP"]))
    writers = [
        _CTX.Process(target=_appender, args=(ns.uri, 1000 * (w + 1), 6, 9)) for w in range(2)
    ]
    overwriter = _CTX.Process(target=_overwrite, args=(ns.uri, 5000, 3, ["JP"]))
    for process in [*writers, overwriter]:
        process.start()
    optimizes = 0
    while any(p.is_alive() for p in writers) or optimizes < 2:
        ns.refresh().optimize()
        optimizes += 1
    for process in [*writers, overwriter]:
        process.join(timeout=300)
        assert process.exitcode == 0
    expected = sorted([*range(24), *range(1000, 1054), *range(2000, 2054), *range(5000, 5003)])
    assert ids_at(ns.uri) == expected  # nothing lost, nothing twice
    ns.refresh().optimize()
    assert set(leaf_fragments(ns).values()) == {1}
    assert ids_at(ns.uri) == expected
