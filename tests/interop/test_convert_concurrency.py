"""``convert`` against concurrent writers and crashes (issue 28): a partition created between
its ``rows`` and ``publish`` commits ends up in the new dialect's columns; a crash between
the steps leaves every version readable and the conversion finishes when run again."""

from __future__ import annotations

import threading
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_partitioned as lp
from lance_partitioned import transaction
from lance_partitioned.convert.marker import MARKER
from lance_partitioned.spec.dialects import Dialect
from lance_partitioned.verify import verify
from tests.interop.test_convert import FIRST, SCHEMA, _all_versions, _batch, _dialects, _sorted

pytestmark = pytest.mark.interop

NEW = {"published": "partition_field_s", "spec000": "s"}


def _start(root: Path, dialect: str) -> lp.PartitionedNamespace:
    """Partitioned by ``s`` in ``dialect`` (the other one is converted to), with 8 rows."""
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="s", dialect=dialect)
    ns.write(_batch(0, 8))
    return ns


def _gamma(start: int, count: int, *, alpha: bool = True) -> pa.Table:
    """Rows of a partition ``s = 'gamma'`` that the namespace does not have yet, and (with
    ``alpha``) one of ``s = 'alpha'``."""
    rows = _batch(start, count).to_pylist()
    for row in rows:
        row["s"] = "gamma"
    if alpha:
        rows[0]["s"] = "alpha"
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _check_converted(root: Path, to: str, expected: pa.Table) -> None:
    """Every row read back; every partition row of the ``__manifest`` holds its value in the
    new dialect's column; ``s = 'gamma'`` plans one leaf and reads its rows; verify clean."""
    ns = lp.PartitionedNamespace.open(str(root))
    assert _dialects(root) == {Dialect(to)}
    assert _sorted(ns.to_table()).equals(_sorted(expected))
    manifest = lance.dataset(str(root / "__manifest"))
    assert MARKER not in manifest.metadata
    rows = manifest.to_table().to_pylist()
    leaves = [r for r in rows if r["object_type"] == "table" and "$" in r["object_id"]]
    assert {r[NEW[to]] for r in leaves} == {"alpha", "alps", "beta", "gamma", None}
    gamma = [r for r in leaves if r[NEW[to]] == "gamma"]
    assert len(gamma) == 1
    assert len(ns.plan_scan("s = 'gamma'")) == 1
    got = _sorted(ns.to_table(filter="s = 'gamma'")).to_pylist()
    assert got == [r for r in _sorted(expected).to_pylist() if r["s"] == "gamma"]
    assert not verify(str(root)).problems


@pytest.mark.parametrize(("start", "to"), [("spec000", "published"), ("published", "spec000")])
def test_a_write_between_rows_and_publish_lands_in_the_new_columns(
    tmp_path: Path, start: str, to: str
) -> None:
    ns = _start(tmp_path, start)
    other = lp.PartitionedNamespace.open(str(tmp_path))
    with transaction.pause_at("converted_rows", lambda: other.write(_gamma(8, 4))):
        result = ns.convert(to)
    assert result.dialect == to
    _check_converted(tmp_path, to, pa.concat_tables([_batch(0, 8), _gamma(8, 4)]))


@pytest.mark.parametrize("round_trip", [False, True])
def test_a_write_planned_before_the_conversion_commits_in_between(
    tmp_path: Path, round_trip: bool
) -> None:
    """The writer stages and commits its leaves before the conversion starts, and commits
    its ``__manifest`` rows between ``rows`` and ``publish``: its first attempt conflicts
    with ``rows``, and it plans again with the marker (threads and events, no sleeps). After
    a round trip the new columns exist already (no ``prepare`` commit to conflict with)."""
    ns = _start(tmp_path, "spec000")
    if round_trip:
        ns.convert("published")
        ns.convert("spec000")
    other = lp.PartitionedNamespace.open(str(tmp_path))
    staged, rows_done, written = threading.Event(), threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def hold_writer() -> None:
        staged.set()
        assert rows_done.wait(30)

    def hold_convert() -> None:
        rows_done.set()
        assert written.wait(30)

    def write() -> None:
        try:
            other.write(_gamma(8, 4, alpha=False))  # a new leaf only: no partition row shared
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)
        finally:
            written.set()

    with (
        transaction.pause_at("leaves_committed", hold_writer),
        transaction.pause_at("converted_rows", hold_convert),
    ):
        writer = threading.Thread(target=write)
        writer.start()
        assert staged.wait(30)
        ns.convert("published")
        writer.join(30)
    assert not failures
    expected = pa.concat_tables([_batch(0, 8), _gamma(8, 4, alpha=False)])
    _check_converted(tmp_path, "published", expected)


def test_a_crash_between_the_steps_then_convert_again(tmp_path: Path) -> None:
    ns = _start(tmp_path, "spec000")

    def crash() -> None:
        raise RuntimeError("killed between rows and publish")

    with (
        transaction.pause_at("converted_rows", crash),
        pytest.raises(RuntimeError, match="killed"),
    ):
        ns.convert("published")
    reopened = lp.PartitionedNamespace.open(str(tmp_path))
    assert _dialects(tmp_path) == {Dialect.SPEC000}
    for version, table in _all_versions(tmp_path, reopened.version).items():
        want = _batch(0, 8) if version > FIRST else _batch(0, 0)
        assert table.equals(_sorted(want)), version
    reopened.write(_gamma(8, 4))  # writes go on while the marker is left
    result = reopened.convert("published")
    assert result.dialect == "published"
    _check_converted(tmp_path, "published", pa.concat_tables([_batch(0, 8), _gamma(8, 4)]))


@pytest.mark.parametrize(("start", "to"), [("spec000", "published"), ("published", "spec000")])
def test_a_write_staged_before_and_committed_after_the_conversion(
    tmp_path: Path, start: str, to: str
) -> None:
    """The whole conversion runs while a write waits between its leaf commits and its
    ``__manifest`` commit: it commits on the converted specs, its partition values (computed
    under the old column names) in the new columns."""
    ns = _start(tmp_path, start)
    other = lp.PartitionedNamespace.open(str(tmp_path))
    with transaction.pause_at("leaves_committed", lambda: ns.convert(to)):
        other.write(_gamma(8, 4))
    _check_converted(tmp_path, to, pa.concat_tables([_batch(0, 8), _gamma(8, 4)]))
