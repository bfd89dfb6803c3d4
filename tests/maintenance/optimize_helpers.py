"""Namespaces fed by many small appends, and how to read every version of them back."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import lance
import pyarrow as pa

import lance_partitioned as lp

UTC = dt.timezone.utc
COUNTRIES = ["US", "FR", "DE"]
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("ts", pa.timestamp("us", UTC)),
        ("country", pa.string()),
        ("amount", pa.float64()),
    ]
)


def events(start: int, count: int, countries: list[str] | None = None) -> pa.Table:
    """``count`` events with ids from ``start``, spread over ``countries`` and 2025's days."""
    names = countries or COUNTRIES
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": ids,
            "ts": pa.array(
                [dt.datetime(2025, 1, 1, tzinfo=UTC) + dt.timedelta(hours=7 * i) for i in ids],
                pa.timestamp("us", UTC),
            ),
            "country": [names[i % len(names)] for i in ids],
            "amount": [i / 4 for i in ids],
        },
        schema=SCHEMA,
    )


def appended(
    root: Path, appends: int, per_append: int = 12, partition_by: str = "country"
) -> lp.PartitionedNamespace:
    """A namespace after ``appends`` appends of ``per_append`` rows (ids 0, 1, …)."""
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by=partition_by)
    for n in range(appends):
        ns.write(events(n * per_append, per_append))
    return ns


def ids_at(root: str, version: int | None = None) -> list[int]:
    """The sorted ids a reader of ``__manifest`` version ``version`` sees."""
    ns = lp.PartitionedNamespace.open(root, version=version)
    ids: list[int] = ns.to_table(columns=["id"]).column("id").to_pylist()
    return sorted(ids)


def leaf_fragments(ns: lp.PartitionedNamespace) -> dict[str, int]:
    """Fragments of each leaf at its read_version, by object id."""
    sizes = ns.partitions(sizes=True)
    return dict(
        zip(
            sizes.column("object_id").to_pylist(),
            sizes.column("fragments").to_pylist(),
            strict=True,
        )
    )


def read_versions(ns: lp.PartitionedNamespace) -> dict[str, int]:
    parts = ns.partitions()
    return dict(
        zip(
            parts.column("object_id").to_pylist(),
            parts.column("read_version").to_pylist(),
            strict=True,
        )
    )


def latest_leaf_versions(ns: lp.PartitionedNamespace) -> dict[str, int]:
    """The latest Lance version of each leaf on disk (committed or not in the manifest)."""
    parts = ns.partitions()
    return {
        oid: int(lance.dataset(f"{ns.uri}/{location}").latest_version)
        for oid, location in zip(
            parts.column("object_id").to_pylist(),
            parts.column("location").to_pylist(),
            strict=True,
        )
    }


def manifest_fragments(root: str, version: int | None = None) -> int:
    return len(lance.dataset(f"{root}/__manifest", version=version).get_fragments())


def properties(root: str, version: int) -> dict[str, str]:
    """The Lance transaction properties of one ``__manifest`` version."""
    transaction = lance.dataset(f"{root}/__manifest").read_transaction(version)
    return dict(transaction.transaction_properties or {})
