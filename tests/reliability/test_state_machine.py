"""A hypothesis state machine over writes, evolution and reads, against a model of the rows.

The machine appends, overwrites the namespace, overwrites partitions, adds, renames, drops and
promotes columns and changes the partition spec, on a real namespace in a temporary
directory. A plain-Python model keeps the expected rows: each row by column *identity* (so a
rename moves its values), with the spec version and partition key it was written under (so
``overwrite_partitions`` replaces the rows, of every spec version, that fall in the current
spec's partitions it names). Every read
(whole, filtered, counted, or at a remembered ``__manifest`` version) must equal the model.

Partition specs use identity and ``truncate`` on strings, whose keys the model computes
without our code. Promotion is only applied to a column no spec partitions by: after ``g``
(partitioned by identity) is promoted, ``update_partition_spec('g')`` raises
``PartitionSpecError`` (the new field ``g`` is int64, the old one int32), which the model does
not yet describe.

``LP_STATEFUL=long`` runs a long profile (300 examples of up to 50 steps, over 10 minutes on a
shared 2-CPU machine: ``LP_STATEFUL=long pytest tests/reliability/test_state_machine.py
--timeout=0``); CI runs the short one.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    precondition,
    rule,
)

import lance_partitioned as lp
from tests.property.strategies import examples

_LONG = os.environ.get("LP_STATEFUL") == "long"
SETTINGS = settings(
    # the inner loop (scripts/test --fast) runs a tenth, as every property test does
    max_examples=300 if _LONG else examples(40),
    stateful_step_count=50 if _LONG else 30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

KEYS = ["a", "ab", "b", "$x", None]
GROUPS = [0, 1, 2, None]


@dataclass
class Column:
    """A live column of the model: its current name and Arrow type."""

    name: str
    dtype: pa.DataType


@dataclass
class Row:
    values: dict[int, Any]  # column identity -> value
    spec: int  # spec version the row was written under
    key: tuple[Any, ...]  # its partition key under that spec


@dataclass
class Model:
    columns: dict[int, Column]  # identity -> live column, in schema order
    spec_version: int
    spec: tuple[tuple[str, int, str], ...]  # (transform, column identity, field name)
    rows: dict[int, Row] = field(default_factory=dict)  # id -> row

    def key(self, values: dict[int, Any]) -> tuple[Any, ...]:
        out = []
        for transform, ident, _ in self.spec:
            value = values.get(ident)
            if transform == "truncate" and value is not None:
                value = value[:1]
            out.append(value)
        return tuple(out)

    def table(self) -> list[dict[str, Any]]:
        return sorted(
            (
                {col.name: row.values.get(ident) for ident, col in self.columns.items()}
                for row in self.rows.values()
            ),
            key=lambda r: r["id"],
        )

    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.dtype) for c in self.columns.values()])


def _bind(model: Model, spec: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int, str], ...]:
    """The spec's fields with their default names (taken from the columns' current names)."""
    out = []
    for transform, ident in spec:
        name = model.columns[ident].name
        out.append((transform, ident, name if transform == "identity" else f"{name}_trunc"))
    return tuple(out)


def _spec_text(model: Model, spec: tuple[tuple[str, int], ...]) -> str:
    parts = []
    for transform, ident in spec:
        name = model.columns[ident].name
        parts.append(name if transform == "identity" else f"truncate(1, {name})")
    return ", ".join(parts)


SPECS: list[tuple[tuple[str, int], ...]] = [
    (("identity", 1),),
    (("identity", 2),),
    (("identity", 1), ("identity", 2)),
    (("truncate", 1),),
    (("identity", 2), ("truncate", 1)),
]
ID, K, G = 0, 1, 2


class NamespaceMachine(RuleBasedStateMachine):
    versions = Bundle("versions")

    def __init__(self) -> None:
        super().__init__()
        self.root = tempfile.mkdtemp(prefix="lp-state-")
        self.ids = itertools.count(1)
        self.names = itertools.count(1)
        self.ns: lp.PartitionedNamespace
        self.model: Model

    def teardown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------------ setup
    @initialize(target=versions)
    def create(self) -> Any:
        self.model = Model(
            columns={
                ID: Column("id", pa.int64()),
                K: Column("k", pa.string()),
                G: Column("g", pa.int32()),
            },
            spec_version=1,
            spec=(("identity", K, "k"),),
        )
        schema = pa.schema(
            [pa.field("id", pa.int64(), nullable=False), ("k", pa.string()), ("g", pa.int32())]
        )
        self.ns = lp.PartitionedNamespace.create(self.root, schema=schema, partition_by="k")
        return self._remember()

    def _remember(self) -> tuple[int, list[dict[str, Any]]]:
        return self.ns.version, self.model.table()

    # ------------------------------------------------------------------ writes
    def _rows(self, draw: Any, n: int) -> tuple[pa.Table, list[dict[int, Any]]]:
        extra = [i for i in self.model.columns if i not in (ID, K, G)]
        rows: list[dict[int, Any]] = []
        for _ in range(n):
            values: dict[int, Any] = {
                ID: next(self.ids),
                K: draw(st.sampled_from(KEYS)),
                G: draw(st.sampled_from(GROUPS)),
            }
            for ident in extra:
                dtype = self.model.columns[ident].dtype
                if pa.types.is_string(dtype):
                    values[ident] = draw(st.sampled_from(["x", "", None]))
                else:
                    values[ident] = draw(st.sampled_from([0, -(2**31), 2**31 - 1, None]))
            rows.append(values)
        # the columns of the data are in a drawn order; some extra columns are left out
        present = [ID, K, G] + [i for i in extra if draw(st.booleans())]
        order = draw(st.permutations(present))
        columns = {
            self.model.columns[i].name: pa.array(
                [r.get(i) if i in present else None for r in rows], self.model.columns[i].dtype
            )
            for i in order
        }
        for r in rows:
            for i in extra:
                if i not in present:
                    r[i] = None
        return pa.table(columns), rows

    def _add(self, rows: list[dict[int, Any]]) -> None:
        for values in rows:
            self.model.rows[values[ID]] = Row(
                values, self.model.spec_version, self.model.key(values)
            )

    @rule(target=versions, data=st.data(), n=st.integers(0, 5))
    def append(self, data: Any, n: int) -> Any:
        table, rows = self._rows(data.draw, n)
        result = self.ns.write(table)
        assert result.rows_written == n
        self._add(rows)
        return self._remember()

    @rule(target=versions, data=st.data(), n=st.integers(1, 4))
    def overwrite(self, data: Any, n: int) -> Any:
        table, rows = self._rows(data.draw, n)
        self.ns.write(table, mode="overwrite")
        self.model.rows.clear()
        self._add(rows)
        return self._remember()

    @rule(target=versions, data=st.data(), n=st.integers(1, 4))
    def overwrite_partitions(self, data: Any, n: int) -> Any:
        table, rows = self._rows(data.draw, n)
        self.ns.write(table, mode="overwrite_partitions")
        replaced = {self.model.key(values) for values in rows}
        self.model.rows = {
            i: row
            for i, row in self.model.rows.items()
            # rows of every spec version in those partitions go (issue 19; the Appendix E
            # exception never applies: only extra columns, which no spec uses, are dropped)
            if self.model.key(row.values) not in replaced
        }
        self._add(rows)
        return self._remember()

    # ------------------------------------------------------------------ evolution
    def _extra(self) -> list[int]:
        return [i for i in self.model.columns if i not in (ID, K, G)]

    @rule(target=versions, is_string=st.booleans())
    def add_column(self, is_string: bool) -> Any:
        ident = max(self.model.columns) + 1 if self.model.columns else 0
        ident = max(ident, 100 + next(self.names))
        name = f"c{ident}"
        dtype = pa.string() if is_string else pa.int32()
        self.ns.add_columns([pa.field(name, dtype)])
        self.model.columns[ident] = Column(name, dtype)
        return self._remember()

    @rule(target=versions, data=st.data())
    def rename_column(self, data: Any) -> Any:
        ident = data.draw(st.sampled_from([K, G, *self._extra()]))
        new = f"r{next(self.names)}"
        self.ns.rename_column(self.model.columns[ident].name, new)
        self.model.columns[ident].name = new
        return self._remember()

    # Found the loss of the columns after a dropped one on overwrite of an existing leaf
    # (test_hostile_schemas.py::test_a_write_after_dropping_a_column_keeps_the_later_columns).
    @precondition(lambda self: bool(self._extra()))
    @rule(target=versions, data=st.data())
    def drop_column(self, data: Any) -> Any:
        ident = data.draw(st.sampled_from(self._extra()))
        self.ns.drop_columns([self.model.columns[ident].name])
        del self.model.columns[ident]
        for row in self.model.rows.values():
            row.values.pop(ident, None)
        return self._remember()

    def _promotable(self) -> list[int]:
        """The int32 extra columns (no spec partitions by them); see the module docstring."""
        return [i for i in self._extra() if pa.types.is_int32(self.model.columns[i].dtype)]

    @precondition(lambda self: bool(self._promotable()))
    @rule(target=versions, data=st.data())
    def promote_column(self, data: Any) -> Any:
        candidates = self._promotable()
        ident = data.draw(st.sampled_from(candidates))
        self.ns.alter_column_type(self.model.columns[ident].name, pa.int64())
        self.model.columns[ident].dtype = pa.int64()
        return self._remember()

    @rule(target=versions, spec=st.sampled_from(SPECS))
    def change_partition_spec(self, spec: tuple[tuple[str, int], ...]) -> Any:
        self.ns.update_partition_spec(_spec_text(self.model, spec))
        bound = _bind(self.model, spec)  # a field renamed with its column is another field
        if bound != self.model.spec:
            self.model.spec_version += 1
            self.model.spec = bound
        assert self.ns.current_spec.version == self.model.spec_version
        return self._remember()

    # ------------------------------------------------------------------ reads
    def _read(self, ns: lp.PartitionedNamespace, filter: str | None = None) -> list[Any]:
        return sorted(ns.to_table(filter).to_pylist(), key=lambda r: r["id"])

    @invariant()
    def reads_equal_the_model(self) -> None:
        if not hasattr(self, "model"):
            return
        reader = lp.PartitionedNamespace.open(self.root)
        assert reader.schema.names == self.model.schema().names
        assert [f.type for f in reader.schema] == list(self.model.schema().types)
        assert self._read(reader) == self.model.table()

    @rule(data=st.data())
    def filtered_read(self, data: Any) -> None:
        k = self.model.columns[K].name
        g = self.model.columns[G].name
        key = data.draw(st.sampled_from([v for v in KEYS if v is not None]))
        group = data.draw(st.sampled_from([v for v in GROUPS if v is not None]))
        limit = data.draw(st.integers(0, 30))
        cases = {
            f"{k} = '{key}'": lambda r: r[k] == key,
            f"{k} IS NULL": lambda r: r[k] is None,
            f"{k} LIKE 'a%'": lambda r: r[k] is not None and r[k].startswith("a"),
            f"{g} = {group}": lambda r: r[g] == group,
            f"{g} IN (0, 2) OR {k} = '{key}'": lambda r: r[g] in (0, 2) or r[k] == key,
            f"NOT ({g} = {group}) AND id > {limit}": lambda r: (
                r[g] is not None and r[g] != group and r["id"] > limit
            ),
        }
        filter = data.draw(st.sampled_from(sorted(cases)))
        expected = [r for r in self.model.table() if cases[filter](r)]
        assert self._read(self.ns, filter) == expected, filter
        assert self.ns.count_rows(filter) == len(expected), filter

    @rule(remembered=consumes(versions))
    def time_travel(self, remembered: tuple[int, list[dict[str, Any]]]) -> None:
        version, expected = remembered
        old = lp.PartitionedNamespace.open(self.root, version=version)
        assert self._read(old) == expected


NamespaceMachine.TestCase.settings = SETTINGS
test_namespace_state_machine = NamespaceMachine.TestCase
