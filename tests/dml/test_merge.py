"""``PartitionedNamespace.merge`` on real Lance tables, against a DuckDB oracle."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_partitioned as lp
from lance_partitioned import errors, transaction

from .helpers import SCHEMA, SPECS, contents, create, expected, rows


def _oracle(
    target: pa.Table,
    source: pa.Table,
    on: list[str],
    *,
    update: bool = True,
    insert: bool = True,
    delete: bool = False,
    update_when: str = "true",
    delete_when: str = "true",
    safe: tuple[str, ...] = (),
) -> pa.Table:
    """DuckDB's merge: NULL keys never match, except on the ``safe`` keys (NULL-safe)."""
    con = duckdb.connect()
    con.register("target", target)
    con.register("source", source)
    match = " AND ".join(
        f"target.{k} {'IS NOT DISTINCT FROM' if k in safe else '='} source.{k}" for k in on
    )
    hit = f"EXISTS (SELECT 1 FROM source WHERE {match})"
    replaced = f"EXISTS (SELECT 1 FROM source WHERE {match} AND ({update_when}))"
    parts = [
        f"SELECT * FROM target WHERE {hit} AND NOT {replaced}" if update else "",
        f"SELECT * FROM target WHERE {hit}" if not update else "",
        f"SELECT source.* FROM source JOIN target ON {match} WHERE ({update_when})"
        if update
        else "",
        f"SELECT * FROM target WHERE NOT {hit} AND NOT coalesce(({delete_when}), false)"
        if delete
        else f"SELECT * FROM target WHERE NOT {hit}",
        f"SELECT * FROM source WHERE NOT EXISTS (SELECT 1 FROM target WHERE {match})"
        if insert
        else "",
    ]
    sql = " UNION ALL ".join(p for p in parts if p)
    return con.sql(sql).to_arrow_table().cast(SCHEMA)


def _leaf_values(ns: lp.PartitionedNamespace) -> set[tuple[object, ...]]:
    names = [f.name for f in ns.current_spec.fields]
    return {tuple(r[n] for n in names) for r in ns.partitions().to_pylist()}


def _source_leaves(
    ns: lp.PartitionedNamespace, source: pa.Table, on: list[str]
) -> set[tuple[object, ...]]:
    """The partition values of the source rows whose keys that are not partition sources
    (matched NULL-safely) are all non-NULL."""
    from lance_partitioned.ingest import partition_values

    keyed = source
    for name in on:
        if name not in PARTITION_SOURCES:
            keyed = keyed.filter(pc.is_valid(keyed.column(name)))
    keys = partition_values(keyed, ns.current_spec, ns.namespace_schema)
    return set(zip(*(k.to_pylist() for k in keys), strict=True))


PARTITION_SOURCES = ("ts", "country", "user_id")  # of the spec below


def _source(seed: int, first_id: int, n: int = 60) -> pa.Table:
    return rows(n, seed=seed, first_id=first_id)


# a namespace and its oracle per transform
@pytest.mark.matrix(3)  # the inner loop runs a third of the cases
@pytest.mark.parametrize("kind", sorted(SPECS))
def test_upsert_by_id_matches_the_oracle_on_every_transform(tmp_path: Path, kind: str) -> None:
    """Keyed by id only: matched rows take the source's partition values (they move)."""
    data = rows(200, seed=41)
    ns = create(tmp_path / kind, SPECS[kind], data)
    source = _source(42, first_id=170)  # 30 matches, 30 inserts
    result = (
        ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    )
    assert contents(ns) == expected(_oracle(data, source, ["id"]))
    assert (result.rows_updated, result.rows_inserted) == (30, 30)


