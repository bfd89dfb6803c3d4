"""Property: a cleanup never removes a file that a retained version or a tag reads.

Random sequences of appends, overwrites, partition overwrites, column additions, partition
spec changes, tags and cleanups (with ``older_than=0``, or with a cutoff between two earlier
steps) run on a real namespace. After each cleanup, every ``__manifest`` version that still
exists reads exactly the rows it read when it was written; the versions the retention keeps
(the latest, the tagged, every version current at or after the cutoff) all exist; and with
``older_than=0`` nothing else is left: no other ``__manifest`` version, no leaf version that
no remaining version pins (but each leaf's latest).

``LP_CLEANUP_PROPERTY=long`` runs 200 examples of up to 14 steps; CI runs a short profile.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

import lance
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp
from lance_partitioned.maintenance.cleanup import cleanup
from lance_partitioned.manifest import MANIFEST_DIR, Manifest
from tests.maintenance.helpers import (
    check_retained,
    leaf_versions,
    manifest_versions,
    now,
    pinned,
    remember,
)
from tests.property.strategies import examples

_LONG = os.environ.get("LP_CLEANUP_PROPERTY") == "long"
SETTINGS = settings(
    max_examples=200 if _LONG else examples(12),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.string()), ("g", pa.int32())])
KEYS = st.lists(st.sampled_from(["a", "b", "c", None]), min_size=1, max_size=3)

STEP = st.one_of(
    st.tuples(st.sampled_from(["append", "overwrite", "overwrite_partitions"]), KEYS),
    st.tuples(st.just("add_column"), st.just([])),
    st.tuples(st.just("respec"), st.just([])),
    st.tuples(st.just("tag"), st.lists(st.integers(0, 50), min_size=1, max_size=1)),
    st.tuples(st.just("cleanup_zero"), st.just([])),
    st.tuples(st.just("cleanup_between"), st.lists(st.integers(0, 50), min_size=1, max_size=1)),
)


@dataclass
class Run:
    root: str
    ns: lp.PartitionedNamespace
    seen: dict[int, list[tuple[Any, ...]]] = field(default_factory=dict)
    moments: list[tuple[dt.datetime, int]] = field(default_factory=list)  # (time, latest)
    next_id: int = 0
    columns: int = 0
    tags: int = 0

    def rows(self, keys: list[str | None]) -> pa.Table:
        ids = list(range(self.next_id, self.next_id + len(keys)))
        self.next_id += len(keys)
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "k": pa.array(keys, pa.string()),
                "g": pa.array([i % 2 for i in ids], pa.int32()),
            }
        )

    def tagged(self) -> set[int]:
        tags = lance.dataset(f"{self.root}/{MANIFEST_DIR}").tags.list()
        return {int(t["version"]) for t in tags.values()}


def _step(run: Run, kind: str, args: list[Any]) -> None:
    ns = run.ns.refresh()
    if kind in ("append", "overwrite", "overwrite_partitions"):
        ns.write(run.rows(args), mode=kind)
    elif kind == "add_column":
        run.columns += 1
        ns.add_columns([pa.field(f"x{run.columns}", pa.int64())])
    elif kind == "respec":
        current = [f.name for f in ns.current_spec.fields]
        ns.update_partition_spec("g" if current == ["k"] else "k")
    elif kind == "tag":
        existing = [v for v in manifest_versions(run.root) if v >= 2]
        run.tags += 1
        version = existing[args[0] % len(existing)]
        lance.dataset(f"{run.root}/{MANIFEST_DIR}").tags.create(f"t{run.tags}", version)
    elif kind == "cleanup_zero":
        _cleanup_zero(run)
    else:
        _cleanup_between(run, run.moments[args[0] % len(run.moments)])
    remember(run.root, run.seen)
    run.moments.append((now(), run.ns.refresh().version))


def _cleanup_zero(run: Run) -> None:
    before = set(manifest_versions(run.root))
    result = cleanup(Manifest(run.root), dt.timedelta(0))
    latest = run.ns.refresh().version
    assert set(manifest_versions(run.root)) == {latest} | (run.tagged() & before)
    assert set(result.removed_manifest_versions) == before - {latest} - run.tagged()
    check_retained(run.root, run.seen)
    for location, versions in pinned(run.root).items():
        existing = leaf_versions(run.root, location)
        assert set(existing) == versions | {max(existing)}, location


def _cleanup_between(run: Run, moment: tuple[dt.datetime, int]) -> None:
    cutoff, current = moment
    before = set(manifest_versions(run.root))
    result = cleanup(Manifest(run.root), dt.timedelta(hours=1), now=cutoff + dt.timedelta(hours=1))
    kept = {v for v in before if v >= current} | (run.tagged() & before)
    assert set(manifest_versions(run.root)) == kept
    assert set(result.kept_manifest_versions) == kept
    check_retained(run.root, run.seen)


@SETTINGS
@given(steps=st.lists(STEP, min_size=1, max_size=14 if _LONG else 7))
def test_cleanup_never_removes_what_a_retained_version_reads(
    steps: list[tuple[str, list[Any]]],
) -> None:
    root = tempfile.mkdtemp(prefix="cleanup-property-")
    try:
        ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="k")
        run = Run(root, ns)
        run.moments.append((now(), ns.version))
        for kind, args in [("append", ["a", "b"]), *steps, ("cleanup_zero", [])]:
            _step(run, kind, args)
    finally:
        shutil.rmtree(root, ignore_errors=True)
