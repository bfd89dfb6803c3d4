"""``lance_partitioned.dml.delete`` and ``.update`` name both a function and its submodule.

Importing a submodule by its path (pytest's ``--doctest-modules`` in importlib mode does, when
``src/lance_partitioned/dml/update.py`` is collected with the tests) binds the package attribute
to the module; ``PartitionedNamespace.delete``/``update`` must not depend on which one it is.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from lance_partitioned import dml

from .helpers import contents, create, rows


@pytest.mark.parametrize("name", ["delete", "update"])
def test_namespace_changes_work_when_the_package_name_is_the_submodule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    module = importlib.import_module(f"lance_partitioned.dml.{name}")
    monkeypatch.setattr(dml, name, module)  # what an import of the submodule by path leaves
    data = rows(30, seed=5)
    ns = create(tmp_path / "ns", "bucket(4, user_id)", data)
    if name == "delete":
        result = ns.delete("id < 10")
        assert result.rows_deleted == 10
        assert [r["id"] for r in contents(ns)] == list(range(10, 30))
    else:
        ns.update("id < 10", set={"amount": "amount + 1"})
        after = {r["id"]: r["amount"] for r in contents(ns)}
        before = dict(zip(data["id"].to_pylist(), data["amount"].to_pylist(), strict=True))
        for key, amount in before.items():
            assert after[key] == (amount + 1 if key < 10 and amount is not None else amount)
