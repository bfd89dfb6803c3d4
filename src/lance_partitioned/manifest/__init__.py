"""The ``__manifest`` table: its columns, object ids, derived names, snapshots and CAS commits.

This is the only module that reads or writes the ``__manifest`` Lance table. Its layout
(spec 000; ``docs/design.md`` explains it):

- columns ``object_id`` (primary key), ``object_type``, ``location``, ``metadata``,
  ``base_objects`` typed exactly as pylance's ``DirectoryNamespace`` writes them, then
  ``read_version`` (uint64), then one nullable column per partition field name of any spec
  version, typed by its ``result_type``;
- table metadata: ``schema`` and ``partition_spec_v<N>`` as JSON strings (see
  :mod:`lance_partitioned.spec.metadata`), and the writer feature-flag guard that makes
  pylance's own ``DirectoryNamespace`` refuse to rewrite the table;
- one row per spec version namespace (``v1``), per partition namespace (``v1$<name>``, …) and
  per leaf table (``…$dataset``), each with the partition values inherited from its ancestors.

The package is that one module, in five parts: :mod:`~lance_partitioned.manifest.layout` (the
columns, object ids and derived names), :mod:`~lance_partitioned.manifest.properties` (the
rows' ``metadata`` JSON), :mod:`~lance_partitioned.manifest.snapshot` (one version read),
:mod:`~lance_partitioned.manifest.table` (the Lance table and its commits) and
:mod:`~lance_partitioned.manifest.datasets` (:func:`open_leaf`, which opens the Lance tables of
a namespace, leaves and ``__manifest`` alike, with one mapping of Lance's errors).
"""

from lance_partitioned.manifest.datasets import open_leaf
from lance_partitioned.manifest.layout import (
    BASE_COLUMNS,
    DELIMITER,
    GUARD_KEY,
    GUARD_VALUE,
    LEAF_NAME,
    MANIFEST_DIR,
    NAMESPACE,
    READ_VERSION,
    TABLE,
    leaf_location,
    leaf_object_id,
    local_path,
    manifest_schema,
    partition_name,
    row_read_version,
    rows_table,
    spec_namespace_id,
    token_name,
    value_tokens,
)
from lance_partitioned.manifest.properties import (
    LeafStats,
    WriterTransactions,
    properties_error,
    row_properties,
    schema_fingerprint,
)
from lance_partitioned.manifest.snapshot import (
    CommitConflict,
    ManifestEntry,
    ManifestSnapshot,
    RawManifest,
)
from lance_partitioned.manifest.table import Manifest

__all__ = [
    "BASE_COLUMNS",
    "DELIMITER",
    "GUARD_KEY",
    "GUARD_VALUE",
    "LEAF_NAME",
    "MANIFEST_DIR",
    "NAMESPACE",
    "READ_VERSION",
    "TABLE",
    "CommitConflict",
    "LeafStats",
    "Manifest",
    "ManifestEntry",
    "ManifestSnapshot",
    "RawManifest",
    "WriterTransactions",
    "leaf_location",
    "leaf_object_id",
    "local_path",
    "manifest_schema",
    "open_leaf",
    "partition_name",
    "properties_error",
    "row_properties",
    "row_read_version",
    "rows_table",
    "schema_fingerprint",
    "spec_namespace_id",
    "token_name",
    "value_tokens",
]
