"""The options of the ``lance_partitioned`` PySpark data source, parsed and checked.

>>> opts = SourceOptions.parse({"path": "/data/events", "version": "3", "storage.region": "eu"})
>>> opts.uri, opts.version, opts.storage_options
('/data/events', 3, (('region', 'eu'),))

Options (case-insensitive names, snake_case like lance-spark; any other name is refused):

============================  =====  ==========================================================
``partition_by``              write  the spec of a new namespace (``"event_date, bucket(16,
                                     user_id)"``; ``""``: unpartitioned); on an existing one,
                                     must equal its current spec. (Spark's ``.partitionBy``
                                     is not supported by Python data sources: use this.)
``overwrite``                 write  ``"partitions"`` with ``.mode("overwrite")``: replace only
                                     the partitions present in the DataFrame
``partitionOverwriteMode``    write  ``"dynamic"`` (= ``overwrite=partitions``) or ``"static"``
                                     (replace everything), as Spark's file sources; wins over
                                     the session's ``spark.sql.sources.partitionOverwriteMode``
``replace_where``             write  a SQL predicate, with ``.mode("overwrite")``: atomically
                                     replace the rows matching it by the DataFrame, every row
                                     of which must satisfy it (replace-where)
``max_rows_per_file``         write  rows per Lance data file
``txnAppId``, ``txnVersion``  write  idempotent writes (Delta's names): a write whose (app id,
                                     version) is already committed does nothing
``version``, ``versionAsOf``  read   the ``__manifest`` version to read (time travel)
``timestampAsOf``             read   read the latest ``__manifest`` version committed at or
                                     before this time (ISO 8601; no zone: UTC)
``filter``                    read   a SQL filter over the namespace columns, applied when the
                                     DataFrame is loaded: every query on it sees only these
                                     rows, and leaves that cannot match are never read
``columns``                   read   the columns to read (``"id, amount"``), in that order
``batch_size``                read   rows per Arrow batch handed to Spark (default 65,536;
                                     small leaves' batches are merged up to it)
``max_partition_bytes``       read   target bytes per Spark partition (default 128 MiB, as
                                     ``spark.sql.files.maxPartitionBytes``); accepts ``"64m"``
``min_partitions``            read   split the scan into at least this many Spark partitions
                                     when it is big enough (default: the driver's CPU count)
``checkpointLocation``        write  Spark's own, for a streaming query (the sink commits each
                                     micro-batch once, recording (query id, batch id))
``startingVersion``           stream where a ``readStream`` starts: a ``__manifest`` version
                                     (its changes and later ones) or ``"latest"``
``startingTimestamp``         stream the changes of versions committed at or after this time
``skipChangeCommits``         stream ``"true"``: skip versions that changed or removed rows
                                     instead of failing the query
``maxVersionsPerTrigger``     stream ``__manifest`` versions per micro-batch (at most)
``storage.<key>``             both   passed to Lance as storage option ``<key>`` (Spark lower-
                                     cases option names, so ``<key>`` arrives in lower case)
============================  =====  ==========================================================

>>> SourceOptions.parse({"path": "/x", "versionAsOf": "2"}).version
2
>>> SourceOptions.parse({"path": "/x", "timestampAsOf": "2025-01-02 03:04:05"}).version
datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
>>> SourceOptions.parse({"path": "/x", "partition": "day"})
Traceback (most recent call last):
...
lance_partitioned.errors.InvalidInputError: unknown option 'partition' ...
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from lance_partitioned import errors

__all__ = ["OPTIONS", "STREAM_OPTIONS", "SourceOptions", "parse_bytes"]

DEFAULT_MAX_PARTITION_BYTES = 128 << 20
_STORAGE_PREFIX = "storage."
_BYTES = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}


def parse_bytes(text: str, option: str) -> int:
    """A byte size as Spark writes them: ``134217728``, ``"128m"``, ``"128MB"``, ``"1g"``.

    >>> parse_bytes("134217728b", "x"), parse_bytes("64m", "x"), parse_bytes("1 GiB", "x")
    (134217728, 67108864, 1073741824)
    """
    match = _BYTES.match(str(text))
    if match is None or int(match.group(1)) <= 0:
        raise errors.InvalidInputError(
            f"option {option}={text!r} is not a positive byte size (like 134217728 or '128m')"
        )
    return int(match.group(1)) << _UNITS[match.group(2).lower()]


def _positive_int(options: Mapping[str, str], name: str, minimum: int = 1) -> int | None:
    raw = options.get(name)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise errors.InvalidInputError(
            f"option {_DISPLAY.get(name, name)}={raw!r} must be an integer >= {minimum}"
        )
    return value


#: The options only a streaming read takes (lower case, as Spark hands them).
STREAM_OPTIONS = (
    "startingversion",
    "startingtimestamp",
    "skipchangecommits",
    "maxversionspertrigger",
)

#: Every option name the source accepts (lower case, as Spark hands them), besides
#: ``storage.<key>``.
OPTIONS = (
    "path",
    "partition_by",
    "overwrite",
    "partitionoverwritemode",
    "max_rows_per_file",
    "replace_where",
    "txnappid",
    "txnversion",
    "version",
    "versionasof",
    "timestampasof",
    "filter",
    "columns",
    "batch_size",
    "max_partition_bytes",
    "min_partitions",
    "checkpointlocation",
    "mergeschema",
    *STREAM_OPTIONS,
)
_DISPLAY = {
    "partitionoverwritemode": "partitionOverwriteMode",
    "versionasof": "versionAsOf",
    "timestampasof": "timestampAsOf",
    "txnappid": "txnAppId",
    "txnversion": "txnVersion",
    "checkpointlocation": "checkpointLocation",
    "mergeschema": "mergeSchema",
    "startingversion": "startingVersion",
    "startingtimestamp": "startingTimestamp",
    "skipchangecommits": "skipChangeCommits",
    "maxversionspertrigger": "maxVersionsPerTrigger",
}
_CATALOG_HELP = (
    "a lance_partitioned namespace is read with spark.read.format('lance_partitioned')"
    ".load(uri) (or a temporary view: CREATE TEMPORARY VIEW v USING lance_partitioned "
    "OPTIONS (path 'uri')) and written with df.write.format('lance_partitioned')"
    ".mode('append').save(uri); catalog tables (CREATE TABLE ... USING lance_partitioned, "
    "saveAsTable, INSERT INTO, writeTo) are not supported: PySpark does not pass their "
    "location to Python data sources"
)


def _check_names(lowered: Mapping[str, object]) -> None:
    unknown = sorted(k for k in lowered if k not in OPTIONS and not k.startswith(_STORAGE_PREFIX))
    if unknown:
        names = ", ".join(_DISPLAY.get(k, k) for k in OPTIONS)
        raise errors.InvalidInputError(
            f"unknown option {unknown[0]!r} (option names are case-insensitive): the "
            f"lance_partitioned source supports {names} and storage.<key> (Lance storage "
            "options)"
        )


def _overwrite_mode(lowered: Mapping[str, object]) -> str | None:
    raw = lowered.get("partitionoverwritemode")
    if raw is None:
        return None
    mode = str(raw).strip().lower()
    if mode not in ("static", "dynamic"):
        raise errors.InvalidInputError(
            f"option partitionOverwriteMode={raw!r} must be 'static' (overwrite replaces the "
            "whole namespace) or 'dynamic' (only the partitions the DataFrame holds)"
        )
    return mode


def _version(lowered: Mapping[str, str]) -> int | dt.datetime | None:
    version = _positive_int(lowered, "version")
    alias = _positive_int(lowered, "versionasof")
    if version is not None and alias is not None and version != alias:
        raise errors.InvalidInputError(
            f"options version={version} and versionAsOf={alias} disagree: pass one of them"
        )
    number = version if version is not None else alias
    raw = lowered.get("timestampasof")
    if raw is None:
        return number
    if number is not None:
        raise errors.InvalidInputError(
            "options timestampAsOf and version/versionAsOf both name a version: pass one"
        )
    try:
        when = dt.datetime.fromisoformat(str(raw).strip())
    except ValueError:
        raise errors.InvalidInputError(
            f"option timestampAsOf={raw!r} is not a time: give an ISO 8601 timestamp such as "
            "'2025-01-31 23:00:00' (UTC) or '2025-01-31T23:00:00+01:00'"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)


def _txn(lowered: Mapping[str, str]) -> tuple[str, int] | None:
    app_id = lowered.get("txnappid")
    version = _positive_int(lowered, "txnversion", minimum=0)
    if app_id is None and version is None:
        return None
    if app_id is None or not str(app_id).strip() or version is None:
        raise errors.InvalidInputError(
            "options txnAppId and txnVersion go together: an application id and the "
            "version (an integer >= 0, e.g. the batch id) of this write"
        )
    return str(app_id).strip(), version


def _replace_where(lowered: Mapping[str, str]) -> str | None:
    raw = lowered.get("replace_where")
    if raw is None:
        return None
    if not str(raw).strip():
        raise errors.InvalidInputError(
            "option replace_where is empty: give the SQL predicate of the rows to replace "
            "(replace_where='true' replaces every row)"
        )
    return str(raw)


def _columns(lowered: Mapping[str, str]) -> tuple[str, ...] | None:
    raw = lowered.get("columns")
    if raw is None:
        return None
    columns = tuple(name.strip() for name in str(raw).split(",") if name.strip())
    if not columns:
        raise errors.InvalidInputError(
            f"option columns={raw!r} names no column: give a comma-separated list like "
            "'id, amount', or leave it out to read every column"
        )
    return columns


def _merge_schema(lowered: Mapping[str, object]) -> bool:
    raw = str(lowered.get("mergeschema", "false")).strip().lower()
    if raw not in ("true", "false"):
        raise errors.InvalidInputError(f"option mergeSchema={raw!r} must be 'true' or 'false'")
    return raw == "true"


@dataclass(frozen=True)
class SourceOptions:
    """The data source options, parsed and checked (see the module docstring)."""

    uri: str
    storage_options: tuple[tuple[str, str], ...] = ()
    partition_by: str | None = None
    overwrite: str | None = None
    partition_overwrite_mode: str | None = None
    version: int | dt.datetime | None = None  # a datetime: timestampAsOf
    filter: str | None = None
    columns: tuple[str, ...] | None = None
    batch_size: int | None = None
    max_rows_per_file: int | None = None
    max_partition_bytes: int = DEFAULT_MAX_PARTITION_BYTES
    min_partitions: int | None = None
    txn: tuple[str, int] | None = None
    replace_where: str | None = None
    merge_schema: bool = False  # mergeSchema: a write adds the DataFrame's new columns

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Parse Spark's option map (keys are compared in lower case)."""
        lowered = {str(k).lower(): v for k, v in options.items()}
        _check_names(lowered)
        uri = lowered.get("path")
        if not uri:
            raise errors.InvalidInputError(
                "no namespace URI: pass it to .load(uri) / .save(uri) or as option 'path'. "
                + _CATALOG_HELP
            )
        overwrite = lowered.get("overwrite")
        if overwrite is not None:
            overwrite = str(overwrite).strip().lower()
            if overwrite != "partitions":
                raise errors.InvalidInputError(
                    f"option overwrite={overwrite!r} is not supported: use 'partitions' (with "
                    ".mode('overwrite')) to replace only the partitions present in the "
                    "DataFrame, or leave it out to replace everything"
                )
        storage = tuple(
            sorted(
                (key[len(_STORAGE_PREFIX) :], str(value))
                for key, value in lowered.items()
                if key.startswith(_STORAGE_PREFIX)
            )
        )
        max_bytes = lowered.get("max_partition_bytes")
        filter_text = lowered.get("filter")
        if filter_text is not None and not str(filter_text).strip():
            filter_text = None
        return cls(
            uri=str(uri),
            storage_options=storage,
            partition_by=lowered.get("partition_by"),
            overwrite=overwrite,
            partition_overwrite_mode=_overwrite_mode(lowered),
            version=_version(lowered),
            filter=None if filter_text is None else str(filter_text),
            columns=_columns(lowered),
            batch_size=_positive_int(lowered, "batch_size"),
            max_rows_per_file=_positive_int(lowered, "max_rows_per_file"),
            max_partition_bytes=(
                DEFAULT_MAX_PARTITION_BYTES
                if max_bytes is None
                else parse_bytes(max_bytes, "max_partition_bytes")
            ),
            min_partitions=_positive_int(lowered, "min_partitions"),
            txn=_txn(lowered),
            replace_where=_replace_where(lowered),
            merge_schema=_merge_schema(lowered),
        )

    def default_min_partitions(self) -> int:
        """``min_partitions``, or the CPU count of this (driver) machine."""
        return self.min_partitions or os.cpu_count() or 1
