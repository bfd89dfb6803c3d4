"""Staging a leaf's fragments without asking the leaf anything first (issue 31).

``lance.fragment.write_fragments`` first looks for a dataset at the leaf's URI (on S3 a
``LIST`` of ``_versions/``, and for an existing leaf a ``GET`` of its manifest too), only to
learn the file format version and, in mode ``create``, to refuse an existing table. The
fragments a write stages never depend on what is in the leaf directory (they carry the field
ids of a new leaf in the leaf schema, which the leaf commit maps to the ids of the version it
commits on), so :func:`stage_fragment` writes the one data file with
:class:`lance.file.LanceFileWriter` (one ``PUT``) and describes it like ``write_fragments``
would: the field ids and column indices of a new dataset of that schema, computed once per
schema and format version by ``write_fragments`` of one row to ``memory://`` (no request).
On a local disk too: there ``write_fragments`` lists the leaf's versions and reads its
manifest per leaf staged (an update of 500 leaves: 500 listings and manifest reads more than
pylance's own ``update`` makes).

Whatever is really at the leaf's URI (an orphan directory of a crashed writer, a table another
writer created meanwhile) is for the leaf commit to find, as before: it never assumed more.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable
from typing import Any, Literal

import lance.fragment
import pyarrow as pa
from lance.file import LanceFileWriter

from lance_partitioned.manifest import local_path
from lance_partitioned.runtime.leaf_cache import known_leaf

__all__ = ["file_version", "stage_fragment"]

_Template = tuple[list[int], list[int], int, int]
_templates: dict[tuple[bytes, str | None], _Template] = {}
_lock = threading.Lock()
# the template last found, with its schema object and version: a write asks for the same
# one once per leaf
_last: tuple[pa.Schema, str | None, _Template] | None = None


def _template(schema: pa.Schema, first: pa.Table, version: str | None) -> _Template:
    """Field ids, column indices and file format version of a fragment that
    ``write_fragments`` stages for a new dataset of ``schema`` (``version``: the format
    version, None for Lance's default): it writes ``first`` (one row) to memory once."""
    last = _last
    if last is not None and last[0] is schema and last[1] == version:
        return last[2]  # (a schema object never changes: the write's leaves share it)
    key = (schema.serialize().to_pybytes(), version)
    with _lock:
        found = _templates.get(key)
    if found is not None:
        _remember(schema, version, found)
        return found
    (fragment,) = lance.fragment.write_fragments(
        first,
        f"memory://lance-partitioned-template/{uuid.uuid4().hex}",
        schema=schema,
        mode="create",
        data_storage_version=version,
    )
    (data_file,) = fragment.files
    found = (
        list(data_file.fields),
        list(data_file.column_indices),
        int(data_file.file_major_version),
        int(data_file.file_minor_version),
    )
    with _lock:
        _templates[key] = found
    _remember(schema, version, found)
    return found


def _remember(schema: pa.Schema, version: str | None, found: _Template) -> None:
    global _last
    _last = (schema, version, found)


def file_version(
    uri: str,
    read_version: int | None,
    *,
    new: bool,
    storage_options: dict[str, str] | None,
) -> str | Literal[False] | None:
    """The Lance file format version to stage fragments of the leaf at ``uri`` in, without a
    request: None (Lance's default) for a ``new`` leaf (the ``__manifest`` has none) on an
    object store, that of the leaf at ``read_version`` when this process has that version
    opened (:func:`~lance_partitioned.runtime.leaf_cache.known_leaf`), else False (unknown:
    stage with ``write_fragments``, which looks; a leaf may be in an older format). A new leaf
    on a local disk is False too: there nothing is saved by not looking, and
    ``write_fragments`` removes its partial file when the write fails (a full disk), where
    :class:`~lance.file.LanceFileWriter` left its temporary file in the leaf's directory."""
    if new:
        return None if local_path(uri) is None else False
    if read_version is None:
        return False
    known = known_leaf(uri, read_version, tuple(sorted((storage_options or {}).items())))
    return False if known is None else str(known.data_storage_version)


def stage_fragment(
    data: pa.Table,
    batches: Iterable[pa.RecordBatch],
    uri: str,
    *,
    schema: pa.Schema,
    version: str | None,
    storage_options: dict[str, str] | None,
) -> Any:
    """Write ``batches`` (the rows of ``data``, in ``schema``) as one data file of the leaf at
    ``uri`` and return its uncommitted fragment, as ``write_fragments`` in mode ``create``
    would with one file, without reading anything at ``uri``.

    ``version`` is the Lance file format version (``"2.2"``; None: Lance's default for a
    new dataset). ``data`` must have at least one row.
    """
    fields, columns, major, minor = _template(schema, data.slice(0, 1), version)
    name = f"{uuid.uuid4().hex}.lance"
    writer = LanceFileWriter(
        f"{uri.rstrip('/')}/data/{name}",
        schema,
        version=f"{major}.{minor}",
        storage_options=storage_options,
    )
    for batch in batches:
        writer.write_batch(batch)
    writer.close()
    data_file = lance.fragment.DataFile(name, fields, columns, major, minor, writer.size_bytes)
    return lance.fragment.FragmentMetadata(0, [data_file], data.num_rows)
