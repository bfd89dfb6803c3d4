"""Liveness of row-level changes against a concurrent appender (issue 32, item 2).

A namespace partitioned by ``country`` holds ``--rows`` rows in each of two leaves, ``US`` and
``FR``. An appender process appends 10 rows to ``US`` in a tight loop (as fast as it can
commit) while this process runs, one after the other:

- an ``update`` of 10% of the ``FR`` leaf (another partition than the appender's),
- a 2-row ``merge`` into ``FR``,
- the same ``update`` and ``merge`` on ``US`` (the appender's partition).

For each it prints the commit attempts, the seconds, the Lance versions the operation added to
each leaf (a retry should add none to a leaf it does not publish) and whether it gave up
(``ConcurrentModificationError``), then checks the rows: every appended row is there once, every
updated row has its new value (rows appended meanwhile are not updated: WriteSerializable).

    python benchmarks/liveness.py                    # 1M rows per leaf
    python benchmarks/liveness.py --rows 20000       # a quick run
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import shutil
import sys
import tempfile
import time
from typing import Any

import lance
import numpy as np
import pyarrow as pa

import lance_partitioned as lp
from lance_partitioned import errors

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.string()), ("amount", pa.float64())])
APPEND_BASE = 10**12


def _rows(ids: np.ndarray, country: str) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "country": pa.array([country] * len(ids), pa.string()),
            "amount": pa.array(np.zeros(len(ids)), pa.float64()),
        },
        schema=SCHEMA,
    )


def appender(root: str, stop: Any, counter: Any) -> None:
    """Append 10 rows to ``US`` until ``stop`` is set; ``counter`` counts the commits."""
    ns = lp.PartitionedNamespace.open(root)
    n = 0
    while not stop.is_set():
        ids = np.arange(APPEND_BASE + n * 10, APPEND_BASE + n * 10 + 10)
        try:
            ns.write(_rows(ids, "US"))
        except errors.ConcurrentModificationError:
            continue
        n += 1
        with counter.get_lock():
            counter.value = n


def _leaf_versions(root: str) -> dict[str, int]:
    ns = lp.PartitionedNamespace.open(root)
    out = {}
    for task in ns.plan_scan():
        country = dict(task.partition_values).get("country")
        out[str(country)] = int(lance.dataset(task.uri).latest_version)
    return out


def _run(root: str, name: str, action: Any) -> dict[str, Any]:
    before = _leaf_versions(root)
    started = time.perf_counter()
    gave_up = False
    attempts: int | str = "-"
    try:
        result = action()
        attempts = result.attempts
    except errors.ConcurrentModificationError:
        gave_up = True
    seconds = time.perf_counter() - started
    after = _leaf_versions(root)
    return {
        "operation": name,
        "attempts": attempts,
        "seconds": seconds,
        "gave up": gave_up,
        "FR versions added": after["FR"] - before["FR"],
        "US versions added": after["US"] - before["US"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows per leaf")
    parser.add_argument("--dir", default=None)
    args = parser.parse_args(argv)
    root = tempfile.mkdtemp(prefix="liveness-", dir=args.dir)
    n = args.rows
    ns = lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by="country")
    ns.write(pa.concat_tables([_rows(np.arange(n), "US"), _rows(np.arange(n, 2 * n), "FR")]))
    ctx = mp.get_context("spawn")
    stop, counter = ctx.Event(), ctx.Value("q", 0)
    proc = ctx.Process(target=appender, args=(root, stop, counter), daemon=True)
    proc.start()
    try:
        while counter.value < 3:  # the appender is up and committing
            time.sleep(0.05)
        started, commits = time.perf_counter(), counter.value
        results = []
        for country, base in (("FR", n), ("US", 0)):
            where = f"country = '{country}' AND id % 10 = 0"
            results.append(
                _run(
                    root,
                    f"update 10% of {country}",
                    lambda w=where: ns.update(w, {"amount": "1.0"}),
                )
            )
            source = _rows(np.array([base + 1, base + 2]), country)
            source = source.set_column(2, "amount", pa.array([2.0, 2.0]))
            results.append(
                _run(
                    root,
                    f"merge 2 rows into {country}",
                    lambda s=source: ns.merge(s, on="id").when_matched_update_all().execute(),
                )
            )
        rate = (counter.value - commits) / (time.perf_counter() - started)
    finally:
        stop.set()
        proc.join()
    appended = counter.value
    print(f"appender: {appended} commits of 10 rows to US, {rate:.1f} commits/s during the run")
    print()
    print("| operation | attempts | seconds | gave up | FR versions added | US versions added |")
    print("| --- | ---: | ---: | --- | ---: | ---: |")
    for r in results:
        print(
            f"| {r['operation']} | {r['attempts']} | {r['seconds']:.2f} | {r['gave up']} | "
            f"{r['FR versions added']} | {r['US versions added']} |"
        )
    ok = _check(root, args.rows, appended, results)
    shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1


def _check(root: str, n: int, appended: int, results: list[dict[str, Any]]) -> bool:
    table = lp.PartitionedNamespace.open(root).to_table()
    ids = table.column("id").to_numpy()
    problems = []
    if len(ids) != len(np.unique(ids)):
        problems.append("duplicate ids")
    expected = 2 * n + 10 * appended
    if len(ids) != expected:
        problems.append(f"{len(ids)} rows, expected {expected}")
    amount = dict(zip(ids.tolist(), table.column("amount").to_pylist(), strict=True))
    for r in results:
        if r["gave up"]:
            continue
        if r["operation"] == "update 10% of FR":
            wrong = [i for i in range(n, 2 * n, 10) if i not in (n + 1, n + 2) and amount[i] != 1.0]
            if wrong:
                problems.append(f"{len(wrong)} FR rows not updated")
    if problems:
        print("FAILED:", "; ".join(problems))
        return False
    print(f"checked: {len(ids)} rows, no duplicate, every update applied")
    return True


if __name__ == "__main__":
    sys.exit(main())
