"""Object storage with latency (issue 31): ours against delta-rs on one S3 endpoint that adds a
fixed delay to every request, with the requests each operation makes.

An S3-compatible server (moto's, ``python -m moto.server``, in a child process so that it
does not compete for this process's GIL) listens on 127.0.0.1; in front of it
:class:`_proxy.DelayProxy` adds ``--delay-ms`` (default 20) to **every HTTP request**: it
parses request boundaries, so each request on a keep-alive connection is delayed, not only
a connection's first bytes; it runs in a child process (:class:`_proxy.ProxyProcess`), so
that its forwarding never waits for this process's GIL. It counts the requests too. Ours
and delta-rs (and the floor) write to a bucket each, through the same proxy (moto's listing
of a prefix walks every key of its bucket: in one shared bucket, whichever runs last would
list more slowly), and run, timed one by one:

1. write ``--partitions`` partitions (default 731 days, ``--rows-per-partition`` rows each)
   partitioned by ``event_date`` (ours: ``PartitionedNamespace.create`` + ``write``; delta:
   ``write_deltalake(..., partition_by=["event_date"])``);
2. append rows to 10 of them;
3. read one partition (on the handle already open);
4. open + plan (ours: ``PartitionedNamespace.open`` + ``plan_scan()``; delta: ``DeltaTable``
   + ``file_uris()``);
5. delete a tenth of the rows of the first 100 partitions (row-level: a predicate on the
   partition column and on ``id``);
6. optimize (ours: ``optimize()``; delta: ``optimize.compact()``);
7. cleanup of everything no longer needed (ours: ``cleanup(older_than=0)``; delta:
   ``vacuum(retention_hours=0)``). deltalake's ``vacuum`` lists no data file by default
   (``full=False``: it deletes the files its log says were removed, and an orphan file, a
   crashed writer's, stays), where ours lists the root to find those too;
   ``--delta-vacuum full`` runs ``vacuum(full=True)``, which lists them as ours does.

The **floor** (``--only floor``, run by default) is pylance alone in a third bucket: one
Lance dataset per partition and, per operation, one pylance call per leaf on a pool as wide
as ours (``write_dataset``, ``write_dataset(mode="append")``, ``to_table``, ``delete``,
``optimize.compact_files``, ``cleanup_old_versions``; ``_floor.py``): what one table per
partition costs whatever our code does. It has no ``__manifest``: its open + plan is the
least reading one costs, the open of one Lance dataset and its ``to_table``.

The table printed has, per operation, the seconds of each, delta / ours, ours / floor, and
the requests each made (total, then by method). ``--quick`` is a smoke run: 50 partitions of 5 rows.
``--max-workers`` sets ours' per-leaf pools (default: sized for an object store).

Usage::

    .venv/bin/python benchmarks/objectstore.py [--partitions 731] [--delay-ms 20] [--quick]
        [--delta-vacuum lite|full]
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import unquote

os.environ.setdefault("LANCE_LOG", "error")
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

import numpy as np
import pyarrow as pa

import lance_partitioned as lp
from _data import START, make_events
from _floor import Floor
from _proxy import DelayProxy, ProxyProcess
from lance_partitioned.runtime import max_workers

BUCKET = "lp-objectstore-bench"  # a bucket per system: <BUCKET>-ours, -delta, -floor
SYSTEMS = ("ours", "delta", "floor")
KEY = {"id": "test", "secret": "test", "region": "us-east-1"}
APPENDED = 10
DELETED = 100

OPERATIONS = (  # {n}: the partitions written, {d}: the leaves a delete changes
    "write {n} partitions",
    f"append to {APPENDED} partitions",
    "read one partition",
    "open + plan",
    "delete in {d} leaves",
    "optimize",
    "cleanup",
)


def events(partitions: int, per_partition: int, first_id: int = 0) -> pa.Table:
    """``partitions * per_partition`` events, ``per_partition`` on each of the first
    ``partitions`` days from 2024-01-01."""
    table = make_events(partitions * per_partition, seed=first_id)
    ids = np.arange(first_id, first_id + table.num_rows, dtype=np.int64)
    days = (np.arange(table.num_rows) % partitions).astype("timedelta64[D]")
    dates = np.datetime64(START, "D") + days
    table = table.set_column(0, "id", pa.array(ids))
    return table.set_column(1, "event_date", pa.array(dates, pa.date32()))


def day(n: int) -> str:
    return (START + dt.timedelta(days=n)).isoformat()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def s3_server() -> Iterator[int]:
    """moto's S3 server in a child process, with the benchmark's bucket: its port."""
    import boto3

    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = boto3.client(
            "s3",
            endpoint_url=f"http://127.0.0.1:{port}",
            aws_access_key_id=KEY["id"],
            aws_secret_access_key=KEY["secret"],
            region_name=KEY["region"],
        )
        for _ in range(300):
            try:
                for system in SYSTEMS:
                    client.create_bucket(Bucket=f"{BUCKET}-{system}")
                break
            except Exception:  # not listening yet
                if child.poll() is not None:
                    raise SystemExit("moto's server exited: is the s3 extra installed?") from None
                time.sleep(0.1)
        else:
            raise SystemExit("moto's server did not start within 30 s")
        yield port
    finally:
        child.terminate()
        child.wait(timeout=30)


def ours_options(endpoint: str) -> dict[str, str]:
    return {
        "aws_endpoint": endpoint,
        "aws_access_key_id": KEY["id"],
        "aws_secret_access_key": KEY["secret"],
        "aws_region": KEY["region"],
        "allow_http": "true",
    }


def delta_options(endpoint: str) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": KEY["id"],
        "AWS_SECRET_ACCESS_KEY": KEY["secret"],
        "AWS_REGION": KEY["region"],
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",  # one writer: no locking provider needed
    }


Measured = dict[str, tuple[float, Counter[str]]]
Proxy = DelayProxy | ProxyProcess
#: ``--paths``: the requests of each operation by method and kind of path, per system
PATHS: dict[str, dict[str, Counter[str]]] = {}
_UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")


def path_kind(path: str) -> str:
    """A request's path with what varies from leaf to leaf (the leaf directory, version
    numbers, uuids) replaced, and a listing's prefix kept: what to count requests by.

    >>> path_kind("/b/x/ns/2024-01-01_v1$a$dataset/_versions/18446744073709551614.manifest")
    '/b/x/ns/<leaf>/_versions/<n>.manifest'
    >>> path_kind("/b/?list-type=2&prefix=x%2Fns%2F__manifest%2F_versions%2F")
    'list x/ns/__manifest/_versions/'
    """
    path = unquote(path)
    base, _, query = path.partition("?")
    if "list-type=2" in query:
        prefix = dict(p.partition("=")[::2] for p in query.split("&")).get("prefix", "")
        return "list " + re.sub(r"[^/]*\$dataset", "<leaf>", prefix)
    if query.startswith("delete"):
        return base + "?delete"
    kind = re.sub(r"[^/]*\$dataset", "<leaf>", base)
    kind = _UUID.sub("<uuid>", kind)
    return re.sub(r"/\d+([.-])", r"/<n>\1", kind)


def measure(proxy: Proxy, actions: dict[str, Callable[[], object]], system: str = "") -> Measured:
    """Seconds and requests (by method) of each action, in order."""
    out: Measured = {}
    for name, action in actions.items():
        proxy.reset()
        started = time.perf_counter()
        action()
        seconds = time.perf_counter() - started
        requests = proxy.requests()
        out[name] = (seconds, Counter(method for method, _ in requests))
        PATHS.setdefault(system, {})[name] = Counter(
            f"{method} {path_kind(path)}" for method, path in requests
        )
    return out


def run_ours(
    proxy: Proxy, table: pa.Table, appended: pa.Table, args: argparse.Namespace
) -> Measured:
    uri = f"s3://{BUCKET}-ours/{uuid.uuid4().hex}/ours"
    options = ours_options(proxy.endpoint)
    handle: dict[str, lp.PartitionedNamespace] = {}
    deleted = min(DELETED, args.partitions)

    def write() -> None:
        handle["ns"] = lp.PartitionedNamespace.create(
            uri,
            schema=table.schema,
            partition_by="event_date",
            storage_options=options,
            max_workers=args.max_workers,
        )
        handle["ns"].write(table)

    def open_plan() -> None:
        opened = lp.PartitionedNamespace.open(
            uri, storage_options=options, max_workers=args.max_workers
        )
        assert len(opened.plan_scan()) == args.partitions

    actions: dict[str, Callable[[], object]] = {
        OPERATIONS[0]: write,
        OPERATIONS[1]: lambda: handle["ns"].write(appended),
        OPERATIONS[2]: lambda: handle["ns"].to_table(f"event_date = DATE '{day(3)}'"),
        OPERATIONS[3]: open_plan,
        OPERATIONS[4]: lambda: handle["ns"].delete(
            f"event_date < DATE '{day(deleted)}' AND id % 10 = 0"
        ),
        OPERATIONS[5]: lambda: handle["ns"].optimize(),
        OPERATIONS[6]: lambda: handle["ns"].cleanup(older_than=dt.timedelta(0)),
    }
    done = measure(proxy, actions, "ours")
    check(handle["ns"].count_rows(), table, appended, deleted, "ours")
    return done


def run_delta(
    proxy: Proxy, table: pa.Table, appended: pa.Table, args: argparse.Namespace
) -> Measured:
    from deltalake import DeltaTable, write_deltalake

    uri = f"s3://{BUCKET}-delta/{uuid.uuid4().hex}/delta"
    options = delta_options(proxy.endpoint)
    handle: dict[str, DeltaTable] = {}
    deleted = min(DELETED, args.partitions)

    def write() -> None:
        write_deltalake(uri, table, partition_by=["event_date"], storage_options=options)
        handle["dt"] = DeltaTable(uri, storage_options=options)

    def append() -> None:
        write_deltalake(uri, appended, mode="append", storage_options=options)
        handle["dt"].update_incremental()

    def open_plan() -> None:
        opened = DeltaTable(uri, storage_options=options)
        assert len(opened.file_uris()) >= args.partitions

    actions: dict[str, Callable[[], object]] = {
        OPERATIONS[0]: write,
        OPERATIONS[1]: append,
        OPERATIONS[2]: lambda: handle["dt"].to_pyarrow_table(
            filters=[("event_date", "=", START + dt.timedelta(days=3))]
        ),
        OPERATIONS[3]: open_plan,
        OPERATIONS[4]: lambda: handle["dt"].delete(
            f"event_date < '{day(deleted)}' AND id % 10 = 0"
        ),
        OPERATIONS[5]: lambda: handle["dt"].optimize.compact(),
        OPERATIONS[6]: lambda: handle["dt"].vacuum(
            retention_hours=0,
            enforce_retention_duration=False,
            dry_run=False,
            full=args.delta_vacuum == "full",
        ),
    }
    done = measure(proxy, actions, "delta")
    rows = DeltaTable(uri, storage_options=options).to_pyarrow_table(columns=["id"]).num_rows
    check(rows, table, appended, deleted, "delta")
    return done


def run_floor(
    proxy: Proxy, table: pa.Table, appended: pa.Table, args: argparse.Namespace
) -> Measured:
    """The floor: pylance alone, one dataset per partition, each step one call per leaf on a
    pool as wide as ours (no ``__manifest``: its open + plan opens one leaf and reads it)."""
    floor = Floor(
        f"s3://{BUCKET}-floor/{uuid.uuid4().hex}/floor",
        workers=max_workers(args.max_workers, remote=True),
        storage_options=ours_options(proxy.endpoint),
    )
    deleted = min(DELETED, args.partitions)
    actions: dict[str, Callable[[], object]] = {
        OPERATIONS[0]: lambda: floor.write(table, "event_date"),
        OPERATIONS[1]: lambda: floor.write(appended, "event_date", mode="append"),
        OPERATIONS[2]: lambda: floor.read(day(3)),
        OPERATIONS[3]: lambda: floor.read(day(0)),
        OPERATIONS[4]: lambda: floor.delete(floor.keys[:deleted], "id % 10 = 0"),
        OPERATIONS[5]: floor.optimize,
        OPERATIONS[6]: floor.cleanup,
    }
    done = measure(proxy, actions, "floor")
    check(floor.count_rows(), table, appended, deleted, "floor")
    return done


def check(rows: int, table: pa.Table, appended: pa.Table, deleted: int, who: str) -> None:
    """Both systems must end with the same rows: every row, less the deleted ones."""
    import pyarrow.compute as pc

    both = pa.concat_tables([table, appended])
    gone = pc.and_(
        pc.less(both["event_date"], pa.scalar(START + dt.timedelta(days=deleted))),
        pc.equal(pc.remainder(both["id"], 10), 0),
    )
    expected = both.num_rows - int(pc.sum(gone).as_py() or 0)
    if rows != expected:
        raise SystemExit(f"{who} ends with {rows} rows, expected {expected}")


def methods(counts: Counter[str]) -> str:
    return " ".join(f"{m} {n}" for m, n in sorted(counts.items())) or "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=731)
    parser.add_argument("--rows-per-partition", type=int, default=20)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--max-workers", type=int, default=None)
    parser.add_argument("--quick", action="store_true", help="50 partitions of 5 rows")
    parser.add_argument(
        "--delta-vacuum",
        choices=("lite", "full"),
        default="lite",
        help="deltalake's vacuum: lite (its default, no listing of data files) or full",
    )
    parser.add_argument(
        "--only", default="ours,delta,floor", help="systems: ours, delta, floor (pylance alone)"
    )
    parser.add_argument(
        "--paths",
        default="",
        help="operations (comma-separated, e.g. cleanup) whose requests are printed by kind "
        "of path, per system",
    )
    args = parser.parse_args()
    if args.quick:
        args.partitions, args.rows_per_partition = 50, 5
    systems = [s.strip() for s in args.only.split(",") if s.strip()]
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    table = events(args.partitions, args.rows_per_partition)
    appended = events(APPENDED, args.rows_per_partition, first_id=table.num_rows)
    results: dict[str, Measured] = {}
    with s3_server() as port, ProxyProcess(port, delay=args.delay_ms / 1000) as proxy:
        if "ours" in systems:
            results["ours"] = run_ours(proxy, table, appended, args)
        if "delta" in systems:
            results["delta"] = run_delta(proxy, table, appended, args)
        if "floor" in systems:
            results["floor"] = run_floor(proxy, table, appended, args)
    ours, delta, floor = results.get("ours", {}), results.get("delta", {}), results.get("floor", {})
    print(
        f"partitions: {args.partitions:,}, rows: {table.num_rows:,}, delay: "
        f"{args.delay_ms:g} ms per request, ours max_workers: "
        f"{max_workers(args.max_workers, remote=True)}"
    )
    print()
    print(
        "| operation | ours s | delta s | delta / ours | ours requests | delta requests "
        "| floor s | ours / floor | floor requests |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in OPERATIONS:
        label = name.format(n=args.partitions, d=min(DELETED, args.partitions))
        mine, theirs, base = ours.get(name), delta.get(name), floor.get(name)
        cells = [
            f"{mine[0]:.3f}" if mine else "-",
            f"{theirs[0]:.3f}" if theirs else "-",
            f"{theirs[0] / mine[0]:.2f}x" if mine and theirs else "-",
            f"{sum(mine[1].values())}" if mine else "-",
            f"{sum(theirs[1].values())}" if theirs else "-",
            f"{base[0]:.3f}" if base else "-",
            f"{mine[0] / base[0]:.2f}x" if mine and base else "-",
            f"{sum(base[1].values())}" if base else "-",
        ]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()
    print(
        "| operation | ours requests by method | delta requests by method "
        "| floor requests by method |"
    )
    print("|---|---|---|---|")
    for name in OPERATIONS:
        label = name.format(n=args.partitions, d=min(DELETED, args.partitions))
        mine, theirs, base = ours.get(name), delta.get(name), floor.get(name)
        print(
            f"| {label} | {methods(mine[1]) if mine else '-'} | "
            f"{methods(theirs[1]) if theirs else '-'} | {methods(base[1]) if base else '-'} |"
        )
    for wanted in filter(None, (w.strip() for w in args.paths.split(","))):
        for system, by_operation in PATHS.items():
            for name, kinds in by_operation.items():
                if not name.startswith(wanted):
                    continue
                print()
                print(f"{system}, {name.format(n=args.partitions, d=DELETED)}, by path:")
                for kind, n in sorted(kinds.items(), key=lambda item: (-item[1], item[0])):
                    print(f"  {n:5d} {kind}")


if __name__ == "__main__":
    main()
