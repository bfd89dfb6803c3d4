"""The IVF_PQ pass of :mod:`lance_partitioned.search.ivfpq` in whole-array numpy calls: the
probed partitions' rows found without a loop per partition, and each row's ADC distance the
sum of its sub-vectors' table entries, ``|(q - c_p)_j - codeword|^2``, computed here directly.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lance_partitioned.search import ivfpq


def _leaf(rows: int, partitions: int, subs: int, width: int, seed: int) -> ivfpq.LeafCodes:
    rng = np.random.default_rng(seed)
    sizes = rng.multinomial(rows, np.ones(partitions) / partitions)
    sizes[rng.integers(0, partitions, 3)] = 0  # some empty partitions
    total = int(sizes.sum())
    return ivfpq.LeafCodes(
        directory=f"mem://{seed}",
        model=f"{rows}-{partitions}-{subs}-{width}-{seed}".encode(),  # distinct per model
        centroids=(rng.standard_normal((partitions, subs * width)) * 3).astype(np.float32),
        codebook=rng.standard_normal((subs, 256, width)).astype(np.float32),
        starts=np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64),
        codes=rng.integers(0, 256, (total, subs), dtype=np.uint8),
        row_ids=rng.permutation(total).astype(np.uint64),
    )


def test_probed_rows_are_each_probed_partition_in_turn() -> None:
    starts = np.array([0, 4, 4, 9, 10, 17, 17, 30], np.int64)
    for probed in ([3, 0, 5], [1], [6, 1, 2, 4, 0], list(range(7))):
        rows, which = ivfpq._probed_rows(starts, np.asarray(probed, np.intp))
        want = [np.arange(starts[p], starts[p + 1]) for p in probed]
        assert rows.tolist() == np.concatenate(want).tolist()
        assert which.tolist() == [i for i, w in enumerate(want) for _ in w]


@pytest.mark.parametrize(("subs", "width"), [(4, 4), (8, 16), (16, 8), (12, 2)])
def test_adc_distances_are_the_tables_summed_per_row(subs: int, width: int) -> None:
    codes = _leaf(3000, 40, subs, width, seed=subs + width)
    query = np.random.default_rng(1).standard_normal(subs * width).astype(np.float32) * 3
    for count in (1, 7, 40):
        probed = np.argsort(ivfpq._squared(codes.centroids, query), kind="stable")[:count]
        distances, rows = ivfpq._score(codes, query, probed)
        expected_rows = [r for p in probed for r in range(codes.starts[p], codes.starts[p + 1])]
        assert rows.tolist() == expected_rows
        residual = (query - codes.centroids[probed]).astype(np.float64).reshape(-1, subs, width)
        slot = {p: i for i, p in enumerate(probed.tolist())}
        book = codes.codebook.astype(np.float64)
        for row in itertools.islice(rows.tolist(), 0, None, 37):
            part = int(np.searchsorted(codes.starts, row, side="right") - 1)
            picked = book[np.arange(subs), codes.codes[row]]
            want = ((residual[slot[part]] - picked) ** 2).sum(axis=1)
            got = distances[rows.tolist().index(row)]
            assert got == pytest.approx(want.sum(), rel=1e-5)


def test_one_leaf_top_k_by_distance_then_row_id() -> None:
    codes = _leaf(2000, 20, 4, 4, seed=5)
    query = np.zeros(16, np.float32)
    [(position, distances, row_ids)] = ivfpq.namespace_nearest([codes], [0], query, 10, 5)
    probed = np.argsort(ivfpq._squared(codes.centroids, query), kind="stable")[:5]
    every, rows = ivfpq._score(codes, query, probed)
    order = np.lexsort((codes.row_ids[rows], every))[:10]
    assert position == 0
    assert distances.tolist() == every[order].tolist()
    assert row_ids.tolist() == codes.row_ids[rows][order].tolist()
