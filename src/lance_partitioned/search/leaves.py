"""A kept leaf opened for a search (:mod:`lance_partitioned.search.query`): its columns
mapped to the namespace's, its residual pushed to Lance or evaluated in memory, and the
winners' rows read from it (from memory once its columns are kept: :mod:`.rows`, conformed
to the output fields once per kept table).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from lance_partitioned.consistency import conform_batch, conform_for_read, leaf_field
from lance_partitioned.expressions import AlwaysTrue, Predicate
from lance_partitioned.manifest import local_path
from lance_partitioned.runtime.leaf_cache import leaf_schema
from lance_partitioned.scan import ScanTask, leaf_filter, post_filter, residual_fields
from lance_partitioned.search import rows
from lance_partitioned.spec.schema import NamespaceSchema

__all__ = ["ORD", "ROWID", "Leaf", "partition_text"]

ROWID = "_rowid"
ORD = "_ord"


def partition_text(task: ScanTask) -> str:
    """The leaf's partition values as ``name=value`` joined by ``/``."""
    return "/".join(f"{name}={value}" for name, value in task.partition_values)


class Leaf:
    """One kept leaf opened for a search: its columns mapped to the namespace's."""

    def __init__(
        self, task: ScanTask, schema: NamespaceSchema, fields: list[pa.Field], rank: int = 0
    ) -> None:
        self.task = task
        self.rank = rank
        self.ds = task.open()
        read = schema.read_schema()
        self.predicate: Predicate = task.residual
        always = isinstance(self.predicate, AlwaysTrue)
        filtered = [] if always else residual_fields(self.predicate, read)
        names = {f.name for f in fields}
        self.fields = fields
        self.needed = pa.schema([*fields, *(f for f in filtered if f.name not in names)])
        self.sources = [leaf_field(leaf_schema(self.ds), f) for f in self.needed]
        by_name = dict(zip(self.needed.names, self.sources, strict=True))
        self.pushdown = (
            None
            if always
            else leaf_filter(self.ds, self.predicate, filtered, [by_name[f.name] for f in filtered])
        )
        self.exact_filter = always or self.pushdown is not None
        self.columns = sorted({s.name for s in self.sources if s is not None})
        # a fixed local version: the leaf cache's dataset object, its vectors kept (.flat)
        self.flat = (
            task.read_version is not None
            and task.read_tag is None
            and task.read_branch is None
            and local_path(task.uri) is not None
        )
        self.partition = partition_text(task)
        self._partitions: dict[int, pa.Array] = {}
        # the kept columns (.rows) conformed to the output fields, and which kept ones
        self._whole: tuple[weakref.ref[rows.Columns], pa.Table] | None = None

    def take(self, keys: pa.Table) -> pa.Table:
        """The rows of ``keys`` (``_distance``, ``_rowid``) read from the leaf, conformed
        (a fixed version's columns read from memory once kept: :mod:`.rows`)."""
        table = keys.select(["_distance", ROWID])
        if self.columns:
            ids = keys.column(ROWID).to_numpy()
            if self.flat:
                taken = rows.taken(self.ds, self.columns, ids)
            else:
                taken = self.ds._take_rows(ids.tolist(), columns=self.columns)
            for name in table.column_names:
                taken = taken.append_column(name, table.column(name))
            table = taken
        return self.conform(table, ["_distance", ROWID])

    def _conformed(self) -> tuple[rows.Columns, pa.Table] | None:
        """The leaf's kept columns (:func:`.rows.kept_columns`) and the same rows in the
        output fields, conformed once per kept table (None: not kept)."""
        kept = rows.kept_columns(self.ds, self.columns) if self.flat and self.columns else None
        if kept is None:
            self._whole = None
            return None
        whole = self._whole
        if whole is not None and whole[0]() is kept:
            return kept, whole[1]
        count = kept.table.num_rows
        arrays = [
            conform_for_read(
                None if source is None else kept.table.column(source.name), source, target, count
            )
            for source, target in zip(self.sources[: len(self.fields)], self.fields, strict=True)
        ]
        table = pa.Table.from_arrays(arrays, schema=pa.schema(self.fields))
        self._whole = (weakref.ref(kept), table)
        return kept, table

    def read(self, row_ids: np.ndarray) -> pa.Table:
        """The output columns of the rows ``row_ids``, conformed, in that order (a leaf
        without an in-memory residual: :attr:`exact_filter`; :mod:`.winners`): one ``take``
        of the kept columns already conformed, once kept (:mod:`.rows`)."""
        whole = self._conformed()
        if whole is not None:
            at = rows.positions(whole[0], np.asarray(row_ids, np.uint64))
            if at is not None:
                return whole[1].take(pa.array(at))  # (an Arrow array: a cheaper take)
        count = len(row_ids)
        if not self.columns:
            taken = None
        elif self.flat:
            taken = rows.taken(self.ds, self.columns, row_ids)
        else:
            taken = self.ds._take_rows(row_ids.tolist(), columns=self.columns)
        arrays = [
            conform_for_read(
                None if taken is None or source is None else taken.column(source.name),
                source,
                target,
                count,
            )
            for source, target in zip(self.sources[: len(self.fields)], self.fields, strict=True)
        ]
        return pa.Table.from_arrays(arrays, schema=pa.schema(self.fields))

    def partitions(self, count: int) -> pa.Array:
        """:attr:`partition` ``count`` times (made once per count)."""
        found = self._partitions.get(count)
        if found is None:
            found = self._partitions[count] = pa.array([self.partition] * count, pa.utf8())
        return found

    def in_memory(self) -> bool:
        """Whether :meth:`take` reads from memory (:func:`.rows.in_memory`)."""
        return not self.columns or (self.flat and rows.in_memory(self.ds, self.columns))

    def conform(self, table: pa.Table, extra: Sequence[str]) -> pa.Table:
        """``table`` (leaf columns plus ``extra``) in the output fields plus ``extra``,
        and ``_ord`` (:attr:`rank`, the leaf's place in object-id order: ``_leaf`` and
        ``_partition`` are added to the merged winners only); rows failing an in-memory
        residual removed."""
        out = []
        for batch in table.to_batches():
            conformed = conform_batch(batch, self.sources, self.needed)
            extras = [batch.column(name) for name in extra]
            whole = pa.RecordBatch.from_arrays(
                [*conformed.columns, *extras], names=[*self.needed.names, *extra]
            )
            if not self.exact_filter:
                whole = post_filter(whole, self.predicate)
            out.append(whole.select([*(f.name for f in self.fields), *extra]))
        schema = pa.schema([*self.fields, *(table.schema.field(name) for name in extra)])
        result = pa.Table.from_batches(out, schema=schema)
        return result.append_column(ORD, pa.repeat(pa.scalar(self.rank, pa.int32()), len(result)))
