"""The Hive-style layout of the published Lance partition spec (its section 3.2, "spec 001"):
``key=value/`` directories ending in ``key=value.lance`` Lance datasets, the leaf partitions,
which do not store the partition columns.

Each leaf's partition values are parsed from its path (URL-decoded,
``__HIVE_DEFAULT_PARTITION__`` is NULL) and typed as a Hive tree's are (integers ``int64``,
ISO dates ``date32``, else ``string``); a leaf that does store a partition column keeps its own
values. Only identity partition columns can be rebuilt from the path: the partition column
definitions of the root namespace's ``lance.partitioning.*`` properties, which name other
functions, are not read (the path value of a ``bucket`` leaf is not the column's value).
A unit is one fragment of one leaf.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa

from lance_partitioned import errors
from lance_partitioned.interop.storage import SourceTree
from lance_partitioned.interop.units import Source, Unit, partition_type, quoted

__all__ = ["is_spec001", "leaf_directories", "spec001_source"]

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
    values = [dict(keys) for _, keys in keyed]
    types = {n: partition_type(n, values, pa.schema([(n, pa.string())])) for n in names}
    missing = [pa.field(n, types[n]) for n in names if n not in stored.names]
    schema = pa.schema([*stored, *missing])
    units: list[Unit] = []
    for (leaf, keys), dataset in zip(keyed, datasets, strict=True):
        constants = {k: v for k, v in keys if k not in stored.names}
        for fragment in sorted(dataset.get_fragments(), key=lambda f: f.fragment_id):
            read = _reader(fragment, constants, types, schema)
            units.append(Unit(f"{leaf}#fragment-{fragment.fragment_id}", read))
    return Source(tree.uri, "spec001", schema, ", ".join(quoted(n) for n in names), units)


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
