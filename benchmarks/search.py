"""Search benchmark (issue 29): a pruned top-k across partitions against one table.

``--rows`` rows (default 1,000,000) of ``--dim``-d float32 vectors (default 128) drawn from a
seeded Gaussian mixture of 64 components, a ``tenant`` column of ``--tenants`` tenants (default
100) with Zipf sizes (exponent 1.1), a ``body`` text column (6 words of a 1,000-word
vocabulary, Zipf-distributed). Systems, all in this process:

* ``ours``: a ``PartitionedNamespace`` with ``partition_by="tenant"`` and
  ``ns.create_index("emb", "IVF_PQ", num_sub_vectors=...)`` (one IVF_PQ model trained for
  the namespace, ``num_partitions`` = sqrt(indexed rows); leaves under 10,000 rows are
  searched flat); ``ns.search``;
* ``lance``: one Lance table with the same IVF_PQ (``num_partitions`` = sqrt(rows), the same
  ``num_sub_vectors``), ``prefilter`` on ``tenant``;
* ``lancedb``: one LanceDB table, the same index, ``.where("tenant = …", prefilter=True)``
  (skipped, "(not installed)", without the ``lancedb`` package: ``pip install -e ".[bench]"``);
* ground truth: numpy brute force.

Queries (``--queries`` each, default 50, vectors of the data plus noise): top-10 filtered on a
small, the median and the largest tenant, and a global top-10; each reports recall@10 against
the ground truth and QPS with 1 and 2 client threads; ``nprobes`` = ``--nprobes`` (default 20)
everywhere. Then a full-text query (a word of the vocabulary) with an ``INVERTED`` index on
``body``, ours against one table (recall: the overlap with the one table's top-10). Index
build times are reported too, and a scan with ``id = <n>`` (no partition pruned) without and
with a ``BTREE`` index on ``id`` on every leaf.

Usage::

    .venv/bin/python benchmarks/search.py                            # 1M rows: long
    .venv/bin/python benchmarks/search.py --rows 100000 --queries 20  # small
    .venv/bin/python benchmarks/search.py --btree-demo               # ``user_id = 4242``
    .venv/bin/python benchmarks/search.py --root /tmp/r1m  # built once, then reused
    .venv/bin/python benchmarks/search.py --root /tmp/r1m --cases median,largest \\
        --recall-queries 400 --rounds 5  # two cases, recall over 400 queries, median QPS

``--root DIR`` builds the namespace, the one table and the LanceDB table in ``DIR`` (or reuses
them when an earlier run, or ``search_cpu.py --root``, built them with the same arguments) and
skips the full-text and ``BTREE`` sections, which build indexes on that data.

``--btree-demo`` runs only the issue's ``user_id = 4242`` case on the demo's namespace
(``--rows`` events in the first batch, default 2,000,000, as the demo; or ``--demo-uri`` of one
the demo wrote): ``count_rows`` and ``to_table`` without and with a ``BTREE`` on ``user_id``
(see ``_btree_demo.py``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("LANCEDB_LOG", "error")  # lancedb's own logger (scanner deprecation warnings)

import lance
import numpy as np
import pyarrow as pa

import lance_partitioned as lp

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _btree_demo
from _versions import package_version

K = 10


def make_data(rows: int, dim: int, tenants: int, seed: int) -> tuple[pa.Table, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((64, dim)).astype(np.float32) * 3
    vectors = centers[rng.integers(0, 64, rows)] + rng.standard_normal((rows, dim)).astype(
        np.float32
    )
    weights = 1 / np.arange(1, tenants + 1) ** 1.1
    sizes = np.maximum(1, np.floor(weights / weights.sum() * rows)).astype(int)
    sizes[0] += rows - sizes.sum()
    tenant = np.repeat([f"t{i:03d}" for i in range(tenants)], sizes)
    vocab = np.array([f"w{i}" for i in range(1000)])
    zipf = np.minimum(rng.zipf(1.3, (rows, 6)) - 1, 999)
    body = [" ".join(words) for words in vocab[zipf]]
    table = pa.table(
        {
            "id": np.arange(rows),
            "tenant": tenant,
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
            "body": body,
        }
    )
    return table, vectors


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def qps(
    search: Callable[[np.ndarray], list[int]], queries: np.ndarray, threads: int, rounds: int = 1
) -> float:
    """Queries per second with ``threads`` client threads: the median of ``rounds`` runs."""
    runs = []
    for _ in range(max(1, rounds)):
        with ThreadPoolExecutor(max_workers=threads) as pool:
            runs.append(len(queries) / timed(lambda: list(pool.map(search, queries))))
    return float(np.median(runs))


def recall(
    search: Callable[[np.ndarray], list[int]], queries: np.ndarray, truth: list[set[int]]
) -> float:
    hits = [len(set(search(q)) & t) / max(1, len(t)) for q, t in zip(queries, truth, strict=True)]
    return float(np.mean(hits))


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--rows", type=int, default=None, help="default 1,000,000 (--btree-demo: 2,000,000)"
    )
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--nprobes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--recall-queries",
        type=int,
        default=0,
        help="recall@10 over this many queries per case (default: the --queries ones; more "
        "are drawn from another seeded generator, so the QPS queries stay the same): with 50, "
        "one system's recall of about 0.2 varies by about 0.02 from one index build to the next",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="QPS: the median of this many timed runs"
    )
    parser.add_argument(
        "--cases",
        default="small,median,largest,global",
        help="the vector queries to run, comma-separated (default all: small,median,largest,"
        "global); every case draws its queries from the same generator, so a case's queries "
        "are the same only when the cases before it are run too",
    )
    parser.add_argument(
        "--btree-demo",
        action="store_true",
        help="only time `user_id = 4242` on the demo namespace without and with a BTREE",
    )
    parser.add_argument(
        "--demo-uri", help="--btree-demo: a namespace written by the demo (default: generate one)"
    )
    parser.add_argument("--repeats", type=int, default=7, help="--btree-demo: runs per timing")
    parser.add_argument(
        "--root",
        help="build the namespace, one table and LanceDB table here, or reuse them when there "
        "(as search_cpu.py --root); the full-text and BTREE sections, which build indexes on "
        "the data, are then skipped",
    )
    args = parser.parse_args()
    if args.btree_demo:
        _btree_demo.run(args.rows or 2_000_000, args.repeats, args.seed, args.demo_uri)
        return
    args.rows = args.rows or 1_000_000
    sub_vectors = max(1, args.dim // 16)
    table, vectors = make_data(args.rows, args.dim, args.tenants, args.seed)
    tenants = table.column("tenant").to_numpy(zero_copy_only=False)
    root = Path(args.root or tempfile.mkdtemp())
    reused = args.root is not None and (root / "one.lance").exists()
    rng = np.random.default_rng(args.seed + 1)
    partitions = int(math.sqrt(args.rows))
    build_ours: float | None = None
    build_one: float | None = None
    build_ldb: float | None = None
    if reused:  # built by an earlier run (or search_cpu.py) with the same arguments
        ns = lp.PartitionedNamespace.open(str(root / "ns"))
    else:
        ns = lp.PartitionedNamespace.create(
            str(root / "ns"), schema=table.schema, partition_by="tenant"
        )
        ns.write(table)
        build_ours = timed(lambda: ns.create_index("emb", "IVF_PQ", num_sub_vectors=sub_vectors))
        made = lance.write_dataset(table, str(root / "one.lance"))
        build_one = timed(
            lambda: made.create_index(
                "emb", "IVF_PQ", num_partitions=partitions, num_sub_vectors=sub_vectors
            )
        )
    one = lance.dataset(str(root / "one.lance"))
    try:
        import lancedb
        from lancedb.index import IvfPq

        db = lancedb.connect(str(root / "db"))
        if (root / "db" / "t.lance").exists():  # (a local directory)
            ldb = db.open_table("t")
        else:
            ldb = db.create_table("t", table)
            ivf_pq = IvfPq(
                distance_type="l2", num_partitions=partitions, num_sub_vectors=sub_vectors
            )
            build_ldb = timed(lambda: ldb.create_index("emb", config=ivf_pq))
    except ImportError:
        ldb = None

    names, counts = np.unique(tenants, return_counts=True)
    order = np.argsort(counts)
    cases: list[tuple[str, str | None]] = [
        (f"tenant small ({counts[order[0]]:,} rows)", str(names[order[0]])),
        (
            f"tenant median ({counts[order[len(order) // 2]]:,} rows)",
            str(names[order[len(order) // 2]]),
        ),
        (f"tenant largest ({counts[order[-1]]:,} rows)", str(names[order[-1]])),
        ("global", None),
    ]
    wanted = {name.strip() for name in args.cases.split(",") if name.strip()}
    unknown = wanted - {"small", "median", "largest", "global"}
    if unknown:
        parser.error(f"--cases: unknown {sorted(unknown)} (small, median, largest, global)")
    recall_count = max(args.queries, args.recall_queries)
    print(
        f"# search benchmark: {args.rows:,} rows, {args.dim}-d, {args.tenants} tenants, "
        f"{args.queries} queries (recall over {recall_count}), nprobes {args.nprobes}, "
        f"QPS the median of {max(1, args.rounds)} runs"
    )
    print(
        f"lance-partitioned {lp.__version__}, pylance {lance.__version__}, "
        f"lancedb {package_version('lancedb')}\n"
    )
    print(
        f"index build (s): ours {_seconds(build_ours)}, one table {_seconds(build_one)}, "
        f"lancedb {_seconds(build_ldb)}{' (data reused from --root)' if reused else ''}\n"
    )
    print("| query | system | recall@10 | QPS (1 thread) | QPS (2 threads) |")
    print("| --- | --- | --- | --- | --- |")
    for label, tenant in cases:
        mask = np.ones(len(vectors), bool) if tenant is None else tenants == tenant
        pool = np.flatnonzero(mask)
        queries = (
            vectors[rng.choice(pool, args.queries)]
            + rng.standard_normal((args.queries, args.dim)).astype(np.float32) * 0.1
        )
        if label.split(" (")[0].split(" ")[-1] not in wanted:
            continue  # (its queries drawn all the same: the next cases' stay the same)
        checked = queries
        if args.recall_queries > args.queries:
            more = args.recall_queries - args.queries
            extra = np.random.default_rng([args.seed, 2, int(mask.sum())])
            checked = np.concatenate(
                [
                    queries,
                    vectors[extra.choice(pool, more)]
                    + extra.standard_normal((more, args.dim)).astype(np.float32) * 0.1,
                ]
            )
        truth = []
        for q in checked:
            d = ((vectors[pool] - q) ** 2).sum(axis=1)
            truth.append(set(pool[np.argsort(d)[:K]].tolist()))
        where = None if tenant is None else f"tenant = '{tenant}'"

        def ours(q: np.ndarray, where: str | None = where) -> list[int]:
            found = ns.search(q, k=K, filter=where, columns=["id"], nprobes=args.nprobes)
            return found.column("id").to_pylist()

        def single(q: np.ndarray, where: str | None = where) -> list[int]:
            found = one.to_table(
                columns=["id"],
                nearest={"column": "emb", "q": q, "k": K, "nprobes": args.nprobes},
                filter=where,
                prefilter=True,
            )
            return found.column("id").to_pylist()

        systems: list[tuple[str, Callable[[np.ndarray], list[int]]]] = [
            ("ours", ours),
            ("one table", single),
        ]
        if ldb is not None:

            def lancedb_search(q: np.ndarray, where: str | None = where) -> list[int]:
                query = ldb.search(q, vector_column_name="emb").nprobes(args.nprobes).limit(K)
                if where is not None:
                    query = query.where(where, prefilter=True)
                return query.select(["id"]).to_arrow().column("id").to_pylist()

            systems.append(("lancedb", lancedb_search))
        for name, search in systems:
            search(queries[0])  # warm caches
            print(
                f"| {label} | {name} | {recall(search, checked, truth):.3f} | "
                f"{qps(search, queries, 1, args.rounds):.0f} | "
                f"{qps(search, queries, 2, args.rounds):.0f} |"
            )

    if args.root is not None:
        print(f"\n(--root {args.root}: the full-text and BTREE sections are skipped)")
        return
    build_fts_ours = timed(lambda: ns.create_index("body", "INVERTED"))
    build_fts_one = timed(lambda: one.create_scalar_index("body", "INVERTED"))
    one = lance.dataset(str(root / "one.lance"))
    words = [f"w{i}" for i in rng.integers(5, 50, args.queries)]

    def ours_text(word: str) -> list[int]:
        return ns.search(text=word, k=K, columns=["id"]).column("id").to_pylist()

    def one_text(word: str) -> list[int]:
        found = one.to_table(columns=["id"], full_text_query=word, limit=K)
        return found.column("id").to_pylist()

    overlap = np.mean([len(set(ours_text(w)) & set(one_text(w))) / K for w in words])
    print(
        f"\nfull text (INVERTED on body; build s: ours {build_fts_ours:.1f}, one table "
        f"{build_fts_one:.1f}); overlap of ours' top-10 with the one table's: {overlap:.2f}\n"
    )
    print("| query | system | QPS (1 thread) | QPS (2 threads) |")
    print("| --- | --- | --- | --- |")
    for name, text_search in (("ours", ours_text), ("one table", one_text)):
        text_search(words[0])
        word_array = np.array(words, dtype=object)
        print(
            f"| FTS global | {name} | {qps(text_search, word_array, 1):.0f} | "
            f"{qps(text_search, word_array, 2):.0f} |"
        )

    # a residual filter no partition prunes, on an indexed scalar column (every leaf read)
    where = f"id = {args.rows // 2}"

    def point() -> None:
        assert ns.to_table(where, columns=["id"]).num_rows == 1

    before = min(timed(point) for _ in range(5))
    build_btree = timed(lambda: ns.create_index("id", "BTREE"))
    after = min(timed(point) for _ in range(5))
    print(
        f"\nscan `{where}` (no partition pruned): {before * 1000:.1f} ms without an index, "
        f"{after * 1000:.1f} ms with a BTREE on id on every leaf ({before / after:.1f}x; "
        f"build {build_btree:.1f} s)"
    )


if __name__ == "__main__":
    main()
