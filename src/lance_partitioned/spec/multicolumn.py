"""Published partition fields over several source columns (``source_ids`` of more than one):
``multi_bucket`` (``abs(murmur3_multi(col0, col1, ...)) % N``) and an ``expression`` over
``col0..colN``.

Reads take them as they are: their leaves are listed and read like any other. A predicate on
one of their source columns does not project onto them (a value of one column does not decide
the field's value) and a leaf's value proves nothing about its rows, so the filter runs inside
its leaves; only a conjunction of ``=`` / IN on every source of a ``multi_bucket`` prunes it
(:func:`~lance_partitioned.pruning.projection.project` asks :meth:`MultiColumn.buckets`).
Writes compute them from every source column (:meth:`MultiColumn.apply_columns`, called by
:func:`~lance_partitioned.ingest.partition_values`): a ``multi_bucket`` with
:func:`~lance_partitioned.spec.murmur3.murmur3_multi` (NULL inputs skipped, NULL only if all
are), an expression with DataFusion over ``col0..colN``. A ``multi_bucket`` of another client
whose bytes are not known to be ours (no ``hash_encoding`` marker, a source that encodings
disagree on) is refused with a :class:`~lance_partitioned.errors.TransformError`.

>>> field = MultiColumn("partition_field_m", "abs(murmur3_multi(col0, col1)) % 4", 2, pa.int32())
>>> field.projects_on(pa.int64()), field.preimage(3, pa.int64(), pa.int32()).image
(False, False)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from lance_partitioned.errors import TransformError
from lance_partitioned.expressions import AlwaysTrue
from lance_partitioned.expressions.ranges import Interval, Preimage
from lance_partitioned.expressions.tree import Predicate
from lance_partitioned.spec.evaluate import evaluate_columns
from lance_partitioned.spec.murmur3 import bucket_murmur3, encoding_agnostic, murmur3_multi
from lance_partitioned.spec.transforms import Transform

__all__ = ["MultiColumn", "multi_bucket_expression", "sources_of"]


def sources_of(spec_field: Any) -> tuple[int, ...]:
    """The source field ids of a partition field, ``col0`` first (one for a field of spec 000
    or a published field over one column).

    >>> from lance_partitioned.spec.partitioning import PartitionField
    >>> sources_of(PartitionField(1, "d", 3, "col", pa.int32()))
    (3,)
    """
    transform = getattr(spec_field, "transform", None)
    if isinstance(transform, MultiColumn) and transform.source_ids:
        return transform.source_ids
    return (int(spec_field.source_id),)


def multi_bucket_expression(num_buckets: int, columns: int) -> str:
    """The published text's expression of ``multi_bucket`` over ``columns`` sources.

    >>> multi_bucket_expression(8, 3)
    'abs(murmur3_multi(col0, col1, col2)) % 8'
    """
    names = ", ".join(f"col{i}" for i in range(columns))
    return f"abs(murmur3_multi({names})) % {num_buckets}"


class MultiColumn(Transform):
    """The transform of a published field over several columns: read, scanned, pruned on by
    a ``multi_bucket``'s buckets, and computed on write from every source column.

    Parameters
    ----------
    name : str
        The field's ``__manifest`` column (for messages).
    sql : str
        Its expression over ``col0..colN`` (``multi_bucket``'s derived one, or the field's).
    columns : int
        How many source columns it reads.
    result : pyarrow.DataType
        Its published ``result_type``.
    source_ids : tuple of int
        Its source field ids, ``col0`` first.
    num_buckets : int or None
        ``N`` of a ``multi_bucket`` (None: an expression).
    known_encoding : bool
        Whether a ``multi_bucket``'s writer hashed our bytes (the ``hash_encoding`` marker):
        if not, only sources that every encoding agrees on (strings, binaries) prune.
    """

    def __init__(
        self,
        name: str,
        sql: str,
        columns: int,
        result: pa.DataType,
        *,
        source_ids: tuple[int, ...] = (),
        num_buckets: int | None = None,
        known_encoding: bool = True,
    ) -> None:
        self.name = name
        self.sql = sql
        self.columns = columns
        self.result = result
        self.source_ids = source_ids
        self.num_buckets = num_buckets
        self.known_encoding = known_encoding

    def buckets(
        self, combinations: Sequence[Sequence[Any]], sources: Sequence[pa.DataType]
    ) -> list[int | None] | None:
        """The ``multi_bucket`` of each combination of source values (None: not a
        ``multi_bucket``, or one whose bytes for these types are not known to be ours).

        >>> m = MultiColumn("m", "", 2, pa.int32(), source_ids=(0, 1), num_buckets=4)
        >>> m.buckets([(34, None), (None, None)], [pa.int64(), pa.utf8()])
        [3, None]
        """
        if self.num_buckets is None:
            return None
        if not (self.known_encoding or all(encoding_agnostic(s) for s in sources)):
            return None
        try:
            columns = [
                pa.array([row[i] for row in combinations], source)
                for i, source in enumerate(sources)
            ]
            hashed = bucket_murmur3(murmur3_multi(columns), self.num_buckets)
        except (TransformError, pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
        return list(hashed.to_pylist())

    @property
    def expression(self) -> str:
        return self.sql

    def result_type(self, source: pa.DataType) -> pa.DataType:
        return self.result

    def can_apply(self, source: pa.DataType) -> bool:
        return True  # any source types: the field is never computed here

    def apply_columns(self, columns: Sequence[pa.Array | pa.ChunkedArray]) -> pa.Array:
        """The field's value for every row of its source ``columns`` (``col0`` first).

        Raises
        ------
        TransformError
            A ``multi_bucket`` whose bytes are not known to be ours for these source types,
            a wrong number of columns, or an expression DataFusion cannot evaluate.

        >>> m = MultiColumn("m", "", 2, pa.int32(), source_ids=(0, 1), num_buckets=4)
        >>> m.apply_columns([pa.array([34, None]), pa.array([None, None], pa.utf8())]).to_pylist()
        [3, None]
        """
        if len(columns) != self.columns:
            raise TransformError(
                f"partition field {self.name!r} reads {self.columns} columns, got {len(columns)}"
            )
        if self.num_buckets is None:
            return evaluate_columns(self.sql, columns, self.result)
        if not (self.known_encoding or all(encoding_agnostic(c.type) for c in columns)):
            raise TransformError(
                f"multi_bucket[{self.num_buckets}] field {self.name!r} of another client, whose "
                "murmur3 bytes for "
                f"{', '.join(str(c.type) for c in columns)} are unknown (no hash_encoding "
                "marker): its buckets cannot be computed here (reads scan these leaves; writes "
                "are refused)"
            )
        return bucket_murmur3(murmur3_multi(columns), self.num_buckets)

    def _apply(self, values: pa.Array) -> pa.Array:
        raise TransformError(self._refusal())

    def apply(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        raise TransformError(self._refusal())

    def apply_reference(self, values: pa.Array | pa.ChunkedArray) -> pa.Array:
        raise TransformError(self._refusal())

    def _refusal(self) -> str:
        return (
            f"partition field {self.name!r} is computed from {self.columns} columns "
            f"({self.sql}): its value needs every source column (apply_columns), not one"
        )

    def _parameters(self) -> tuple[Any, ...]:
        return (self.sql, self.columns, self.source_ids, self.known_encoding)

    def projects_on(self, source: pa.DataType) -> bool:
        return False  # one column's value does not decide the field

    def project(
        self, name: str, leaf: Predicate, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        return AlwaysTrue()

    def project_range(
        self, name: str, interval: Interval, source: pa.DataType, result: pa.DataType
    ) -> Predicate:
        return AlwaysTrue()

    def _literal(self, value: Any, source: pa.DataType, result: pa.DataType) -> Any:
        raise TransformError(self._refusal())

    def preimage(self, value: Any, source: pa.DataType, result: pa.DataType) -> Preimage:
        return Preimage()  # a partition value proves nothing about one source column
