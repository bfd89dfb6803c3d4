"""Concurrency soak: writer processes, reader processes and an evolver on one namespace, then
every ``__manifest`` version is read back and compared with a replay of the committed writes.

Each writer process appends (85%) or overwrites partitions (15%) with rows of unique ids,
keys shared with the other writers (``a``..``d``) and its own (``w<i>``); with ``--dml``
(default 0.3) that share of its operations are row-level changes of rows it wrote: a
``delete`` or an ``update`` (moving them to another key) by id, or a ``merge`` by id that
updates some and inserts one. After each operation returns it logs the ids, the partition
spec version it staged under and what the result says: the ``__manifest`` version its commit
produced and its attempts. Reader
processes read the latest version in a loop and log what they saw (version, row count, a
digest of the ids, duplicates). The evolver adds, renames and drops columns and switches the
partition spec between ``k`` and ``truncate(1, k)``, pacing itself about once a second.

Afterwards, every ``__manifest`` version from the first to the last is opened (time travel)
and its rows compared with a replay of the writes whose commit version is at most that
version (in version order: ``overwrite_partitions`` replaces the rows of the partitions it
names under the spec it staged under, rows of every spec version in them); every reader
observation is checked against the replay of its version too. Unique ids reveal any lost or
duplicated row. Prints commits/s, retries and the number of versions replayed, and exits 1
on any mismatch or unexpected error.

    python benchmarks/soak/concurrency.py --seconds 300            # 4 writers, long mode
    python benchmarks/soak/concurrency.py --short                  # 30 s (CI)
    python benchmarks/soak/concurrency.py --sweep 1,2,4,8 --seconds 60
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from _common import Zygote, create, read_log, rows, serve, table

import lance_partitioned as lp
from lance_partitioned import errors, scan

SHARED_KEYS = ["a", "b", "c", "d"]
SPECS = {"k": lambda k: k, "truncate(1, k)": lambda k: None if k is None else k[:1]}
EVOLUTIONS = ("add", "rename", "drop", "spec", "promote")
SAFE_EVOLUTIONS = "add,rename,drop,spec"


class Mismatch(Exception):
    """A version or an observation differs from the replay of the committed writes."""


def digest(ids: list[int]) -> str:
    return hashlib.sha256(json.dumps(sorted(ids)).encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------- roles
DML = ("delete", "update", "merge")


def _dml(ns: lp.PartitionedNamespace, op: str, ids: list[int], keys: list[str], index: int) -> Any:
    """A row-level change of the writer's own rows ``ids`` (``keys``: their new keys)."""
    listed = ", ".join(str(i) for i in ids)
    if op == "delete":
        return ns.delete(f"id IN ({listed})")
    if op == "update":
        return ns.update(f"id IN ({listed})", {"k": f"'{keys[0]}'"})
    source = rows(ids, keys, [index] * len(ids))  # type: ignore[arg-type]
    return (
        ns.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
    )


def _changed(result: Any) -> bool:
    """Whether a delete/update/merge result changed a row."""
    names = ("rows_deleted", "rows_updated", "rows_inserted")
    return any(getattr(result, name, 0) for name in names)


