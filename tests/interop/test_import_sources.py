"""import_ from each source format: the namespace holds exactly the source's rows (DuckDB
oracle), partitioned as the source was unless partition_by says otherwise."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import lance_partitioned as lp
from lance_partitioned import errors
from tests.interop._oracle import same_rows


def _table(n: int = 60) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "name": [f"n{i % 7}" for i in range(n)],
            "region": [None if i % 10 == 0 else ("a b/c" if i % 3 else "eu") for i in range(n)],
            "day": [dt.date(2024, 1, 1) + dt.timedelta(days=i % 4) for i in range(n)],
            "amount": [i * 1.5 for i in range(n)],
        }
    )


def _hive(tmp_path: Path, table: pa.Table, file_format: str = "parquet") -> Path:
    tree = tmp_path / f"tree-{file_format}"
    keys = pa.schema([("region", pa.string()), ("day", pa.date32())])
    ds.write_dataset(
        table,
        tree,
        format=file_format,
        partitioning=ds.partitioning(keys, flavor="hive"),
    )
    return tree


def _names(uri: Path) -> list[str]:
    return [f.name for f in lp.PartitionedNamespace.open(str(uri)).current_spec.fields]


def test_hive_parquet_tree(tmp_path: Path) -> None:
    table = _table()
    tree = _hive(tmp_path, table)
    uri = tmp_path / "ns"
    result = lp.import_(str(tree), str(uri), commit_rows=20)
    ns = lp.PartitionedNamespace.open(str(uri))
    same_rows(ns.to_table(), table)
    assert _names(uri) == ["region", "day"]
    assert ns.schema.field("day").type == pa.date32()
    assert result.rows == table.num_rows
    assert result.commits > 1
    assert ns.count_rows("region IS NULL") == 6  # __HIVE_DEFAULT_PARTITION__
    assert ns.count_rows("region = 'a b/c'") == 36  # URL-decoded
    again = lp.import_(str(tree), str(uri))
    assert (again.rows, again.units_skipped, again.commits) == (0, result.units, 0)
    same_rows(lp.PartitionedNamespace.open(str(uri)).to_table(), table)


@pytest.mark.parametrize("file_format", ["csv", "json"])
def test_hive_text_trees(tmp_path: Path, file_format: str) -> None:
    table = _table(30).select(["id", "name", "region", "day"])
    tree = tmp_path / "tree"
    for (region, day), part in _groups(table).items():
        folder = tree / f"region={region}" / f"day={day}"
        folder.mkdir(parents=True)
        rows = part.drop_columns(["region", "day"])
        if file_format == "csv":
            import pyarrow.csv as csv

            csv.write_csv(rows, folder / "part.csv")
        else:
            (folder / "part.json").write_text(
                "".join(f'{{"id": {r["id"]}, "name": "{r["name"]}"}}\n' for r in rows.to_pylist())
            )
    uri = tmp_path / "ns"
    lp.import_(str(tree), str(uri), partition_by="day")
    same_rows(lp.PartitionedNamespace.open(str(uri)).to_table(), table)
    assert _names(uri) == ["day"]


def _groups(table: pa.Table) -> dict[tuple[str, str], pa.Table]:
    out: dict[tuple[str, str], pa.Table] = {}
    for row in table.to_pylist():
        key = (
            "__HIVE_DEFAULT_PARTITION__"
            if row["region"] is None
            else row["region"].replace("/", "%2F"),
            row["day"].isoformat(),
        )
        out.setdefault(key, []).append(row)  # type: ignore[arg-type]
    return {k: pa.Table.from_pylist(v, schema=table.schema) for k, v in out.items()}  # type: ignore[arg-type]


def test_lance_dataset(tmp_path: Path) -> None:
    import lance

    table = _table()
    source = tmp_path / "source.lance"
    lance.write_dataset(table, source, max_rows_per_file=25)
    uri = tmp_path / "ns"
    result = lp.import_(str(source), str(uri), partition_by="region", commit_rows=10)
    assert result.units == 3
    same_rows(lp.PartitionedNamespace.open(str(uri)).to_table(), table)
    assert _names(uri) == ["region"]


def test_delta_table(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    table = _table()
    source = tmp_path / "delta"
    deltalake.write_deltalake(str(source), table.slice(0, 30), partition_by=["region"])
    deltalake.write_deltalake(str(source), table.slice(30), partition_by=["region"], mode="append")
    uri = tmp_path / "ns"
    lp.import_(str(source), str(uri))
    same_rows(lp.PartitionedNamespace.open(str(uri)).to_table(), table)
    assert _names(uri) == ["region"]


def _iceberg(tmp_path: Path, table: pa.Table, spec: list[tuple[str, str]]) -> object:
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField
    from pyiceberg.transforms import parse_transform

    catalog = SqlCatalog(
        "test",
        uri=f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=f"file://{tmp_path / 'warehouse'}",
    )
    catalog.create_namespace("db")
    created = catalog.create_table("db.t", schema=table.schema)
    schema = created.schema()
    fields = [
        PartitionField(
            source_id=schema.find_field(column).field_id,
            field_id=1000 + i,
            transform=parse_transform(transform),
            name=f"{column}_{i}",
        )
        for i, (column, transform) in enumerate(spec)
    ]
    if fields:
        with created.update_spec() as update:
            for field in fields:
                update.add_field(field.name.rsplit("_", 1)[0], field.transform, field.name)
    loaded = catalog.load_table("db.t")
    loaded.append(table.slice(0, 30))
    loaded.append(table.slice(30))
    return catalog.load_table("db.t")


def test_iceberg_table(tmp_path: Path) -> None:
    table = _table()
    iceberg = _iceberg(tmp_path, table, [("region", "identity"), ("day", "month")])
    uri = tmp_path / "ns"
    lp.import_(iceberg.metadata_location, str(uri))  # type: ignore[attr-defined]
    ns = lp.PartitionedNamespace.open(str(uri))
    same_rows(ns.to_table(), table)
    assert [f.expression[:3] for f in ns.current_spec.fields] == ["col", "(da"]
    other = tmp_path / "ns2"
    lp.import_(iceberg, str(other), partition_by="name")  # a pyiceberg Table
    same_rows(lp.PartitionedNamespace.open(str(other)).to_table(), table)


def test_iceberg_bucket_and_truncate_are_translated(tmp_path: Path) -> None:
    """Iceberg's bucket[N] and integer truncate[W] become the namespace's bucket(N, col) and
    truncate(W, col): the rows are partitioned again by the namespace's own functions."""
    from lance_partitioned.verify import verify

    table = _table()
    iceberg = _iceberg(tmp_path, table, [("name", "bucket[4]"), ("id", "truncate[25]")])
    uri = str(tmp_path / "ns")
    lp.import_(iceberg, uri)
    ns = lp.PartitionedNamespace.open(uri)
    same_rows(ns.to_table(), table)
    bucket, truncate = ns.current_spec.fields
    assert "% 4" in bucket.expression
    assert "25" in truncate.expression
    assert len(ns.partitions(sizes=False)) > 4  # buckets times truncation ranges
    assert ns.to_table(filter="id = 7")["id"].to_pylist() == [7]
    assert len(ns.plan_scan("id = 7 AND name = 'n0'")) == 1  # both fields prune
    assert verify(uri).problems == []
    lp.import_(iceberg, str(tmp_path / "other"), partition_by="name")  # partition_by still wins
    assert _names(tmp_path / "other") == ["name"]


