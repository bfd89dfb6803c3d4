"""Shared parts of the soak harnesses: the namespace they write, durable logs, phase hooks."""

from __future__ import annotations

import importlib
import json
import os
import select
import subprocess
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

import lance_partitioned as lp

#: The namespace every soak writes: ``k`` is the partition column, ``g`` a data column.
SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("k", pa.string()), ("g", pa.int32())]
)
KEYS = ["a", "ab", "b", "c$", "", None]


def rows(ids: list[int], keys: list[str | None], groups: list[int]) -> pa.Table:
    """A table of the soak schema."""
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "k": keys, "g": pa.array(groups, pa.int32())},
        schema=SCHEMA,
    )


def create(root: str, partition_by: str = "k") -> lp.PartitionedNamespace:
    return lp.PartitionedNamespace.create(root, schema=SCHEMA, partition_by=partition_by)


class DurableLog:
    """An append-only JSON-lines file; every record is on disk (fsync) before ``write``
    returns, so a SIGKILL never loses a record that was written."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, **record: Any) -> None:
        os.write(self.fd, (json.dumps(record, sort_keys=True) + "\n").encode())
        os.fsync(self.fd)


def read_log(path: str) -> Iterator[dict[str, Any]]:
    """The records of a :class:`DurableLog`; a torn last line (the writer was killed inside
    ``os.write``) is skipped: its operation had not started."""
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            try:
                yield json.loads(line)
            except ValueError:
                continue


def install_phase_hooks(report: Callable[[str], None]) -> None:
    """Call ``report(phase)`` as a write or an evolution enters each phase of its commit:
    ``stage`` (staging fragments), ``leaf`` (a leaf commit), ``manifest`` (the ``__manifest``
    row commit), ``evolve`` (a schema or partition spec commit).

    The hooks wrap the library's own functions in this process only; they observe, and call
    through to the real code unchanged.
    """
    from lance_partitioned import manifest, namespace, transaction

    def wrap(owner: Any, name: str, phase: str) -> None:
        real = getattr(owner, name)

        def hooked(*args: Any, **kwargs: Any) -> Any:
            report(phase)
            return real(*args, **kwargs)

        setattr(owner, name, hooked)

    wrap(namespace, "stage", "stage")
    wrap(transaction, "commit_leaf", "leaf")
    wrap(manifest.Manifest, "commit_rows", "manifest")
    wrap(manifest.Manifest, "commit_table_metadata", "evolve")
    wrap(manifest.Manifest, "add_partition_columns", "evolve")


def stdout_reporter(phase: str) -> None:
    sys.stdout.write(f"P {phase}\n")
    sys.stdout.flush()


def table(headers: list[str], body: list[list[Any]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in body]
    return "\n".join(lines)


class Zygote:
    """A process that imports the library once and forks soak processes on demand.

    Starting a Python process that imports pyarrow, Lance and DataFusion costs seconds of CPU;
    forking one that has imported them (and done no Lance I/O, so no runtime threads exist
    yet) costs milliseconds. The zygote runs ``script --zygote`` (whose ``main`` calls
    :func:`serve`); each forked child inherits its stdout, where the parent reads what the
    child reports. One command at a time: ``spawn`` a child, ``reap`` it (wait for it to
    exit, after it finished or was killed).
    """

    def __init__(self, script: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, script, "--zygote"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self.buffer = b""

    def lines(self, timeout: float) -> list[str]:
        """The complete lines the zygote and its children wrote within ``timeout`` s."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return []
        chunk = os.read(fd, 65536)
        if not chunk:
            raise RuntimeError("the zygote process died")
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        return [line.decode() for line in lines]

    def _command(self, text: str, answer: str) -> tuple[str, list[str]]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()
        seen: list[str] = []
        while True:
            for line in self.lines(60):
                if line.startswith(answer):
                    return line[len(answer) :].strip(), seen
                seen.append(line)

    def spawn(self, *args: Any) -> int:
        """Fork a child running the script's ``target(args)``; its pid."""
        pid, _ = self._command("spawn " + json.dumps([str(a) for a in args]), "PID ")
        return int(pid)

    def reap(self, pid: int) -> tuple[int, list[str]]:
        """Wait for child ``pid`` to exit: its exit status, and the lines read meanwhile."""
        status, seen = self._command(f"reap {pid}", "REAPED ")
        return int(status), seen

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


PRELOAD = ("lance_partitioned.namespace", "lance_partitioned.evolution", "lance_partitioned.scan")


def serve(target: Callable[[list[str]], None]) -> None:
    """The zygote's loop (see :class:`Zygote`): fork ``target(args)`` on ``spawn``."""
    for module in PRELOAD:  # everything a child imports, before any fork
        importlib.import_module(module)
    for line in sys.stdin:
        command, _, rest = line.strip().partition(" ")
        if command == "spawn":
            with warnings.catch_warnings():
                # pylance warns on every fork; this process is a fork server (what the warning
                # recommends): it has imported Lance but never used it, so no Lance thread or
                # runtime exists to be copied in a broken state
                warnings.simplefilter("ignore")
                pid = os.fork()
            if pid == 0:
                status = 0
                try:
                    target(json.loads(rest))
                except BaseException:
                    traceback.print_exc()
                    status = 1
                finally:
                    sys.stdout.flush()
                    os._exit(status)
            print(f"PID {pid}", flush=True)
        elif command == "reap":
            _, status = os.waitpid(int(rest), 0)
            print(f"REAPED {os.waitstatus_to_exitcode(status)}", flush=True)