def writer(
    root: str, log_path: str, index: int, seed: int, deadline: float, dml: float = 0.0
) -> None:
    from lance_partitioned import namespace

    staged: list[int] = []
    real_stage = namespace.stage

    def stage(manifest: Any, snapshot: Any, *args: Any, **kwargs: Any) -> Any:
        staged.append(snapshot.metadata.current_spec.version)  # the spec it stages under
        return real_stage(manifest, snapshot, *args, **kwargs)

    namespace.stage = stage  # observes only: calls the real function unchanged
    rng = random.Random(seed)
    ns = lp.PartitionedNamespace.open(root)
    next_id = (index + 1) * 10**9
    mine: list[int] = []  # ids this writer wrote (others may have replaced them since)
    with open(log_path, "a", encoding="utf-8") as log:
        while time.time() < deadline:
            if mine and rng.random() < dml:
                op = rng.choice(DML)
                ids = rng.sample(mine, min(len(mine), rng.randint(1, 3)))
                if op == "merge":
                    ids.append(next_id)
                    next_id += 1
                    mine.append(ids[-1])
                key = rng.choice([*SHARED_KEYS, f"w{index}"])
                keys = [key] * len(ids)
            else:
                op = "overwrite_partitions" if rng.random() < 0.15 else "append"
                n = rng.randint(1, 5)
                ids = list(range(next_id, next_id + n))
                next_id += n
                mine.extend(ids)
                keys = [rng.choice([*SHARED_KEYS, f"w{index}"]) for _ in ids]
            staged.clear()
            started = time.perf_counter()
            try:
                if op in DML:
                    result = _dml(ns, op, ids, keys, index)
                else:
                    result = ns.write(rows(ids, keys, [index] * len(ids)), mode=op)  # type: ignore[arg-type]
            except errors.ConcurrentSchemaChangeError as exc:  # typed, nothing changed
                record: dict[str, Any] = {"schema_conflict": str(exc)[:200]}
            except errors.ConcurrentModificationError as exc:
                record = {"gave_up": str(exc)[:200]}
            except Exception:
                record = {"error": traceback.format_exc()[-2000:]}
            else:
                record = {"version": result.version, "attempts": result.attempts}
                if op in DML:  # one that found nothing to change commits no version
                    record["changed"] = _changed(result)
            record.update(
                w=index,
                op=op,
                ids=ids,
                keys=keys,
                spec=staged[-1] if staged else None,
                seconds=time.perf_counter() - started,
            )
            log.write(json.dumps(record) + "\n")
            log.flush()


def reader(root: str, log_path: str, deadline: float) -> None:
    with open(log_path, "a", encoding="utf-8") as log:
        while time.time() < deadline:
            try:
                ns = lp.PartitionedNamespace.open(root)
                ids = ns.to_table(columns=["id"]).column("id").to_pylist()
                counted = ns.count_rows()
                record: dict[str, Any] = {
                    "version": ns.version,
                    "n": len(ids),
                    "digest": digest(ids),
                    "duplicates": len(ids) - len(set(ids)),
                    "counted": counted,
                }
            except Exception:
                record = {"error": traceback.format_exc()[-2000:]}
            log.write(json.dumps(record) + "\n")
            log.flush()


def evolver(root: str, log_path: str, seed: int, kinds: list[str], deadline: float) -> None:
    rng = random.Random(seed)
    ns = lp.PartitionedNamespace.open(root)
    with open(log_path, "a", encoding="utf-8") as log:
        while time.time() < deadline:
            time.sleep(rng.uniform(0.5, 1.5))  # pacing, not synchronisation
            ns.refresh()
            added = [f for f in ns.schema if f.name.startswith("x")]
            options = [k for k in kinds if k in ("add", "spec") or added]
            if "promote" in options and not any(pa.types.is_int32(f.type) for f in added):
                options.remove("promote")
            kind = rng.choice(options)
            record: dict[str, Any] = {"kind": kind}
            try:
                if kind == "add":
                    ns.add_columns([pa.field(f"x{rng.randrange(10**9)}", pa.int32())])
                elif kind == "rename":
                    ns.rename_column(rng.choice(added).name, f"x{rng.randrange(10**9)}")
                elif kind == "drop":
                    ns.drop_columns([rng.choice(added).name])
                elif kind == "promote":
                    name = rng.choice([f for f in added if pa.types.is_int32(f.type)]).name
                    ns.alter_column_type(name, pa.int64())
                else:
                    text = "truncate(1, k)" if ns.current_spec.fields[0].name == "k" else "k"
                    ns.update_partition_spec(text)
                    record.update(text=text, spec=ns.current_spec.version)
                record["version"] = ns.version
            except errors.ConcurrentModificationError as exc:
                record["gave_up"] = str(exc)[:200]
            except Exception:
                record["error"] = traceback.format_exc()[-2000:]
            log.write(json.dumps(record) + "\n")
            log.flush()


