"""What pylance 14's ``cleanup_old_versions(versions=[...])`` does, checked before relying on
it, and our prediction of it (dry runs)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from lance_partitioned.maintenance.files import Store
from lance_partitioned.maintenance.versions import (
    expired_versions,
    history,
    predict_removal,
    remove_versions,
    staged_files,
)
from tests.maintenance.helpers import UTC, age, files, now, six_versions, values_at


def test_explicit_versions_go_and_every_other_version_still_reads(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    six_versions(uri)
    expected = {v: values_at(uri, v) for v in range(1, 7)}
    lance.dataset(uri).tags.create("three", 3)
    hist = history(uri, None)
    assert hist is not None
    assert (hist.latest, hist.tagged) == (6, {3})
    listing = Store(uri).files()
    remove = {1, 2, 3, 5}
    predicted = predict_removal(hist, remove - {3}, listing)
    before = files(uri)
    removed = remove_versions(hist, remove)  # the tagged 3 is skipped, not an error
    assert sorted(int(v["version"]) for v in lance.dataset(uri).versions()) == [3, 4, 6]
    for version in (3, 4, 6):
        assert values_at(uri, version) == expected[version]
    gone = set(before) - set(files(uri))
    assert removed == predicted
    assert (removed.count, removed.files) == (3, len(gone))
    assert removed.bytes == sum(before[p] for p in gone)


def test_the_prediction_counts_data_and_deletion_files(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    six_versions(uri)
    hist = history(uri, None)
    assert hist is not None
    before = files(uri)
    assert any(p.startswith("_deletions/") for p in before)
    predicted = predict_removal(hist, {1, 2, 3, 4, 5}, Store(uri).files())
    removed = remove_versions(hist, {1, 2, 3, 4, 5})
    gone = set(before) - set(files(uri))
    assert any(p.startswith("_deletions/") for p in gone)
    assert any(p.startswith("data/") for p in gone)  # the fragments only 1-4 read
    assert values_at(uri, 6) == [10, 11]
    assert removed == predicted


def test_lance_removes_unreferenced_files_older_than_a_week_on_any_cleanup(
    tmp_path: Path,
) -> None:
    """Why staged files are removed before versions: Lance deletes any unreferenced file more
    than 7 days old during a cleanup of other versions; files younger stay for us to judge."""
    uri = str(tmp_path / "t")
    six_versions(uri)
    old, young = (
        lance.fragment.write_fragments(pa.table({"a": [v]}), uri)[0].files[0].path for v in (98, 99)
    )
    age(Path(uri) / "data" / old, days=8)
    hist = history(uri, None)
    assert hist is not None
    cutoff = now()
    assert [f.path for f in staged_files(hist, Store(uri).files(), cutoff)] == sorted(
        [f"data/{old}", f"data/{young}"]
    )
    remove_versions(hist, {1})
    assert not (Path(uri) / "data" / old).exists()
    assert (Path(uri) / "data" / young).exists()


def test_no_dataset_has_no_history(tmp_path: Path) -> None:
    assert history(str(tmp_path / "absent"), None) is None


@pytest.mark.parametrize(
    ("cutoff_day", "tagged", "expired"),
    [
        (1, set(), set()),
        (4, set(), set()),
        (5, set(), {1}),
        (9, {2}, {1, 3}),
        (9, set(), {1, 2, 3}),
    ],
)
def test_versions_expire_when_superseded_before_the_cutoff(
    cutoff_day: int, tagged: set[int], expired: set[int]
) -> None:
    times = {v: dt.datetime(2025, 1, 2 * v, tzinfo=UTC) for v in (1, 2, 3, 4)}
    cutoff = dt.datetime(2025, 1, cutoff_day, tzinfo=UTC)
    assert expired_versions(times, tagged, cutoff) == expired