@pytest.mark.parametrize("on", [["id", "country"], ["id", "ts", "country", "user_id", "name"]])
def test_keys_with_partition_sources_search_only_the_target_leaves(
    tmp_path: Path, on: list[str]
) -> None:
    data = rows(200, seed=43)
    ns = create(tmp_path / "ns", "year(ts), country, bucket(4, user_id)", data)
    assert ns.partitions().num_rows > 20
    # half the source rows are copies of target rows with a new amount, half are new
    changed = data.slice(20, 30).set_column(5, "amount", pa.array([1.5] * 30, pa.float64()))
    source = pa.concat_tables([changed, _source(44, first_id=1000, n=30)])
    leaves_before = _leaf_values(ns)
    result = (
        ns.merge(source, on=on).when_matched_update_all().when_not_matched_insert_all().execute()
    )
    safe = tuple(k for k in on if k in PARTITION_SOURCES)
    assert contents(ns) == expected(_oracle(data, source, on, safe=safe))
    if len(on) == 5:  # every partition source is a key: exactly the source rows' leaves
        assert result.leaves_read == len(_source_leaves(ns, source, on) & leaves_before)
    else:  # the leaves of the source rows' countries (NULL included: a partition source)
        countries = set(source.column("country").to_pylist())
        assert result.leaves_read == sum(1 for v in leaves_before if v[1] in countries)
    if len(on) == 5:  # every partition source is a key: exactly the leaves of the source rows
        keyed = {tuple(r[k] for k in on) for r in changed.to_pylist()}
        assert result.rows_updated == sum(
            1 for r in changed.to_pylist() if None not in (r["id"], r["name"])
        )
        assert len(keyed) == 30


def test_conditions_and_delete_by_source(tmp_path: Path) -> None:
    data = rows(150, seed=45)
    ns = create(tmp_path / "ns", "country", data)
    source = _source(46, first_id=100)
    (
        ns.merge(source, on="id")
        .when_matched_update_all(condition="source.amount > target.amount")
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete(condition="country = 'FR'")
        .execute()
    )
    want = _oracle(
        data,
        source,
        ["id"],
        delete=True,
        update_when="source.amount > target.amount",
        delete_when="country = 'FR'",
    )
    assert contents(ns) == expected(want)


def test_delete_by_source_without_a_condition_applies_to_the_whole_namespace(
    tmp_path: Path,
) -> None:
    data = rows(120, seed=47)
    ns = create(tmp_path / "ns", "year(ts), country", data)
    source = data.slice(0, 10)
    result = ns.merge(source, on="id").when_not_matched_by_source_delete().execute()
    assert contents(ns) == expected(source)
    assert result.rows_deleted == 110


def test_duplicate_source_keys_are_a_typed_error(tmp_path: Path) -> None:
    data = rows(30, seed=48)
    ns = create(tmp_path / "ns", "country", data)
    version = ns.version
    source = pa.concat_tables([data.slice(0, 3), data.slice(2, 1)])
    with pytest.raises(errors.DuplicateKeyError, match="several source rows"):
        ns.merge(source, on="id").when_matched_update_all().execute()
    assert ns.refresh().version == version


@pytest.mark.parametrize("on", [[], "missing", ["id", "id"]])
def test_bad_keys_are_typed_errors(tmp_path: Path, on: object) -> None:
    ns = create(tmp_path / "ns", "country", rows(10, seed=49))
    with pytest.raises(errors.InvalidInputError):
        ns.merge(rows(2, seed=50), on=on).when_not_matched_insert_all().execute()  # type: ignore[arg-type]


def test_an_injected_failure_leaves_the_namespace_as_before(tmp_path: Path) -> None:
    data = rows(100, seed=51)
    ns = create(tmp_path / "ns", "country", data)
    version = ns.version

    def crash() -> None:
        raise RuntimeError("injected")

    source = _source(52, first_id=80)
    with (
        transaction.pause_at("leaves_committed", crash),
        pytest.raises(RuntimeError, match="injected"),
    ):
        ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert ns.refresh().version == version
    assert contents(ns) == expected(data)
    pinned = lp.PartitionedNamespace.open(str(tmp_path / "ns"), version=version)
    ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    assert contents(ns) == expected(_oracle(data, source, ["id"]))
    assert pinned.to_table().sort_by("id").to_pylist() == expected(data)
