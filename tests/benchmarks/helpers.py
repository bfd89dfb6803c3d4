"""Benchmark scripts from tests: load one as a module, or run it as a command."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"lp_bench_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module


def available(*systems: str) -> list[str]:
    """``systems`` without ``delta`` when deltalake (a "bench" extra) is not installed: the
    benchmarks still run their other peers."""
    has_delta = importlib.util.find_spec("deltalake") is not None
    return [s for s in systems if s != "delta" or has_delta]


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``benchmarks/<script>`` run with this interpreter; it must exit 0."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done
