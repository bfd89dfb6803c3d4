"""The DuckDB oracle of the import and export tests: two sets of rows are equal as multisets."""

from __future__ import annotations

import duckdb
import pyarrow as pa


def same_rows(actual: pa.Table, expected: pa.Table) -> None:
    """``actual`` and ``expected`` hold the same rows (as multisets, columns by name, values
    compared as text so that a partition column typed differently by a format still counts)."""
    assert sorted(actual.column_names) == sorted(expected.column_names)
    names = ", ".join(f'CAST("{n}" AS VARCHAR) AS "{n}"' for n in sorted(expected.column_names))
    con = duckdb.connect()
    con.register("a", actual)
    con.register("e", expected)
    missing = con.execute(f"SELECT {names} FROM e EXCEPT ALL SELECT {names} FROM a").fetchall()
    extra = con.execute(f"SELECT {names} FROM a EXCEPT ALL SELECT {names} FROM e").fetchall()
    assert (missing, extra) == ([], []), f"missing {missing[:5]}, extra {extra[:5]}"
    assert actual.num_rows == expected.num_rows
