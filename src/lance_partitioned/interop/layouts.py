"""The Hive-style layout of the published Lance partition spec (its section 3.2, "spec 001"):
``key=value/`` directories ending in ``key=value.lance`` Lance datasets, the leaf partitions,
which do not store the partition columns.

Each leaf's partition values are parsed from its path (URL-decoded,
``__HIVE_DEFAULT_PARTITION__`` is NULL) and typed as a Hive tree's are (integers ``int64``,
ISO dates ``date32``, else ``string``); a leaf that does store a partition column keeps its own
values. A unit is one fragment of one leaf.

The root's ``lance.partitioning.partition_columns`` (section 3.1: read from the table metadata,
or the schema metadata, of a ``__manifest`` dataset at the root) name each level's function. A
level of another function than ``identity`` (``<col>_bucket``, ``<col>_trunc``,
``<col>_year``/``_month``/``_day``/``_hour``) whose source column the leaves store becomes the
same transform of ours (``bucket(N, col)``, ``truncate(W, col)``, ``year(col)``, …), computed
again from that column on import: its path value is not a column. ``hash`` has no equivalent
(the import needs ``partition_by``). Without the properties, or for a level whose source
column the leaves do not store, the level is an identity column of its path values.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.interop.storage import SourceTree
from lance_partitioned.interop.units import Source, Unit, partition_type, quoted

__all__ = ["is_spec001", "leaf_directories", "root_partition_columns", "spec001_source"]

_NULL = "__HIVE_DEFAULT_PARTITION__"


def is_spec001(root: Path) -> bool:
    """Whether ``root`` holds ``key=value.lance`` leaf datasets under ``key=value`` dirs."""
    return any(_leaves(root))


def _leaves(root: Path) -> Iterator[Path]:
    for folder, dirs, _ in os.walk(root):
        here = Path(folder)
        for name in list(dirs):
            if name.endswith(".lance") and "=" in name:
                dirs.remove(name)
                yield here / name
            elif "=" not in name:
                dirs.remove(name)  # not a partition directory


def leaf_directories(directories: list[str]) -> list[str]:
    """The ``key=value.lance`` leaf datasets among ``directories`` (``/``-separated, relative
    to the root): each under ``key=value`` directories only.

    >>> leaf_directories(["a=1", "a=1/b=2.lance", "a=1/b=2.lance/data", "x", "x/b=3.lance"])
    ['a=1/b=2.lance']
    """
    out = []
    for directory in directories:
        parts = directory.split("/")
        if not (parts[-1].endswith(".lance") and "=" in parts[-1]):
            continue
        if all("=" in p and not p.endswith(".lance") for p in parts[:-1]):
            out.append(directory)
    return sorted(out)


def _keys(relative: str) -> list[tuple[str, str | None]]:
    parts = relative.split("/")
    out: list[tuple[str, str | None]] = []
    for part in (*parts[:-1], parts[-1][: -len(".lance")]):
        key, _, value = part.partition("=")
        out.append((unquote(key), None if value == _NULL else unquote(value)))
    return out


_SUFFIX = {"bucket": "bucket", "truncate": "trunc", "hash": "hash"}
_SUFFIX.update({p: p for p in ("year", "month", "day", "hour")})


def root_partition_columns(
    tree: SourceTree, storage_options: dict[str, str]
) -> list[dict[str, Any]]:
    """The partition column definitions of the root's ``lance.partitioning.*`` properties
    (``[]`` when there are none: no ``__manifest`` dataset at the root, not marked
    ``is_partitioned``, or unreadable JSON)."""
    from lance_partitioned.manifest import open_leaf

    try:
        manifest = open_leaf(tree.uri_of("__manifest"), None, storage_options, action="import")
        properties = {**(manifest.schema.metadata or {}), **manifest.metadata}
    except (errors.LancePartitionedError, OSError, ValueError, RuntimeError):
        return []
    decoded = {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
        for k, v in properties.items()
    }
    if str(decoded.get("lance.partitioning.is_partitioned", "")).lower() != "true":
        return []
    try:
        columns = json.loads(decoded.get("lance.partitioning.partition_columns", "[]"))
    except json.JSONDecodeError:
        return []
    if not isinstance(columns, list):
        return []
    return [c for c in columns if isinstance(c, dict) and isinstance(c.get("name"), str)]


def _function(column: dict[str, Any]) -> tuple[str, int | None]:
    """A definition's function and its parameter (``num_buckets``, ``width``).

    >>> _function({"name": "s", "function": "truncate(3)"})
    ('truncate', 3)
    >>> _function({"name": "t", "function": "bucket", "properties": {"num_buckets": "100"}})
    ('bucket', 100)
    """
    text = str(column.get("function") or "identity").strip().lower()
    match = re.fullmatch(r"([a-z_]+)\s*(?:\(\s*([0-9]+)\s*\))?", text)
    if match is None:
        return text, None
    name, inline = match[1], match[2]
    properties = column.get("properties") or {}
    raw = inline or properties.get("num_buckets" if name == "bucket" else "width")
    try:
        return name, None if raw is None else int(raw)
    except (TypeError, ValueError):
        return name, None


def _translate(
    key: str, columns: list[dict[str, Any]], stored: pa.Schema
) -> tuple[str | None, str | None]:
    """The level ``key`` as a ``partition_by`` part of ours over a stored source column (None:
    an identity level of its path values), or why it has no equivalent."""
    for column in columns:
        function, parameter = _function(column)
        name = column["name"]
        if function == "identity" or key != f"{name}_{_SUFFIX.get(function, function)}":
            continue
        if name not in stored.names:
            return None, None  # the value is only in the path: keep it as it is
        if function in ("year", "month", "day", "hour"):
            return f"{function}({quoted(name)})", None
        if function == "bucket" and parameter:
            return f"bucket({parameter}, {quoted(name)})", None
        if function == "truncate" and parameter:
            return f"truncate({parameter}, {quoted(name)})", None
        return None, (
            f"the spec-001 level {key!r} ({column.get('function')} of {name!r}) has no "
            f"equivalent here: pass partition_by (--partition-by), e.g. '{quoted(name)}'"
        )
    return None, None


def spec001_source(src: Any, storage_options: dict[str, str]) -> Source:
    """A :class:`~lance_partitioned.interop.sources.Source` over a spec-001 layout (a local
    directory or an object-store prefix, listed with ``storage_options``)."""
    from lance_partitioned.manifest import open_leaf

    tree = SourceTree.open(src, storage_options)
    if tree.local:
        root = Path(tree.base)
        leaves = sorted(leaf.relative_to(root).as_posix() for leaf in _leaves(root))
    else:
        leaves = leaf_directories(tree.directories())
    keyed = [(leaf, _keys(leaf)) for leaf in leaves]
    names = [k for k, _ in keyed[0][1]] if keyed else []
    for leaf, keys in keyed:
        if [k for k, _ in keys] != names:
            raise errors.InvalidInputError(
                f"the leaf {tree.uri_of(leaf)!r} is partitioned by {[k for k, _ in keys]}, the "
                f"first leaf by {names}: every leaf of a partitioned table has the same levels"
            )
    datasets = [
        open_leaf(
            tree.uri_of(leaf), storage_options=storage_options, action="open a leaf to import"
        )
        for leaf in leaves
    ]
    if not datasets:
        raise errors.InvalidInputError(f"no key=value.lance leaf dataset under {tree.uri!r}")
    stored = datasets[0].schema
    definitions = root_partition_columns(tree, storage_options)
    parts: list[str] = []
    problems: list[str] = []
    derived: set[str] = set()
    for name in names:
        part, problem = _translate(name, definitions, stored)
        if problem is not None:
            problems.append(problem)
        elif part is not None:
            derived.add(name)
        parts.append(part or quoted(name))
    values = [dict(keys) for _, keys in keyed]
    types = {n: partition_type(n, values, pa.schema([(n, pa.string())])) for n in names}
    missing = [pa.field(n, types[n]) for n in names if n not in stored.names and n not in derived]
    schema = pa.schema([*stored, *missing])
    units: list[Unit] = []
    for (leaf, keys), dataset in zip(keyed, datasets, strict=True):
        constants = {k: v for k, v in keys if k not in stored.names and k not in derived}
        for fragment in sorted(dataset.get_fragments(), key=lambda f: f.fragment_id):
            read = _reader(fragment, constants, types, schema)
            units.append(Unit(f"{leaf}#fragment-{fragment.fragment_id}", read))
    if problems:
        return Source(tree.uri, "spec001", schema, "", units, "; ".join(problems))
    return Source(tree.uri, "spec001", schema, ", ".join(parts), units)


def _reader(
    fragment: Any,
    constants: dict[str, str | None],
    types: dict[str, pa.DataType],
    schema: pa.Schema,
) -> Callable[[], Iterator[pa.RecordBatch]]:
    def read() -> Iterator[pa.RecordBatch]:
        for batch in fragment.to_batches():
            columns = list(batch.columns)
            for name, value in constants.items():
                scalar = pa.scalar(value, pa.string()).cast(types[name])
                columns.append(pa.array([scalar.as_py()] * batch.num_rows, types[name]))
            yield pa.RecordBatch.from_arrays(columns, schema=schema)

    return read