def _role(args: list[str]) -> None:
    role, root, log_path, index, seed, kinds, deadline, dml = args
    if role == "writer":
        writer(root, log_path, int(index), int(seed), float(deadline), float(dml))
    elif role == "reader":
        reader(root, log_path, float(deadline))
    else:
        evolver(root, log_path, int(seed), [k for k in kinds.split(",") if k], float(deadline))


# ---------------------------------------------------------------------------- the run
@dataclass
class Outcome:
    writers: int
    seconds: float
    commits: int
    retries: int
    max_attempts: int
    gave_up: int
    schema_conflicts: int
    versions: int
    observations: int
    evolutions: int


def run(
    work: Path,
    *,
    writers: int,
    readers: int,
    evolve: list[str],
    seconds: float,
    seed: int,
    dml: float = 0.0,
) -> Outcome:
    root = str(work / "ns")
    create(root)
    rng = random.Random(seed)
    roles = [("writer", i, rng.randrange(2**32)) for i in range(writers)]
    roles += [("reader", i, 0) for i in range(readers)]
    if evolve:
        roles.append(("evolver", 0, rng.randrange(2**32)))
    zygote = Zygote(os.path.abspath(__file__))
    deadline = time.time() + seconds
    started = time.perf_counter()
    children = []
    for role, index, role_seed in roles:
        log_path = str(work / f"{role}-{index}.log")
        children.append(
            (
                role,
                log_path,
                zygote.spawn(
                    role, root, log_path, index, role_seed, ",".join(evolve), deadline, dml
                ),
            )
        )
    ready = time.perf_counter()
    for role, _, pid in children:
        status, _ = zygote.reap(pid)
        if status != 0:
            raise Mismatch(f"a {role} process exited with status {status}")
    zygote.close()
    ran = time.perf_counter()
    logs = {path: list(read_log(path)) for _, path, _ in children}
    outcome = verify(root, work, logs, writers=writers, seconds=seconds)
    print(
        f"{writers} writers: {len(children)} processes forked in {ready - started:.2f} s, ran "
        f"{ran - ready:.0f} s, verified in {time.perf_counter() - ran:.0f} s",
        flush=True,
    )
    return outcome


def _read_version(
    ns: lp.PartitionedNamespace,
    cache: dict[tuple[str, int], list[tuple[int, str | None]]],
    *,
    whole: bool,
) -> list[tuple[int, str | None]]:
    """(id, k) of every row of the version ``ns`` reads: its scan planned on its
    ``__manifest`` version, each leaf version read once (through the library's own reader) and
    reused by later versions that pin it; ``whole``: also read it all with ``to_table`` and
    check that both agree."""
    pairs: list[tuple[int, str | None]] = []
    for task in ns.plan_scan(columns=["id", "k"]):
        key = (task.uri, task.read_version)
        if task.read_version is None or key not in cache:
            batches = list(scan.read_task(task, ns.namespace_schema, ["id", "k"]))
            leaf = [
                (i, k)
                for batch in batches
                for i, k in zip(
                    batch.column("id").to_pylist(), batch.column("k").to_pylist(), strict=True
                )
            ]
            if task.read_version is None:
                pairs.extend(leaf)
                continue
            cache[key] = leaf
        pairs.extend(cache[key])
    if whole:
        read = ns.to_table(columns=["id", "k"])
        direct = list(zip(read.column("id").to_pylist(), read.column("k").to_pylist(), strict=True))
        if sorted(direct, key=str) != sorted(pairs, key=str):
            raise Mismatch(f"version {ns.version}: to_table() differs from its scan tasks")
    return pairs


