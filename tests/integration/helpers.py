"""Test helpers: read a namespace back leaf by leaf, straight through pylance."""

from __future__ import annotations

import lance
import pyarrow as pa

import lance_partitioned as lp


def read_leaves(ns: lp.PartitionedNamespace) -> pa.Table:
    """Every row of every leaf at its manifest read_version, via lance.dataset only."""
    parts = ns.partitions()
    tables = []
    for location, version in zip(
        parts.column("location").to_pylist(),
        parts.column("read_version").to_pylist(),
        strict=True,
    ):
        tables.append(lance.dataset(f"{ns.uri}/{location}", version=version).to_table())
    if not tables:
        return ns.schema.empty_table()
    return pa.concat_tables(tables, promote_options="permissive")


def sorted_rows(table: pa.Table, by: str = "id") -> list[dict[str, object]]:
    return table.sort_by(by).to_pylist()
