"""Imports into and exports out of a partitioned namespace.

:func:`import_` reads a Hive-style tree of Parquet, CSV or JSON files, a Lance dataset, a Delta
table or an Iceberg table (:mod:`lance_partitioned.interop.sources`) and writes it through the
namespace's one write path, resumably; :func:`export` writes a namespace's rows as a Hive
Parquet tree, a Delta table or one Lance dataset. Delta and Iceberg need the ``interop`` extra
(``pip install 'lance-partitioned[interop]'``).
"""

from __future__ import annotations

from lance_partitioned.interop.exporting import ExportProgress, ExportResult, export
from lance_partitioned.interop.importing import ImportProgress, ImportResult, import_
from lance_partitioned.interop.sources import Source, Unit, open_source

__all__ = [
    "ExportProgress",
    "ExportResult",
    "ImportProgress",
    "ImportResult",
    "Source",
    "Unit",
    "export",
    "import_",
    "open_source",
]
