"""The check of each leaf's sampled rows against its partition values, batched across leaves.

A leaf's partition values are re-computed from a sample of its rows with the DataFusion
reference path (:func:`~lance_partitioned.spec.evaluate.evaluate`), not the writers' fast
paths, so that a fast path that went wrong is caught too. DataFusion plans each query anew
(about 1.5 ms of CPU time a query on the benchmark machine, whatever the rows: 1.4-1.5 s of
4.7-5.8 for 504 leaves of two fields), so the samples of many leaves are evaluated
together: one query per partition field and source type over the concatenated samples of up
to :data:`BATCH_VALUES` rows, cut back into the leaves. A query that fails (a value the
``result_type`` cannot hold, another client's murmur3 bytes) is run again leaf by leaf, so
that the problem names its leaf, as it always did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_partitioned import errors
from lance_partitioned.manifest import ManifestEntry
from lance_partitioned.spec.evaluate import evaluate
from lance_partitioned.spec.multicolumn import MultiColumn
from lance_partitioned.spec.partitioning import PartitionField
from lance_partitioned.verify.report import Problem

__all__ = ["BATCH_VALUES", "SampleChecks", "Sampled", "check_sampled", "check_values"]

# Sampled rows evaluated by one DataFusion query (the batch's source columns stay in memory
# until it runs: about 8 MB for one 8-byte column)
BATCH_VALUES = 1 << 20


@dataclass(frozen=True)
class Sampled:
    """The sampled source values of one partition field of one leaf, to check.

    ``position`` orders the problems found as the leaves were listed (``field`` is the
    field's position in its spec)."""

    position: int
    field: int
    entry: ManifestEntry
    spec_field: PartitionField
    columns: Sequence[pa.Array]

    @property
    def rows(self) -> int:
        return len(self.columns[0])

    def key(self) -> tuple[Any, ...]:
        """What samples evaluated by one query share: the partition field itself (the
        leaves of one spec share its field objects; a field of another spec, even with the
        same expression, is evaluated on its own) and the source types."""
        return (id(self.spec_field), tuple(column.type for column in self.columns))


class SampleChecks:
    """The samples of the leaves of one ``verify``, checked :data:`BATCH_VALUES` rows at a
    time; ``found[i]`` holds the problems of the ``i``-th leaf listed: those the caller put
    there before adding its samples, then its samples', in its fields' order."""

    def __init__(self, leaves: int) -> None:
        self.found: list[list[Problem]] = [[] for _ in range(leaves)]
        self._pending: list[Sampled] = []
        self._rows = 0

    def add(self, samples: Sequence[Sampled]) -> None:
        """Check ``samples`` (one leaf's), now or with the next ones."""
        self._pending.extend(samples)
        self._rows += sum(s.rows for s in samples)
        if self._rows >= BATCH_VALUES:
            self.flush()

    def flush(self) -> None:
        """Check every sample added and not checked yet."""
        problems = check_sampled(self._pending)
        for sampled, problem in sorted(problems, key=lambda p: (p[0].position, p[0].field)):
            self.found[sampled.position].append(problem)
        self._pending, self._rows = [], 0


def check_sampled(pending: Sequence[Sampled]) -> list[tuple[Sampled, Problem]]:
    """Check every sample of ``pending``: one evaluation per group of equal
    :meth:`Sampled.key`; the problems found, each with the sample it is about."""
    groups: dict[tuple[Any, ...], list[Sampled]] = {}
    for sampled in pending:
        if sampled.rows:
            groups.setdefault(sampled.key(), []).append(sampled)
    found: list[tuple[Sampled, Problem]] = []
    for group in groups.values():
        try:
            computed = _computed(
                group[0].spec_field,
                [
                    pa.concat_arrays([s.columns[i] for s in group])
                    for i in range(len(group[0].columns))
                ],
            )
        except errors.TransformError:  # name the leaf: each on its own
            found.extend(
                (s, problem)
                for s in group
                if (problem := check_values(s.entry, s.spec_field, s.columns))
            )
            continue
        start = 0
        for sampled in group:
            values = computed.slice(start, sampled.rows)
            start += sampled.rows
            problem = _compare(sampled.entry, sampled.spec_field, values)
            if problem is not None:
                found.append((sampled, problem))
    return found


def check_values(
    entry: ManifestEntry,
    spec_field: PartitionField,
    columns: Sequence[pa.ChunkedArray | pa.Array],
) -> Problem | None:
    """Re-apply the partition expression to one leaf's sampled source values (``columns``,
    ``col0`` first: several for a published field over several columns); compare with the
    leaf's partition value."""
    if len(columns[0]) == 0:
        return None
    try:
        computed = _computed(spec_field, columns)
    except errors.TransformError as exc:
        transform = spec_field.transform
        if isinstance(transform, MultiColumn) and not transform.known_encoding:
            return None  # another client's murmur3 bytes: its buckets cannot be computed
        return Problem("partition_value", entry.object_id, str(exc))
    return _compare(entry, spec_field, computed)


def _computed(
    spec_field: PartitionField, columns: Sequence[pa.ChunkedArray | pa.Array]
) -> pa.Array:
    """The partition values of the rows of ``columns`` (the reference path)."""
    transform = spec_field.transform
    if isinstance(transform, MultiColumn):
        return transform.apply_columns(columns)
    return evaluate(spec_field.expression, columns[0], spec_field.result_type)


def _compare(
    entry: ManifestEntry, spec_field: PartitionField, computed: pa.Array
) -> Problem | None:
    """A problem when a value of ``computed`` is not the leaf's partition value."""
    expected = entry.values.get(spec_field.name)
    if _all_equal(computed, expected):
        return None
    wrong = Counter(v for v in computed.to_pylist() if v != expected)
    if not wrong:
        return None
    value, _ = wrong.most_common(1)[0]
    return Problem(
        "partition_value",
        entry.object_id,
        f"{sum(wrong.values())} of {len(computed)} sampled rows give {spec_field.name} = "
        f"{value!r} ({spec_field.expression}), but the leaf's partition value is {expected!r}",
    )


def _all_equal(computed: pa.Array, expected: Any) -> bool:
    """Whether every value of ``computed`` is ``expected`` (NULL for None), vectorized; False
    also when Arrow cannot tell (the caller compares the Python values then)."""
    if expected is None:
        return bool(computed.null_count == len(computed))
    if computed.null_count:
        return False
    try:
        same = pc.all(pc.equal(computed, pa.scalar(expected, computed.type)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
        return False
    return same.as_py() is True
