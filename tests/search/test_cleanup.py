"""``cleanup`` removes the index files no kept leaf version references: those of an index
replaced (Lance's version cleanup) and those of a build never committed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np

from .helpers import DIM, namespace


def _index_files(location: Path) -> dict[str, list[str]]:
    return {
        d.name: sorted(f.name for f in d.iterdir())
        for d in sorted((location / "_indices").iterdir())
        if any(d.iterdir())
    }


def test_cleanup_removes_replaced_and_uncommitted_index_files(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    ns.create_index("grp", "BTREE")
    ns.create_index("grp", "BTREE", replace=True)
    [task] = ns.plan_scan("tenant = 'a'")
    ds = task.open()
    [current] = [str(s.uuid) for s in ds.describe_indices()[0].segments]
    fragments = [fragment.fragment_id for fragment in ds.get_fragments()]
    stray = ds.create_index_uncommitted("id", "BTREE", name="stray", fragment_ids=fragments)
    location = Path(ds.uri.removeprefix("file://"))
    before = _index_files(location)
    assert len(before) == 3
    assert {current, str(stray.uuid)} <= set(before)

    ns.cleanup(dt.timedelta(days=1))  # younger than the retention: everything stays
    assert _index_files(location) == before
    preview = ns.cleanup(dt.timedelta(0), dry_run=True)
    assert preview.staged_files.files == len(before[str(stray.uuid)])
    ns.cleanup(dt.timedelta(0))
    assert list(_index_files(location)) == [current]
    ns = ns.refresh()
    assert ns.index_stats("grp_idx").leaves_indexed == 3
    got = ns.search(np.zeros(DIM), k=3, filter="grp = 2 AND tenant = 'a'", columns=["grp"])
    assert got.column("grp").to_pylist() == [2, 2, 2]
