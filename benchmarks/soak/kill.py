"""SIGKILL soak: kill a writer process at random points of its writes and evolutions, then
check that the namespace holds exactly the writes that returned.

A child process loops over appends, ``overwrite_partitions``, whole-namespace overwrites and
evolutions (add, rename, drop and promote a column; switch the partition spec between ``k``
and ``truncate(1, k)``). Before each operation it logs what it is about to do, and after the
operation returns it logs that it returned, each record fsync'ed before it goes on. It
reports on stdout each phase it enters (staging, a leaf commit, the ``__manifest`` commit, an
evolution commit, an overwrite). The parent picks a target phase at random, waits for the
child to enter it, lets it run 0, 0-5 or 0-30 ms more (at random), and SIGKILLs it.

After each kill the parent opens the namespace and checks that it reads exactly the model of
the operations that returned, plus the operation in flight either whole or not at all (rows
by unique id, the schema and the current partition spec); then that a write succeeds. It
prints the kills by phase and by operation in flight, and exits 1 on the first mismatch.

    python benchmarks/soak/kill.py --kills 200          # the long mode
    python benchmarks/soak/kill.py --short              # 20 kills (CI)
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
from _common import (
    KEYS,
    DurableLog,
    Zygote,
    create,
    install_phase_hooks,
    read_log,
    rows,
    serve,
    stdout_reporter,
    table,
)

import lance_partitioned as lp


class Mismatch(Exception):
    """The namespace does not hold what the writes that returned put in it."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise Mismatch(message)


PHASES = ["stage", "leaf", "manifest", "evolve", "overwrite", "any"]
SPECS = {"k": lambda k: k, "truncate(1, k)": lambda k: None if k is None else k[:1]}


# ---------------------------------------------------------------------------- the child
def child(root: str, log_path: str, seed: int, first_id: int) -> None:
    """Write and evolve forever (until killed), logging each operation durably."""
    rng = random.Random(seed)
    install_phase_hooks(stdout_reporter)
    log = DurableLog(log_path)
    ns = lp.PartitionedNamespace.open(root)
    next_id = first_id
    while True:
        ns.refresh()
        kind = rng.choices(
            ["append", "overwrite_partitions", "overwrite", "evolve"], [50, 15, 5, 30]
        )[0]
        if kind == "evolve":
            change = _pick_evolution(ns, rng)
            log.write(event="begin", op="evolve", change=change)
            _evolve(ns, change)
            log.write(event="done", op="evolve", version=ns.version)
        else:
            n = rng.randint(1, 6)
            ids = list(range(next_id, next_id + n))
            next_id += n
            keys = [rng.choice(KEYS) for _ in ids]
            groups = [rng.randint(-5, 5) for _ in ids]
            log.write(event="begin", op=kind, ids=ids, keys=keys, groups=groups)
            if kind != "append":
                stdout_reporter("overwrite")
            result = ns.write(rows(ids, keys, groups), mode=kind)
            log.write(event="done", op=kind, version=result.version)
        stdout_reporter("idle")


def _pick_evolution(ns: lp.PartitionedNamespace, rng: random.Random) -> dict[str, Any]:
    added = [f for f in ns.schema if f.name.startswith("x")]
    choices: list[dict[str, Any]] = [{"kind": "add", "name": f"x{rng.randrange(10**9)}"}]
    spec = "truncate(1, k)" if ns.current_spec.fields[0].name == "k" else "k"
    choices.append({"kind": "spec", "text": spec})
    if added:
        target = rng.choice(added)
        choices.append({"kind": "rename", "name": target.name, "new": f"x{rng.randrange(10**9)}"})
        choices.append({"kind": "drop", "name": target.name})
        if pa.types.is_int32(target.type):
            choices.append({"kind": "promote", "name": target.name})
    return rng.choice(choices)


def _evolve(ns: lp.PartitionedNamespace, change: dict[str, Any]) -> None:
    kind = change["kind"]
    if kind == "add":
        ns.add_columns([pa.field(change["name"], pa.int32())])
    elif kind == "spec":
        ns.update_partition_spec(change["text"])
    elif kind == "rename":
        ns.rename_column(change["name"], change["new"])
    elif kind == "drop":
        ns.drop_columns([change["name"]])
    else:
        ns.alter_column_type(change["name"], pa.int64())


