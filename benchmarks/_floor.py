"""The floor of a per-leaf benchmark (issue 31): pylance alone doing the Lance operations that
one table per partition needs, on a thread pool, with no ``__manifest`` and no code of ours.

One Lance dataset per partition at ``<root>/<key>``; each operation runs one pylance call per
leaf (``write_dataset``, ``delete``, ``optimize.compact_files``, ``cleanup_old_versions``) on a
``ThreadPoolExecutor`` of ``workers`` threads (pylance releases the GIL). Whatever these cost is
a cost of the layout that no code of ours removes; a benchmark prints it beside ours and
deltalake's.

>>> import tempfile, pyarrow as pa
>>> floor = Floor(tempfile.mkdtemp(), workers=2)
>>> floor.write(pa.table({"k": [1, 2, 2], "v": [1, 2, 3]}), "k")
>>> floor.delete(["1", "2"], "v = 2")
>>> floor.count_rows()
2
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


class Floor:
    """Leaves as plain Lance datasets under ``root``, operated on ``workers`` threads."""

    def __init__(
        self, root: str, *, workers: int, storage_options: dict[str, str] | None = None
    ) -> None:
        self.root = root.rstrip("/")
        self.workers = workers
        self.options = storage_options
        self.keys: list[Any] = []

    def uri(self, key: Any) -> str:
        return f"{self.root}/{key}"

    def _each(self, keys: Iterable[Any], action: Callable[[Any], object]) -> None:
        with ThreadPoolExecutor(self.workers) as pool:
            for done in [pool.submit(action, key) for key in keys]:
                done.result()

    def _open(self, key: Any) -> lance.LanceDataset:
        return lance.dataset(self.uri(key), storage_options=self.options)

    def write(self, table: pa.Table, column: str, *, mode: str = "create") -> None:
        """One ``write_dataset`` per value of ``column`` (``mode``: create or append)."""
        parts = split(table, column)
        if mode == "create":
            self.keys = sorted(parts)

        def one(key: Any) -> None:
            lance.write_dataset(parts[key], self.uri(key), mode=mode, storage_options=self.options)

        self._each(parts, one)

    def write_parts(self, parts: Mapping[Any, pa.Table]) -> None:
        """One ``write_dataset`` (create) per key of ``parts`` (see :func:`split_by`)."""
        self.keys = sorted(parts)
        self._each(
            parts,
            lambda key: lance.write_dataset(
                parts[key], self.uri(key), mode="create", storage_options=self.options
            ),
        )

    def update(self, keys: Iterable[Any], updates: dict[str, str], where: str) -> None:
        """pylance's own ``update(updates, where)`` on each leaf of ``keys``."""
        self._each(keys, lambda key: self._open(key).update(updates, where=where))

    def merge(self, parts: Mapping[Any, pa.Table], on: Sequence[str]) -> None:
        """``merge_insert(on)``, matched rows updated and the others inserted, of each part
        into its leaf (a leaf that does not exist yet is written)."""
        known = set(self.keys)

        def one(key: Any) -> None:
            if key not in known:
                lance.write_dataset(parts[key], self.uri(key), storage_options=self.options)
                return
            (
                self._open(key)
                .merge_insert(list(on))
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(parts[key])
            )

        self._each(parts, one)
        self.keys = sorted(known | set(parts))

    def read(self, key: Any) -> pa.Table:
        """One leaf's rows."""
        return self._open(key).to_table()

    def delete(self, keys: Iterable[Any], predicate: str) -> None:
        """``delete(predicate)`` on each leaf of ``keys``."""
        self._each(keys, lambda key: self._open(key).delete(predicate))

    def optimize(self) -> None:
        """``compact_files`` on every leaf."""
        self._each(self.keys, lambda key: self._open(key).optimize.compact_files())

    def cleanup(self) -> None:
        """``cleanup_old_versions(older_than=0)`` on every leaf."""
        self._each(
            self.keys,
            lambda key: self._open(key).cleanup_old_versions(older_than=dt.timedelta(0)),
        )

    def verify(self, sample_rows: int) -> None:
        """What a check of every leaf reads with pylance alone: each leaf opened at its latest
        version, and its first ``sample_rows`` rows (every column: ours checks that each
        converts to the namespace's schema, and re-applies the partition expressions)."""
        self._each(self.keys, lambda key: self._open(key).to_table(limit=sample_rows))

    def count_rows(self) -> int:
        """Rows over every leaf."""
        return sum(self._open(key).count_rows() for key in self.keys)


def split(table: pa.Table, column: str) -> dict[Any, pa.Table]:
    """``table``'s rows by value of ``column`` (the value as a string: a path segment)."""
    values = table.column(column)
    out: dict[Any, pa.Table] = {}
    for value in pc.unique(values).to_pylist():
        out[str(value)] = table.filter(pc.equal(values, pa.scalar(value, values.type)))
    return out


def split_by(table: pa.Table, keys: Sequence[pa.ChunkedArray | pa.Array]) -> dict[str, pa.Table]:
    """``table``'s rows grouped by the values of ``keys`` (arrays as long as the table, not
    stored), each group named by its values joined with ``_`` (NULL as ``null``).

    >>> t = pa.table({"v": [1, 2, 3]})
    >>> sorted((k, p.num_rows) for k, p in split_by(t, [pa.array([1, None, 1])]).items())
    [('1', 2), ('null', 1)]
    """
    texts = [pc.fill_null(pc.cast(key, pa.string()), "null") for key in keys]
    joined = texts[0] if len(texts) == 1 else pc.binary_join_element_wise(*texts, "_")
    if isinstance(joined, pa.ChunkedArray):
        joined = joined.combine_chunks()
    encoded = joined.dictionary_encode()
    codes = np.asarray(encoded.indices)
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes, minlength=len(encoded.dictionary))
    ordered = table.take(pa.array(order))
    out: dict[str, pa.Table] = {}
    start = 0
    for name, count in zip(encoded.dictionary.to_pylist(), counts.tolist(), strict=True):
        out[name] = ordered.slice(start, count)
        start += count
    return out