def verify(
    root: str, work: Path, logs: dict[str, list[dict[str, Any]]], *, writers: int, seconds: float
) -> Outcome:
    def of(role: str) -> list[dict[str, Any]]:
        return [
            r for path, records in logs.items() if Path(path).name.startswith(role) for r in records
        ]

    writes, observations, evolutions = of("writer"), of("reader"), of("evolver")
    for record in [*writes, *observations, *evolutions]:
        if "error" in record:
            raise Mismatch(f"an unexpected error: {record['error']}")
    committed = sorted((r for r in writes if "version" in r), key=lambda r: r["version"])
    by_version: dict[int, list[dict[str, Any]]] = collections.defaultdict(list)
    for r in committed:
        by_version[r["version"]].append(r)
    for records in by_version.values():
        # a row-level change that found nothing to change commits nothing and reports the
        # version it read: replayed after the write of that version, it changes nothing
        records.sort(key=lambda r: r["op"] in DML)
        if sum(1 for r in records if r["op"] not in DML) > 1:
            raise Mismatch("two writes report the same __manifest version")
    spec_text = {1: "k"}
    for record in evolutions:
        if "spec" in record:
            spec_text[record["spec"]] = record["text"]
    observed = collections.defaultdict(list)
    for record in observations:
        observed[record["version"]].append(record)
    latest = lp.PartitionedNamespace.open(root).version
    model: dict[int, tuple[str | None, int]] = {}  # id -> (k, spec version)
    cache: dict[tuple[str, int], list[tuple[int, str | None]]] = {}
    replayed = 0
    for version in range(1, latest + 1):
        for write in by_version.get(version, []):
            spec = write["spec"]
            if write["op"] in DML:
                _replay_dml(model, write)
                continue
            if write["op"] == "overwrite_partitions":
                key = SPECS[spec_text[spec]]
                replaced = {key(k) for k in write["keys"]}
                # the rows of every spec version in those partitions go (issue 19; the
                # Appendix E exception never applies: only added columns are dropped)
                model = {i: (k, s) for i, (k, s) in model.items() if key(k) not in replaced}
            for i, k in zip(write["ids"], write["keys"], strict=True):
                if i in model:
                    raise Mismatch(f"id {i} written twice")
                model[i] = (k, spec)
        try:
            ns = lp.PartitionedNamespace.open(root, version=version)
        except errors.NotAPartitionedNamespaceError:
            continue  # the version before create() wrote its metadata
        pairs = _read_version(ns, cache, whole=version % 10 == 0 or version == latest)
        got = dict(pairs)
        if len(got) != len(pairs):
            raise Mismatch(f"version {version}: duplicated ids")
        expected = {i: k for i, (k, _) in model.items()}
        if got != expected:
            lost = sorted(set(expected) - set(got))[:10]
            extra = sorted(set(got) - set(expected))[:10]
            raise Mismatch(
                f"version {version}: lost ids {lost}, unexpected ids {extra}"
                + _history([*lost, *extra], [*writes, *evolutions], version)
            )
        for seen in observed.get(version, []):
            if (seen["n"], seen["digest"], seen["duplicates"], seen["counted"]) != (
                len(expected),
                digest(list(expected)),
                0,
                len(expected),
            ):
                raise Mismatch(f"a reader saw version {version} as {seen}")
        replayed += 1
    return Outcome(
        writers=writers,
        seconds=seconds,
        # a row-level change that changed nothing may have committed no version
        commits=sum(1 for r in committed if r["op"] not in DML or r.get("changed")),
        retries=sum(r["attempts"] - 1 for r in committed),
        max_attempts=max((r["attempts"] for r in committed), default=0),
        gave_up=sum(1 for r in writes if "gave_up" in r),
        schema_conflicts=sum(1 for r in writes if "schema_conflict" in r),
        versions=replayed,
        observations=len(observations),
        evolutions=sum(1 for r in evolutions if "version" in r),
    )


def _history(ids: list[int], records: list[dict[str, Any]], version: int) -> str:
    """The log records that name any of ``ids`` and every record of the five versions up to
    ``version`` (evolutions included), in version order: what a failure report needs to
    explain itself."""
    wanted = set(ids)
    shown = [
        r
        for r in records
        if wanted & set(r.get("ids", ())) or version - 5 <= (r.get("version") or -1) <= version
    ]
    shown.sort(key=lambda r: (r.get("version") is None, r.get("version") or 0))
    return "".join(
        f"\n  {json.dumps({k: v for k, v in r.items() if k != 'seconds'}, default=str)}"
        for r in shown[:80]
    )