# ---------------------------------------------------------------------------- the model
@dataclass
class Model:
    """What the namespace must hold: rows by id, with the spec they were written under."""

    rows: dict[int, tuple[str | None, int, int, Any]] = field(default_factory=dict)
    spec_version: int = 1
    spec_text: str = "k"
    columns: dict[str, str] = field(default_factory=dict)  # added column -> type

    def key(self, k: str | None) -> Any:
        return SPECS[self.spec_text](k)

    def apply(self, record: dict[str, Any]) -> None:
        op = record["op"]
        if op == "evolve":
            self._evolve(record["change"])
            return
        new = list(zip(record["ids"], record["keys"], record["groups"], strict=True))
        if op == "overwrite":
            self.rows.clear()
        elif op == "overwrite_partitions":
            # every row in the written partitions of the current spec goes, whatever spec
            # version it was written under (issue 19; the Appendix E exception, a current
            # spec field on a dropped source, never applies: only added columns are dropped)
            replaced = {self.key(k) for _, k, _ in new}
            self.rows = {i: row for i, row in self.rows.items() if self.key(row[0]) not in replaced}
        for i, k, g in new:
            self.rows[i] = (k, g, self.spec_version, self.key(k))

    def _evolve(self, change: dict[str, Any]) -> None:
        kind = change["kind"]
        if kind == "add":
            self.columns[change["name"]] = "int32"
        elif kind == "spec":
            self.spec_version += 1
            self.spec_text = change["text"]
        elif kind == "rename":
            self.columns[change["new"]] = self.columns.pop(change["name"])
        elif kind == "drop":
            del self.columns[change["name"]]
        else:
            self.columns[change["name"]] = "int64"

    def copy(self) -> Model:
        return Model(dict(self.rows), self.spec_version, self.spec_text, dict(self.columns))

    def observable(self) -> tuple[Any, ...]:
        """What a reader sees: (id, k, g) rows, the current spec, the added columns."""
        data = sorted((i, k, g) for i, (k, g, _, _) in self.rows.items())
        return data, self.spec_version, sorted(self.columns.items())


def observe(root: str) -> tuple[Any, ...]:
    ns = lp.PartitionedNamespace.open(root)
    read = ns.to_table(columns=["id", "k", "g"])
    data = sorted(zip(*(read.column(c).to_pylist() for c in ("id", "k", "g")), strict=True))
    columns = sorted((f.name, str(f.type)) for f in ns.schema if f.name.startswith("x"))
    check(ns.count_rows() == len(data), "count_rows() differs from the rows read")
    return data, ns.current_spec.version, columns


# ---------------------------------------------------------------------------- the parent
@dataclass
class Kill:
    target: str
    phase: str  # the last phase the child reported before it died
    in_flight: str  # the operation that had begun and not returned ("none" between two)
    visible: bool | None  # whether that operation's effect is visible


def _wait_and_kill(zygote: Zygote, pid: int, target: str, rng: random.Random) -> str:
    """Let child ``pid`` reach ``target`` (any phase after a few for "any") and run a random
    0-30 ms more, then SIGKILL it; return the last phase it reported."""
    seen = 0
    skip = rng.randint(0, 12)
    deadline = time.monotonic() + 30
    last = "start"
    hit = False
    while not hit and time.monotonic() < deadline:
        for line in zygote.lines(0.5):
            if line.startswith("P "):
                last = line[2:]
                seen += 1
                hit = hit or last == target or (target == "any" and seen > skip)
    # at once, within a few ms (inside a short leaf commit), or up to 30 ms later
    time.sleep(rng.choice([0.0, rng.uniform(0, 0.005), rng.uniform(0, 0.03)]))
    os.kill(pid, signal.SIGKILL)
    _, rest = zygote.reap(pid)
    for line in rest:
        if line.startswith("P "):
            last = line[2:]
    return last


