"""The ``lance-partitioned`` command line (``python -m lance_partitioned`` too).

Commands: ``create``, ``describe``, ``partitions``, ``scan``, ``write``, ``evolve``,
``verify``, ``stats``, ``history``, ``tag``, ``optimize``, ``cleanup``, ``delete``,
``restore``, ``index``, ``search``, ``import``, ``export``, ``convert``. Each takes ``--json``
(machine-readable output with stable keys), ``--storage-option KEY=VALUE`` (repeatable) and
``--debug`` (tracebacks). Exit codes: 0 ok, 1 the operation found problems, 2 a usage error or
a user mistake, reported in one line on stderr. See ``docs/cli.md``.
"""

from __future__ import annotations

from lance_partitioned.cli import write  # isort: skip  (commands are listed in import order)
from lance_partitioned.cli import describe, scan, stats  # isort: skip
from lance_partitioned.cli import evolve, verify  # isort: skip
from lance_partitioned.cli import history  # isort: skip
from lance_partitioned.cli import optimize  # isort: skip
from lance_partitioned.cli import cleanup  # isort: skip
from lance_partitioned.cli import delete  # isort: skip
from lance_partitioned.cli import restore  # isort: skip
from lance_partitioned.cli import search  # isort: skip
from lance_partitioned.cli import interop  # isort: skip
from lance_partitioned.cli.app import app, main, run

__all__ = ["app", "main", "run"]

_COMMANDS = (
    write,
    describe,
    scan,
    stats,
    evolve,
    verify,
    history,
    optimize,
    cleanup,
    delete,
    restore,
    search,
    interop,
)
