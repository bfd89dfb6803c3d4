"""Run the command line (in this process, or the real console script in a subprocess), and
build the namespaces the tests read."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

import lance_partitioned as lp

SRC = Path(__file__).resolve().parents[2] / "src"
UTC = dt.timezone.utc


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def cli(
    *args: str | Path,
    env: dict[str, str | None] | None = None,
    cwd: Path | None = None,
    input: str | None = None,
) -> Result:
    """The command line in this process: ``lance_partitioned.cli.run(ARGS)`` (the function the
    console script calls) under Typer's ``CliRunner`` isolation, which swaps stdin, stdout,
    stderr and the environment for the call. ``COLUMNS=80`` and no terminal, as a pipe sees it;
    ``env`` adds to that (``None`` unsets), ``cwd`` runs it in another directory."""
    from typer.testing import CliRunner

    from lance_partitioned.cli import run

    environ: dict[str, str | None] = {
        "COLUMNS": "80",
        "TTY_COMPATIBLE": None,
        "FORCE_COLOR": None,
        **(env or {}),
    }
    before = Path.cwd()
    with CliRunner().isolation(input=input, env=environ) as (out, err, _):
        try:
            if cwd is not None:
                os.chdir(cwd)
            code = run([str(a) for a in args])
        finally:
            os.chdir(before)
            sys.stdout.flush()
            sys.stderr.flush()
        return Result(code, out.getvalue().decode(), err.getvalue().decode())


def console_script(
    *args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Result:
    """The real ``lance-partitioned`` console script in a subprocess, with this checkout's
    sources first on the path (a few seconds each: a fresh interpreter imports everything).
    Tests that use it are marked ``console_script``."""
    script = Path(sys.executable).with_name("lance-partitioned")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "lance_partitioned"]
    inherited = {k: v for k, v in os.environ.items() if k not in ("TTY_COMPATIBLE", "FORCE_COLOR")}
    environ = {**inherited, "PYTHONPATH": str(SRC), "COLUMNS": "80", **(env or {})}
    done = subprocess.run(
        [*command, *map(str, args)],
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd,
        timeout=120,
        check=False,
    )
    return Result(done.returncode, done.stdout, done.stderr)


def run_here(capsys: Any, *args: str | Path) -> Result:
    """``cli(*args)`` (kept for the tests that pass their ``capsys``)."""
    del capsys
    return cli(*args)


def one_line_error(result: Result, code: int = 2) -> str:
    """The single stderr line of a failed invocation (asserting there is no traceback)."""
    assert result.code == code, (result.code, result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("lance-partitioned: error: "), lines[0]
    assert "Traceback" not in result.err
    return lines[0]


SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("ts", pa.timestamp("us", UTC)),
        ("country", pa.string()),
        ("amount", pa.float64()),
    ]
)


def events(start: int, count: int) -> pa.Table:
    """``count`` fixed events with ids from ``start``: countries US/FR/DE, 2025 and 2026."""
    countries = ["US", "US", "FR", "DE", "US", None]
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": ids,
            "ts": pa.array(
                [
                    dt.datetime(2025 + i % 2, 1 + i % 12, 1 + i % 28, i % 24, tzinfo=UTC)
                    for i in ids
                ],
                pa.timestamp("us", UTC),
            ),
            "country": [countries[i % len(countries)] for i in ids],
            "amount": [float(i) / 4 for i in ids],
        },
        schema=SCHEMA,
    )


def build(root: Path, appends: int = 3) -> lp.PartitionedNamespace:
    """A namespace partitioned by ``year(ts), country`` with ``appends`` writes of 24 rows,
    then spec v2 ``country`` and one more write of 6 rows under it."""
    ns = lp.PartitionedNamespace.create(str(root), schema=SCHEMA, partition_by="year(ts), country")
    for n in range(appends):
        ns.write(events(24 * n, 24))
    ns.update_partition_spec("country")
    ns.write(events(1000, 6))
    return ns
