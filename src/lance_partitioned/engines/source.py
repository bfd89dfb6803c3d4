"""What every engine scan shares: one pinned ``__manifest`` snapshot, a base filter, the plan
of one scan (:class:`EngineScan`, with the leaves it opened) and the batches it reads.

>>> import tempfile, pyarrow as pa
>>> import lance_partitioned as lp
>>> from lance_partitioned.engines.nodes import EXACT_TRUE
>>> ns = lp.PartitionedNamespace.create(
...     tempfile.mkdtemp(), schema=pa.schema([("id", pa.int64()), ("country", pa.string())]),
...     partition_by="country")
>>> _ = ns.write(pa.table({"id": [1, 2, 3], "country": ["US", "FR", "US"]}))
>>> from lance_partitioned.manifest import Manifest
>>> manifest = Manifest(ns.uri)
>>> source = Source(manifest, manifest.snapshot(), "country = 'US'")
>>> plan = source.plan("example", EXACT_TRUE, ["id"], limit=None)
>>> [task.partition_values for task in plan.tasks]
[(('country', 'US'),)]
>>> sum(batch.num_rows for batch in source.batches(plan))
2
>>> plan.opened
['v1$...']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import lance
import pyarrow as pa

from lance_partitioned import errors, scan
from lance_partitioned.engines.nodes import Translation
from lance_partitioned.expressions import Predicate, and_
from lance_partitioned.expressions.ranges import NOTHING
from lance_partitioned.pruning.fieldnames import field_terms
from lance_partitioned.scan import ScanTask

if TYPE_CHECKING:
    from lance_partitioned.manifest import Manifest, ManifestSnapshot
    from lance_partitioned.spec.partitioning import PartitionField

__all__ = ["EngineScan", "OnScan", "Source"]


@dataclass(frozen=True)
class _ObservedTask(ScanTask):
    """A task that records its object id in ``opened`` when its leaf is opened."""

    opened: list[str] = field(default_factory=list, compare=False, repr=False)

    def open(self) -> lance.LanceDataset:
        self.opened.append(self.object_id)
        return super().open()


@dataclass(frozen=True)
class EngineScan:
    """One scan an engine asked for, as planned (pass ``on_scan`` to see it).

    Attributes
    ----------
    engine : str
        ``"pyarrow"`` (DuckDB, pyarrow) or ``"polars"``.
    tasks : tuple of ScanTask
        The leaves left after pruning: the only ones a read may open.
    columns : tuple of str
        The columns read from the leaves (the projection, plus what a post-filter needs).
    output : tuple of str
        The columns handed to the engine.
    predicate : Predicate
        The filter planned and pushed into the leaves.
    exact : bool
        False when the engine's filter was not fully translated: it then runs again on the
        batches read (never dropped).
    limit : int or None
        The row limit the engine asked for.
    opened : list of str
        Object ids of the leaves opened so far, in order.
    constants : tuple of (str, pyarrow.Scalar)
        Columns the engine asked for that every leaf of the scan holds one value in, pinned
        by the leaves' partition values (``country`` in a scan of the ``FR`` leaves): not read
        from the leaves (not in ``columns``), the engine fills them in.
    """

    engine: str
    tasks: tuple[ScanTask, ...]
    columns: tuple[str, ...]
    output: tuple[str, ...]
    predicate: Predicate
    exact: bool
    limit: int | None
    opened: list[str] = field(default_factory=list, compare=False)
    constants: tuple[tuple[str, pa.Scalar], ...] = ()


OnScan = Callable[[EngineScan], None]


class Source:
    """A namespace at one ``__manifest`` version, with a base filter, that engines scan.

    Parameters
    ----------
    manifest : Manifest
        The namespace's ``__manifest``.
    snapshot : ManifestSnapshot
        The version every scan reads (later commits are not seen).
    filter : str or Predicate, optional
        Applied to every scan, with the engine's own filter.
    on_scan : callable, optional
        Called with each :class:`EngineScan` before it is read.
    """

    def __init__(
        self,
        manifest: Manifest,
        snapshot: ManifestSnapshot,
        filter: str | Predicate | None = None,
        *,
        on_scan: OnScan | None = None,
    ) -> None:
        self.manifest = manifest
        self.snapshot = snapshot
        self.namespace_schema = snapshot.metadata.schema
        self.schema: pa.Schema = self.namespace_schema.read_schema()
        self._specs = snapshot.metadata.specs
        self._fields = field_terms(self._specs, self.namespace_schema)
        self.base = self.bind(filter)
        self.on_scan = on_scan

    def bind(self, filter: str | Predicate | None) -> Predicate:
        """``filter`` bound to the read schema (partition field names allowed, as in
        :meth:`~lance_partitioned.PartitionedNamespace.plan_scan`)."""
        return scan.bound_filter(filter, self.schema, self._fields)

    def output(self, columns: Sequence[str] | None) -> list[str]:
        """The columns a scan returns (validated)."""
        if columns is not None and not isinstance(columns, (list, tuple)):
            raise errors.InvalidInputError(
                f"columns must be a list of column names, got {type(columns).__name__}"
            )
        return [f.name for f in scan.output_fields(self.namespace_schema, columns)]

    def plan(
        self,
        engine: str,
        translation: Translation,
        columns: Sequence[str] | None,
        limit: int | None,
        *,
        constants: bool = False,
    ) -> EngineScan:
        """Plan one scan: prune with the base filter and the translated engine filter.

        With ``constants``, the columns the partition values pin to one value in every leaf
        left are not read (:attr:`EngineScan.constants`: the engine fills them in).
        """
        if limit is not None and limit < 0:
            raise errors.InvalidInputError(f"a row limit must be >= 0, got {limit}")
        output = self.output(columns)
        if translation.exact:
            needed = set(output)
        elif translation.columns is None:
            needed = set(self.schema.names)
        else:
            needed = set(output) | (translation.columns & set(self.schema.names))
        read = [name for name in self.schema.names if name in needed]
        predicate = and_(self.base, translation.predicate)
        tasks = scan.plan_scan(self.manifest, self.snapshot, predicate, read)
        fixed = self._constants(tasks, read) if constants else {}
        if len(fixed) == len(read):  # Lance reads one column to count rows: keep them
            fixed = {}
        opened: list[str] = []
        observed = tuple(
            _ObservedTask(
                **{f.name: getattr(t, f.name) for f in dataclasses.fields(t)}, opened=opened
            )
            for t in tasks
        )
        plan = EngineScan(
            engine,
            observed,
            tuple(name for name in read if name not in fixed),
            tuple(output),
            predicate,
            translation.exact,
            limit,
            opened,
            tuple(fixed.items()),
        )
        if self.on_scan is not None:
            self.on_scan(plan)
        return plan

    def _constants(self, tasks: Sequence[ScanTask], read: Sequence[str]) -> dict[str, pa.Scalar]:
        """The columns of ``read`` that hold one value in every leaf of ``tasks``, the same
        value in all, as the leaves' partition values pin it (an identity field on the column,
        or any field whose value proves the column's)."""
        if not tasks:
            return {}
        schema = self.namespace_schema
        specs = {spec.version: spec for spec in self._specs}
        candidates = [name for name in read if _exact_type(self.schema.field(name).type)]
        found: dict[str, pa.Scalar] | None = None
        for task in tasks:
            spec = specs.get(task.spec_version)
            values = dict(task.partition_values)
            pinned: dict[str, pa.Scalar] = {}
            for name in candidates if found is None else list(found):
                field_id = schema.field_id(name)
                target = self.schema.field(name).type
                for spec_field in spec.fields if spec is not None else ():
                    if spec_field.source_id != field_id or spec_field.name not in values:
                        continue
                    value = _pinned(spec_field, values[spec_field.name], target)
                    if value is not None:
                        pinned[name] = value
                        break
            if found is not None:
                pinned = {k: v for k, v in pinned.items() if v.equals(found[k])}
            found = pinned
            if not found:
                return {}
        return found or {}

    def batches(self, plan: EngineScan, batch_size: int | None = None) -> Iterator[pa.RecordBatch]:
        """The batches of ``plan``'s leaves in its read columns, its predicate applied.

        With a limit and an exact plan, leaves are read one after the other, each with the
        rows still missing as its Lance limit, so a small limit opens few leaves; otherwise
        leaves are read in parallel (stop iterating to stop reading).
        """
        schema = self.namespace_schema
        columns = list(plan.columns) or self.schema.names[:1]  # Lance needs a column to count
        if plan.limit is None:
            reader = scan.to_batches(plan.tasks, schema, columns, batch_size)
            try:
                yield from (_select(b, plan.columns) for b in reader)
            finally:
                reader.close()
            return
        remaining = plan.limit if plan.exact else None
        for task in plan.tasks:
            if remaining == 0:
                return
            for batch in scan.read_task(task, schema, columns, batch_size, limit=remaining):
                if remaining is not None:
                    remaining -= batch.num_rows
                yield _select(batch, plan.columns)


def _exact_type(type_: pa.DataType) -> bool:
    """Types whose equal values are the same value: a pinned value can stand for the rows'
    (not floats: a partition of 0.0 may hold -0.0)."""
    return bool(
        pa.types.is_integer(type_)
        or pa.types.is_string(type_)
        or pa.types.is_large_string(type_)
        or pa.types.is_boolean(type_)
        or pa.types.is_date(type_)
        or pa.types.is_timestamp(type_)
        or pa.types.is_decimal(type_)
    )


def _pinned(spec_field: PartitionField, value: Any, target: pa.DataType) -> pa.Scalar | None:
    """The one value (a NULL scalar for NULL) the partition value ``value`` of
    ``spec_field`` gives its source column on every row, as ``target``; None if not one."""
    pre = spec_field.transform.preimage(value, target, spec_field.result_type)
    if pre.null is True:
        return pa.scalar(None, target)
    if pre.null is not False or pre.exact is NOTHING:
        return None
    try:
        return pa.scalar(pre.exact, target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return None


def _select(batch: pa.RecordBatch, columns: Sequence[str]) -> pa.RecordBatch:
    return batch if list(batch.schema.names) == list(columns) else batch.select(list(columns))
