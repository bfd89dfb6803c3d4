"""Vector indexes trained once for the namespace: every leaf's index uses the same IVF
centroids (and PQ codebook), persisted under ``_index_models/`` and named by the definition,
so leaves indexed later by ``optimize()`` get the same model; ``cleanup`` removes a model no
definition names."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pytest

import lance_partitioned as lp
from lance_partitioned.search.definitions import INDICES_KEY

from .training_helpers import DIM, leaf_centroids, model_file, namespace, rows


@pytest.fixture(autouse=True)
def _centroids_in_stats(monkeypatch: pytest.MonkeyPatch) -> None:
    # pylance's index statistics list the IVF centroids with this set (and warn without it)
    monkeypatch.setenv("LANCE_INCLUDE_VECTOR_CENTROIDS", "true")


@pytest.mark.parametrize("index_type", ["IVF_PQ", "IVF_FLAT", "IVF_HNSW_SQ"])
def test_leaves_share_one_model(tmp_path: Path, index_type: str) -> None:
    ns = namespace(tmp_path / "ns")
    built = ns.create_index("v", index_type, min_rows=400)
    assert (built.leaves_indexed, built.leaves_flat) == (3, 1)  # the 30-row leaf stays flat
    model = model_file(ns, tmp_path / "ns")
    # one table's num_partitions for the 1,800 indexed rows: min(sqrt(1800), 1800 // 256)
    assert model["ivf_centroids"].shape == (7, DIM)
    assert ("pq_codebook" in model.files) == (index_type == "IVF_PQ")
    by_leaf = leaf_centroids(ns)
    assert sorted(by_leaf) == ["a", "b", "c"]
    for centroids in by_leaf.values():
        np.testing.assert_array_equal(centroids, model["ivf_centroids"])
    # every partition probed: the search is exact, as without an index (IVF_PQ is approximate)
    if index_type == "IVF_FLAT":
        query = np.full(DIM, 0.5, np.float32)
        table = ns.to_table()
        vectors = np.stack(table.column("v").to_numpy(zero_copy_only=False))
        expected = np.sort(((vectors - query) ** 2).sum(axis=1))[:10]
        got = ns.search(query, k=10, nprobes=7, columns=["id"])
        np.testing.assert_allclose(got.column("_distance").to_numpy(), expected, rtol=1e-5)


def test_leaves_indexed_later_use_the_same_model(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    ns.create_index("v", "IVF_PQ", min_rows=400)
    model = model_file(ns, tmp_path / "ns")["ivf_centroids"]
    ns.write(rows({"d": 450}, first_id=10_000, seed=1))
    assert ns.optimize().leaves_indexed == 1  # refresh_leaf, in optimize's commit
    ns.write(rows({"e": 450}, first_id=20_000, seed=2))
    [result] = ns.optimize_indices()
    assert result.leaves_indexed == 1
    by_leaf = leaf_centroids(ns)
    assert sorted(by_leaf) == ["a", "b", "c", "d", "e"]
    for centroids in by_leaf.values():
        np.testing.assert_array_equal(centroids, model)


def test_per_leaf_training_on_request(tmp_path: Path) -> None:
    ns = namespace(tmp_path / "ns")
    ns.create_index("v", "IVF_FLAT", min_rows=400, shared_training=False)
    raw = json.loads(ns.snapshot.table_metadata[INDICES_KEY])["v_idx"]
    assert raw["shared_training"] is False
    assert "model" not in raw
    assert "shared_training" not in raw["params"]
    assert not (tmp_path / "ns" / "_index_models").exists()
    by_leaf = leaf_centroids(ns)
    # sized per leaf: min(sqrt(rows), rows // 256)
    assert {t: len(c) for t, c in by_leaf.items()} == {"a": 2, "b": 2, "c": 1}
    assert not np.array_equal(by_leaf["a"], by_leaf["b"])
    with pytest.raises(lp.errors.InvalidInputError, match="vector indexes only"):
        ns.create_index("id", "BTREE", shared_training=False)


def test_cleanup_removes_models_no_definition_names(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = namespace(root)
    ns.create_index("v", "IVF_FLAT", min_rows=400)
    first = json.loads(ns.snapshot.table_metadata[INDICES_KEY])["v_idx"]["model"]
    ns.create_index("v", "IVF_FLAT", min_rows=400, replace=True)
    second = json.loads(ns.snapshot.table_metadata[INDICES_KEY])["v_idx"]["model"]
    assert first != second
    models = root / "_index_models"
    assert sorted(p.name for p in models.iterdir()) == sorted(Path(p).name for p in (first, second))
    ns.cleanup(dt.timedelta(days=1))  # the old version still names it: it stays
    assert (root / first).exists()
    ns.cleanup(dt.timedelta(0))
    assert not (root / first).exists()
    assert (root / second).exists()
    ns = ns.refresh()
    ns.drop_index("v_idx")
    ns.cleanup(dt.timedelta(0))
    assert not models.exists()
    assert ns.refresh().count_rows() == 1_830
