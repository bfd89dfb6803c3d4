"""Spec 000's worked examples, verbatim, in one place: Appendix A (the metadata of a namespace
partitioned by ``event_date`` in v1, by ``event_year`` and ``country`` in v2) and Appendix E (a
schema with a deprecated column). ``tests/conftest.py`` builds the Appendix A namespace through
the API (the ``appendix_a_namespace`` fixture, with :func:`build_appendix_a`).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    import lance_partitioned as lp

__all__ = [
    "APPENDIX_A",
    "APPENDIX_A_SCHEMA",
    "APPENDIX_E",
    "APPENDIX_E_SCHEMA",
    "appendix_a_rows",
    "build_appendix_a",
]

# Spec 000, Appendix A, verbatim: the metadata properties, each a JSON value.
APPENDIX_A: dict[str, Any] = json.loads(
    """
{
  "partition_spec_v1": [
    {
      "field_id": 1,
      "name": "event_date",
      "source_id": 1,
      "expression": "col",
      "result_type": { "type": "date32" }
    }
  ],
  "partition_spec_v2": [
    {
      "field_id": 2,
      "name": "event_year",
      "source_id": 1,
      "expression": "date_part('year', col)",
      "result_type": { "type": "int32" }
    },
    {
      "field_id": 3,
      "name": "country",
      "source_id": 2,
      "expression": "col",
      "result_type": { "type": "utf8" }
    }
  ],
  "schema": {
    "fields": [
      {
        "name": "id",
        "nullable": false,
        "type": { "type": "int64" },
        "metadata": { "lance:field_id": "0" }
      },
      {
        "name": "event_date",
        "nullable": true,
        "type": { "type": "date32" },
        "metadata": { "lance:field_id": "1" }
      },
      {
        "name": "country",
        "nullable": true,
        "type": { "type": "utf8" },
        "metadata": { "lance:field_id": "2" }
      }
    ]
  }
}
"""
)

# Spec 000, Appendix E, verbatim: the schema with the deprecated ``legacy_field`` (id 2).
APPENDIX_E: dict[str, Any] = json.loads(
    """
{
  "schema": {
    "fields": [
      {
        "name": "id",
        "nullable": false,
        "type": { "type": "int64" },
        "metadata": { "lance:field_id": "0" }
      },
      {
        "name": "event_date",
        "nullable": true,
        "type": { "type": "date32" },
        "metadata": { "lance:field_id": "1" }
      },
      {
        "name": "legacy_field",
        "nullable": true,
        "type": { "type": "utf8" },
        "metadata": { "lance:field_id": "2", "lance:deprecated": "true" }
      }
    ]
  }
}
"""
)

# The Arrow schema Appendix A's "schema" describes (ids 0-2 are pre-order positions).
APPENDIX_A_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("event_date", pa.date32()),
        pa.field("country", pa.utf8()),
    ]
)
APPENDIX_E_SCHEMA: dict[str, Any] = APPENDIX_E["schema"]


def appendix_a_rows(ids: list[int], dates: list[dt.date], countries: list[str | None]) -> pa.Table:
    """Rows of :data:`APPENDIX_A_SCHEMA`."""
    return pa.table(
        {"id": ids, "event_date": pa.array(dates, pa.date32()), "country": countries},
        schema=APPENDIX_A_SCHEMA,
    )


def build_appendix_a(root: str | Path) -> lp.PartitionedNamespace:
    """The namespace of Appendix A, through the API: created with spec v1 ``event_date``, one
    row written (id 1, 2025-12-10, US), spec v2 ``year(event_date) AS event_year, country``,
    one row written under it (id 2, same values). Its metadata is Appendix A's, ids included.
    (Imported late: the foreign builders use this module and never import the library.)"""
    import lance_partitioned as lp

    ns = lp.PartitionedNamespace.create(
        str(root), schema=APPENDIX_A_SCHEMA, partition_by="event_date"
    )
    ns.write(appendix_a_rows([1], [dt.date(2025, 12, 10)], ["US"]))
    ns.update_partition_spec("year(event_date) AS event_year, country")
    ns.write(appendix_a_rows([2], [dt.date(2025, 12, 10)], ["US"]))
    return ns