def _replay_dml(model: dict[int, tuple[str | None, int]], write: dict[str, Any]) -> None:
    """A row-level change of the writer's own rows, in the replay: ids are unique to their
    writer, so no concurrent commit adds or matches them (WriteSerializable and serializable
    agree); a row replaced meanwhile by another writer's ``overwrite_partitions`` is gone."""
    for i, k in zip(write["ids"], write["keys"], strict=True):
        if write["op"] == "delete":
            model.pop(i, None)
        elif i in model or write["op"] == "merge":
            model[i] = (k, model.get(i, (None, 0))[1])


def report(outcomes: list[Outcome]) -> str:
    headers = [
        "writers",
        "seconds",
        "commits",
        "commits/s",
        "retries",
        "retries/commit",
        "max attempts",
        "gave up",
        "schema conflicts",
        "evolutions",
        "versions replayed",
        "reads checked",
    ]
    body = [
        [
            o.writers,
            f"{o.seconds:.0f}",
            o.commits,
            f"{o.commits / o.seconds:.2f}",
            o.retries,
            f"{o.retries / max(1, o.commits):.2f}",
            o.max_attempts,
            o.gave_up,
            o.schema_conflicts,
            o.evolutions,
            o.versions,
            o.observations,
        ]
        for o in outcomes
    ]
    return table(headers, body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Concurrency soak of lance-partitioned (see the module docstring)."
    )
    parser.add_argument("--writers", type=int, default=4, help="writer processes (default 4)")
    parser.add_argument("--readers", type=int, default=2, help="reader processes (default 2)")
    parser.add_argument(
        "--evolutions",
        default=SAFE_EVOLUTIONS,
        help=f"comma-separated evolutions of the evolver, among {','.join(EVOLUTIONS)}, or "
        f"'none' (default {SAFE_EVOLUTIONS}; 'promote' races writes as in issue 16 item 1)",
    )
    parser.add_argument(
        "--dml",
        type=float,
        default=0.3,
        help="share of each writer's operations that are delete/update/merge (default 0.3)",
    )
    parser.add_argument("--seconds", type=float, default=300, help="duration (default 300)")
    parser.add_argument("--short", action="store_true", help="the CI mode: 30 seconds")
    parser.add_argument(
        "--sweep", default=None, help="comma-separated writer counts, one run each (e.g. 1,2,4,8)"
    )
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument("--dir", default=None, help="work directory (default: a temp dir, removed)")
    parser.add_argument("--zygote", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.zygote:
        serve(_role)
        return 0
    evolve = [] if args.evolutions == "none" else args.evolutions.split(",")
    unknown = set(evolve) - set(EVOLUTIONS)
    if unknown:
        parser.error(f"unknown evolutions: {sorted(unknown)}")
    seconds = 30.0 if args.short else args.seconds
    counts = [int(n) for n in args.sweep.split(",")] if args.sweep else [args.writers]
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="lp-concurrency-soak-"))
    print(
        f"concurrency soak: writers {counts} ({args.dml:.0%} delete/update/merge), "
        f"{args.readers} readers, evolutions "
        f"{evolve or 'none'}, {seconds:.0f} s each, seed {seed}, in {base}",
        flush=True,
    )
    outcomes = []
    for count in counts:
        work = base / f"writers-{count}"
        work.mkdir(parents=True)
        try:
            outcome = run(
                work,
                writers=count,
                readers=args.readers,
                evolve=evolve,
                seconds=seconds,
                seed=seed + count,
                dml=args.dml,
            )
        except Mismatch as exc:
            print(f"FAILED with {count} writers (seed {seed}): {exc}", file=sys.stderr)
            return 1
        outcomes.append(outcome)
        print(
            f"{count} writers: {outcome.commits} commits, {outcome.versions} versions replayed",
            flush=True,
        )
    print(report(outcomes))
    if not args.dir:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
