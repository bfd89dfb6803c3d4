"""CPU time per global query (issue 29): ``ns.search`` against one Lance table.

Builds (once, under ``--root``) the namespace and the one table of ``benchmarks/search.py``
(same data, same IVF_PQ parameters), then times ``--queries`` sequential global top-10
queries (``nprobes`` 20) with :func:`time.process_time` (process CPU, steadier than QPS on a
loaded machine), ours and one table alternated ``--rounds`` times, and prints where ours
spends it (``cProfile``: the indexed leaves' IVF_PQ pass, the small leaves, the rest).

Usage::

    PYTHONPATH=src .venv/bin/python benchmarks/search_cpu.py --rows 200000 --root /tmp/cpu200k
"""

from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import sys
import time
from pathlib import Path

import lance
import numpy as np

import lance_partitioned as lp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from search import make_data

K = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--nprobes", type=int, default=20)
    parser.add_argument("--root", required=True, help="where the data is built (reused)")
    args = parser.parse_args()
    root = Path(args.root)
    table, vectors = make_data(args.rows, args.dim, args.tenants, 0)
    sub_vectors = max(1, args.dim // 16)
    if not (root / "one.lance").exists():
        ns = lp.PartitionedNamespace.create(
            str(root / "ns"), schema=table.schema, partition_by="tenant"
        )
        ns.write(table)
        ns.create_index("emb", "IVF_PQ", num_sub_vectors=sub_vectors)
        one = lance.write_dataset(table, str(root / "one.lance"))
        one.create_index(
            "emb",
            "IVF_PQ",
            num_partitions=int(math.sqrt(args.rows)),
            num_sub_vectors=sub_vectors,
        )
    ns = lp.PartitionedNamespace.open(str(root / "ns"))
    one = lance.dataset(str(root / "one.lance"))
    rng = np.random.default_rng(1)
    queries = vectors[rng.choice(len(vectors), args.queries)] + (
        rng.standard_normal((args.queries, args.dim)).astype(np.float32) * 0.1
    )

    def ours(q: np.ndarray) -> object:
        return ns.search(q, k=K, columns=["id"], nprobes=args.nprobes)

    def single(q: np.ndarray) -> object:
        return one.to_table(
            columns=["id"], nearest={"column": "emb", "q": q, "k": K, "nprobes": args.nprobes}
        )

    for search in (ours, single):
        search(queries[0])
        search(queries[0])  # warm: the kept codes and vectors, the group
    found = ours(queries[0])
    print(f"{args.rows:,} rows, {args.tenants} tenants: metadata {found.schema.metadata}")
    for _ in range(args.rounds):
        for name, search in (("ours", ours), ("one table", single)):
            started = time.process_time()
            for q in queries:
                search(q)
            spent = (time.process_time() - started) / len(queries) * 1000
            print(f"{name}: {spent:.1f} CPU ms per global query")
    profile = cProfile.Profile()
    profile.enable()
    for q in queries:
        ours(q)
    profile.disable()
    stats = pstats.Stats(profile)
    wanted = ("search", "_grouped_pass", "nearest_many", "namespace_nearest", "_collect", "prepare")
    for (path, _, name), row in stats.stats.items():  # type: ignore[attr-defined]
        if name in wanted and "lance_partitioned" in path:
            per = row[3] / len(queries) * 1000
            print(f"  {Path(path).name}:{name}: {per:.1f} ms per query (cumulative, profiled)")


if __name__ == "__main__":
    main()
