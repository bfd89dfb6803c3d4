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
from lance_partitioned.interop.units import Source, Unit, partition_type, quoted

__all__ = ["is_spec001", "spec001_source"]

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


def _keys(root: Path, leaf: Path) -> list[tuple[str, str | None]]:
    parts = leaf.relative_to(root).parts
    out: list[tuple[str, str | None]] = []
    for part in (*parts[:-1], parts[-1][: -len(".lance")]):
        key, _, value = part.partition("=")
        out.append((unquote(key), None if value == _NULL else unquote(value)))
    return out


def spec001_source(src: Any, storage_options: dict[str, str]) -> Source:
    """A :class:`~lance_partitioned.interop.sources.Source` over a spec-001 layout."""
    from lance_partitioned.manifest import open_leaf

    root = Path(os.path.abspath(os.fspath(src)))
    leaves = sorted(_leaves(root))
    keyed = [(leaf, _keys(root, leaf)) for leaf in leaves]
    names = [k for k, _ in keyed[0][1]] if keyed else []
    for leaf, keys in keyed:
        if [k for k, _ in keys] != names:
            raise errors.InvalidInputError(
                f"the leaf {str(leaf)!r} is partitioned by {[k for k, _ in keys]}, the first "
                f"leaf by {names}: every leaf of a partitioned table has the same levels"
            )
    datasets = [
        open_leaf(str(leaf), storage_options=storage_options, action="open a leaf to import")
        for leaf in leaves
    ]
    if not datasets:
        raise errors.InvalidInputError(f"no key=value.lance leaf dataset under {str(root)!r}")
    stored = datasets[0].schema
    values = [dict(keys) for _, keys in keyed]
    types = {n: partition_type(n, values, pa.schema([(n, pa.string())])) for n in names}
    missing = [pa.field(n, types[n]) for n in names if n not in stored.names]
    schema = pa.schema([*stored, *missing])
    units: list[Unit] = []
    for (leaf, keys), dataset in zip(keyed, datasets, strict=True):
        constants = {k: v for k, v in keys if k not in stored.names}
        relative = str(leaf.relative_to(root))
        for fragment in sorted(dataset.get_fragments(), key=lambda f: f.fragment_id):
            read = _reader(fragment, constants, types, schema)
            units.append(Unit(f"{relative}#fragment-{fragment.fragment_id}", read))
    return Source(str(root), "spec001", schema, ", ".join(quoted(n) for n in names), units)


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
