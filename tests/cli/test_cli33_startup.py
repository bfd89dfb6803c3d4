"""What the command line imports to start: ``--help`` and ``--version`` load neither Lance,
pyarrow, DataFusion nor lance_namespace (whose REST client alone costs about a second); a
read command loads Lance but not lance_namespace. Facts of the import graph, checked in a
fresh interpreter: no timing is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import lance_partitioned as lp

# a fresh interpreter per check (the import graph at startup): with the console-script
# tests, in the full run only
pytestmark = pytest.mark.console_script

SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY = ("lance", "pyarrow", "datafusion", "lance_namespace", "pandas", "numpy", "pyspark")


def _fresh(code: str) -> dict[str, object]:
    """Run ``code`` in a new interpreter with this checkout's sources; it prints one JSON
    object on its last line."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _loaded_after(argv: list[str]) -> dict[str, object]:
    return _fresh(
        "import json, sys\n"
        "from lance_partitioned.cli import run\n"
        f"code = run({argv!r})\n"
        f"loaded = sorted(m for m in {HEAVY!r} if m in sys.modules)\n"
        "print(json.dumps({'code': code, 'loaded': loaded}))\n"
    )


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["scan", "--help"]])
def test_help_and_version_import_no_engine(argv: list[str]) -> None:
    found = _loaded_after(argv)
    assert found == {"code": 0, "loaded": []}


def test_describe_imports_lance_but_not_lance_namespace(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("country", pa.string())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=schema, partition_by="country")
    ns.write(pa.table({"id": [1, 2], "country": ["US", "FR"]}))
    found = _loaded_after(["describe", ns.uri])
    assert found["code"] == 0
    loaded = found["loaded"]
    assert isinstance(loaded, list)
    assert "lance" in loaded
    assert "lance_namespace" not in loaded
    assert "pyspark" not in loaded


def test_lance_namespace_imported_after_or_before_knows_partitioned_and_our_errors(
    tmp_path: Path,
) -> None:
    schema = pa.schema([("id", pa.int64()), ("country", pa.string())])
    root = str(tmp_path / "ns")
    lp.PartitionedNamespace.create(root, schema=schema, partition_by="country")
    found = _fresh(
        "import importlib.util, json, sys\n"
        "import lance_partitioned as lp\n"
        "before = 'lance_namespace' in sys.modules\n"
        "importlib.util.find_spec('lance_namespace')  # looked up, not imported\n"
        "import lance_namespace as ln\n"
        f"adapter = ln.connect('partitioned', {{'root': {root!r}}})\n"
        "print(json.dumps({\n"
        "    'before': before,\n"
        "    'adapter': type(adapter).__name__,\n"
        "    'errors_bound': ln.errors is sys.modules['lance_namespace.errors'],\n"
        "    'subclass': issubclass(lp.errors.TableNotFoundError, ln.TableNotFoundError),\n"
        "    'root': issubclass(lp.errors.LancePartitionedError, ln.errors.LanceNamespaceError),\n"
        "}))\n"
    )
    assert found == {
        "before": False,
        "adapter": "PartitionedLanceNamespace",
        "errors_bound": True,
        "subclass": True,
        "root": True,
    }
    # and the other way round: lance_namespace first, then lance_partitioned
    found = _fresh(
        "import json\n"
        "import lance_namespace as ln\n"
        "import lance_partitioned as lp\n"
        "print(json.dumps({\n"
        "    'registered': ln._REGISTERED_IMPLS.get('partitioned'),\n"
        "    'subclass': issubclass(lp.errors.InvalidInputError, ln.InvalidInputError),\n"
        "}))\n"
    )
    assert found == {
        "registered": "lance_partitioned.adapter.PartitionedLanceNamespace",
        "subclass": True,
    }


def test_console_script_describe_keeps_pandas_out_of_import_lance(tmp_path: Path) -> None:
    # `import lance` imports pyarrow.dataset, whose initialisation imports pandas through
    # pyarrow's shim (~0.4 s); the console script (main) keeps it out, and pandas stays usable
    schema = pa.schema([("id", pa.int64()), ("country", pa.string())])
    ns = lp.PartitionedNamespace.create(str(tmp_path / "ns"), schema=schema, partition_by="country")
    ns.write(pa.table({"id": [1, 2], "country": ["US", "FR"]}))
    found = _fresh(
        "import json, runpy, sys\n"
        f"sys.argv = ['lance-partitioned', 'describe', {ns.uri!r}]\n"
        "try:\n"
        "    runpy.run_module('lance_partitioned', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "loaded = sorted(m for m in ('lance', 'pandas') if m in sys.modules)\n"
        "import pandas as pd, pyarrow as pa\n"
        "frame = pa.table(pd.DataFrame({'a': [1, 2]})).to_pandas()\n"
        "print(json.dumps({'code': code, 'loaded': loaded, 'rows': len(frame)}))\n"
    )
    assert found == {"code": 0, "loaded": ["lance"], "rows": 2}