def test_missing_extra_is_a_typed_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "deltalake", None)  # as if not installed
    (tmp_path / "t" / "_delta_log").mkdir(parents=True)
    with pytest.raises(errors.UnsupportedOperationError, match=r"lance-partitioned\[interop\]"):
        lp.import_(str(tmp_path / "t"), str(tmp_path / "ns"))


def test_unknown_format_and_missing_source(tmp_path: Path) -> None:
    with pytest.raises(errors.InvalidInputError, match="format"):
        lp.import_(str(tmp_path), str(tmp_path / "ns"), format="orc")
    with pytest.raises(errors.TableNotFoundError):
        lp.import_(str(tmp_path / "nowhere"), str(tmp_path / "ns"), format="hive")


def test_import_into_an_existing_namespace_appends_under_its_spec(tmp_path: Path) -> None:
    table = _table()
    tree = _hive(tmp_path, table)
    uri = tmp_path / "ns"
    lp.write(str(uri), table.slice(0, 5), partition_by="region, day")
    with pytest.raises(errors.PartitionSpecError, match="differs from the current partition spec"):
        lp.import_(str(tree), str(uri), partition_by="day")
    lp.import_(str(tree), str(uri))
    same_rows(
        lp.PartitionedNamespace.open(str(uri)).to_table(),
        pa.concat_tables([table.slice(0, 5), table]),
    )
