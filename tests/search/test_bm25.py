"""Namespace-wide BM25: ``ns.search(text=...)`` ranks and scores like one Lance table holding
the kept leaves' rows, with the same INVERTED index parameters."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_partitioned as lp
from lance_partitioned.search.query import _Leaf
from tests.property.strategies import examples

from .helpers import DIM, namespace

MODE_KEY = b"lance-partitioned.bm25"  # the result schema metadata: namespace or per-leaf
SCHEMA = pa.schema([("id", pa.int64()), ("tenant", pa.string()), ("body", pa.string())])
# tenant-skewed vocabularies, so per-leaf statistics differ from the namespace's
VOCAB = {
    "a": ["apple", "apple", "banana", "cherry", "grape", "the", "Running"],
    "b": ["banana", "banana", "cherry", "lemon", "apple", "of", "runs"],
    "c": ["zebra", "lemon", "lemon", "mango", "apple", "café"],
}
SIZES = {"a": 60, "b": 30, "c": 15}
QUERIES = ["apple", "banana lemon", "zebra", "zebra apple apple", "running, CHERRY!", "the"]


def _rows(sizes: dict[str, int], seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    tenants = [t for t, n in sizes.items() for _ in range(n)]
    body = [" ".join(rng.choice(VOCAB[t], size=int(rng.integers(1, 10)))) for t in tenants]
    return pa.table({"id": np.arange(len(tenants)), "tenant": tenants, "body": body}, schema=SCHEMA)


def _pair(
    root: Path, data: pa.Table, **params: Any
) -> tuple[lp.PartitionedNamespace, lance.LanceDataset]:
    ns = lp.PartitionedNamespace.create(str(root / "ns"), schema=SCHEMA, partition_by="tenant")
    ns.write(data)
    ns.create_index("body", "INVERTED", **params)
    return ns, _table(root / "one", data, **params)


def _table(path: Path, data: pa.Table, **params: Any) -> lance.LanceDataset:
    one = lance.write_dataset(data, str(path))
    one.create_scalar_index("body", "INVERTED", **params)
    return lance.dataset(str(path))


def _assert_like_one_table(
    got: pa.Table, one: lance.LanceDataset, query: str, k: int, where: str | None = None
) -> None:
    """Same scores (1e-4 relative) and the same ids in the same order, up to exact ties."""
    want = one.to_table(
        columns=["id", "_score"],
        full_text_query={"query": query, "columns": ["body"]},
        filter=where,
        prefilter=where is not None,
    )
    want = want.sort_by([("_score", "descending"), ("id", "ascending")])
    assert got.num_rows == min(k, want.num_rows)
    scores = np.asarray(want.column("_score"), np.float64)
    np.testing.assert_allclose(got.column("_score"), scores[: got.num_rows], rtol=1e-4)
    ids = got.column("id").to_pylist()
    assert len(set(ids)) == len(ids)
    want_ids = want.column("id").to_numpy()
    for position, (row_id, score) in enumerate(
        zip(ids, got.column("_score").to_pylist(), strict=True)
    ):
        tied = set(want_ids[np.isclose(scores, score, rtol=1e-6, atol=0)].tolist())
        if len(tied) == 1:
            assert row_id == want_ids[position]
        else:
            assert row_id in tied
    assert got.schema.metadata[MODE_KEY] == b"namespace"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[lp.PartitionedNamespace, Any]:
    return _pair(tmp_path_factory.mktemp("bm25"), _rows(SIZES))


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("k", [5, 40])
def test_scores_like_one_table(pair: tuple[Any, Any], query: str, k: int) -> None:
    ns, one = pair
    got = ns.search(text=query, k=k, columns=["id", "tenant"])
    _assert_like_one_table(got, one, query, k)


def test_pruned_leaf_not_counted(pair: tuple[Any, Any], tmp_path: Path) -> None:
    """A filter that prunes a leaf: one table of the kept leaves' rows; the residual is a
    prefilter that leaves the statistics alone, as in one table."""
    ns, _ = pair
    kept = _table(tmp_path / "kept", _rows(SIZES).filter(pc.field("tenant") != "c"))
    for query in ("apple", "banana lemon", "lemon apple"):
        got = ns.search(text=query, k=40, filter="tenant != 'c'", columns=["id"])
        _assert_like_one_table(got, kept, query, 40)
        got = ns.search(text=query, k=12, filter="tenant != 'c' AND id > 20", columns=["id"])
        _assert_like_one_table(got, kept, query, 12, "id > 20")


def test_tokenizer_params_and_empty_leaf(tmp_path: Path) -> None:
    """Other tokenizer params (whitespace, no stemming, stop words kept, positions: a phrase),
    and a leaf that has only NULL text (no documents)."""
    data = _rows(SIZES, seed=3)
    body = data.column("body").to_pylist()
    body = [
        None if t == "c" else b
        for t, b in zip(data.column("tenant").to_pylist(), body, strict=True)
    ]
    data = data.set_column(2, "body", pa.array(body, pa.string()))
    params = {"base_tokenizer": "whitespace", "stem": False, "remove_stop_words": False}
    ns, one = _pair(tmp_path, data, with_position=True, **params)
    for query in ("apple", "the apple", "runs Running cherry", '"banana apple" lemon'):
        _assert_like_one_table(ns.search(text=query, k=30, columns=["id"]), one, query, 30)


def test_unindexed_rows_fall_back_to_per_leaf_scores(tmp_path: Path) -> None:
    """Rows outside a leaf's index are searched flat by Lance with other statistics: the
    per-leaf scores are merged, and the result says so."""
    ns, _ = _pair(tmp_path, _rows(SIZES))
    ns.write(_rows({"a": 3}, seed=9).set_column(0, "id", pa.array([900, 901, 902])))
    got = ns.search(text="apple", k=5, columns=["id"])
    assert got.schema.metadata[MODE_KEY] == b"per-leaf"
    assert got.num_rows == 5
    ns.optimize()
    assert ns.search(text="apple", k=5).schema.metadata[MODE_KEY] == b"namespace"


def test_hybrid_keeps_namespace_scores(tmp_path: Path) -> None:
    ns = namespace(tmp_path)
    ns.create_index("txt", "INVERTED")
    text = ns.search(text="apple doc", k=60, columns=["id"])
    both = ns.search(np.zeros(DIM, np.float32), text="apple doc", k=10, columns=["id"])
    assert both.schema.metadata[MODE_KEY] == b"namespace"
    scores = dict(
        zip(text.column("id").to_pylist(), text.column("_score").to_pylist(), strict=True)
    )
    fused = [
        (i, s)
        for i, s in zip(
            both.column("id").to_pylist(), both.column("_score").to_pylist(), strict=True
        )
    ]
    assert any(s is not None for _, s in fused)
    for row_id, score in fused:
        assert score is None or score == scores[row_id]


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.fixed_dictionaries(
        {"a": st.integers(1, 25), "b": st.integers(0, 25), "c": st.integers(1, 25)}
    ),
    seed=st.integers(0, 2**16),
    query=st.lists(st.sampled_from(sorted({w for v in VOCAB.values() for w in v})), max_size=3),
    k=st.integers(1, 30),
)
def test_property_random_corpora(
    sizes: dict[str, int], seed: int, query: list[str], k: int
) -> None:
    root = Path(tempfile.mkdtemp())
    ns, one = _pair(root, _rows({t: n for t, n in sizes.items() if n}, seed))
    text = " ".join(query) or "apple"
    _assert_like_one_table(ns.search(text=text, k=k, columns=["id"]), one, text, k)


def test_residual_evaluated_in_memory(tmp_path: Path) -> None:
    """A residual Lance cannot evaluate on a leaf (a promoted column): the leaf's matches are
    filtered in memory, then scored namespace-wide."""
    data = _rows(SIZES, seed=5)
    data = data.append_column("n", pa.array(np.arange(data.num_rows) % 5, pa.int32()))
    ns = lp.PartitionedNamespace.create(
        str(tmp_path / "ns"), schema=data.schema, partition_by="tenant"
    )
    ns.write(data)
    ns.create_index("body", "INVERTED")
    ns.alter_column_type("n", pa.int64())  # leaves keep int32: the residual runs in memory
    assert not _Leaf(ns.plan_scan("n >= 3")[0], ns.namespace_schema, list(ns.schema)).exact_filter
    one = _table(tmp_path / "one", data.set_column(3, "n", pc.cast(data.column("n"), pa.int64())))
    for query in ("apple", "banana lemon"):
        got = ns.search(text=query, k=20, filter="n >= 3", columns=["id"])
        _assert_like_one_table(got, one, query, 20, "n >= 3")