def run(root: str, kills: int, seed: int, *, verbose: bool) -> list[Kill]:
    """Kill ``kills`` writers; raise :class:`Mismatch` on the first wrong namespace."""
    rng = random.Random(seed)
    create(root)
    log_path = os.path.join(os.path.dirname(root), "ops.log")
    model = Model()
    consumed = 0
    next_id = 1
    done: list[Kill] = []
    zygote = Zygote(os.path.abspath(__file__))
    for round_ in range(kills):
        target = rng.choice(PHASES)
        first_id = (round_ + 1) * 10**6
        pid = zygote.spawn(root, log_path, rng.randrange(2**32), first_id)
        phase = _wait_and_kill(zygote, pid, target, rng)
        records = list(read_log(log_path))[consumed:]
        consumed += len(records)
        in_flight: dict[str, Any] | None = None
        for record in records:
            if record["event"] == "begin":
                in_flight = record
            else:
                check(in_flight is not None, f"a 'done' record without its 'begin': {record}")
                assert in_flight is not None
                check(in_flight["op"] == record["op"], f"'done' of another operation: {record}")
                model.apply(in_flight)
                in_flight = None
        seen = observe(root)
        visible: bool | None = None
        if in_flight is None:
            check(
                seen == model.observable(),
                f"kill {round_}: the namespace differs from the writes that returned",
            )
        else:
            after = model.copy()
            after.apply(in_flight)
            if seen == after.observable():
                model, visible = after, True
            else:
                check(
                    seen == model.observable(),
                    f"kill {round_} during {in_flight}: the namespace is neither before nor "
                    "after it",
                )
                visible = False
        # the next write succeeds and is visible
        ns = lp.PartitionedNamespace.open(root)
        ids = [next_id]
        next_id += 1
        ns.write(rows(ids, ["a"], [0]))
        model.apply({"op": "append", "ids": ids, "keys": ["a"], "groups": [0]})
        check(observe(root) == model.observable(), f"kill {round_}: the write after it is wrong")
        kind = "none" if in_flight is None else in_flight["op"]
        if in_flight is not None and in_flight["op"] == "evolve":
            kind = "evolve:" + in_flight["change"]["kind"]
        done.append(Kill(target, phase, kind, visible))
        if verbose:
            print(
                f"kill {round_ + 1}/{kills}: target {target}, died in {phase}, "
                f"in flight {kind}, visible {visible}",
                flush=True,
            )
    zygote.close()
    return done


def report(kills: list[Kill], seconds: float) -> str:
    by_phase = collections.Counter(k.phase for k in kills)
    by_op: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for k in kills:
        counts = by_op[k.in_flight]
        counts[0] += 1
        counts[1 if k.visible else 2] += k.visible is not None
    lines = [
        f"{len(kills)} kills survived in {seconds:.0f} s: after each, the namespace read exactly "
        "the writes that returned (the one in flight all or nothing) and the next write succeeded",
        "",
        table(["phase at kill", "kills"], [[p, n] for p, n in sorted(by_phase.items())]),
        "",
        table(
            ["operation in flight", "kills", "visible after", "invisible after"],
            [[op, c[0], c[1], c[2]] for op, c in sorted(by_op.items())],
        ),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="SIGKILL soak of lance-partitioned writers (see the module docstring)."
    )
    parser.add_argument("--kills", type=int, default=200, help="writers to kill (default 200)")
    parser.add_argument("--short", action="store_true", help="the CI mode: 20 kills")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument(
        "--dir", default=None, help="work directory (default: a new temp dir, removed)"
    )
    parser.add_argument("--verbose", action="store_true", help="print a line per kill")
    parser.add_argument("--zygote", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.zygote:
        serve(lambda a: child(a[0], a[1], int(a[2]), int(a[3])))
        return 0
    kills = 20 if args.short else args.kills
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="lp-kill-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    root = str(work / "ns")
    print(f"kill soak: {kills} kills, seed {seed}, namespace {root}", flush=True)
    started = time.perf_counter()
    try:
        result = run(root, kills, seed, verbose=args.verbose)
    except Mismatch as exc:
        print(f"FAILED (seed {seed}): {exc}", file=sys.stderr)
        return 1
    print(report(result, time.perf_counter() - started))
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
